"""Which frozen reference should ``nystrom_kme.torch.MMDLoss`` use (issue 46): one whose
attraction term keeps float32 / bfloat16 / TF32 accuracy, at no cost in MMD to the data?

``MMDLoss`` computes ||mu_B - mu_ref||^2 for a batch Y (B, d) against a frozen
mu_ref = sum_j a_j k(l_j, .). Today's default reference (``MMDLoss(X, n_landmarks=m)``)
is a NystromKME on m rows drawn uniformly *without* replacement, weights
alpha = K_m^+ s / n, which cancel (sum |a| >> |sum a| = 1): the attraction term
-2/B sum_ij a_j k(y_i, l_j) and its gradient, evaluated in low precision, carry errors of
eps * sum_j |a_j| k(y, l_j) against a result of the size of |sum_j a_j k(y, l_j)|.

For every data set (n rows, fixed seed; Gaussian kernel, median bandwidth resolved once
on the rows) and m, the references:

* ``nystrom``: today's default (UniformSampling(replace=False), signed weights
  K_m^+ s / n);
* ``nonneg-nystrom``: the same landmarks, the best probability weights (a >= 0,
  sum a = 1; ``nk.compress(X, m, sampler=<those indices>, weights="simplex")``, the
  core's active-set solver ``simplex_weights.hpp``);
* ``compress``: ``nk.compress(X, m, weights="simplex")`` with its default sampler
  (rpcholesky): the library's compression, probability weights;
* ``rpchol-signed``: compress's landmarks with the signed Nystrom weights (separates
  the landmarks' effect from the weights');
* ``nystrom-ridge``: today's landmarks with ridge weights (K_m + lambda I)^-1 s
  (``nk.compress(..., weights="signed", ridge=lambda)``, ``--ridge``): bounded, still
  signed weights.

Columns: m (points actually returned; a pivoted Cholesky may stop short), the number of
nonzero weights, sum |a| / |sum a|, the reference's MMD (not squared) to the *exact*
empirical embedding of all n rows (float64: w^T K_m w - 2 w^T s + 1^T K 1 / n^2 with
s = K(L, X) 1 / n and the last term streamed by the core over all n^2 pairs, the same
formula as ``nk.compression_mmd``, its self term computed once per data set), its ratio
to the ``nystrom`` reference's MMD, and the relative error ||g - g64||_F / ||g64||_F of
the gradient of the attraction term

    g = d/dY [ -2/B sum_ij a_j k(y_i, l_j) ] = -2/(B h^2) [ W L - diag(W 1) Y ],
    W_ij = a_j exp(-(|y_i|^2 + |l_j|^2 - 2 y_i . l_j) / (2 h^2))

for a batch of B rows (half data rows plus noise of 0.05 column s.d., half from a wrong
law: the columns' mean + 0.5 s.d., 1.5 times their s.d., Gaussian), computed by this plain
formula (no upcast) in

* ``f32``: torch float32 throughout (a, L, Y cast to float32);
* ``bf16``: the products Y L^T with Y and L cast to bfloat16 (result rounded to
  bfloat16 as torch returns it, as the loss's ``precision="bf16"`` does), the rest float32;
* ``bf16>f32``: Y and L rounded to bfloat16, their product accumulated *and returned*
  in float32 (what a bf16 GEMM with a float32 output gives): the inputs' rounding alone;
* ``tf32``: Y and L rounded to TF32 (10 mantissa bits, round to nearest) for Y L^T,
  accumulated in float32 (an emulation of a TF32 tensor-core product on the CPU);

against the same formula in float64 (centred: exact to ~1e-13 here). The ``c`` columns
subtract the reference's weighted mean sum_j a_j l_j / sum_j a_j from Y and L first (in
the working precision, float32), as the issue suggests (the loss's CUDA path centres on the
landmarks' plain mean). The verdict: "ok" where the float32 and bf16 errors are <= 1e-3 and
the MMD is at most 1.05 times the nystrom reference's, for the plain and the centred
formula ("plain / centred").

A second table per data set runs the same gradient through the loss's own CUDA algorithm
(``nystrom_kme.torch._device.value_gradient_sums``, the code MMDLoss calls for CUDA
tensors: augmented rows whose product gives the logits, centred on the landmarks' plain
mean, and the weighted sums [w, w (l - c)] as products at the same precision) on the CPU,
its ``precision`` emulated (``_emulated_matmul``: bf16 as it does, TF32 by rounding the
operands; "sdpa-f32" / "sdpa-bf16" through torch's CPU fused attention kernel), against
its own float64 result.

Only the attraction term is measured: the loss's gradient adds the batch's repulsion
(positive weights 1/B^2, no cancellation) and is much smaller than either term near
convergence, so its relative error is larger than these. No GPU is used: bf16 and TF32
products are emulated by torch on the CPU (bf16 through its CPU GEMM, which accumulates
in float32 and rounds the result to bfloat16).

Usage: python -m bench.loss_reference [--n 20000] [--sizes 300 1024 4096]
       [--datasets mixture8 heavy16 image64 normal3] [--factors 1 0.25] [--batch 1024] [--ridge 1e-4] [--seed 0]
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from typing import Any, Callable

import numpy as np

from bench.harness import machine, utc_now

DATASETS = ("mixture8", "heavy16", "image64", "normal3")
SIZES = (300, 1024, 4096)
REFERENCES = ("nystrom", "nonneg-nystrom", "compress", "rpchol-signed", "nystrom-ridge")
ERROR_COLUMNS = ("f32", "bf16", "bf16>f32", "tf32", "f32 c", "bf16 c", "bf16>f32 c", "tf32 c")
TARGET = 1e-3
MMD_SLACK = 1.05


def table(header: list[str], rows: list[list[Any]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


# --------------------------------------------------------------------------- data


def mixture8(rng: np.random.Generator, n: int) -> np.ndarray:
    """8 Gaussian components in d = 8, means uniform in [0, 10]^8 (off the origin), random
    covariances of scales 0.3-1.5, unequal weights."""
    d, c = 8, 8
    means = rng.uniform(0.0, 10.0, size=(c, d))
    p = rng.dirichlet(np.full(c, 2.0))
    comp = rng.choice(c, size=n, p=p)
    X = np.empty((n, d))
    for j in range(c):
        rows = np.flatnonzero(comp == j)
        A = rng.normal(size=(d, d)) * rng.uniform(0.3, 1.5) / math.sqrt(d)
        X[rows] = means[j] + rng.normal(size=(rows.size, d)) @ A
    return X


def heavy16(rng: np.random.Generator, n: int) -> np.ndarray:
    """Student t (3 degrees of freedom) in d = 16, column scales log-spaced 0.1-10, rotated
    by a random orthogonal matrix, offset 3 in every column: heavy tails, anisotropic."""
    d = 16
    T = rng.standard_t(3.0, size=(n, d)) * np.logspace(-1, 1, d)
    Q, _ = np.linalg.qr(rng.normal(size=(d, d)))
    X: np.ndarray = T @ Q.T + 3.0
    return X


def image64(rng: np.random.Generator, n: int) -> np.ndarray:
    """'Image-like' rows in d = 64: sigmoid of a 6-dimensional latent through a random
    linear map, plus noise of 0.05, values in about [0, 1] (mean ~0.5, off the origin)."""
    d, r = 64, 6
    Z = rng.normal(size=(n, r))
    A = rng.normal(size=(r, d)) * 1.5 / math.sqrt(r)
    b = rng.normal(size=d) * 0.5
    return 1.0 / (1.0 + np.exp(-(Z @ A + b))) + 0.05 * rng.normal(size=(n, d))


def normal3(rng: np.random.Generator, n: int) -> np.ndarray:
    """N(0, I_3) + 1: the shape of bench.loss's "weights" section (issue 46's 340-890),
    where few dimensions make K_m ill-conditioned and the Nystrom weights cancel most."""
    return rng.normal(size=(n, 3)) + 1.0


MAKERS: dict[str, Callable[[np.random.Generator, int], np.ndarray]] = {
    "mixture8": mixture8,
    "heavy16": heavy16,
    "image64": image64,
    "normal3": normal3,
}


def batch(rng: np.random.Generator, X: np.ndarray, B: int) -> np.ndarray:
    """Half data rows plus small noise, half rows of a wrong law."""
    sd, mean = X.std(axis=0), X.mean(axis=0)
    half = B // 2
    near = X[rng.choice(X.shape[0], size=half, replace=False)] + 0.05 * sd * rng.normal(size=(half, X.shape[1]))
    wrong = mean + 0.5 * sd + 1.5 * sd * rng.normal(size=(B - half, X.shape[1]))
    return np.concatenate([near, wrong])


# --------------------------------------------------------------------------- gradients


def _tf32(t: Any) -> Any:
    """float32 -> TF32 (10 mantissa bits), round to nearest (ties away), as float32."""
    import torch

    bits = t.contiguous().view(torch.int32)
    return ((bits + 0x1000) & -8192).view(torch.float32)


def attraction_grad(Y: Any, L: Any, a: Any, h: float, centre: Any | None, product: str) -> Any:
    """-2/(B h^2) [W L - diag(W 1) Y], W_ij = a_j k(y_i, l_j), by the plain formula in
    Y's dtype; ``product``: "plain" (Y's dtype), "bf16" or "tf32" for Y L^T only."""
    if centre is not None:
        Y, L = Y - centre, L - centre
    if product == "bf16":
        P = (Y.bfloat16() @ L.bfloat16().T).to(Y.dtype)
    elif product == "bf16in":  # inputs rounded to bfloat16, product accumulated and returned in float32
        P = Y.bfloat16().to(Y.dtype) @ L.bfloat16().to(Y.dtype).T
    elif product == "tf32":
        P = _tf32(Y) @ _tf32(L).T
    else:
        P = Y @ L.T
    d2 = ((Y * Y).sum(1)[:, None] + (L * L).sum(1)[None, :] - 2.0 * P).clamp_min(0.0)
    W = (d2 * (-0.5 / (h * h))).exp() * a[None, :]
    return (W @ L - W.sum(1)[:, None] * Y) * (-2.0 / (Y.shape[0] * h * h))


def gradient_errors(Ynp: np.ndarray, Lnp: np.ndarray, anp: np.ndarray, h: float) -> dict[str, float]:
    """Relative errors of the float32 / bf16 / tf32 gradients, plain and centred."""
    import torch

    cnp = (anp @ Lnp) / anp.sum()
    Y64, L64, a64, c64 = (torch.from_numpy(np.ascontiguousarray(v, dtype=np.float64)) for v in (Ynp, Lnp, anp, cnp))
    g64 = attraction_grad(Y64, L64, a64, h, c64, "plain")
    norm = float(torch.linalg.norm(g64))
    Y32, L32, a32, c32 = (v.float() for v in (Y64, L64, a64, c64))
    out = {}
    for centred in (False, True):
        for product, name in (("plain", "f32"), ("bf16", "bf16"), ("bf16in", "bf16>f32"), ("tf32", "tf32")):
            g = attraction_grad(Y32, L32, a32, h, c32 if centred else None, product)
            err = float(torch.linalg.norm(g.double() - g64)) / norm
            out[name + (" c" if centred else "")] = err
    return out


#: The loss's CUDA precisions measured through its own blocked products (``_device``).
LIBRARY_PRECISIONS = ("highest", "tf32x3", "tf32", "bf16", "sdpa-f32", "sdpa-bf16")


def _emulated_matmul(a: Any, b: Any, precision: str, out: Any | None = None, alpha: float = 1.0) -> Any:
    """``_device.matmul`` with its CUDA float32 precisions emulated on the CPU: "bf16" as
    there (operands cast to bfloat16, torch's bf16 GEMM, result back to float32); "tf32":
    operands rounded to TF32, product in float32; "tf32x3": the three products of the
    operands' TF32 parts, each operand rounded to TF32 (the low parts keep 11 bits there)."""
    import torch

    if a.dtype != torch.float32 or precision == "highest":
        product = a @ b
    elif precision == "bf16":
        product = (a.bfloat16() @ b.bfloat16()).float()
    elif precision == "tf32":
        product = _tf32(a) @ _tf32(b)
    else:  # tf32x3
        a_hi, b_hi = _tf32(a), _tf32(b)
        a_lo, b_lo = _tf32(a - a_hi), _tf32(b - b_hi)
        product = a_hi @ b_lo + a_lo @ b_hi + a_hi @ b_hi
    return product if out is None else out.add_(product, alpha=alpha)


def library_errors(Ynp: np.ndarray, Lnp: np.ndarray, anp: np.ndarray, h: float) -> dict[str, float]:
    """Relative errors of the attraction's gradient through the loss's CUDA algorithm
    (``_device.value_gradient_sums``: augmented products giving the logits, centred on the
    landmarks' mean as MMDLoss does, the weighted sums [w, w (l - c)] also at the
    precision), run on the CPU with the CUDA precisions emulated; float64 through the
    same function as the reference. "sdpa-*": torch's CPU fused attention kernel."""
    import torch

    from nystrom_kme.torch import _device

    Y64, L64, a64 = (torch.from_numpy(np.ascontiguousarray(v, dtype=np.float64)) for v in (Ynp, Lnp, anp))
    c64 = L64.mean(0)
    B = Y64.shape[0]

    def grad(Y: Any, L: Any, a: Any, c: Any, precision: str) -> Any:
        g = torch.zeros_like(Y)
        _device.value_gradient_sums(Y, L, a, c, "gaussian", h, precision=precision, grad_out=g, scale=-2.0 / B)
        return g

    g64 = grad(Y64, L64, a64, c64, "highest")
    norm = float(torch.linalg.norm(g64))
    saved = _device.matmul
    _device.matmul = _emulated_matmul
    out = {}
    try:
        for precision in LIBRARY_PRECISIONS:
            try:
                g = grad(Y64.float(), L64.float(), a64.float(), c64.float(), precision)
                out[precision] = float(torch.linalg.norm(g.double() - g64)) / norm
            except RuntimeError:  # a fused kernel this torch build lacks on the CPU
                out[precision] = float("nan")
    finally:
        _device.matmul = saved
    return out


# --------------------------------------------------------------------------- references


def references(
    X: np.ndarray, kernel: Any, m: int, seed: int, ridge: float, wanted: tuple[str, ...]
) -> dict[str, tuple[np.ndarray, np.ndarray, float]]:
    """{name: (landmarks, weights, seconds to build)}."""
    import nystrom_kme as nk
    from nystrom_kme.sampling import UniformSampling

    out: dict[str, tuple[np.ndarray, np.ndarray, float]] = {}
    t0 = time.perf_counter()
    nys = nk.NystromKME(
        kernel, n_landmarks=m, sampler=UniformSampling(replace=False), random_state=seed, n_threads=1
    ).fit(X)
    out["nystrom"] = (nys.landmarks_, nys.weights_, time.perf_counter() - t0)
    idx = np.asarray(nys.landmark_indices_)  # rows of X: the same landmarks for the other weights
    common: dict[str, Any] = dict(kernel=kernel, n_threads=1, compute_mmd=False)
    if "nonneg-nystrom" in wanted:
        t0 = time.perf_counter()
        res = nk.compress(X, m, sampler=idx, weights="simplex", **common)
        out["nonneg-nystrom"] = (res.points, res.weights, time.perf_counter() - t0)
    if "nystrom-ridge" in wanted:
        t0 = time.perf_counter()
        res = nk.compress(X, m, sampler=idx, weights="signed", ridge=ridge, **common)
        out["nystrom-ridge"] = (res.points, res.weights, time.perf_counter() - t0)
    if "compress" in wanted or "rpchol-signed" in wanted:
        t0 = time.perf_counter()
        res = nk.compress(X, m, weights="simplex", random_state=seed, **common)
        out["compress"] = (res.points, res.weights, time.perf_counter() - t0)
        if "rpchol-signed" in wanted:
            t0 = time.perf_counter()
            sig = nk.compress(X, res.n_points, sampler=res.indices, weights="signed", **common)
            out["rpchol-signed"] = (sig.points, sig.weights, time.perf_counter() - t0)
        if "compress" not in wanted:
            del out["compress"]
    return {name: out[name] for name in REFERENCES if name in out}


def mmd_to_rows(X: np.ndarray, L: np.ndarray, w: np.ndarray, kernel: Any, self_term: float) -> float:
    """Exact MMD between sum_j w_j delta_{l_j} and the empirical measure of the rows X
    (float64; the self term 1^T K 1 / n^2 given)."""
    from nystrom_kme import _core
    from nystrom_kme.compression import _mmd

    core = kernel.to_core()
    L = np.ascontiguousarray(L, dtype=np.float64)
    Km = _core.kernel_matrix(L, L, core, 1)
    s = _core.kernel_row_sums(L, X, core, 1) / X.shape[0]
    return _mmd(np.asarray(w, dtype=np.float64), Km, s, self_term)


# --------------------------------------------------------------------------- main


def dataset_section(name: str, factor: float, args: argparse.Namespace) -> str:
    import nystrom_kme as nk
    from nystrom_kme import _core
    from nystrom_kme.torch._ops import cancellation

    rng = np.random.default_rng([args.seed, DATASETS.index(name)])
    X = np.ascontiguousarray(MAKERS[name](rng, args.n))
    n, d = X.shape
    median = float(nk.get_kernel("gaussian").resolve(X, np.random.default_rng(args.seed)).bandwidth)
    h = median * factor
    kernel = nk.Gaussian(h)
    t0 = time.perf_counter()
    self_term = float(_core.kernel_total_sum(X, X, kernel.to_core(), 1)) / n / n
    t_self = time.perf_counter() - t0
    Y = batch(np.random.default_rng([args.seed, 99]), X, args.batch)
    header = [
        "m", "reference", "points", "nonzero", "sum abs(a) / abs(sum a)", "MMD", "/nystrom",
        "f32", "bf16", "bf16>f32", "tf32", "f32 c", "bf16 c", "bf16>f32 c", "tf32 c", "ok (plain / centred)",
        "build s",
    ]  # fmt: skip
    rows, lib_rows = [], []
    for m in args.sizes:
        if m > n:
            continue
        refs = references(X, kernel, m, args.seed, args.ridge, tuple(args.references))
        base = None
        for ref, (L, w, secs) in refs.items():
            mmd = mmd_to_rows(X, L, w, kernel, self_term)
            if ref == "nystrom":
                base = mmd
            errs = gradient_errors(Y, L, w, h)
            lib = library_errors(Y, L, w, h)
            lib_rows.append([m, ref, *(f"{lib[p]:.1e}" for p in LIBRARY_PRECISIONS)])
            ratio = mmd / base if base else float("nan")
            fine = ratio <= MMD_SLACK
            plain = fine and max(errs["f32"], errs["bf16"]) <= TARGET
            centred = fine and max(errs["f32 c"], errs["bf16 c"]) <= TARGET
            rows.append(
                [
                    m,
                    ref,
                    L.shape[0],
                    int(np.count_nonzero(w)),
                    f"{cancellation(np.asarray(w, dtype=np.float64)):.3g}",
                    f"{mmd:.3e}",
                    f"{ratio:.3f}",
                    *(f"{errs[k]:.1e}" for k in ERROR_COLUMNS),
                    f"{'ok' if plain else 'no'} / {'ok' if centred else 'no'}",
                    f"{secs:.1f}",
                ]
            )
            print(f"  [{name} x{factor:g} m={m} {ref}: {secs:.1f} s]", file=sys.stderr, flush=True)
    return (
        f"### {name}: n = {n}, d = {d}, Gaussian h = {h:.4g} ({factor:g} x the median {median:.4g}), "
        f"B = {args.batch}\n\n"
        f"Self term 1^T K 1 / n^2 = {self_term:.6f} ({t_self:.1f} s, every pair, float64).\n\n"
        + table(header, rows)
        + "\n\nThe same gradient through the loss's CUDA algorithm (``_device.value_gradient_sums``: "
        "augmented products, centred on the landmarks' mean, the weighted sums at the precision too), "
        "run on the CPU with the precisions emulated; relative to its float64 result:\n\n"
        + table(["m", "reference", *LIBRARY_PRECISIONS], lib_rows)
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.loss_reference", description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=20_000, help="rows per data set")
    parser.add_argument("--sizes", type=int, nargs="+", default=list(SIZES), help="numbers of landmarks m")
    parser.add_argument("--datasets", nargs="+", default=list(DATASETS), choices=DATASETS)
    parser.add_argument("--references", nargs="+", default=list(REFERENCES), choices=REFERENCES)
    parser.add_argument(
        "--factors", type=float, nargs="+", default=[1.0, 0.25], help="bandwidths, times the median heuristic's"
    )
    parser.add_argument("--batch", type=int, default=1024, help="B")
    parser.add_argument("--ridge", type=float, default=1e-4, help="lambda of nystrom-ridge")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if "nystrom" not in args.references:
        args.references.insert(0, "nystrom")
    try:
        import torch
    except ImportError:
        print("bench.loss_reference: needs torch", file=sys.stderr)
        return 2
    torch.set_num_threads(1)
    print(f"# bench.loss_reference (issue 46), {utc_now()}\n\nCPU: {machine()}; torch {torch.__version__}; "
          f"one thread (core and torch)\n", flush=True)  # fmt: skip
    print(
        f"n = {args.n}, m in {args.sizes}, bandwidths {args.factors} x median, B = {args.batch}, "
        f"seed {args.seed}, ridge {args.ridge:g}. "
        f"Errors: ||g - g64||_F / ||g64||_F of the attraction's gradient; 'c': centred on the "
        f"reference's weighted mean. ok: f32 and bf16 <= {TARGET:g} and MMD <= {MMD_SLACK} x nystrom's.\n",
        flush=True,
    )
    for name in args.datasets:
        for factor in args.factors:
            t0 = time.perf_counter()
            print(dataset_section(name, factor, args), flush=True)
            print(f"\n({name}, {factor:g} x median: {time.perf_counter() - t0:.1f} s)\n", flush=True)
    print(f"load at the end: {machine()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
