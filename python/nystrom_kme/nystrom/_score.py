"""The score of a Nyström embedding on data (for :meth:`nystrom_kme.NystromKME.score`)
and the warning when embeddings of different kernels are scored on the same data.

A score 2 <mu, mu_hat_X> - ||mu||^2 lives in the embedding's own RKHS: for one kernel,
differences of scores on X are differences of squared distances to mu_hat_X, but across
kernels (or bandwidths) they compare numbers in different spaces, and the widest kernel,
under which all distributions look alike, wins. Scores cannot know about each other, so
the warning comes from a short memory of the held-out sets already scored (their SHA-256,
never the data) and the kernel each was scored with: a ``GridSearchCV`` over kernels
scores every candidate on the same folds and is warned at the second kernel. Only
in-memory numpy data are remembered, in this process (not across the worker processes
of ``n_jobs``).
"""

from __future__ import annotations

import hashlib
import threading
import warnings
from collections import OrderedDict

import numpy as np

from .. import _core
from .._compensated import fsum_dot
from .._validation import Weights, common_dtype
from ..kernels import Kernel
from ..sources import ArraySource, RowSource

#: How many held-out sets (with their weights) are remembered.
REMEMBERED = 64

_lock = threading.Lock()
_scored: OrderedDict[bytes, set[str]] = OrderedDict()  # fingerprint -> kernels scored on it


def embedding_score(
    landmarks: np.ndarray,
    weights: np.ndarray,
    kernel: Kernel,
    src: RowSource,
    sample_weight: Weights | None,
    n_threads: int,
) -> float:
    """2 <mu, mu_hat_X> - ||mu||^2 for mu = sum_j weights[j] phi(landmarks[j]) (m, d) and
    the (weighted) empirical embedding mu_hat_X of the rows of ``src``: O(n m d), streamed.

    Examples
    --------
    >>> import numpy as np, nystrom_kme as nk
    >>> from nystrom_kme.nystrom._score import embedding_score
    >>> from nystrom_kme.sources import as_source
    >>> L = np.zeros((1, 1))    # mu = phi(0): score = 2 k(0, 0) - k(0, 0) = 1 on X = {0}
    >>> embedding_score(L, np.ones(1), nk.Gaussian(1.0), as_source(L), None, 1)
    1.0
    """
    acc, total = src.kernel_sums(landmarks, kernel, weights=sample_weight, n_threads=n_threads)
    mean_eval = fsum_dot(weights, acc.value()) / total
    (L,) = common_dtype(landmarks)
    norm2 = fsum_dot(weights, _core.kernel_sums(L, L, weights.reshape(-1, 1), kernel.to_core(), n_threads)[:, 0])
    return 2.0 * mean_eval - norm2


def _fingerprint(src: RowSource, sample_weight: Weights | None) -> bytes | None:
    """SHA-256 of in-memory rows and their weights (None for other sources)."""
    if not isinstance(src, ArraySource) or not (sample_weight is None or isinstance(sample_weight, np.ndarray)):
        return None
    X = src.to_array()
    assert X is not None  # an ArraySource holds its rows
    digest = hashlib.sha256(f"{X.dtype.str}{X.shape}".encode())
    digest.update(np.ascontiguousarray(X).data.cast("B"))
    if sample_weight is not None:
        digest.update(np.ascontiguousarray(sample_weight).data.cast("B"))
    return digest.digest()


def warn_if_other_kernel(kernel: str, src: RowSource, sample_weight: Weights | None) -> None:
    """Remember that ``kernel`` (the estimator's kernel parameter, as text) scored these
    rows, and warn when another kernel scored the same rows before."""
    key = _fingerprint(src, sample_weight)
    if key is None:
        return
    with _lock:
        seen = _scored.pop(key, set())
        others = sorted(seen - {kernel})
        seen.add(kernel)
        _scored[key] = seen  # most recent last
        while len(_scored) > REMEMBERED:
            _scored.popitem(last=False)
    if others:
        warnings.warn(
            f"NystromKME.score: these rows were also scored with kernel {others[0]}, now {kernel}; "
            "scores compare embeddings of one kernel (each lives in its own RKHS, and the widest "
            "kernel scores best): choose the kernel by another criterion, then n_landmarks or "
            "sampler by score",
            UserWarning,
            stacklevel=3,
        )


__all__ = ["REMEMBERED", "embedding_score", "warn_if_other_kernel"]
