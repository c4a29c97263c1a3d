"""Kernel mean embeddings as weighted point sets: the base class, the empirical
embedding (paper eq. 2) and RKHS inner products and distances. The Nyström
embedding (eq. 5) is in :mod:`nystrom_kme.nystrom`.

An embedding is stored as a weighted point set, mu = sum_j w_j phi(z_j), with
``support_`` (m, d), ``weights_`` (m,) and the resolved ``kernel_``. Evaluations,
inner products, norms and distances are streaming sums in the compiled core:
no matrix larger than a block is ever formed. Evaluations take any row source
(:mod:`nystrom_kme.sources`) and read it block by block; :meth:`~KernelMeanEmbedding.evaluate_chunks`
also hands the values back block by block, so evaluating a file of any length takes
O(block) memory.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from . import _core
from ._columns import check_feature_names, column_names, fitted_feature_names, keep_feature_names
from ._compensated import fsum_dot
from ._estimator import ParamsMixin
from ._scaling import Scaling, same_scaling
from ._validation import (
    RandomStateLike,
    as_data_matrix,
    check_is_fitted,
    check_random_state,
    check_sample_weight,
    common_dtype,
    n_threads_arg,
    normalised_weights,
)
from .cuda.arrays import is_cuda_array
from .kernels import Kernel, get_kernel
from .persistence import persistable, save
from .sources import RowSource, SourceLike, as_rows, as_source, scaled


class KernelMeanEmbedding:
    """Base class: a fitted embedding mu = sum_j weights_[j] phi(support_[j]).

    Attributes (after ``fit``)
    --------------------------
    support_ : ndarray of shape (m, n_features), float32 or float64
    weights_ : ndarray of shape (m,), float64
    kernel_ : Kernel, with a numeric bandwidth
    n_samples_ : int
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (n_features_in_,), dtype object
        Only when fitted on data with column names (a DataFrame, a data file's header);
        evaluations of data with other names, or in another order, are refused.

    Examples
    --------
    >>> import numpy as np, nystrom_kme as nk
    >>> X = np.random.default_rng(0).normal(size=(1000, 2))
    >>> emb = nk.EmpiricalKME(nk.Gaussian(1.0)).fit(X)
    >>> isinstance(emb, nk.KernelMeanEmbedding)
    True
    >>> support, weights, kernel = emb.fitted()
    >>> support.shape, round(float(weights.sum()), 12), kernel
    ((1000, 2), 1.0, Gaussian(bandwidth=1.0))
    >>> emb([[0.0, 0.0]]).round(3)                      # mu(y) = sum_j w_j k(x_j, y)
    array([0.498])
    >>> round(emb.norm(), 3), round(emb.inner(emb), 3)
    (0.577, 0.333)
    """

    support_: np.ndarray
    weights_: np.ndarray
    kernel_: Kernel
    n_samples_: int
    n_features_in_: int
    #: support, weights, kernel and the scaling of the inputs (``scaling_``, None without)
    _embedding: tuple[np.ndarray, np.ndarray, Kernel, Scaling | None]

    def _check_fitted(self) -> None:
        check_is_fitted(self, "_embedding")

    def _names(self) -> tuple[str, ...] | None:
        """The fitted column names (``feature_names_in_``), or None."""
        return fitted_feature_names(self)

    def _keep_names(self, names: Sequence[str] | np.ndarray | None) -> None:
        """Set ``feature_names_in_`` to ``names``, or remove it for data without names."""
        keep_feature_names(self, names)

    def _source(
        self, X: SourceLike, name: str, chunk_rows: int | None = None, scaling: Scaling | None = None
    ) -> RowSource:
        """``X`` as a row source, its column names checked against the fitted ones: a
        DataFrame's before it is converted (a frame with other names can hold anything,
        NaN from a reindex included), a data file's once its header is read. Then seen
        through ``scaling`` (the fit's ``scaling_``, from the caller's :meth:`_snapshot`):
        every input after a fit with ``standardize=`` meets the model in its units."""
        fitted = self._names()
        if fitted is not None and not isinstance(X, (str, os.PathLike, RowSource)):
            check_feature_names(fitted, column_names(X, name), owner=type(self).__name__, what=name)
        src = as_source(X, name, chunk_rows=chunk_rows)
        check_feature_names(fitted, src.feature_names, owner=type(self).__name__, what=src.name)
        if scaling is not None and src.n_features is not None and src.n_features != scaling.center.shape[0]:
            raise ValueError(  # before an in-memory array is scaled, in scikit-learn's words
                f"{src.name} has {src.n_features} features, but {type(self).__name__} is expecting "
                f"{scaling.center.shape[0]} features as input"
            )
        return scaled(src, scaling)

    def _publish(self) -> None:
        """Make the fitted support, weights, kernel and scaling what evaluations use, as
        one object swapped in at once (see :meth:`fitted`)."""
        self._embedding = (self.support_, self.weights_, self.kernel_, self.__dict__.get("scaling_"))

    def _snapshot(self) -> tuple[np.ndarray, np.ndarray, Kernel, Scaling | None]:
        """:meth:`fitted` and the scaling of the inputs (None without), read at once."""
        self._check_fitted()
        return self._embedding

    def fitted(self) -> tuple[np.ndarray, np.ndarray, Kernel]:
        """(support (m, d), weights (m,), kernel) of the current fit, read at once.

        Evaluations, inner products and MMDs use this snapshot, so a thread that
        refits the estimator while others evaluate it is safe: each reader sees the
        old or the new embedding, never a mix.
        """
        support, weights, kernel, _ = self._snapshot()
        return support, weights, kernel

    def __call__(self, Y: SourceLike) -> np.ndarray:
        """Evaluate the embedding: mu(y) = sum_j w_j k(z_j, y) for each row y of Y.

        Parameters
        ----------
        Y : array-like of shape (n_points, n_features), or a row source
            An array, or rows read block by block: a memmap, an HDF5 or zarr dataset,
            chunks, a dask array, any :class:`~nystrom_kme.sources.RowSource` (see
            :meth:`evaluate_chunks`, which also returns the values block by block).

        Returns
        -------
        ndarray of shape (n_points,), float64
            A CuPy array on Y's device when Y is a CUDA array (CuPy, PyTorch, ...).
        """
        if is_cuda_array(Y):
            return next(self.evaluate_chunks(Y))[1]
        parts = [values for _, values in self.evaluate_chunks(Y)]
        return parts[0] if len(parts) == 1 else np.concatenate(parts) if parts else np.empty(0)

    def evaluate_chunks(self, Y: SourceLike, *, chunk_rows: int | None = None) -> Iterator[tuple[int, np.ndarray]]:
        """mu(y) at the rows of Y, block by block as Y is read: (first row, values) pairs
        in row order, each block's values computed when it is read, so that evaluating
        a file of any length (e.g. :func:`nystrom_kme.datafiles.read_data`) takes the
        memory of one block. The embedding is read once, when this is called: a refit
        meanwhile does not change the values.

        Parameters
        ----------
        Y : array-like of shape (n_points, n_features), or a row source
            As for :meth:`__call__`; an in-memory array is one block.
        chunk_rows : int or None
            Rows per block of array-like sources (memmaps, HDF5, zarr; default ~16 MiB).

        Returns
        -------
        iterator of (int, ndarray of shape (rows,), float64)
            The values of each block equal ``self(block)`` bit for bit.

        Examples
        --------
        >>> import numpy as np, nystrom_kme as nk
        >>> X = np.random.default_rng(0).normal(size=(1000, 2))
        >>> kme = nk.NystromKME(nk.Gaussian(1.0), n_landmarks=30, random_state=0).fit(X)
        >>> chunks = (X[i:i + 300] for i in range(0, 1000, 300))      # any row source
        >>> [(start, len(values)) for start, values in kme.evaluate_chunks(chunks)]
        [(0, 300), (300, 300), (600, 300), (900, 100)]
        >>> bool((np.concatenate([v for _, v in kme.evaluate_chunks(X)]) == kme(X)).all())
        True
        """
        support, weights, kernel, scaling = self._snapshot()
        if is_cuda_array(Y):
            if scaling is not None:
                raise ValueError(
                    "Y: a CUDA array cannot be evaluated by an embedding fitted with standardize= "
                    "(its scaling_ is applied on the host); pass Y as a host array"
                )
            from .cuda.sums import evaluate

            return iter([(0, evaluate(Y, support, weights, kernel))])
        src = self._source(Y, "Y", chunk_rows, scaling)
        _check_width(src, src.n_features, support.shape[1])
        return _evaluations(src, support, weights, kernel, n_threads_arg(getattr(self, "n_threads", None)))

    def inner(self, other: KernelMeanEmbedding) -> float:
        """RKHS inner product <self, other> = w^T K(Z, Z') w'. See :func:`inner_product`."""
        return inner_product(self, other)

    def norm(self) -> float:
        """RKHS norm ||mu||."""
        return math.sqrt(max(inner_product(self, self), 0.0))

    def distance(self, other: KernelMeanEmbedding) -> float:
        """RKHS distance ||self - other|| (the MMD between the two embeddings)."""
        return rkhs_distance(self, other)

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write this fitted embedding to ``path`` (a ``.npz`` file, no pickle); read it
        back with :func:`nystrom_kme.load`. The format is described in
        :mod:`nystrom_kme.persistence`."""
        save(self, path)


def _check_width(src: RowSource, width: int | None, d: int) -> None:
    if width is not None and width != d:
        raise ValueError(f"{src.name} has {width} features but the embedding has {d}")


def _evaluations(
    src: RowSource, support: np.ndarray, weights: np.ndarray, kernel: Kernel, n_threads: int
) -> Iterator[tuple[int, np.ndarray]]:
    """(start, mu(block)) for each block of ``src``: one core call per block."""
    core, w = kernel.to_core(), weights.reshape(-1, 1)
    for start, block in src.chunks():
        _check_width(src, block.shape[1], support.shape[1])
        Y, S = common_dtype(block, support)
        yield start, _core.kernel_sums(Y, S, w, core, n_threads)[:, 0]


def _parts(embedding: KernelMeanEmbedding) -> tuple[np.ndarray, np.ndarray, Kernel, Scaling | None]:
    if not isinstance(embedding, KernelMeanEmbedding):
        raise ValueError(f"expected a fitted embedding, got {type(embedding).__name__}")
    return embedding._snapshot()


def check_same_scaling(a: Scaling | None, b: Scaling | None, what: str = "the embeddings") -> None:
    """ValueError unless two embeddings see their inputs through the same scaling
    (``scaling_`` of ``standardize=``): supports in different units are different points."""
    if same_scaling(a, b):
        return
    how = (
        "one has a scaling_ from standardize=, the other none"
        if a is None or b is None
        else "their scaling_ centres or scales differ"
    )
    raise ValueError(
        f"{what} were fitted on differently standardised columns ({how}), so their supports are in "
        "different units; fit them with one scaling (standardise the data once beforehand, or fit "
        "without standardize=)"
    )


def inner_product(a: KernelMeanEmbedding, b: KernelMeanEmbedding, *, n_threads: int | None = None) -> float:
    """<mu_a, mu_b> in the RKHS, by one streaming pass over both supports.

    Costs O(m_a m_b d) time and O(min(m_a, m_b)) extra memory. Both embeddings must
    use the same kernel (same type and bandwidth) and see their inputs through the same
    scaling (``scaling_`` of ``standardize=``: both None, or equal centres and scales).

    Examples
    --------
    >>> import numpy as np, nystrom_kme as nk
    >>> X = np.random.default_rng(0).normal(size=(500, 2))
    >>> a = nk.EmpiricalKME(nk.Gaussian(1.0)).fit(X)
    >>> bool(np.isclose(nk.inner_product(a, a), a.norm() ** 2))
    True
    """
    Za, wa, ka, sa = _parts(a)
    Zb, wb, kb, sb = _parts(b)
    if ka != kb:
        raise ValueError(f"the embeddings use different kernels: {ka!r} and {kb!r}")
    check_same_scaling(sa, sb, "inner_product")
    if Za.shape[1] != Zb.shape[1]:
        raise ValueError(f"the embeddings live in R^{Za.shape[1]} and R^{Zb.shape[1]}")
    check_feature_names(a._names(), b._names(), owner=f"the first {type(a).__name__}", what="the second embedding")
    if Za.shape[0] > Zb.shape[0]:  # the smaller support is the output side
        Za, wa, Zb, wb = Zb, wb, Za, wa
    Za, Zb = common_dtype(Za, Zb)
    s = _core.kernel_sums(Za, Zb, wb.reshape(-1, 1), ka.to_core(), n_threads_arg(n_threads))
    return fsum_dot(wa, s[:, 0])


def squared_distance(a: KernelMeanEmbedding, b: KernelMeanEmbedding, *, n_threads: int | None = None) -> float:
    """||mu_a - mu_b||^2 = <a, a> + <b, b> - 2 <a, b>, clamped at 0 against round-off.

    Examples
    --------
    >>> import numpy as np, nystrom_kme as nk
    >>> rng = np.random.default_rng(0)
    >>> a = nk.EmpiricalKME(nk.Gaussian(1.0)).fit(rng.normal(size=(500, 2)))
    >>> b = nk.EmpiricalKME(nk.Gaussian(1.0)).fit(rng.normal(size=(500, 2)) + 2.0)
    >>> nk.squared_distance(a, a), nk.squared_distance(a, b) > 0.3
    (0.0, True)
    """
    d2 = (
        inner_product(a, a, n_threads=n_threads)
        + inner_product(b, b, n_threads=n_threads)
        - 2.0 * inner_product(a, b, n_threads=n_threads)
    )
    return max(float(d2), 0.0)


def rkhs_distance(a: KernelMeanEmbedding, b: KernelMeanEmbedding, *, n_threads: int | None = None) -> float:
    """||mu_a - mu_b||, the MMD between the two embeddings (see :func:`squared_distance`).

    Examples
    --------
    >>> import numpy as np, nystrom_kme as nk
    >>> rng = np.random.default_rng(0)
    >>> a = nk.EmpiricalKME(nk.Gaussian(1.0)).fit(rng.normal(size=(500, 2)))
    >>> b = nk.EmpiricalKME(nk.Gaussian(1.0)).fit(rng.normal(size=(500, 2)) + 2.0)
    >>> d = nk.rkhs_distance(a, b)
    >>> bool(np.isclose(d ** 2, nk.squared_distance(a, b)))
    True
    """
    return math.sqrt(squared_distance(a, b, n_threads=n_threads))


@persistable
class EmpiricalKME(ParamsMixin, KernelMeanEmbedding):
    """Empirical kernel mean embedding mu_hat = (1/n) sum_i phi(x_i) (paper eq. 2).

    Parameters
    ----------
    kernel : Kernel or str, default="gaussian"
        A Kernel instance or a name; radial kernels given by name use the median
        heuristic for their bandwidth.
    random_state : None, int or numpy.random.Generator
        Only used by the median heuristic.
    n_threads : int or None
        OpenMP threads for the core (None: all); results do not depend on it.

    Examples
    --------
    >>> import numpy as np, nystrom_kme as nk
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(2000, 3))
    >>> emp = nk.EmpiricalKME(nk.Gaussian(1.0)).fit(X)
    >>> nys = nk.NystromKME(nk.Gaussian(1.0), n_landmarks=100, random_state=0).fit(X)
    >>> emp.distance(nys) < 0.05                     # ||mu_hat - mu_hat_m||, streamed
    True
    """

    def summary(self) -> dict[str, Any]:
        """What ``nystrom-kme info`` prints: the embedding's fields as JSON data."""
        support, _, kernel = self.fitted()
        return {
            "kernel": repr(kernel),
            "n_samples": int(support.shape[0]),
            "n_features": int(support.shape[1]),
            "norm": self.norm(),
        }

    def __init__(
        self, kernel: Kernel | str = "gaussian", *, random_state: RandomStateLike = None, n_threads: int | None = None
    ) -> None:
        self.kernel = kernel
        self.random_state = random_state
        self.n_threads = n_threads

    def fit(self, X: ArrayLike, y: object = None, *, sample_weight: ArrayLike | None = None) -> EmpiricalKME:
        """Store X (n, d), in memory, and the weights 1/n (or ``sample_weight`` normalised).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Dense rows (scipy.sparse input is refused).
        y : ignored
            Not used (unsupervised); accepted for scikit-learn pipelines.
        sample_weight : array-like of shape (n_samples,), optional, keyword only
            Non-negative weights of any scale (only their ratios matter).

        Returns
        -------
        self
        """
        X, names = as_rows(X, "X")
        X = as_data_matrix(X, "X")
        n = X.shape[0]
        n_threads_arg(self.n_threads)
        rng = check_random_state(self.random_state)
        self.kernel_ = get_kernel(self.kernel).resolve(X, rng)
        self.support_ = X
        w = check_sample_weight(sample_weight, n)
        self.weights_ = np.full(n, 1.0 / n) if w is None else normalised_weights(w)
        self.n_samples_ = n
        self.n_features_in_ = X.shape[1]
        self._keep_names(names)
        self._publish()
        return self

    def _fitted_summary(self) -> str | None:
        if not hasattr(self, "weights_"):
            return None
        return f"{self.n_samples_} points in R^{self.n_features_in_}, kernel={self.kernel_!r}"

    def _state(self) -> dict[str, Any]:
        """The fitted state, read at once: ``kernel``, ``support`` (n, d), ``weights`` (n,),
        ``n_samples``, ``feature_names`` (or None). NotFittedError before a fit. The inverse of :meth:`_from_state`."""
        support, weights, kernel = self.fitted()
        return {
            "kernel": kernel,
            "support": support,
            "weights": weights,
            "n_samples": support.shape[0],
            "feature_names": self.__dict__.get("feature_names_in_"),
        }

    @classmethod
    def _from_state(cls, params: dict[str, Any], state: dict[str, Any]) -> EmpiricalKME:
        """The fitted estimator ``cls(**params)`` with the state :meth:`_state` returns (the
        hook :mod:`nystrom_kme.persistence` loads with, after checking the state).

        Examples
        --------
        >>> import numpy as np, nystrom_kme as nk
        >>> emp = nk.EmpiricalKME(nk.Gaussian(1.0)).fit(np.eye(3))
        >>> nk.EmpiricalKME._from_state(emp.get_params(), emp._state())(np.eye(3)).round(3)
        array([0.579, 0.579, 0.579])
        """
        est = cls(**params)
        support = state["support"]
        est.__dict__.update(
            kernel_=state["kernel"],
            support_=support,
            weights_=state["weights"],
            n_samples_=state["n_samples"],
            n_features_in_=support.shape[1],
        )
        est._keep_names(state.get("feature_names"))
        est._publish()
        return est


__all__ = ["EmpiricalKME", "KernelMeanEmbedding", "inner_product", "rkhs_distance", "squared_distance"]
