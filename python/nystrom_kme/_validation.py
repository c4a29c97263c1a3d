"""Input checks shared by the public API: one conversion, clear messages."""

from __future__ import annotations

import math
import numbers
import os
from typing import Any, Union, overload

import numpy as np
from numpy.typing import ArrayLike, DTypeLike, NDArray

#: A seed as :func:`check_random_state` takes it: None, a non-negative int, a numpy
#: SeedSequence, Generator or legacy RandomState.
RandomStateLike = Union[None, int, np.integer, np.random.SeedSequence, np.random.Generator, np.random.RandomState]
#: A dask array: dask is an optional extra, not followed by the type checker (Any).
DaskArray = Any
#: Row weights as the sums read them: a float64 vector, or a dask array (checked block
#: by block where its blocks are read).
Weights = Union[NDArray[np.float64], DaskArray]


def core_array(a: ArrayLike, dtype: DTypeLike | None = None) -> np.ndarray:
    """``a`` in the layout the compiled core reads: C-contiguous, aligned, native byte
    order (``dtype``, when given, is a native float type). No copy when it already is.
    Aligned matters: numpy allows misaligned arrays (e.g. deserialised from a buffer),
    the core's vector loads do not."""
    return np.require(a, dtype, ("C_CONTIGUOUS", "ALIGNED"))


class NonNumericError(ValueError, TypeError):
    """Data that cannot be read as numbers (e.g. a dict in an object array): a
    ValueError like every bad input of the package, and a TypeError as numpy and
    scikit-learn raise for it."""


def is_sparse(X: object) -> bool:
    """Whether ``X`` is a scipy.sparse matrix or array (checked without importing scipy)."""
    return type(X).__module__.startswith("scipy.sparse") and hasattr(X, "toarray")


def check_not_sparse(X: object, name: str = "X") -> None:
    """Refuse scipy.sparse input with a message that says so: every kernel sum reads
    dense rows, and densifying silently could take n x d memory the user did not plan."""
    if is_sparse(X):
        raise ValueError(
            f"{name} is a scipy.sparse {type(X).__name__}: sparse input is not supported "
            f"(the kernel sums read dense rows); pass {name}.toarray() if it fits in memory"
        )


def _converted(X: ArrayLike, dtype: DTypeLike | None, problem: str) -> np.ndarray:
    """np.asarray(X, dtype), its failures as errors that start with ``problem``."""
    try:
        return np.asarray(X, dtype=dtype)
    except TypeError as err:
        raise NonNumericError(f"{problem}: {err}") from None
    except ValueError as err:
        raise ValueError(f"{problem}: {err}") from None


#: The reader of data files, ``nystrom_kme.datafiles.read_data``, which registers itself
#: when imported (the package's ``__init__`` imports it): a path (str or path-like) is
#: then a data file's rows wherever rows are taken, and this module, which every other
#: imports, does not import the one that reads files.
_DATA_FILE_READER: list[Any] = []


def register_data_file_reader(reader: Any) -> None:
    """Make ``reader(path)`` (returning a row source) the way paths are read."""
    _DATA_FILE_READER[:] = [reader]


def is_path(X: object) -> bool:
    """Whether ``X`` names a file: a ``str`` or an ``os.PathLike``.

    >>> import pathlib
    >>> is_path("ref.csv"), is_path(pathlib.Path("ref.csv")), is_path([[1.0]])
    (True, True, False)
    """
    return isinstance(X, (str, os.PathLike))


def open_data_file(path: str | os.PathLike[str]) -> Any:
    """The row source of the data file at ``path`` (:func:`nystrom_kme.datafiles.read_data`
    with its defaults); ValueError (``DataFileError``) for a file it cannot read."""
    if not _DATA_FILE_READER:  # pragma: no cover - the package imports datafiles
        raise ValueError(f"{os.fspath(path)!r}: reading data files needs nystrom_kme.datafiles (import it)")
    return _DATA_FILE_READER[0](path)


def read_data_file(path: str | os.PathLike[str]) -> np.ndarray:
    """All rows of the data file at ``path`` in one array (for what needs them in memory)."""
    src = open_data_file(path)
    arr = src.to_array()
    if arr is None:
        blocks = [block for _, block in src.chunks()]
        arr = np.concatenate(blocks) if blocks else np.empty((0, 0))
    return np.asarray(arr)


def as_data_matrix(X: ArrayLike, name: str = "X", *, min_rows: int = 1) -> np.ndarray:
    """Return ``X`` as a 2-D float32 or float64 array in the core's layout, or raise.

    float32 and float64 input keep their dtype (no copy when already C-contiguous);
    anything else (ints, bools, lists, Fortran order, views) is converted once; a path
    (str or path-like) is a data file, all of whose rows are read (:func:`read_data_file`).
    The messages follow scikit-learn's wording where its estimator checks expect it.
    """
    if is_path(X):
        X = read_data_file(X)  # type: ignore[arg-type]  # is_path: str or PathLike
    check_not_sparse(X, name)
    if isinstance(X, np.ndarray) and X.dtype in (np.float32, np.float64):
        arr = core_array(X)  # native byte order: a swapped dtype compares unequal
    else:
        problem = f"{name} must be a numeric array"
        raw = _converted(X, None, problem)  # array-likes that refuse numpy functions convert first
        if np.iscomplexobj(raw):
            raise ValueError(f"{name} must be real-valued: Complex data not supported")
        arr = core_array(_converted(raw, np.float64, problem))
    if arr.ndim != 2:
        raise ValueError(f"{name} must be 2-D of shape (n_samples, n_features), got shape {arr.shape}")
    if arr.shape[0] < min_rows:
        raise ValueError(
            f"{name} must have at least {min_rows} row(s), got n_samples = {arr.shape[0]} (shape {arr.shape})"
        )
    if arr.shape[1] < 1:
        raise ValueError(f"{name} has 0 feature(s) (shape={arr.shape}) while a minimum of 1 is required.")
    if not np.isfinite(arr).all():
        raise ValueError(f"{name} contains NaN or inf")
    return arr


@overload
def check_sample_weight(
    sample_weight: None, n: int, *, normalisable: bool = True, name: str = "sample_weight"
) -> None: ...
@overload
def check_sample_weight(
    sample_weight: ArrayLike, n: int, *, normalisable: bool = True, name: str = "sample_weight"
) -> Weights: ...
@overload
def check_sample_weight(
    sample_weight: ArrayLike | None, n: int, *, normalisable: bool = True, name: str = "sample_weight"
) -> Weights | None: ...


def check_sample_weight(
    sample_weight: ArrayLike | None, n: int, *, normalisable: bool = True, name: str = "sample_weight"
) -> Weights | None:
    """Validated per-row weights, or None. In-memory weights (anything but a dask array)
    are checked at once: shape (n,), finite, non-negative, and (``normalisable``) a
    positive sum; they come back as float64. Dask weights are checked block by block
    where they are read."""
    if sample_weight is None:
        return None
    if type(sample_weight).__module__.split(".")[0] == "dask":
        lazy: DaskArray = sample_weight
        if tuple(lazy.shape) != (n,):
            raise ValueError(f"{name} must have shape ({n},), got {tuple(lazy.shape)}")
        return lazy
    problem = f"{name} must be an array of numbers"
    raw = _converted(sample_weight, None, problem)  # array-likes that refuse numpy functions convert first
    if np.iscomplexobj(raw):
        raise ValueError(f"{name} must be real-valued: Complex data not supported")
    w = core_array(_converted(raw, np.float64, problem))
    if w.shape != (n,):
        raise ValueError(f"{name} must have shape ({n},), got {w.shape}")
    if not np.isfinite(w).all():
        raise ValueError(f"{name} contains NaN or inf")
    if (w < 0).any():
        raise ValueError(f"{name} must be non-negative")
    if normalisable and not (w.size and w.max() > 0):  # non-negative: a positive sum, without overflow
        raise ValueError(f"{name} must have a positive sum (all weights are zero)")
    return w


def constant_weights(w: ArrayLike | None) -> bool:
    """Whether ``w`` is an in-memory vector of one positive value: weights that are no
    weights, since only their ratios matter (draws proportional to them are uniform).

    >>> constant_weights(np.full(4, 1e-300)), constant_weights([1.0, 2.0]), constant_weights(None)
    (True, False, False)
    """
    if w is None or type(w).__module__.split(".")[0] == "dask":
        return False
    a = np.asarray(w)
    return bool(a.size and a.min() == a.max() and a.max() > 0)


@overload
def scale_weights(w: NDArray[np.float64]) -> tuple[NDArray[np.float64], float]: ...
@overload
def scale_weights(w: None) -> tuple[None, float]: ...
@overload
def scale_weights(w: Weights) -> tuple[Weights, float]: ...
@overload
def scale_weights(w: Weights | None) -> tuple[Weights | None, float]: ...


def scale_weights(w: Weights | None) -> tuple[Weights | None, float]:
    """(w / c, c) with c the power of two for which max(w) / c lies in [1, 2); (w, 1.0)
    when w is None, all zero or has no finite maximum (the checks where the weights are
    read report the latter).

    The one place where weights are brought to a safe scale before they are
    multiplied by kernel values and summed: weights of any size (down to the
    subnormal 5e-324, up to 1e308) then give the embedding of the same weights
    times any constant. A power of two divides exactly, so weights already in
    [1, 2) are unchanged and other scales give the same sums times c, bit for bit,
    whenever nothing underflows. ``w``: validated weights (numpy, or a dask array,
    whose maximum is computed).

    Examples
    --------
    >>> import numpy as np
    >>> from nystrom_kme._validation import scale_weights
    >>> unit, c = scale_weights(np.array([5e-324, 1e-323]))
    >>> unit.tolist(), c == 2.0 ** -1073
    ([0.5, 1.0], True)
    """
    if w is None:
        return None, 1.0
    scale = power_of_two_scale(float(np.max(w)) if isinstance(w, np.ndarray) else float(w.max().compute()))
    return (w / scale if scale != 1.0 else w), scale


def power_of_two_scale(x: float) -> float:
    """The power of two c with x / c in [1, 2) (c = 2^(e-1) for x = f 2^e, f in
    [0.5, 1)); 1.0 when x is not a positive finite number.

    Examples
    --------
    >>> from nystrom_kme._validation import power_of_two_scale
    >>> power_of_two_scale(1.5), power_of_two_scale(1000.0), power_of_two_scale(0.0)
    (1.0, 512.0, 1.0)
    """
    if not (math.isfinite(x) and x > 0.0):
        return 1.0
    return math.ldexp(0.5, math.frexp(x)[1])


def scale_or_drop_weights(w: Weights | None) -> tuple[Weights | None, float]:
    """:func:`scale_weights`, except that weights of one positive value c (unit weights
    included) are no weights: (None, c). scikit-learn's convention that unit weights are
    no weights, extended to any constant since only the weights' ratios matter, so that
    ``fit(X, sample_weight=np.full(n, c))`` takes the unweighted path and gives its
    landmarks and weights bit for bit (its statistics in units of c). Dask weights are
    scaled only (reading them here would cost a pass).

    Examples
    --------
    >>> from nystrom_kme._validation import scale_or_drop_weights
    >>> scale_or_drop_weights(np.ones(3)), scale_or_drop_weights(np.full(3, 3.0))
    ((None, 1.0), (None, 3.0))
    >>> scale_or_drop_weights(np.array([1.0, 3.0]))
    (array([0.5, 1.5]), 2.0)
    """
    if constant_weights(w):
        assert isinstance(w, np.ndarray)  # in memory: constant_weights read it
        return None, float(w[0])
    return scale_weights(w)


def normalised_weights(w: Weights) -> np.ndarray:
    """w / sum(w), computed from :func:`scale_weights`: no overflow for weights near
    1e308 and no underflow for tiny ones. w: validated, with a positive sum."""
    scaled = scale_weights(w)[0]
    return core_array(scaled / scaled.sum())


def check_positive_int(value: object, name: str) -> int:
    """``value`` as a Python int >= 1 (any integer type, numpy's included; not a bool).

    Examples
    --------
    >>> import numpy as np
    >>> from nystrom_kme._validation import check_positive_int
    >>> check_positive_int(np.int64(100), "ert")
    100
    """
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    if value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return int(value)


def _as_real(value: object) -> float | None:
    """``value`` as a float when it is a real number of any type (Python's, numpy's
    float16/32/64 and integers, ``numbers.Real``; numpy registers its scalar types
    there), else None: bools and strings are no numbers."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        return None
    return float(value)


def check_probability(value: object, name: str) -> float:
    """A level or failure probability: a real number in (0, 1), of any numeric type, as
    a Python float. The one check of ``alpha``, ``delta`` and the like, so that
    ``np.float32(0.05)`` is accepted wherever ``0.05`` is.

    Examples
    --------
    >>> import numpy as np
    >>> from nystrom_kme._validation import check_probability
    >>> check_probability(np.float32(0.25), "alpha")
    0.25
    >>> check_probability(1.0, "alpha")
    Traceback (most recent call last):
    ...
    ValueError: alpha must be in (0, 1), got 1.0
    """
    x = _as_real(value)
    if x is None or not 0.0 < x < 1.0:
        raise ValueError(f"{name} must be in (0, 1), got {value!r}")
    return x


def check_positive_real(value: object, name: str) -> float:
    """A finite real number > 0 of any numeric type (``np.int64(100)`` as ``100``), as
    a Python float.

    Examples
    --------
    >>> import numpy as np
    >>> from nystrom_kme._validation import check_positive_real
    >>> check_positive_real(np.int64(100), "ert")
    100.0
    >>> check_positive_real(float("inf"), "ert")
    Traceback (most recent call last):
    ...
    ValueError: ert must be a positive number, got inf
    """
    x = _as_real(value)
    if x is None or not (math.isfinite(x) and x > 0.0):
        raise ValueError(f"{name} must be a positive number, got {value!r}")
    return x


def check_finite_real(value: object, name: str) -> float:
    """A finite real number of any numeric type, as a Python float.

    Examples
    --------
    >>> import numpy as np
    >>> from nystrom_kme._validation import check_finite_real
    >>> check_finite_real(np.float32(0.5), "temperature")
    0.5
    """
    x = _as_real(value)
    if x is None or not math.isfinite(x):
        raise ValueError(f"{name} must be a finite number, got {value!r}")
    return x


def physical_memory_bytes() -> int:
    """The machine's physical memory in bytes (0 when the system does not say), the
    bound of :func:`check_allocation` (the core's ``detail/memory.hpp`` reads the same)."""
    try:
        return int(os.sysconf("SC_PHYS_PAGES")) * int(os.sysconf("SC_PAGE_SIZE"))
    except (AttributeError, ValueError, OSError):  # not POSIX, or the name is unknown
        return 0


def check_allocation(n_bytes: float, what: str) -> None:
    """Refuse, before any work, a computation whose arrays need more than the machine's
    physical memory: numpy would end it later in a bare MemoryError, and where the
    system overcommits, a request beyond memory is not even refused but fails on first
    touch. ``what`` names the argument and the size, e.g. ``"n_permutations=2**40"``.

    Examples
    --------
    >>> from nystrom_kme._validation import check_allocation
    >>> check_allocation(1e6, "a small array")
    >>> check_allocation(1e30, "n_permutations=1e27")
    Traceback (most recent call last):
    ...
    ValueError: n_permutations=1e27 is too large: it needs 1e+30 bytes, more than this machine's ...
    """
    total = physical_memory_bytes()
    if total > 0 and n_bytes > total:
        raise ValueError(
            f"{what} is too large: it needs {n_bytes:.3g} bytes, more than this machine's {total:.3g} bytes of memory"
        )


#: The least a permutation costs in every permutation test of the package: its split's
#: state in the core (32 bytes), one statistic and one null value per kernel (float64).
MIN_BYTES_PER_PERMUTATION = 48


def check_n_permutations(value: object, name: str = "n_permutations", *, bytes_each: float = 0.0) -> int:
    """A permutation count: a positive integer whose ``value + 1`` permutations (the
    observed split is one) fit in memory at ``bytes_each`` bytes each (at least
    :data:`MIN_BYTES_PER_PERMUTATION`; a caller that knows more, e.g. ``8 * (m + K)``
    for an (m, B + 1) block of split sums over K kernels, passes it). An impossible
    count is refused before any work, naming it, instead of a bare MemoryError at the
    first large array.

    Examples
    --------
    >>> from nystrom_kme._validation import check_n_permutations
    >>> check_n_permutations(200)
    200
    >>> check_n_permutations(2**60)
    Traceback (most recent call last):
    ...
    ValueError: n_permutations=1152921504606846976 is too large: it needs 5.53e+19 bytes, ...
    """
    B = check_positive_int(value, name)
    each = max(float(bytes_each), float(MIN_BYTES_PER_PERMUTATION))
    check_allocation((B + 1) * each, f"{name}={B}")
    return B


def check_random_state(random_state: RandomStateLike, name: str = "random_state") -> np.random.Generator:
    """The one seed rule of the package: None (fresh entropy), a non-negative int, a
    numpy SeedSequence, a numpy Generator (used as is, so draws continue from it), or
    a legacy numpy RandomState (a seed is drawn from it, as scikit-learn users pass)."""
    if isinstance(random_state, np.random.Generator):
        return random_state
    if random_state is None or isinstance(random_state, np.random.SeedSequence):
        return np.random.default_rng(random_state)
    if isinstance(random_state, np.random.RandomState):
        return np.random.default_rng(int(random_state.randint(0, 2**31 - 1)))
    if isinstance(random_state, (bool, np.bool_)) or not isinstance(random_state, numbers.Integral):
        raise ValueError(
            f"{name} must be None, a non-negative int, a numpy SeedSequence or Generator, got {random_state!r}"
        )
    if random_state < 0:
        raise ValueError(f"{name} must be a non-negative int seed, got {random_state!r}")
    return np.random.default_rng(int(random_state))


#: Exclusive upper bounds of the seeds drawn for generators outside numpy. The core's
#: take any uint64; the permutation tests' splits draw below SPLIT_SEED_BOUND and the
#: samplers below SAMPLER_SEED_BOUND, as they always have: numpy maps one 64-bit word
#: to a value that depends on the bound, so one bound for both would change the splits
#: or the landmarks of every seeded call. goodpoints takes a 31-bit seed.
SPLIT_SEED_BOUND = 2**63
SAMPLER_SEED_BOUND = 2**63 - 1
GOODPOINTS_SEED_BOUND = 2**31 - 1


def draw_seed(rng: np.random.Generator, bound: int) -> int:
    """The one way a seed for another generator is drawn: the next integer in
    [0, ``bound``) from ``rng`` (a Generator from :func:`check_random_state`).

    Examples
    --------
    >>> import numpy as np
    >>> from nystrom_kme._validation import SPLIT_SEED_BOUND, draw_seed
    >>> draw_seed(np.random.default_rng(0), SPLIT_SEED_BOUND)
    5874934615388537135
    >>> int(np.random.default_rng(0).integers(0, 2**63))
    5874934615388537135
    """
    return int(rng.integers(0, bound))


class NotFittedError(ValueError, AttributeError):
    """An estimator was used before ``fit``: a ValueError and an AttributeError, as
    scikit-learn's ``NotFittedError`` (so ``hasattr`` checks and sklearn tools work).

    Examples
    --------
    >>> import nystrom_kme as nk
    >>> try:
    ...     nk.NystromKME()([[0.0, 0.0]])
    ... except nk.NotFittedError as err:
    ...     print(isinstance(err, ValueError), isinstance(err, AttributeError))
    True True
    >>> hasattr(nk.NystromKME(), "weights_")
    False
    """


def check_is_fitted(estimator: object, attribute: str = "weights_") -> None:
    """Raise :class:`NotFittedError` unless ``estimator`` has the fitted ``attribute``."""
    if not hasattr(estimator, attribute):
        raise NotFittedError(f"this {type(estimator).__name__} is not fitted yet; call fit(X) first")


_MAX_N_THREADS = 2**31 - 1  # the core's int


def n_threads_arg(n_threads: int | None) -> int:
    """None -> 0 (the default thread count), else a positive int below 2**31. The core
    caps counts above the CPUs the process may use (results do not depend on it)."""
    if n_threads is None:
        return 0
    n = check_positive_int(n_threads, "n_threads")
    if n > _MAX_N_THREADS:
        raise ValueError(
            f"n_threads must be at most {_MAX_N_THREADS} (counts above the CPUs "
            f"available are capped anyway), got {n_threads!r}"
        )
    return n


def common_dtype(*arrays: np.ndarray) -> list[np.ndarray]:
    """Cast to float64 unless every array is float32 (the core needs one dtype), in the
    core's layout (see core_array: arrays unpickled on a Dask worker may be misaligned)."""
    if all(a.dtype == np.float32 for a in arrays):
        return [core_array(a) for a in arrays]
    return [core_array(a, np.float64) for a in arrays]
