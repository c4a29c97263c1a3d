"""The classes that can be saved, by name: each registers itself with :func:`persistable`
as its module loads, so the persistence package imports none of them."""

from __future__ import annotations

from typing import Any, TypeVar

_CLASSES: dict[str, type] = {}
_Class = TypeVar("_Class", bound=type)


def persistable(cls: _Class) -> _Class:
    """Class decorator: register ``cls`` (by name) as a type :func:`nystrom_kme.load` can return."""
    _CLASSES[cls.__name__] = cls
    return cls


def is_registered(name: str) -> bool:
    return name in _CLASSES


def registered_class(name: str) -> type[Any]:
    """The saveable class of that name (KeyError if none registered); any class the
    package registers, none of which this package imports (hence ``type[Any]``)."""
    return _CLASSES[name]


def registered_name(obj: object) -> str:
    """The name ``obj``'s saveable class registered under; ValueError for other objects."""
    for name, cls in _CLASSES.items():
        if isinstance(obj, cls):
            return name
    raise ValueError(f"cannot save a {type(obj).__name__}: only {sorted(_CLASSES)} are saved")


__all__ = ["is_registered", "persistable", "registered_class", "registered_name"]
