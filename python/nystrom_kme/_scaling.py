"""Columns in different units: standardising them as part of a model (``standardize=``),
and the warnings when their scales, or a kernel's bandwidth, leave the kernel blind.

A radial kernel sees the Euclidean distance: one column in thousands beside others in
units carries nearly all of it, and every test, detector and embedding then looks at
that column alone (issue 37: a drift batch with one column's units changed passed as
"no drift", p = 0.886; standardised, p = 0.005). ``standardize=True`` centres each
column and divides it by its standard deviation ("standard"), or by its interquartile
range / 1.349 around the median ("robust", for heavy-tailed columns), with statistics
from data the model may see: the pooled sample of a two-sample test (label-blind, so the
permutation test keeps its level), the reference of a drift detector, the rows a
:class:`~nystrom_kme.NystromKME` is fitted on. The scaling is stored with the model and
applied to every later batch. A column whose scale is 0 (constant) is left at scale 1.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from .defaults import STANDARDIZE_KINDS
from .kernels import Kernel, pairwise_distances
from .sources import RowSource  # the other way round, sources.scaled only names a Protocol

#: The values ``standardize`` takes (True is "standard").
KINDS = STANDARDIZE_KINDS
#: Rows a robust scaling's quantiles come from (at most; a uniform subsample).
ROBUST_ROWS = 100_000
#: The seed of a robust scaling's subsample by default: a constant, so that a test's and a
#: detector's own draws are the same with and without ``standardize``.
SCALING_SEED = 0x5CA1E
#: Rows the unit and bandwidth warnings look at (at most, spread over the sources).
WARNING_ROWS = 500
#: The unit warning: columns holding this share of the squared distances, whose variance
#: is at least UNIT_RATIO times the median column's, and fewer than half the columns.
UNIT_SHARE = 0.9
UNIT_RATIO = 100.0
#: The bandwidth warnings: far below the nearest-neighbour distances (every off-diagonal
#: kernel value ~0) or far above the largest distance (every value ~1).
NARROW, WIDE = 0.02, 200.0


def check_standardize(value: object) -> str | None:
    """None (no scaling), "standard" or "robust" from ``standardize``; ValueError by name."""
    if value is None or value is False:
        return None
    if value is True:
        return "standard"
    if isinstance(value, str) and value in KINDS:
        return value
    raise ValueError(f"standardize must be False, True, 'standard' or 'robust', got {value!r}")


@dataclass(frozen=True)
class Scaling:
    """(x - center) / scale, column by column.

    Examples
    --------
    >>> import numpy as np
    >>> s = Scaling(np.array([1.0, 10.0]), np.array([2.0, 1000.0]), "standard")
    >>> s.apply(np.array([[3.0, 1010.0]])).tolist()
    [[1.0, 1.0]]
    """

    center: np.ndarray
    scale: np.ndarray
    kind: str

    def apply(self, X: np.ndarray) -> np.ndarray:
        A = np.asarray(X)
        if A.ndim != 2 or A.shape[1] != self.center.shape[0]:  # not numpy's broadcasting error
            raise ValueError(f"rows of shape {A.shape} do not fit a scaling of {self.center.shape[0]} columns")
        dtype = A.dtype if A.dtype in (np.float32, np.float64) else np.float64
        with np.errstate(over="ignore"):
            out = (A - self.center) / self.scale
            lost = ~np.isfinite(out)
            if lost.any():  # x - center overflowed (values near the float64 limit): divide first
                out = np.where(lost, A / self.scale - self.center / self.scale, out)
        return np.ascontiguousarray(out, dtype=dtype)

    def check(self, n_features: int) -> None:
        """ValueError unless a (saved) scaling fits ``n_features`` columns: finite centers,
        positive finite scales, a known kind."""
        if self.kind not in KINDS:
            raise ValueError(f"scaling kind must be one of {KINDS}, got {self.kind!r}")
        if self.center.shape != (n_features,) or self.scale.shape != (n_features,):
            raise ValueError(
                f"scaling must have {n_features} centers and scales, got {self.center.shape}, {self.scale.shape}"
            )
        if not (np.isfinite(self.center).all() and np.isfinite(self.scale).all() and (self.scale > 0).all()):
            raise ValueError("scaling must have finite centers and positive finite scales")


def check_scaling(scaling: Scaling | None, standardize: object, n_features: int) -> None:
    """ValueError unless a model's ``scaling`` is the one its ``standardize`` parameter
    gives (a saved file is checked on load): none without it, else a scaling of that kind
    that fits ``n_features`` columns (:meth:`Scaling.check`).

    >>> import numpy as np
    >>> check_scaling(None, False, 2)
    >>> check_scaling(Scaling(np.zeros(2), np.ones(2), "standard"), False, 2)
    Traceback (most recent call last):
    ...
    ValueError: a scaling of kind 'standard' but standardize=False
    """
    kind = check_standardize(standardize)
    if scaling is None:
        if kind is not None:
            raise ValueError(f"standardize={standardize!r} but no scaling")
        return
    if kind != scaling.kind:
        raise ValueError(f"a scaling of kind {scaling.kind!r} but standardize={standardize!r}")
    scaling.check(n_features)


def same_scaling(a: Scaling | None, b: Scaling | None) -> bool:
    """Whether two models' scalings map rows alike: both None, or equal centres and scales
    (the kind only says how they were estimated).

    Examples
    --------
    >>> import numpy as np
    >>> s = Scaling(np.zeros(2), np.ones(2), "standard")
    >>> same_scaling(s, Scaling(np.zeros(2), np.ones(2), "robust")), same_scaling(s, None), same_scaling(None, None)
    (True, False, True)
    """
    if a is None or b is None:
        return a is b
    return bool(np.array_equal(a.center, b.center) and np.array_equal(a.scale, b.scale))


def scaling_state(scaling: Scaling | None) -> dict[str, Any]:
    """A model's saved fields for its scaling: ``scaling_kind``, ``scaling_center`` and
    ``scaling_scale`` (d,); none without one, so that older files load and files of
    models without a scaling are written as before."""
    if scaling is None:
        return {}
    return {"scaling_kind": scaling.kind, "scaling_center": scaling.center, "scaling_scale": scaling.scale}


def scaling_summary(scaling: Scaling | None) -> dict[str, Any]:
    """What ``nystrom-kme info`` shows of a model's scaling (its ``summary()`` fields): the
    kind and each column's centre and scale; nothing without one.

    >>> import numpy as np
    >>> scaling_summary(Scaling(np.array([1.0, 2.0]), np.array([3.0, 4.0]), "robust"))
    {'standardize': 'robust', 'scaling_center': [1.0, 2.0], 'scaling_scale': [3.0, 4.0]}
    """
    if scaling is None:
        return {}
    return {
        "standardize": scaling.kind,
        "scaling_center": [float(v) for v in scaling.center],
        "scaling_scale": [float(v) for v in scaling.scale],
    }


def scaling_from_state(state: dict[str, Any]) -> Scaling | None:
    """The scaling of :func:`scaling_state`'s fields (None without ``scaling_kind``)."""
    if state.get("scaling_kind") is None:
        return None
    return Scaling(
        np.asarray(state["scaling_center"], dtype=np.float64),
        np.asarray(state["scaling_scale"], dtype=np.float64),
        str(state["scaling_kind"]),
    )


def fit_scaling(sources: list[RowSource], kind: str, rng: np.random.Generator | None = None) -> Scaling:
    """The scaling of the rows of ``sources`` together: mean and standard deviation in one
    compensated pass ("standard"), or median and IQR / 1.349 of at most ROBUST_ROWS rows
    drawn uniformly ("robust"; from ``rng``, None: a generator seeded with SCALING_SEED)."""
    if rng is None:
        rng = np.random.default_rng(SCALING_SEED)
    if kind == "standard":
        seen = [0]

        def blocks() -> Iterator[np.ndarray]:  # one pass over the rows, block by block
            seen[0] = 0
            for src in sources:
                for _, b in src.chunks():
                    seen[0] += b.shape[0]
                    yield np.asarray(b, dtype=np.float64)

        total, e = _column_sums(blocks(), lambda b: b)
        count = seen[0]
        mean = np.ldexp(total / count, e)
        # a second pass for the spread: one pass's sum of squares cancels for offset columns;
        # in units of each column's largest |x - mean| (its square overflows beyond 1e154)
        spread, e = _column_sums(blocks(), lambda b: b - mean, squares=True)
        scale = np.ldexp(np.sqrt(spread / max(count - 1, 1)), e)
        return Scaling(mean, np.where(scale > 0, scale, 1.0), kind)
    counts = [s.count_rows() for s in sources]
    n = sum(counts)
    rows = np.sort(rng.choice(n, size=min(n, ROBUST_ROWS), replace=False))
    parts, offset = [], 0
    for src, c in zip(sources, counts):
        mine = rows[(rows >= offset) & (rows < offset + c)] - offset
        if mine.size:
            parts.append(np.asarray(src.take(mine), dtype=np.float64))
        offset += c
    sample = np.concatenate(parts)
    median = np.median(sample, axis=0)
    q1, q3 = np.percentile(sample, [25, 75], axis=0)
    scale = (0.5 * q3 - 0.5 * q1) / (0.5 * 1.349)  # halves: q3 - q1 overflows near the float64 limit
    return Scaling(median, np.where(scale > 0, scale, 1.0), kind)


def _column_sums(blocks: Iterable[np.ndarray], values: Any, squares: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """(s, e) with sum over every block's rows of values(block) (or of its squares) =
    s * 2^e (s * 4^e for squares), column by column: each block is summed in units of a
    power of two above its largest magnitude and the running sum rescaled exactly, so
    that no column overflows however large its values (issue 43: a column of 1e200 was
    scaled by inf and became 0)."""
    total: np.ndarray | None = None
    exp = np.zeros(0, dtype=np.int64)
    for block in blocks:
        v = values(block)
        if v.shape[0] == 0:
            continue
        e = np.frexp(np.max(np.abs(v), axis=0))[1].astype(np.int64)  # |v| < 2^e
        u = np.ldexp(v, -e)
        part = np.einsum("ij,ij->j", u, u) if squares else u.sum(axis=0)
        if total is None:
            total, exp = part, e
            continue
        top = np.maximum(exp, e)
        power = 2 if squares else 1
        total = np.ldexp(total, power * (exp - top)) + np.ldexp(part, power * (e - top))
        exp = top
    assert total is not None
    return total, exp


def peek_rows(src: RowSource, count: int) -> np.ndarray | None:
    """Up to ``count`` rows for the warnings, without a pass over the data: spread over a
    random-access source, spread over the first block of a re-iterable one (a data file:
    one block parsed), None for a one-shot stream (nothing may be consumed)."""
    if src.random_access:
        n = src.count_rows()
        return np.asarray(src.take(np.linspace(0, n - 1, min(n, count)).astype(np.int64)), dtype=np.float64)
    if not src.reiterable:
        return None
    blocks = src.chunks()
    try:
        first = next(iter(blocks), None)
    finally:
        close = getattr(blocks, "close", None)
        if close is not None:
            close()
    if first is None or first[1].shape[0] == 0:
        return None
    block = first[1]
    picks = np.linspace(0, block.shape[0] - 1, min(block.shape[0], count)).astype(np.int64)
    return np.asarray(block[picks], dtype=np.float64)


def column_label(j: int, names: list[str] | None) -> str:
    return repr(names[j]) if names is not None and j < len(names) else f"column {j}"


def warn_units(rows: np.ndarray, names: list[str] | None, where: str, stacklevel: int = 3) -> None:
    """A UserWarning naming the columns that carry most of the squared distances of ``rows``
    (a sample of the data), when their variance dwarfs the others' (different units)."""
    if rows.ndim != 2 or rows.shape[1] < 2 or rows.shape[0] < 3:
        return
    var = np.var(np.asarray(rows, dtype=np.float64), axis=0)
    total = float(var.sum())
    if not total > 0:
        return
    order = np.argsort(-var)
    share = np.cumsum(var[order]) / total
    k = int(np.searchsorted(share, UNIT_SHARE) + 1)
    typical = float(np.median(var))
    if k * 2 > var.size or var[order[k - 1]] < UNIT_RATIO * max(typical, np.finfo(np.float64).tiny):
        return
    named = ", ".join(column_label(int(j), names) for j in order[:k])
    warnings.warn(
        f"{where}: {named} carr{'ies' if k == 1 else 'y'} {share[k - 1]:.1%} of the squared distances "
        f"(variance {var[order[0]]:.3g} against a median column's {typical:.3g}): the kernel sees little "
        "else; pass standardize=True if the columns' units are arbitrary",
        UserWarning,
        stacklevel=stacklevel,
    )


def warn_scales(sources: list[RowSource], kernels: list[Kernel], where: str, stacklevel: int = 2) -> None:
    """The unit warning (:func:`warn_units`) and the bandwidth warnings
    (:func:`warn_bandwidths`, for the given ``kernels`` whose bandwidth is numeric) on up to
    WARNING_ROWS rows spread over ``sources`` (:func:`peek_rows`: no extra pass over the
    data; nothing for a one-shot stream), the columns named as the first source names
    them. ``stacklevel`` as ``warnings.warn``'s, counted from the caller."""
    peeked = [peek_rows(src, WARNING_ROWS // len(sources)) for src in sources]
    if any(rows is None for rows in peeked):
        return
    sample = np.concatenate([rows for rows in peeked if rows is not None])
    names = sources[0].feature_names
    warn_units(sample, list(names) if names else None, where, stacklevel=stacklevel + 2)
    warn_bandwidths(sample, [k for k in kernels if k.is_resolved], where, stacklevel=stacklevel + 2)


def warn_bandwidths(rows: np.ndarray, kernels: list[Kernel], where: str, stacklevel: int = 3) -> None:
    """A UserWarning for each radial kernel whose bandwidth is far below the rows' typical
    nearest-neighbour distance (every off-diagonal value ~0: no evidence of anything) or
    far above their largest distance (every value ~1)."""
    radial = [k for k in kernels if k.radial and k.is_resolved]
    if not radial or rows.shape[0] < 3:
        return
    sample = np.asarray(rows[:500], dtype=np.float64)
    ranges: dict[str, tuple[float, float]] = {}  # each metric's typical nearest and largest distance
    for metric in sorted({k.metric or "euclidean" for k in radial}):
        distances = pairwise_distances(sample, metric)  # scipy's pdist order: the upper triangle by rows
        square = np.full((sample.shape[0], sample.shape[0]), np.inf)
        square[np.triu_indices(sample.shape[0], 1)] = distances
        nearest = np.minimum(square.min(axis=1), square.min(axis=0))
        ranges[metric] = float(np.median(nearest)), float(distances.max())
    for k in radial:
        typical, largest = ranges[k.metric or "euclidean"]
        h = float(k.bandwidth)
        if typical > 0 and h < NARROW * typical:
            warnings.warn(
                f"{where}: {k!r} is {h / typical:.2g} x the rows' typical nearest-neighbour distance "
                f"{typical:.3g}: every kernel value between different rows is ~0, and the test or "
                "embedding sees nothing; use a wider bandwidth (a name, e.g. 'gaussian', takes the median)",
                UserWarning,
                stacklevel=stacklevel,
            )
        elif largest > 0 and h > WIDE * largest:
            warnings.warn(
                f"{where}: {k!r} is {h / largest:.2g} x the rows' largest distance {largest:.3g}: every "
                "kernel value is ~1 and the kernel is nearly constant on the data",
                UserWarning,
                stacklevel=stacklevel,
            )


__all__ = [
    "KINDS",
    "SCALING_SEED",
    "WARNING_ROWS",
    "Scaling",
    "check_scaling",
    "check_standardize",
    "column_label",
    "fit_scaling",
    "same_scaling",
    "scaling_from_state",
    "scaling_state",
    "scaling_summary",
    "warn_bandwidths",
    "warn_scales",
    "warn_units",
]
