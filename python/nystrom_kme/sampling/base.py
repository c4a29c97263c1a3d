"""The policy interface, the policies that need no kernel, and the index checks.

:class:`SamplingPolicy` is the abstract base with scikit-learn style parameters, and
the one owner of landmark draws: :meth:`~SamplingPolicy.draw` gives the landmark rows
of a row source (the estimators and the tests ask it, and never draw themselves),
:meth:`~SamplingPolicy.nested_draws` the nested sets of ``n_landmarks="auto"``, and
``needs_data_in_memory`` says whether it reads the rows or only counts them.
:class:`UniformSampling`, :class:`FixedLandmarks` and :class:`CallableSampling`
choose rows without looking at the kernel. :func:`validate_indices` and
:func:`landmark_points` check what a user or a policy hands to the estimator.
"""

from __future__ import annotations

import abc
import inspect
from collections.abc import Callable
from typing import Any, Protocol

import numpy as np
from numpy.typing import ArrayLike

from .._validation import (
    SAMPLER_SEED_BOUND,
    as_data_matrix,
    check_positive_int,
    check_random_state,
    constant_weights,
    draw_seed,
    normalised_weights,
)
from ..kernels import Kernel
from ..sources import RowSource
from ._common import check_bool


class SelectsIndices(Protocol):
    """Any object with a :meth:`SamplingPolicy.select_indices` method: what
    :func:`as_policy` wraps and ``sampler=`` accepts as it is."""

    def select_indices(
        self, X: np.ndarray, kernel: Kernel | str, n_landmarks: int, rng: np.random.Generator | int | None = None
    ) -> ArrayLike: ...


#: A function ``f(X, kernel, n_landmarks, rng) -> indices`` (see :class:`CallableSampling`).
IndexFunction = Callable[[np.ndarray, "Kernel | str", int, "np.random.Generator | int | None"], ArrayLike]

#: How checked indices name what the policy returned.
_RETURNED_INDICES = "the indices returned by the sampler"


def validate_indices(indices: ArrayLike, n: int, name: str = "indices") -> np.ndarray:
    """``indices`` as a non-empty 1-D int64 array of rows of an n-row X, or ValueError.

    Examples
    --------
    >>> from nystrom_kme.sampling import validate_indices
    >>> validate_indices([3, 1, 4], n=10)
    array([3, 1, 4])
    """
    arr = np.asarray(indices)
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError(f"{name} must be a non-empty 1-D array of row indices, got shape {arr.shape}")
    if not np.issubdtype(arr.dtype, np.integer):
        raise ValueError(f"{name} must be integers, got dtype {arr.dtype}")
    if arr.min() < 0 or arr.max() >= n:
        raise ValueError(f"{name} must lie in [0, {n}), got values in [{arr.min()}, {arr.max()}]")
    return arr.astype(np.int64)


def landmark_points(sampler: object, X: np.ndarray) -> np.ndarray | None:
    """User-supplied landmark *points* (a 2-D array-like) as an array of X's dtype,
    or None when ``sampler`` is anything else (a name, a policy, indices).

    Examples
    --------
    >>> import numpy as np
    >>> from nystrom_kme.sampling import landmark_points
    >>> X = np.zeros((10, 2), dtype=np.float32)
    >>> landmark_points([[0.0, 1.0], [1.0, 0.0]], X).dtype
    dtype('float32')
    >>> landmark_points("uniform", X) is None
    True
    """
    if not isinstance(sampler, (np.ndarray, list, tuple)):
        return None
    arr = np.asarray(sampler)
    if arr.ndim != 2:
        return None
    if not (np.issubdtype(arr.dtype, np.number) or arr.dtype == np.bool_):
        raise ValueError(f"landmark points must be numeric, got dtype {arr.dtype}")
    points = as_data_matrix(np.asarray(arr, dtype=X.dtype), "landmark points")
    if points.shape[1] != X.shape[1]:
        raise ValueError(f"landmark points have {points.shape[1]} features but X has {X.shape[1]}")
    return points


class SamplingPolicy(abc.ABC):
    """Chooses landmark rows of ``X`` for a Nyström approximation.

    Subclasses implement :meth:`select_indices`. Any object with a method of that
    signature (or a plain function of it, see :class:`CallableSampling`) is
    accepted by :class:`~nystrom_kme.NystromKME` as well.

    Parameters follow the scikit-learn convention, without needing scikit-learn:
    every constructor argument is checked and then stored *unmodified* as an
    attribute of the same name (converted where it is used); :meth:`get_params`
    reads them back by the names of ``__init__``'s signature, :meth:`set_params`
    changes them, and ``sklearn.base.clone(policy)`` makes a fresh, unfitted copy.
    What :meth:`select_indices` computes stays on the policy under names with a
    trailing underscore (``scores_``, ``residual_trace_``, ...), so a policy
    object is reused and inspected like a scikit-learn estimator.

    Threads: the policies that run parallel code in the compiled core take
    ``n_threads`` (None: every OpenMP thread); ``"n_threads" in policy.get_params()``
    tells which do, and ``policy.set_params(n_threads=...)`` sets it.
    :class:`~nystrom_kme.NystromKME` never mutates the policy it is given: it
    selects with a copy (its ``sampler_``), and when the policy's ``n_threads`` is
    None it gives that copy its own ``n_threads``.

    Examples
    --------
    >>> import numpy as np, nystrom_kme as nk
    >>> class EveryTenth(nk.SamplingPolicy):
    ...     def select_indices(self, X, kernel, n_landmarks, rng=None):
    ...         return np.arange(0, 10 * n_landmarks, 10)
    >>> X = np.random.default_rng(0).normal(size=(1000, 2))
    >>> kme = nk.NystromKME(nk.Gaussian(1.0), n_landmarks=50, sampler=EveryTenth()).fit(X)
    >>> kme.landmarks_.shape
    (50, 2)
    """

    @abc.abstractmethod
    def select_indices(
        self, X: ArrayLike, kernel: Kernel | str, n_landmarks: int, rng: np.random.Generator | int | None = None
    ) -> np.ndarray:
        """Return landmark row indices of X.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        kernel : Kernel or str
            A kernel with a numeric bandwidth (``"median"`` is resolved on X).
        n_landmarks : int
            m >= 1; policies that select distinct rows need m <= n_samples.
        rng : numpy.random.Generator, int or None
            Source of randomness (unused by the deterministic policies).

        Returns
        -------
        ndarray of shape (m',), int64
            m' = m, except for the pivoted-Cholesky and farthest-point policies,
            which stop early (m' < m) once the kernel matrix is exhausted to
            round-off (numerical rank below m).
        """

    #: Whether :meth:`draw` reads the rows themselves, all of them in memory
    #: (``source.to_array()``). False for the policies that need only the number of
    #: rows and the sample weights (uniform draws, given indices): they draw from any
    #: source, streamed or not. Callers refuse a streamed source up front when True.
    needs_data_in_memory: bool = True

    def draw(
        self,
        source: RowSource,
        kernel: Kernel | None,
        n_landmarks: int,
        rng: np.random.Generator | int | None = None,
        *,
        sample_weight: ArrayLike | None = None,
    ) -> np.ndarray:
        """Landmark rows of ``source``: how every estimator and test of the package gets them.

        This default runs :meth:`select_indices` on the rows in memory and checks what
        it returns; ``sample_weight`` is not used (the policy selects on X unweighted).

        Parameters
        ----------
        source : RowSource of n rows (see :mod:`nystrom_kme.sources`)
        kernel : Kernel with a numeric bandwidth, or None
            None when the landmarks serve several kernels; only policies that look at
            no kernel (uniform draws, given indices) accept it.
        n_landmarks : int
        rng : numpy.random.Generator, int or None
        sample_weight : ndarray of shape (n,), optional
            Validated non-negative weights; uniform draws are proportional to them.

        Returns
        -------
        ndarray of shape (m',), int64
            Rows of ``source`` (m' as for :meth:`select_indices`).

        Raises
        ------
        ValueError
            When the policy needs the data in memory and ``source`` is streamed.
        """
        # kernel None goes through: a policy that needs a kernel refuses it (ValueError),
        # one that looks at none (a user's select_indices) ignores it
        picked = self.select_indices(_rows_in_memory(self, source), kernel, n_landmarks, rng)  # type: ignore[arg-type]
        return validate_indices(picked, source.count_rows(), _RETURNED_INDICES)

    def nested_draws(
        self,
        source: RowSource,
        kernel: Kernel,
        rng: np.random.Generator,
        *,
        sample_weight: ArrayLike | None = None,
        max_landmarks: int,
    ) -> NestedDraws:
        """Landmark sets of growing size for the search of ``n_landmarks="auto"``
        (:mod:`nystrom_kme.landmark_search`).

        This default reruns :meth:`select_indices` at each size from one seed (drawn
        from ``rng`` at the first :meth:`NestedDraws.get`): a sequential policy's first
        m picks do not depend on how many follow, so its sets nest.

        Parameters
        ----------
        source, kernel, sample_weight : as for :meth:`draw`
        rng : numpy.random.Generator
        max_landmarks : int
            The largest set that will be asked for.
        """
        return _RerunDraws(self, _rows_in_memory(self, source), kernel, rng, max_landmarks)

    @classmethod
    def _param_names(cls) -> list[str]:
        """The constructor's argument names, in the order of its signature."""
        if cls.__init__ is object.__init__:
            return []
        names = []
        for p in inspect.signature(cls.__init__).parameters.values():
            if p.kind is p.VAR_POSITIONAL:
                raise RuntimeError(
                    f"{cls.__name__}.__init__ takes *{p.name}; a policy's parameters must be named in its signature"
                )
            if p.name != "self" and p.kind is not p.VAR_KEYWORD:
                names.append(p.name)
        return names

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        """The constructor arguments, by name (as stored: unconverted).

        Parameters
        ----------
        deep : bool, default=True
            Also list the parameters of arguments that have ``get_params``
            themselves, as ``<argument>__<parameter>`` (scikit-learn's nesting).
        """
        params: dict[str, Any] = {}
        for name in self._param_names():
            value = getattr(self, name)
            if deep and hasattr(value, "get_params") and not isinstance(value, type):
                params.update((f"{name}__{k}", v) for k, v in value.get_params().items())
            params[name] = value
        return params

    def set_params(self, **params: Any) -> SamplingPolicy:
        """Set parameters by name (``<argument>__<parameter>`` for nested ones); returns self.

        The values are checked as the constructor checks them; on a ValueError the
        policy is left unchanged.
        """
        own = self.get_params(deep=False)
        top: dict[str, Any] = {}
        nested: dict[str, dict[str, Any]] = {}
        for key, value in params.items():
            name, nest, sub = key.partition("__")
            if name not in own or (nest and not hasattr(own[name], "set_params")):
                raise ValueError(
                    f"invalid parameter {key!r} for {type(self).__name__}; valid "
                    f"parameters are {sorted(self.get_params(deep=True))}"
                )
            if nest:
                nested.setdefault(name, {})[sub] = value
            else:
                top[name] = value
        if top:
            type(self)(**{**own, **top})  # raises on an invalid value before anything changes
        for name, value in top.items():
            setattr(self, name, value)
        for name, sub_params in nested.items():
            getattr(self, name).set_params(**sub_params)
        return self

    def __repr__(self) -> str:
        inner = ", ".join(f"{k}={v!r}" for k, v in self.get_params(deep=False).items())
        return f"{type(self).__name__}({inner})"


class UniformSampling(SamplingPolicy):
    """Uniform landmarks, with replacement (default) or without.

    With replacement is the paper's setting, for which Theorem 4.1 (Chatalic et
    al. 2022) bounds the error; without replacement never wastes a landmark on a
    duplicate. O(m) time and memory; no kernel evaluations, hence no threads.

    Parameters
    ----------
    replace : bool, default=True

    Examples
    --------
    >>> import numpy as np, nystrom_kme as nk
    >>> X = np.zeros((100, 2))
    >>> idx = nk.UniformSampling(replace=False).select_indices(X, "gaussian", 10, np.random.default_rng(0))
    >>> idx.shape, len(set(idx.tolist()))
    ((10,), 10)
    """

    needs_data_in_memory = False

    def __init__(self, replace: bool = True) -> None:
        check_bool(replace, "replace")
        self.replace = replace

    def select_indices(
        self, X: ArrayLike, kernel: Kernel | str, n_landmarks: int, rng: np.random.Generator | int | None = None
    ) -> np.ndarray:
        X = as_data_matrix(X, "X")
        m = check_positive_int(n_landmarks, "n_landmarks")
        return self._unweighted(X.shape[0], m, check_random_state(rng)).astype(np.int64)

    def draw(
        self,
        source: RowSource,
        kernel: Kernel | None,
        n_landmarks: int,
        rng: np.random.Generator | int | None = None,
        *,
        sample_weight: ArrayLike | None = None,
    ) -> np.ndarray:
        """m rows of ``source`` (only its row count is read), drawn proportionally to
        ``sample_weight`` when given. Weights of one value (any scale) give the
        unweighted draws, the same law and the same numbers, so that unit weights are
        no weights. See :meth:`SamplingPolicy.draw`."""
        n = source.count_rows()
        m = check_positive_int(n_landmarks, "n_landmarks")
        rng = check_random_state(rng)
        if sample_weight is None or constant_weights(sample_weight):
            return validate_indices(self._unweighted(n, m, rng), n, _RETURNED_INDICES)
        p = normalised_weights(np.asarray(sample_weight, dtype=np.float64))
        if not self.replace and np.count_nonzero(p) < m:
            raise ValueError(
                f"n_landmarks={m} exceeds the {np.count_nonzero(p)} rows with a "
                "positive sample_weight (sampling without replacement)"
            )
        return validate_indices(rng.choice(n, size=m, replace=self.replace, p=p), n, _RETURNED_INDICES)

    def _unweighted(self, n: int, m: int, rng: np.random.Generator) -> np.ndarray:
        if self.replace:
            return rng.integers(0, n, size=m)
        if m > n:
            raise ValueError(f"n_landmarks={m} exceeds n_samples={n} (sampling without replacement)")
        return rng.choice(n, size=m, replace=False)

    def nested_draws(
        self,
        source: RowSource,
        kernel: Kernel,
        rng: np.random.Generator,
        *,
        sample_weight: ArrayLike | None = None,
        max_landmarks: int,
    ) -> NestedDraws:
        """One stream of draws whose prefixes are the sets (only the row count is read):
        i.i.d. draws appended at each size with replacement; without replacement the
        order of E_i / w_i, E_i ~ Exp(1) (successive sampling: a uniform random
        permutation when unweighted), O(n) memory for the keys. The same law as
        :meth:`draw`, other numbers; weights of one value give the unweighted stream.
        See :meth:`SamplingPolicy.nested_draws`."""
        weights = None if sample_weight is None else np.asarray(sample_weight, dtype=np.float64)
        if constant_weights(weights):
            weights = None
        return _UniformStream(source.count_rows(), weights, bool(self.replace), rng, max_landmarks)


class FixedLandmarks(SamplingPolicy):
    """User-supplied landmark rows: returns ``indices`` whatever ``n_landmarks`` is.

    Parameters
    ----------
    indices : array-like of int, shape (m,)
        Stored as given (a list stays a list); ``np.asarray(policy.indices)`` is
        the array.

    Examples
    --------
    >>> import numpy as np, nystrom_kme as nk
    >>> from nystrom_kme.sampling import FixedLandmarks
    >>> X = np.random.default_rng(0).normal(size=(100, 2))
    >>> kme = nk.NystromKME(nk.Gaussian(1.0), sampler=FixedLandmarks([0, 5, 7])).fit(X)
    >>> kme.landmarks_.shape
    (3, 2)
    """

    needs_data_in_memory = False

    def __init__(self, indices: ArrayLike) -> None:
        arr = np.asarray(indices)
        if arr.ndim != 1 or arr.size == 0 or not np.issubdtype(arr.dtype, np.integer):
            raise ValueError(
                f"indices must be a non-empty 1-D array of integers, got shape {arr.shape} and dtype {arr.dtype}"
            )
        self.indices = indices

    def select_indices(
        self,
        X: ArrayLike,
        kernel: Kernel | str,
        n_landmarks: int | None = None,
        rng: np.random.Generator | int | None = None,
    ) -> np.ndarray:
        X = as_data_matrix(X, "X")
        return validate_indices(self.indices, X.shape[0])

    def draw(
        self,
        source: RowSource,
        kernel: Kernel | None,
        n_landmarks: int | None = None,
        rng: np.random.Generator | int | None = None,
        *,
        sample_weight: ArrayLike | None = None,
    ) -> np.ndarray:
        """``indices``, checked against the rows of ``source`` (only counted)."""
        return validate_indices(self.indices, source.count_rows(), _RETURNED_INDICES)


class CallableSampling(SamplingPolicy):
    """Wraps a function ``f(X, kernel, n_landmarks, rng) -> indices`` as a policy.

    The function's own threading is its business, so there is no ``n_threads``.

    Examples
    --------
    >>> import numpy as np, nystrom_kme as nk
    >>> from nystrom_kme.sampling import CallableSampling
    >>> first = CallableSampling(lambda X, kernel, m, rng: np.arange(m))
    >>> X = np.random.default_rng(0).normal(size=(100, 2))
    >>> nk.NystromKME(nk.Gaussian(1.0), n_landmarks=4, sampler=first).fit(X).landmarks_.shape
    (4, 2)
    """

    def __init__(self, function: IndexFunction) -> None:
        if not callable(function):
            raise ValueError(f"function must be callable, got {function!r}")  # noqa: TRY004
        self.function = function

    def select_indices(
        self, X: ArrayLike, kernel: Kernel | str, n_landmarks: int, rng: np.random.Generator | int | None = None
    ) -> np.ndarray:
        X = as_data_matrix(X, "X")
        return validate_indices(
            self.function(X, kernel, n_landmarks, rng), X.shape[0], "the indices returned by the sampler"
        )


def as_policy(sampler: SamplingPolicy | SelectsIndices) -> SamplingPolicy:
    """A policy to ask for draws: ``sampler`` itself when it is a :class:`SamplingPolicy`;
    any other object with ``select_indices`` (what :func:`~nystrom_kme.sampling.resolve_sampler`
    accepts as it is) wrapped in a :class:`CallableSampling` of that method.

    Examples
    --------
    >>> import numpy as np, nystrom_kme as nk
    >>> from nystrom_kme.sampling import as_policy
    >>> class FirstRows:
    ...     def select_indices(self, X, kernel, n_landmarks, rng=None):
    ...         return np.arange(n_landmarks)
    >>> policy = as_policy(FirstRows())
    >>> policy.needs_data_in_memory, policy.draw(nk.sources.as_source(np.zeros((9, 2))), None, 3).tolist()
    (True, [0, 1, 2])
    """
    if isinstance(sampler, SamplingPolicy):
        return sampler
    return CallableSampling(sampler.select_indices)


def _rows_in_memory(policy: object, source: RowSource) -> np.ndarray:
    X = source.to_array()
    if X is None:
        raise ValueError(f"sampler {policy!r} needs all of the rows of {source.name} in memory; {source!r} is streamed")
    return X


class NestedDraws(abc.ABC):
    """Landmark sets of one source for the search of ``n_landmarks="auto"``: :meth:`get`
    returns a set of m rows (fewer when a policy stops early). Nothing is drawn before
    the first :meth:`get`, so creating the draws early moves no random number.

    Attributes
    ----------
    max_landmarks : int
        The largest set that can be asked for (uniform draws without replacement
        and with weights: at most the rows of positive weight).
    exhaustive : bool
        Whether n draws are every row once, which makes the embedding exact (uniform
        draws without replacement); not claimed by the rerun policies.

    Examples
    --------
    >>> import numpy as np, nystrom_kme as nk
    >>> src = nk.sources.as_source(np.random.default_rng(0).normal(size=(100, 2)))
    >>> draws = nk.UniformSampling(replace=False).nested_draws(src, nk.Gaussian(1.0), np.random.default_rng(0),
    ...                                                        max_landmarks=40)
    >>> small, large = draws.get(10), draws.get(20)
    >>> bool((large[:10] == small).all()), draws.exhaustive, len(set(large.tolist()))
    (True, True, 20)
    """

    max_landmarks: int
    exhaustive: bool = False

    @abc.abstractmethod
    def get(self, m: int) -> np.ndarray:
        """A set of m rows (int64), nested in the larger ones when the policy nests."""

    def available_mass(self, m: int) -> np.ndarray | None:
        """For draws from the sample's distribution p (the uniform policies): before each
        of the first m draws, the mass of p on the rows it could take (1 with
        replacement; 1 - the mass of the rows drawn before, without). Given the earlier
        draws, each draw is then a draw from p restricted to those rows, which the
        certificate of :mod:`nystrom_kme.landmark_search` uses. None (this default):
        the draws are not from p."""
        return None


class _UniformStream(NestedDraws):
    """Prefixes of one stream of uniform draws (see UniformSampling.nested_draws)."""

    def __init__(
        self, n: int, weights: np.ndarray | None, replace: bool, rng: np.random.Generator, max_landmarks: int
    ) -> None:
        self.n, self.replace, self.rng = n, replace, rng
        self.p = None if weights is None else normalised_weights(weights)
        self.exhaustive = not replace
        if weights is not None and not replace:
            max_landmarks = min(max_landmarks, int(np.count_nonzero(weights)))
        self.max_landmarks = max_landmarks
        self.drawn: np.ndarray | None = None

    def get(self, m: int) -> np.ndarray:
        if self.drawn is None:
            self.drawn = np.empty(0, dtype=np.int64)
            if not self.replace:  # the keys' order; prefixes are samples without replacement
                keys = self.rng.standard_exponential(self.n)
                if self.p is not None:
                    with np.errstate(divide="ignore"):
                        keys = np.where(self.p > 0, keys / self.p, np.inf)
                cap = self.max_landmarks
                top = np.argpartition(keys, cap - 1)[:cap] if cap < self.n else np.arange(self.n)
                self.drawn = top[np.argsort(keys[top], kind="stable")].astype(np.int64)
        extra = m - self.drawn.size
        if self.replace and extra > 0:  # i.i.d. draws appended to the stream
            new = (
                self.rng.integers(0, self.n, size=extra)
                if self.p is None
                else self.rng.choice(self.n, size=extra, p=self.p)
            )
            self.drawn = np.concatenate([self.drawn, new.astype(np.int64)])
        return self.drawn[:m]

    def available_mass(self, m: int) -> np.ndarray:
        if self.replace:
            return np.ones(m)
        drawn = self.get(m)[: m - 1]
        taken = np.full(drawn.size, 1.0 / self.n) if self.p is None else self.p[drawn]
        return np.maximum(1.0 - np.concatenate([[0.0], np.cumsum(taken)]), 0.0)


class _RerunDraws(NestedDraws):
    """select_indices rerun at each size from one seed (see SamplingPolicy.nested_draws)."""

    def __init__(
        self, policy: SamplingPolicy, X: np.ndarray, kernel: Kernel, rng: np.random.Generator, max_landmarks: int
    ) -> None:
        self.policy, self.X, self.kernel, self.rng = policy, X, kernel, rng
        self.max_landmarks = max_landmarks
        self.seed: int | None = None

    def get(self, m: int) -> np.ndarray:
        if self.seed is None:
            self.seed = draw_seed(self.rng, SAMPLER_SEED_BOUND)
        picked = self.policy.select_indices(self.X, self.kernel, m, np.random.default_rng(self.seed))
        return validate_indices(picked, self.X.shape[0], _RETURNED_INDICES)
