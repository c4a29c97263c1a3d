"""Distributed fitting with dask: Nyström embeddings, MMD and the two-sample test on
dask arrays chunked by rows (optional extra: ``pip install "nystrom-kme[dask]"``).

Only the O(n m d) row sums run on the workers: each task calls the compiled core
(``kernel_row_sums`` / ``kernel_sums``, GIL released) on one row block of X
against the landmarks, and the (m,) or (m, B + 1) partial sums are added by a
tree reduction (``split_every`` partials per node). The client draws the
landmark indices with the same random draws as the in-memory fit, gathers those
rows with ``X[idx].compute()`` (O(m d) traffic), and solves for the weights
(O(m^3)). With the same landmarks the result equals the in-memory fit to
round-off in the sums (~1e-16 relative).

Computations run on the active dask scheduler: a ``dask.distributed.Client`` when
one is set up (e.g. on a ``LocalCluster``), else dask's local scheduler.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import _core
from ._validation import as_data_matrix, check_positive_int, check_random_state, n_threads_arg
from .chunked import CompensatedSum, is_dask_array
from .kernels import MEDIAN_SUBSET, Kernel, get_kernel
from .sampling import FixedLandmarks, UniformSampling, validate_indices

#: Partial sums combined per node of the reduction tree.
SPLIT_EVERY = 8


def _dask() -> Any:
    try:
        import dask
        import dask.array
    except ImportError as err:  # pragma: no cover - only without the extra
        raise ImportError("dask arrays need the optional extra: pip install 'nystrom-kme[dask]'") from err
    return dask


def _as_rows(X: Any, name: str) -> Any:
    """X as a 2-D float32/float64 dask array with one chunk across the features."""
    if X.ndim != 2:
        raise ValueError(f"{name} must be 2-D of shape (n_samples, n_features), got shape {X.shape}")
    if any(np.isnan(c) for c in X.chunks[0]):
        X = X.compute_chunk_sizes()
    if X.shape[0] < 1 or X.shape[1] < 1:
        raise ValueError(f"{name} must have at least one row and one feature, got shape {X.shape}")
    if X.dtype not in (np.float32, np.float64):
        X = X.astype(np.float64)
    if len(X.chunks[1]) > 1:
        X = X.rechunk({1: -1})
    return X


def take(X: Any, indices: np.ndarray) -> np.ndarray:
    """Rows X[indices] (any order, repeats allowed) of a dask array, on the client."""
    uniq, inverse = np.unique(np.asarray(indices, dtype=np.int64), return_inverse=True)
    rows = np.asarray(X[uniq].compute())
    return as_data_matrix(rows[inverse.reshape(-1)], "X")


def _block_sums(block: np.ndarray, L: np.ndarray, kernel: Kernel, n_threads: int,
                bits: np.ndarray | None, label_args: tuple[int, int, int] | None) -> np.ndarray:
    """On a worker: K(L, block) 1 (m,), or K(L, block) W (m, B + 1) with the label
    weights W of this block's rows (from their packed permutation bits)."""
    block = as_data_matrix(block, "X")
    if block.dtype != L.dtype:
        block, L = block.astype(np.float64), L.astype(np.float64)
    core = kernel.to_core()
    if bits is None:
        return _core.kernel_row_sums(L, block, core, n_threads)
    from .two_sample import _weights_for

    n1, n2, cols = label_args  # type: ignore[misc]
    W = _weights_for(bits, 0, bits.shape[0], n1, n2, cols)
    return _core.kernel_sums(L, block, W, core, n_threads)


def _add(*parts: np.ndarray) -> np.ndarray:
    acc = CompensatedSum(parts[0].shape)
    for p in parts:
        acc.add(p)
    return acc.value()


def row_sums(X: Any, L: np.ndarray, kernel: Kernel, n_threads: int = 0, *,
             bits: np.ndarray | None = None, label_args: tuple[int, int, int] | None = None,
             split_every: int = SPLIT_EVERY) -> np.ndarray:
    """sum over row blocks of K(L, X_block) 1 (or the label-weighted sums), as one
    dask graph: a task per block on the workers, then a tree reduction."""
    dask = _dask()
    from dask import delayed

    L_d = delayed(L, pure=True)  # one key, shipped once per worker
    kernel_d = delayed(kernel, pure=True)
    blocks = X.to_delayed().ravel()
    starts = np.concatenate([[0], np.cumsum(X.chunks[0])])
    parts = [delayed(_block_sums, pure=True)(
        b, L_d, kernel_d, n_threads,
        None if bits is None else bits[starts[i]:starts[i + 1]], label_args)
        for i, b in enumerate(blocks)]
    while len(parts) > 1:
        parts = [delayed(_add, pure=True)(*parts[i:i + split_every])
                 for i in range(0, len(parts), split_every)]
    (total,) = dask.compute(parts[0])
    return np.asarray(total)


def fit_dask(est: Any, X: Any, sample_weight: Any = None) -> Any:
    """NystromKME.fit on a dask array: the in-memory fit's draws, sums on the workers."""
    if sample_weight is not None:
        raise ValueError("sample_weight is not supported with a dask array")
    rcond, n_threads = est._solver_args()
    X = _as_rows(X, "X")
    n, d = X.shape
    probe = np.empty((0, d), dtype=X.dtype)
    points, policy, n_given = est._landmark_spec(probe)
    m = est._resolve_m(n, n_given, streaming="a dask array")
    rng = check_random_state(est.random_state)
    kernel = get_kernel(est.kernel)
    if not kernel.is_resolved:  # the draws of median_distance(X, random_state=rng)
        rows = rng.choice(n, size=MEDIAN_SUBSET, replace=False) if n > MEDIAN_SUBSET else np.arange(n)
        kernel = kernel.resolve(take(X, rows), rng)
    est.n_landmarks_report_ = None
    if points is not None:
        indices, landmarks = None, points
    else:
        if isinstance(policy, FixedLandmarks):
            indices = policy.indices
        elif type(policy) is UniformSampling:
            if policy.replace:
                indices = rng.integers(0, n, size=m)
            elif m > n:
                raise ValueError(f"n_landmarks={m} exceeds n_samples={n} (sampling without replacement)")
            else:
                indices = rng.choice(n, size=m, replace=False)
        else:
            raise ValueError(f"sampler {policy!r} needs all of X in memory; with a dask array use "
                             "'uniform' or explicit landmarks")
        indices = validate_indices(indices, n, "the indices returned by the sampler")
        landmarks = np.ascontiguousarray(take(X, indices))
    total = row_sums(X, landmarks, kernel, n_threads)
    return est._store(kernel, policy, indices, landmarks, CompensatedSum.of(total), float(n), n,
                      rcond, n_threads)


def _pair(X: Any, Y: Any) -> tuple[Any, Any]:
    da = _dask().array
    X = _as_rows(X if is_dask_array(X) else da.from_array(as_data_matrix(X, "X")), "X")
    Y = _as_rows(Y if is_dask_array(Y) else da.from_array(as_data_matrix(Y, "Y")), "Y")
    if X.shape[1] != Y.shape[1]:
        raise ValueError(f"X has {X.shape[1]} features but Y has {Y.shape[1]}")
    if X.dtype != Y.dtype:
        X, Y = X.astype(np.float64), Y.astype(np.float64)
    return X, Y


def two_sample_test_dask(X: Any, Y: Any, *, kernel: Kernel | str, method: str,
                         n_landmarks: int | None, n_permutations: int, random_state: Any,
                         n_threads: int | None) -> Any:
    """The Nyström permutation test on dask arrays: landmarks and permutations drawn on
    the client as in memory, K(L, Z_block) W_block on the workers, tree reduction of the
    (m, B + 1) sums, the statistics on the client. The packed labels (n (B + 1) bits)
    live on the client and travel with the blocks."""
    from .embedding import default_n_landmarks
    from .mmd import _pooled_kernel
    from .two_sample import TwoSampleResult, _label_bits, _nystrom_statistics, _split_seed

    if method != "nystrom":
        raise ValueError("dask arrays support method='nystrom' only (the exact test is O(n^2))")
    X, Y = _pair(X, Y)
    n1, n2 = X.shape[0], Y.shape[0]
    if n1 < 2 or n2 < 2:
        raise ValueError("X and Y need at least 2 points each")
    B = check_positive_int(n_permutations, "n_permutations")
    nt = n_threads_arg(n_threads)
    rng = check_random_state(random_state)
    n = n1 + n2
    splits = _core.RandomSplits(n1, n2, B, _split_seed(rng))  # the same splits as in memory
    k = _pooled_kernel(kernel, X, Y, rng, take)
    m = default_n_landmarks(n) if n_landmarks is None else check_positive_int(n_landmarks, "n_landmarks")
    if m > n:
        raise ValueError(f"n_landmarks={m} exceeds n1 + n2 = {n}")
    bits = _label_bits(splits)
    Z = _dask().array.concatenate([X, Y])
    L = np.ascontiguousarray(take(Z, np.sort(rng.choice(n, size=m, replace=False))))
    S = row_sums(Z, L, k, nt, bits=bits, label_args=(n1, n2, B + 1))
    stats = _nystrom_statistics(L, S, k.to_core(), nt)
    observed, null = float(stats[0]), np.asarray(stats[1:])
    pvalue = (1.0 + np.count_nonzero(null >= observed)) / (1.0 + B)
    return TwoSampleResult(statistic=observed, pvalue=float(pvalue), null_distribution=null,
                           method=method, kernel=k, n_landmarks=m, n_permutations=B)


__all__ = ["fit_dask", "row_sums", "take", "two_sample_test_dask"]
