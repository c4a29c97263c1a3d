"""numpy's BLAS and LAPACK on one thread around the factorisations of the bounds
(and of the ``"auto"`` landmark search).

``numpy.linalg.eigh`` of the subsample's kernel matrix is most of the time of
:func:`~nystrom_kme.bounds.suggest_n_landmarks`. With its default threads,
OpenBLAS thrashes on a busy machine (14-19 s at load 5 against 0.65 s on one
thread, issue 21; ``python -m bench.contention --calls suggest``), and its thread
count changes the last bits of the results. One thread makes them the same for
any thread setting and costs little on an idle machine (the matrices are at most
``max_samples`` = 1000 square by default). The package's own OpenMP threads (the
kernel sums, ``n_threads``) are not affected.
"""

from __future__ import annotations

from contextlib import AbstractContextManager

from threadpoolctl import threadpool_limits


def one_blas_thread() -> AbstractContextManager[object]:
    """A context manager under which numpy's BLAS/LAPACK use one thread.

    Examples
    --------
    >>> import numpy as np
    >>> from nystrom_kme._blas import one_blas_thread
    >>> with one_blas_thread():
    ...     w = np.linalg.eigvalsh(np.eye(3))
    >>> w.tolist()
    [1.0, 1.0, 1.0]
    """
    limits: AbstractContextManager[object] = threadpool_limits(limits=1, user_api="blas")
    return limits


__all__ = ["one_blas_thread"]
