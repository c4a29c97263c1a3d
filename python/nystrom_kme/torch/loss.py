"""``MMDLoss``: the squared MMD between a batch and a frozen kernel mean embedding."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Union

import numpy as np
import torch

from .. import _core
from .._validation import RandomStateLike, as_data_matrix
from ..bounds import default_n_landmarks
from ..compression import sampled_estimator
from ..embedding import EmpiricalKME, KernelMeanEmbedding, inner_product
from ..kernel_collection import KernelCollection
from ..kernels import Kernel, get_kernel
from ..nystrom import NystromKME
from ..sources import as_source
from ._device import KERNELS, PRECISIONS
from ._ops import mmd_to_embedding

KernelSpec = Union[Kernel, str, KernelCollection, Sequence[Union[Kernel, str]], None]

#: How a reference fitted from rows picks its landmarks: randomly pivoted Cholesky (among
#: at most ``compression.sampler_rows`` rows), the weights Nyström's. Uniform landmarks'
#: weights cancelled up to 6660x (sum |a| / |sum a|) and cost float32 and TF32 gradients
#: their accuracy; these cancel 2.4x at most, at an MMD to the data no larger in 19 of 21
#: settings (bench/RESULTS.md, issue 46).
REFERENCE_SAMPLER = "rpcholesky"

WITHIN = ("exact", "nystrom")
AGGREGATES = ("sum", "max")


class MMDLoss(torch.nn.Module):  # type: ignore[misc]  # torch is not followed by mypy
    """Squared MMD between a batch and a frozen reference embedding, differentiable in
    the batch: a loss for generative models against a data set of any size.

    For a batch y_1 .. y_B and a fitted embedding mu_ref = sum_j a_j k(l_j, .) (a
    :class:`~nystrom_kme.NystromKME` fitted once on the data, streamed), the loss is

        ||mu_B - mu_ref||^2 = ||mu_B||^2 - 2 <mu_B, mu_ref> + ||mu_ref||^2,

    mu_B = (1/B) sum_i k(y_i, .). ||mu_ref||^2 is computed once; the attraction
    <mu_B, mu_ref> = (1/B) sum_ij a_j k(y_i, l_j) costs O(B m d) per step, never the
    data's size. The forward pass computes the gradient with respect to the batch in the
    same pass and the backward pass only scales it: no B x m or B x B matrix is kept
    for backward, and none is formed whole. CPU tensors of up to 1024 features go
    through the compiled core's fused sums; CUDA tensors, and wider CPU batches (where
    torch's BLAS overtakes the core), through blocked products that form
    B x ``block_size`` at a time.

    Parameters
    ----------
    reference : fitted KernelMeanEmbedding, sequence of them, or array-like / Tensor of shape (n, d)
        The frozen embedding(s) (e.g. :class:`~nystrom_kme.NystromKME`; several: one per
        kernel, see ``aggregate``), or rows to fit one :class:`~nystrom_kme.NystromKME`
        per kernel of ``kernel`` from (sharing one set of landmarks).
    kernel : Kernel, str, KernelCollection, sequence of them, or None
        The kernel(s), radial: Gaussian, Laplacian (Euclidean; its gradient at distance 0
        is taken as 0, the subgradient), Matern (nu 0.5, 1.5, 2.5), inverse
        multiquadric. With fitted references: None, or their kernels (checked). With
        rows: None means "gaussian" (median bandwidth); a collection's bandwidths are set
        from the rows.
    within_batch : {"exact", "nystrom"}, default="exact"
        ``"exact"``: ||mu_B||^2 from all B^2 pairs of the batch (the repulsion).
        ``"nystrom"``: from the batch's embedding projected on the reference's landmarks,
        s^T K_m^+ s / B^2 with s = K(L, Y) 1, O(B m) instead of O(B^2); the loss is then
        ||P mu_B - mu_ref||^2. Stores a factor of K_m^+ (up to m x m float64) per kernel.
    unbiased : bool, default=False
        ``within_batch="exact"`` only: drop the diagonal, ||mu_B||^2 estimated by
        sum_{i != i'} k(y_i, y_i') / (B (B - 1)) (the loss may then be negative).
    aggregate : {"sum", "max"}, default="sum"
        How the losses of several kernels combine.
    n_landmarks : int or None, default=None
        For fitting from rows: the number of landmarks, at most; the first kernel's
        randomly pivoted Cholesky (``REFERENCE_SAMPLER``, among at most
        :func:`~nystrom_kme.compression.sampler_rows` rows) picks them, and stops short
        when the rest of K is within rounding; the weights are Nyström's. They cancel
        little (``sum(abs(a))`` at most 2.4 ``abs(sum(a))``; uniform landmarks' reached 6660x), so
        float32 and TF32 products stay accurate (bench/RESULTS.md, issue 46). None:
        NystromKME's default m. At least the number of rows: every row, the exact
        empirical embedding (:class:`~nystrom_kme.EmpiricalKME`, weights 1/n), so that
        the loss is the exact squared MMD to the rows.
    random_state : None, int or numpy Generator
        For fitting from rows: the landmarks' draws and the bandwidths (median heuristic).
    precision : {"highest", "tf32x3", "tf32", "bf16", "sdpa-f32", "sdpa-bf16"} or None, default=None
        The float32 matrix products of the CUDA path: IEEE float32; each operand split
        in two TF32 parts (float32 accuracy on tensor cores); one TF32 product; one
        bfloat16 product; for the Gaussian kernel, one fused attention pass of torch's
        kernels in float32 or bfloat16 (no B x block matrix; the other kernels then use
        "highest" or "bf16"). None: "highest" when ``torch.get_float32_matmul_precision()``
        is "highest" when the loss is built, else "tf32" (``precision_``). CPU tensors
        always use the core (float32 kernel values, float64 sums).
    block_size : int or None, default=None
        Points per block of the blocked products (their largest temporary is B x
        block_size); None: 2^22 / B on a GPU, 2^21 / B on the CPU, at least 256.
    n_threads : int or None
        OpenMP threads of the core (None: all).

    Attributes
    ----------
    kernels_ : list of Kernel
        One per reference embedding, numeric bandwidths.
    reference_norms2_ : list of float
        ||mu_ref||^2 per kernel.
    n_features_ : int
    precision_ : str
        The precision of the CUDA path's float32 products.

    Notes
    -----
    Batches of float16 or bfloat16 are computed in float32 (their gradients come back in
    their dtype through autograd). Keep the module on the batch's device and dtype
    (``loss.to(device, dtype)`` moves the landmarks, weights and centres, which are
    buffers), or every call copies them. CUDA batches are not checked for NaN or inf (a
    check would wait for the device at every step). First derivatives only: the backward formula
    scales the gradient saved by the forward pass, and differentiating that gradient again
    (``create_graph=True``, then a gradient penalty or a Hessian) raises a RuntimeError
    saying so. ``torch.compile`` keeps the loss as one operator and compiles one graph
    for every batch size; eager programs never import torch's compiler
    (see ``nystrom_kme.torch._ops``).

    A Nyström reference on uniform landmarks can cancel (a Gaussian one with a few hundred
    landmarks in low dimension: ``sum_j abs(w_j)`` = 10^2-10^3 times ``abs(sum_j w_j)``,
    against 1.5 for a Matérn one); one fitted from rows here does not (see n_landmarks).
    On CPU tensors float32 batches then meet the weights in float64 (``_ops.cancellation``
    of at least ``_ops.CANCELLATION_UPCAST``: the terms with the reference's weights, against
    its float64 landmarks), so their loss and gradients agree with float64 ones to float32
    rounding (2e-7 relative, measured: bench/RESULTS.md, issue 46; they were 1e-4 to 3e-2
    off), at about the float32 cost when the within-batch term dominates. On CUDA tensors
    float32 products stay float32 (or TF32/bf16 as ``precision`` says) and the errors stay
    relative to ``sum_j abs(w_j) k(y, l_j)``: pass float64 batches where that matters.

    Examples
    --------
    >>> import numpy as np, torch, nystrom_kme as nk
    >>> from nystrom_kme.torch import MMDLoss
    >>> X = np.random.default_rng(0).normal(size=(5_000, 2))
    >>> ref = nk.NystromKME(nk.Gaussian(1.0), n_landmarks=200, random_state=0).fit(X)
    >>> loss_fn = MMDLoss(ref)
    >>> y = torch.zeros(64, 2, dtype=torch.float64, requires_grad=True)  # all at one point
    >>> loss = loss_fn(y)
    >>> loss.backward()
    >>> round(loss.item(), 2), y.grad.shape
    (0.34, torch.Size([64, 2]))
    >>> y2 = torch.from_numpy(np.random.default_rng(1).normal(size=(64, 2))).requires_grad_()
    >>> bool(loss_fn(y2) < 0.05)                                # a sample of the same law
    True
    """

    kernels_: list[Kernel]
    reference_norms2_: list[float]
    n_features_: int
    precision_: str

    def __init__(
        self,
        reference: Any,
        kernel: KernelSpec = None,
        *,
        within_batch: str = "exact",
        unbiased: bool = False,
        aggregate: str = "sum",
        n_landmarks: int | None = None,
        random_state: RandomStateLike = None,
        precision: str | None = None,
        block_size: int | None = None,
        n_threads: int | None = None,
    ) -> None:
        super().__init__()
        if within_batch not in WITHIN:
            raise ValueError(f"within_batch must be one of {WITHIN}, got {within_batch!r}")
        if not isinstance(unbiased, bool):
            raise TypeError(f"unbiased must be a bool, got {unbiased!r}")
        if unbiased and within_batch != "exact":
            raise ValueError("unbiased=True needs within_batch='exact' (the Nystrom batch term has no diagonal)")
        if aggregate not in AGGREGATES:
            raise ValueError(f"aggregate must be one of {AGGREGATES}, got {aggregate!r}")
        if precision is not None and precision not in PRECISIONS:
            raise ValueError(f"precision must be None or one of {PRECISIONS}, got {precision!r}")
        if block_size is not None and not _positive_int(block_size):
            raise ValueError(f"block_size must be None or a positive int, got {block_size!r}")
        if n_threads is not None and (isinstance(n_threads, bool) or not isinstance(n_threads, int)):
            raise ValueError(f"n_threads must be None or an int, got {n_threads!r}")
        self.within_batch = within_batch
        self.unbiased = unbiased
        self.aggregate = aggregate
        self.precision = precision
        if precision is None:  # read here: torch.compile cannot trace the setting's getter
            precision = "highest" if _float32_matmul_precision() == "highest" else "tf32"
        self.precision_ = precision
        self.block_size = block_size
        self.n_threads = n_threads
        embeddings = _embeddings(reference, kernel, n_landmarks, random_state)
        self.kernels_, self.reference_norms2_ = [], []
        self._landmark_names: list[str] = []
        self._shapes: list[float] = []  # each kernel's shape parameter, read once (forward is traced)
        seen: list[np.ndarray] = []
        for i, emb in enumerate(embeddings):
            support, weights, k = emb.fitted()
            if getattr(emb, "scaling_", None) is not None:  # the batches would meet it unscaled
                raise ValueError(
                    f"reference {i}: an embedding fitted with standardize= has its landmarks in "
                    "standardised units; fit it on rows scaled beforehand, and scale the batches alike"
                )
            if k.name not in KERNELS:
                raise ValueError(
                    f"reference {i}: the loss computes the gradients of Euclidean radial kernels "
                    f"({', '.join(KERNELS)}), not {k!r}"
                )
            where = next((j for j, s in enumerate(seen) if s is support), None)
            if where is None:
                where = len(seen)
                seen.append(support)
                self.register_buffer(f"landmarks_{where}", torch.from_numpy(np.ascontiguousarray(support)))
            self._landmark_names.append(f"landmarks_{where}")
            centre = np.mean(support, axis=0, dtype=np.float64)
            self.register_buffer(f"weights_{i}", torch.from_numpy(np.asarray(weights, dtype=np.float64).copy()))
            self.register_buffer(f"centre_{i}", torch.from_numpy(centre))
            self.register_buffer(f"projector_{i}", torch.from_numpy(_projector(support, k, within_batch)))
            self.kernels_.append(k)
            self._shapes.append(float(k.to_core().shape))
            self.reference_norms2_.append(float(inner_product(emb, emb)))
        widths = {s.shape[1] for s in seen}
        if len(widths) != 1:
            raise ValueError(f"the reference embeddings live in spaces of different dimensions: {sorted(widths)}")
        self.n_features_ = widths.pop()

    def extra_repr(self) -> str:
        kernels = ", ".join(repr(k) for k in self.kernels_)
        return f"kernels=[{kernels}], within_batch={self.within_batch!r}, unbiased={self.unbiased}"

    def forward(self, y: torch.Tensor) -> torch.Tensor:
        """The loss (0-d tensor, y's dtype; float32 for half-precision batches).

        Parameters
        ----------
        y : Tensor of shape (B, n_features_), floating point, on any device
        """
        if not isinstance(y, torch.Tensor):
            raise TypeError(f"y must be a torch.Tensor, got {type(y).__name__}")
        if not y.is_floating_point() or y.is_complex():
            raise TypeError(f"y must hold floating-point numbers, got {y.dtype}")
        if y.ndim != 2 or y.shape[1] != self.n_features_:
            raise ValueError(f"y must have shape (B, {self.n_features_}), got {tuple(y.shape)}")
        n_batch = y.shape[0]
        if n_batch < (2 if self.unbiased else 1):
            raise ValueError(f"y needs at least {2 if self.unbiased else 1} rows, got {n_batch}")
        if y.dtype in (torch.float16, torch.bfloat16):
            y = y.float()
        losses = []
        for i, k in enumerate(self.kernels_):
            # on the CPU the landmarks go as stored: the operator meets float32 batches with
            # them in float64 where the weights cancel (_ops.CANCELLATION_UPCAST) and converts
            # them there only (a float64 copy per step of 16384 x 768 landmarks was 100 MB)
            on_cpu = y.device.type == "cpu"
            landmarks = getattr(self, self._landmark_names[i]).to(device=y.device, dtype=None if on_cpu else y.dtype)
            weights = getattr(self, f"weights_{i}").to(device=y.device, dtype=torch.float64)
            centre = getattr(self, f"centre_{i}").to(device=y.device, dtype=y.dtype)
            projector = getattr(self, f"projector_{i}").to(device=y.device, dtype=torch.float64)
            loss, _ = mmd_to_embedding(
                y,
                landmarks,
                weights,
                centre,
                projector,
                self.reference_norms2_[i],
                k.name,
                float(k.bandwidth),
                self._shapes[i],
                self.within_batch,
                self.unbiased,
                self.precision_,
                self.block_size or 0,  # 0: sized from the batch inside (no recompile per batch size)
                0 if self.n_threads is None else self.n_threads,
            )
            losses.append(loss)
        if len(losses) == 1:
            return losses[0]
        stacked = torch.stack(losses)
        return stacked.sum() if self.aggregate == "sum" else stacked.max()


def _projector(support: np.ndarray, kernel: Kernel, within_batch: str) -> np.ndarray:
    """Phi (r x m float64) with Phi^T Phi = K_m^+ on the r pivots of the core's pivoted
    Cholesky of K_m (``nystrom_feature_sums`` of the identity) for ``"nystrom"``, else
    empty: ||P mu_B||^2 = ||Phi s||^2 / B^2 loses half the digits that s^T K_m^+ s would."""
    if within_batch != "nystrom":
        return np.empty((0, 0))
    m = support.shape[0]
    features, _, _ = _core.nystrom_feature_sums(np.ascontiguousarray(support), np.eye(m), kernel.to_core())
    return np.ascontiguousarray(features)


def _embeddings(
    reference: Any, kernel: KernelSpec, n_landmarks: int | None, random_state: RandomStateLike
) -> list[KernelMeanEmbedding]:
    """The fitted reference embeddings: given ones (their kernels checked against
    ``kernel``), or one per kernel fitted on the rows of ``reference``: NystromKME on
    landmarks drawn uniformly without replacement (shared by the kernels), or, for
    ``n_landmarks`` at least the number of rows, EmpiricalKME (every row, exact)."""
    if isinstance(reference, KernelMeanEmbedding):
        fitted = [reference]
    elif (
        isinstance(reference, (list, tuple))
        and reference
        and all(isinstance(r, KernelMeanEmbedding) for r in reference)
    ):
        fitted = list(reference)
    else:
        fitted = []
    if fitted:
        for emb in fitted:
            emb.fitted()  # NotFittedError when not fitted
        if kernel is not None:
            wanted = _kernel_list(kernel)
            have = [emb.fitted()[2] for emb in fitted]
            if not all(w.is_resolved for w in wanted) or wanted != have:
                raise ValueError(f"kernel {kernel!r} is not the kernel of the reference embeddings ({have!r})")
        return list(fitted)
    if isinstance(reference, torch.Tensor):
        reference = reference.detach().cpu().numpy()
    if isinstance(reference, (list, tuple)) and any(isinstance(r, KernelMeanEmbedding) for r in reference):
        raise ValueError("reference: a sequence must hold fitted embeddings only")
    X = as_data_matrix(reference, "reference", min_rows=2)
    if isinstance(kernel, KernelCollection):
        kernels = list(kernel.resolve(X, random_state))
    else:
        kernels = _kernel_list("gaussian" if kernel is None else kernel)
    every_row = isinstance(n_landmarks, int) and not isinstance(n_landmarks, bool) and n_landmarks >= X.shape[0]
    if every_row:  # the empirical embedding: exact, no draw, no solve
        return [EmpiricalKME(k, random_state=random_state).fit(X) for k in kernels]
    m = default_n_landmarks(X.shape[0]) if n_landmarks is None else n_landmarks
    first, rows = sampled_estimator(as_source(X), kernels[0], m, REFERENCE_SAMPLER, random_state, None)
    first.fit(rows)
    rest = [NystromKME(k, sampler=first.landmarks_, random_state=random_state).fit(X) for k in kernels[1:]]
    return [first, *rest]


def _kernel_list(kernel: KernelSpec) -> list[Kernel]:
    if isinstance(kernel, KernelCollection):
        return list(kernel.kernels)
    if isinstance(kernel, (Kernel, str)):
        return [get_kernel(kernel)]
    if isinstance(kernel, Sequence) and kernel:
        return [get_kernel(k) for k in kernel]
    raise ValueError(f"kernel must be a Kernel, a name, a KernelCollection or a sequence of them, got {kernel!r}")


def _positive_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1


def _float32_matmul_precision() -> str:
    try:
        return str(torch.get_float32_matmul_precision())
    except RuntimeError:  # torch's legacy and new TF32 settings both used: take the safe one
        return "highest"
