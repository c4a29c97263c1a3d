"""scikit-learn's estimator conventions without depending on scikit-learn:
``get_params`` / ``set_params`` from the constructor's signature (so that
``sklearn.base.clone`` and grid searches work) and a readable ``repr``."""

from __future__ import annotations

import inspect
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # scikit-learn is not a dependency (and not followed by the type checker)
    from sklearn.utils import Tags


def _init_parameters(cls: type) -> list[inspect.Parameter]:
    signature = inspect.signature(cls.__init__)  # type: ignore[misc]  # the class's own constructor
    return [
        p for p in signature.parameters.values() if p.name != "self" and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
    ]


def _same(a: object, b: object) -> bool:
    """a == b for repr purposes (arrays and odd types compare as different)."""
    try:
        return bool(a is b or (type(a) is type(b) and a == b))
    except (TypeError, ValueError):
        return False


class ParamsMixin:
    """Parameters are the constructor's arguments, stored unchanged under their own
    names; fitted state ends with an underscore."""

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        """The constructor's arguments; with ``deep``, also ``name__param`` for the
        parameters of arguments that have ``get_params`` (e.g. a sampling policy)."""
        out: dict[str, Any] = {}
        for p in _init_parameters(type(self)):
            value = getattr(self, p.name)
            out[p.name] = value
            if deep and hasattr(value, "get_params") and not isinstance(value, type):
                out.update({f"{p.name}__{k}": v for k, v in value.get_params().items()})
        return out

    def set_params(self, **params: Any) -> ParamsMixin:
        """Set constructor arguments (``name__param`` reaches a nested object); returns self."""
        valid = {p.name for p in _init_parameters(type(self))}
        nested: dict[str, dict[str, Any]] = {}
        for key, value in params.items():
            name, _, sub = key.partition("__")
            if name not in valid:
                raise ValueError(
                    f"invalid parameter {name!r} for {type(self).__name__}; valid parameters: {sorted(valid)}"
                )
            if sub:
                nested.setdefault(name, {})[sub] = value
            else:
                setattr(self, name, value)
        for name, sub_params in nested.items():
            target = getattr(self, name)
            if not hasattr(target, "set_params"):
                raise ValueError(f"{name}={target!r} has no parameters to set")
            target.set_params(**sub_params)
        return self

    def __sklearn_tags__(self) -> Tags:
        """scikit-learn >= 1.6 asks for these (imported only then: scikit-learn is not
        a dependency). An unsupervised estimator on 2-D float arrays."""
        from sklearn.utils import InputTags, Tags, TargetTags

        return Tags(estimator_type=None, target_tags=TargetTags(required=False), input_tags=InputTags(two_d_array=True))

    def _fitted_summary(self) -> str | None:
        """One line about the fitted state for repr (None when not fitted)."""
        return None

    def __repr__(self) -> str:
        changed = []
        for p in _init_parameters(type(self)):
            value = getattr(self, p.name)
            if p.default is inspect.Parameter.empty or not _same(value, p.default):
                changed.append(f"{p.name}={value!r}")
        text = f"{type(self).__name__}({', '.join(changed)})"
        summary = self._fitted_summary()
        return text if summary is None else f"{text}  # fitted: {summary}"


__all__ = ["ParamsMixin"]
