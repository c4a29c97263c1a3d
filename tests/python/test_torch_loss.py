"""nystrom_kme.torch.MMDLoss against a dense torch implementation written here (every
kernel from its definition, autograd for the gradient), torch.autograd.gradcheck, and
closed forms. Skipped without torch; the CUDA tests also need a GPU (marker ``gpu``)."""

from __future__ import annotations

import copy
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import nystrom_kme as nk

torch = pytest.importorskip("torch")

from nystrom_kme import _core as nk_core  # noqa: E402
from nystrom_kme.torch import MMDLoss, _ops  # noqa: E402  after the skip

KERNELS = ["gaussian", "laplacian", "matern32", "matern52", "inverse_multiquadric", "rational_quadratic"]


def dense_kernel(name: str, A, B, h: float):
    """k(a_i, b_j) from the definitions; the distance's gradient is 0 at 0 (clamp)."""
    r = ((A[:, None, :] - B[None, :, :]) ** 2).sum(-1).clamp_min(1e-300).sqrt()
    s = r / h
    if name == "gaussian":
        return torch.exp(-(s**2) / 2)
    if name == "laplacian":
        return torch.exp(-s)
    if name == "matern32":
        return (1 + math.sqrt(3) * s) * torch.exp(-math.sqrt(3) * s)
    if name == "matern52":
        return (1 + math.sqrt(5) * s + 5 * s**2 / 3) * torch.exp(-math.sqrt(5) * s)
    if name == "rational_quadratic":  # alpha = 1, get_kernel's default
        return 1 / (1 + s**2 / 2)
    return 1 / torch.sqrt(1 + s**2)


def dense_terms(y, L, a, name: str, h: float, unbiased: bool = False):
    """(||mu_B||^2, <mu_B, mu_ref>, ||mu_ref||^2), dense, differentiable in y."""
    B = y.shape[0]
    Kyy = dense_kernel(name, y, y, h)
    within = (Kyy.sum() - Kyy.diagonal().sum()) / (B * (B - 1)) if unbiased else Kyy.sum() / B**2
    cross = (dense_kernel(name, y, L, h) @ a).sum() / B
    return within, cross, a @ dense_kernel(name, L, L, h) @ a


def terms_scale(within, cross, norm2) -> float:
    """The size of the terms that cancel in the loss: the tolerances' unit."""
    return float((within + 2 * cross.abs() + norm2).detach())


def fitted(name: str, rng, *, n=2000, d=3, m=60, weighted=False, dtype=np.float64, h=1.3):
    X = (rng.normal(size=(n, d)) + 1.0).astype(dtype)
    w = rng.uniform(0.2, 3.0, size=n) if weighted else None
    kernel = nk.get_kernel(name).with_bandwidth(h)
    return nk.NystromKME(kernel, n_landmarks=m, random_state=0).fit(X, sample_weight=w)


@pytest.mark.parametrize(
    "kernel",
    [nk.Gaussian(1.0), nk.Laplacian(1.0), nk.Matern(1.0, nu=1.5), nk.Matern(1.0, nu=2.5)]
    + [nk.InverseMultiquadric(1.0)]
    + [nk.RationalQuadratic(1.0, alpha=a) for a in (0.05, 0.5, 1.0, 7.0, 300.0)],
)
def test_torch_formulas_are_the_cores(kernel) -> None:
    """torch's values and gradient factors (_device._values, _psi_from_values) against the
    core's one definition (kernel_formulas.inl) at many distances: values through the
    core's kernel matrix, psi through its gradient sums (1-D: grad = psi (b - a))."""
    from nystrom_kme.torch import _device

    r = np.r_[np.geomspace(1e-4, 60.0, 400), 1e3]
    a, b = np.zeros((1, 1)), r[:, None]
    core = kernel.to_core()
    want_k = nk_core.kernel_matrix(a, b, core, 1)[0]
    want_psi = nk_core.kernel_value_gradients(b, a, np.ones(1), core, 1)[:, 1] / (0.0 - r)
    shape = core.shape
    got_k = _device._values(kernel.name, torch.from_numpy(r**2), shape).numpy()
    got_psi = _device._psi_from_values(kernel.name, torch.from_numpy(want_k.copy()), torch.from_numpy(r), shape).numpy()
    tiny = 1e-300
    # both round alpha log1p(r^2 / (2 alpha)) to a few ulp of its size, which exp carries over
    alpha = shape if kernel.name == "rational_quadratic" else 1.0
    tol = 1e-14 * np.maximum(1.0, alpha * np.log1p(r**2 / (2 * alpha)))
    assert np.all(np.abs(got_k - want_k) <= tol * np.maximum(want_k, tiny) + tiny)
    assert np.all(np.abs(got_psi - want_psi) <= 1e-12 * np.maximum(np.abs(want_psi), tiny) + tiny)


def test_importing_the_package_does_not_import_torch() -> None:
    code = "import sys, nystrom_kme; sys.exit('torch' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0


@pytest.mark.parametrize("name", KERNELS)
@pytest.mark.parametrize("within", ["exact", "unbiased", "nystrom"])
def test_gradcheck_every_kernel_and_term(name, within, rng) -> None:
    ref = fitted(name, rng, weighted=True, m=40)
    loss = MMDLoss(ref, within_batch="nystrom" if within == "nystrom" else "exact", unbiased=within == "unbiased")
    y = torch.from_numpy(rng.normal(size=(9, 3)) + 1.0).requires_grad_()
    assert torch.autograd.gradcheck(loss, (y,), eps=1e-6, atol=1e-8, rtol=1e-5)


@pytest.mark.parametrize("name", KERNELS)
@pytest.mark.parametrize("unbiased", [False, True])
@pytest.mark.parametrize("d", [3, 300, 1100])  # the core at 3 and 300; the blocked products (d > CORE_MAX_FEATURES)
def test_loss_and_gradient_match_dense_float64(name, unbiased, d, rng) -> None:
    h = 1.3 * math.sqrt(d / 3)
    ref = fitted(name, rng, weighted=True, d=d, h=h)
    L, a = torch.from_numpy(ref.landmarks_), torch.from_numpy(ref.weights_)
    y = torch.from_numpy(rng.normal(size=(50, d)) + 0.5).requires_grad_()
    got = MMDLoss(ref, unbiased=unbiased)(y)
    (g,) = torch.autograd.grad(got, y)
    y2 = y.detach().clone().requires_grad_()
    within, cross, norm2 = dense_terms(y2, L, a, name, h, unbiased)
    want = within - 2 * cross + norm2
    (g2,) = torch.autograd.grad(want, y2)
    scale = terms_scale(within, cross, norm2)
    assert abs(float(got.detach()) - float(want.detach())) <= 1e-12 * scale
    assert float((g - g2).abs().max()) <= 1e-12 * float(g2.abs().max())


@pytest.mark.parametrize("name", KERNELS)
def test_loss_and_gradient_match_dense_float32(name, rng) -> None:
    ref = fitted(name, rng, dtype=np.float32)
    L, a = torch.from_numpy(ref.landmarks_).double(), torch.from_numpy(ref.weights_)
    y32 = torch.from_numpy((rng.normal(size=(50, 3)) + 0.5).astype(np.float32)).requires_grad_()
    got = MMDLoss(ref)(y32)
    (g,) = torch.autograd.grad(got, y32)
    assert got.dtype == torch.float32 and g.dtype == torch.float32
    y64 = y32.detach().double().requires_grad_()  # the same points, in float64
    within, cross, norm2 = dense_terms(y64, L, a, name, 1.3)
    (g2,) = torch.autograd.grad(within - 2 * cross + norm2, y64)
    scale = terms_scale(within, cross, norm2)
    assert abs(float(got.detach()) - float((within - 2 * cross + norm2).detach())) <= 1e-5 * scale
    assert float((g.double() - g2).abs().max()) <= 1e-5 * float(g2.abs().max())


@pytest.mark.parametrize("name", KERNELS)
def test_finite_gradient_where_a_batch_row_is_a_landmark(name, rng) -> None:
    ref = fitted(name, rng, m=30)
    L, a = torch.from_numpy(ref.landmarks_), torch.from_numpy(ref.weights_)
    y = torch.cat([L[:3], L[:3], torch.from_numpy(rng.normal(size=(4, 3)))]).requires_grad_()  # repeats too
    got = MMDLoss(ref)(y)
    (g,) = torch.autograd.grad(got, y)
    assert torch.isfinite(g).all() and torch.isfinite(got)
    # the dense reference's distance has gradient 0 at 0: the Laplacian's subgradient 0
    y2 = y.detach().clone().requires_grad_()
    within, cross, norm2 = dense_terms(y2, L, a, name, 1.3)
    (g2,) = torch.autograd.grad(within - 2 * cross + norm2, y2)
    assert float((g - g2).abs().max()) <= 1e-12 * float(g2.abs().max())


def test_nystrom_batch_term_is_the_projection(rng) -> None:
    # 12 distinct, well separated landmarks: K_m is well conditioned, K_m^+ = K_m^-1
    X = rng.normal(size=(3000, 2)) * 3.0
    L = np.array([[i, j] for i in range(-3, 3) for j in (-2.0, 2.0)], dtype=np.float64) * 1.5
    ref = nk.NystromKME(nk.Gaussian(1.0), sampler=L).fit(X)
    y = torch.from_numpy(rng.normal(size=(20, 2)) * 3.0)
    got = MMDLoss(ref, within_batch="nystrom")(y).item()
    K = ref.kernel_(L)
    s = ref.kernel_(L, y.numpy()).sum(1) / 20
    a = ref.weights_
    want = s @ np.linalg.solve(K, s) - 2 * a @ s + a @ K @ a  # ||P mu_B - mu_ref||^2
    assert abs(got - want) <= 1e-10
    assert got >= 0


def test_collections_sum_or_max(rng) -> None:
    X = rng.normal(size=(1500, 2))
    kc = nk.KernelCollection([nk.Gaussian(0.5), nk.Laplacian(2.0), nk.Matern(1.0, nu=2.5)])
    y = torch.from_numpy(rng.normal(size=(30, 2)) + 0.3).requires_grad_()
    total = MMDLoss(X, kc, n_landmarks=50, random_state=0)
    worst = MMDLoss(X, kc, n_landmarks=50, random_state=0, aggregate="max")
    assert len({id(total.get_buffer(n)) for n in ("landmarks_0",)}) == 1 and len(total.kernels_) == 3
    # fitted embeddings give the same loss as fitting from the rows: the first kernel's
    # landmarks by randomly pivoted Cholesky (REFERENCE_SAMPLER), shared by the others
    first = nk.NystromKME(kc.kernels[0], n_landmarks=50, sampler="rpcholesky", random_state=0).fit(X)
    refs = [first, *(nk.NystromKME(k, sampler=first.landmarks_).fit(X) for k in kc.kernels[1:])]
    assert torch.allclose(MMDLoss(refs)(y), total(y), rtol=1e-12, atol=0)
    singles = [MMDLoss(ref)(y) for ref in refs]
    assert torch.allclose(total(y), sum(singles), rtol=1e-13, atol=0)
    assert torch.allclose(worst(y), max(singles), rtol=1e-13, atol=0)


def test_a_reference_from_rows_does_not_cancel(monkeypatch) -> None:
    """From rows, the landmarks come from randomly pivoted Cholesky (issue 46): on N(0,
    I_3) + 1 at the median bandwidth uniform landmarks' weights cancelled (sum |a| is 27
    to 892 times |sum a|, bench/RESULTS.md), these at most 2.4 times; here <= 4 on every
    seed. Beyond ``sampler_rows`` rows (patched small) the pivots run on a subsample and
    every landmark is a row of X."""
    from nystrom_kme import compression

    for seed in range(3):
        X = np.random.default_rng(seed).normal(size=(3000, 3)) + 1.0
        loss = MMDLoss(X, "gaussian", n_landmarks=300, random_state=seed)
        a = loss.weights_0.numpy()
        assert np.abs(a).sum() <= 4 * abs(a.sum())
        uniform = nk.NystromKME(loss.kernels_[0], n_landmarks=300, random_state=seed).fit(X).weights_
        assert np.abs(uniform).sum() > 10 * abs(uniform.sum())  # the cancellation the choice avoids
    monkeypatch.setattr(compression, "SAMPLER_MAX_BYTES", 8 * 20 * 100)  # 320 rows for m = 20
    loss = MMDLoss(X, nk.Gaussian(1.0), n_landmarks=20, random_state=0)
    L = loss.landmarks_0.numpy()
    assert 1 <= L.shape[0] <= 20 and all((X == row).all(axis=1).any() for row in L)
    a = loss.weights_0.numpy()
    assert np.abs(a).sum() <= 4 * abs(a.sum())


def test_half_precision_batches_train_in_float32(rng) -> None:
    ref = fitted("gaussian", rng, dtype=np.float32)
    loss = MMDLoss(ref)
    y16 = torch.from_numpy(rng.normal(size=(40, 3)).astype(np.float32)).to(torch.bfloat16).requires_grad_()
    out = loss(y16)
    out.backward()
    assert out.dtype == torch.float32 and y16.grad.dtype == torch.bfloat16
    y32 = y16.detach().float().requires_grad_()
    loss(y32).backward()
    assert torch.allclose(y16.grad.float(), y32.grad, rtol=1e-2, atol=1e-3 * float(y32.grad.abs().max()))


def test_torch_compile_keeps_the_operator_one_graph_for_every_batch_size(rng) -> None:
    """The blocked products' block is sized inside the operator: no argument changes with
    the batch size, so dynamo compiles once static and once dynamic, not once per size
    (it used to compile a graph per size up to its recompile limit, then run eagerly)."""
    from torch._dynamo.utils import counters

    torch._dynamo.reset()
    counters.clear()
    loss = MMDLoss(fitted("matern32", rng, m=30))
    compiled = torch.compile(loss, backend="aot_eager", fullgraph=True)
    for size in (16, 32, 48, 17, 64):
        y = torch.from_numpy(rng.normal(size=(size, 3))).requires_grad_()
        value = compiled(y)
        (g,) = torch.autograd.grad(value, y)
        y2 = y.detach().requires_grad_()
        want = loss(y2)
        (g2,) = torch.autograd.grad(want, y2)
        assert torch.equal(value, want) and torch.equal(g, g2)
    assert counters["stats"]["unique_graphs"] <= 2


@pytest.mark.slow  # inductor compiles C++ on first use: 15 s here at load 5, as for a trivial function
@pytest.mark.filterwarnings("ignore:`torch.jit.script_method` is deprecated:DeprecationWarning")  # torch's own
def test_torch_compile_default_backend(rng, tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path))  # cold, as a first run is
    torch._dynamo.reset()
    loss = MMDLoss(fitted("laplacian", rng, m=30), within_batch="nystrom")
    compiled = torch.compile(loss)
    for size in (16, 40):
        y = torch.from_numpy(rng.normal(size=(size, 3))).requires_grad_()
        (g,) = torch.autograd.grad(value := compiled(y), y)
        y2 = y.detach().requires_grad_()
        (g2,) = torch.autograd.grad(want := loss(y2), y2)
        assert float((value - want).detach().abs()) <= 1e-14 and float((g - g2).abs().max()) <= 1e-14


@pytest.mark.parametrize("within", ["exact", "nystrom"])
def test_double_backward_is_refused_by_name(within, rng) -> None:
    """create_graph=True gives the first derivatives; differentiating them again raises,
    naming the limit, instead of torch's "does not require grad" or, mixed with other
    terms, a second derivative silently 0."""
    loss = MMDLoss(fitted("gaussian", rng, m=20), within_batch=within)
    y = torch.from_numpy(rng.normal(size=(6, 3))).requires_grad_()
    (g,) = torch.autograd.grad(loss(y), y, create_graph=True)
    (g2,) = torch.autograd.grad(loss(y), y)
    assert torch.equal(g.detach(), g2) and g.requires_grad
    with pytest.raises(RuntimeError, match="MMDLoss supports first derivatives only; double backward"):
        (g.square().sum() + y.square().sum()).backward()  # a gradient penalty beside another term
    with pytest.raises(RuntimeError, match="first derivatives only"):
        torch.autograd.gradgradcheck(loss, (y,))


def test_the_first_forward_does_not_import_the_compiler() -> None:
    """torch.library.custom_op wraps its kernels in torch._disable_dynamo, whose first call
    imports torch._dynamo and torch._inductor (800 modules, as long as import torch): the
    operator is defined through torch.library.Library so that eager programs never do."""
    code = (
        "import sys, numpy as np, torch, nystrom_kme as nk\n"
        "from nystrom_kme.torch import MMDLoss\n"
        "loss = MMDLoss(np.random.default_rng(0).normal(size=(300, 2)), nk.Gaussian(1.0), n_landmarks=20)\n"
        "y = torch.zeros(5, 2, dtype=torch.float64, requires_grad=True)\n"
        "loss(y).backward()\n"
        "assert y.grad is not None\n"
        "print(sorted(m for m in ('torch._dynamo', 'torch._inductor') if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0 and out.stdout.strip() == "[]", (out.stdout, out.stderr)


@pytest.mark.parametrize("name", ["gaussian", "laplacian", "matern52"])
def test_from_every_row_the_loss_is_the_exact_mmd(name, rng) -> None:
    """n_landmarks >= n: the empirical embedding of the rows (weights 1/n), so the loss and
    its gradient are the dense squared MMD between the batch and the rows (the default
    sampler, with replacement, used to repeat rows: 7e-4 to 2e-2 off)."""
    X = rng.normal(size=(150, 3))
    h = 1.3
    y = torch.from_numpy(rng.normal(size=(20, 3)) + 0.4).requires_grad_()
    Xt, a = torch.from_numpy(X), torch.full((150,), 1 / 150, dtype=torch.float64)
    within, cross, norm2 = dense_terms(y, Xt, a, name, h)
    want = within - 2 * cross + norm2
    (g_want,) = torch.autograd.grad(want, y)
    for m in (150, 1000):
        loss = MMDLoss(X, nk.get_kernel(name).with_bandwidth(h), n_landmarks=m, random_state=0)
        (g,) = torch.autograd.grad(got := loss(y), y)
        assert abs(float(got.detach()) - float(want.detach())) <= 1e-13 * terms_scale(within, cross, norm2)
        assert float((g - g_want).abs().max()) <= 1e-12 * float(g_want.abs().max())
        assert loss.landmarks_0.shape == (150, 3)


@pytest.mark.parametrize("seed", range(5))
def test_landmarks_drawn_from_rows_are_never_repeated(seed, rng) -> None:
    X = rng.normal(size=(60, 2))  # 59 draws of 60 rows with replacement repeat some (P = 1 - 60!/60^59)
    loss = MMDLoss(X, nk.Gaussian(1.0), n_landmarks=59, random_state=seed)
    L = loss.landmarks_0.numpy()
    assert len(np.unique(L, axis=0)) == 59
    assert all((X == row).all(1).any() for row in L)  # rows of X


@pytest.mark.parametrize("name", KERNELS)
def test_device_path_matches_dense_on_cpu_tensors(name, rng) -> None:
    # The CUDA path's arithmetic (blocked products, torch operations) run on CPU tensors.
    from nystrom_kme.torch._device import value_gradient_sums

    ref = fitted(name, rng, weighted=True)
    L, a = torch.from_numpy(ref.landmarks_), torch.from_numpy(ref.weights_)
    y = torch.cat([L[:2], torch.from_numpy(rng.normal(size=(30, 3)))]).requires_grad_()
    grads = torch.zeros(y.shape, dtype=torch.float64)
    got = value_gradient_sums(y.detach(), L, a, L.mean(0), name, 1.3, block=17, grad_out=grads, scale=-0.5)
    values = dense_kernel(name, y, L, 1.3) @ a
    (g,) = torch.autograd.grad(values.sum(), y)
    assert float((got - values.detach()).abs().max()) <= 1e-12 * float(a.abs().sum())
    assert float((grads + 0.5 * g).abs().max()) <= 1e-12 * float(g.abs().max())
    only = value_gradient_sums(y.detach(), L, a, L.mean(0), name, 1.3, block=64, gradients=False)
    assert torch.allclose(only, got, rtol=1e-13, atol=1e-15)


@pytest.mark.parametrize("d", [3, 40])
def test_fused_attention_route_matches_dense(d, rng) -> None:
    # precision="sdpa-*": softmax(Q P^T) V times exp(logsumexp), by torch's attention
    # kernels (the CPU's in float64 here), signed and zero weights included
    from nystrom_kme.torch._device import value_gradient_sums

    h = 1.3 * math.sqrt(d / 3)
    L = torch.from_numpy(rng.normal(size=(300, d)))
    a = torch.from_numpy(rng.normal(size=300))
    a[5] = 0.0
    y = torch.cat([L[:2], torch.from_numpy(rng.normal(size=(30, d)))]).requires_grad_()
    grads = torch.zeros(y.shape, dtype=torch.float64)
    got = value_gradient_sums(
        y.detach(), L, a, L.mean(0), "gaussian", h, precision="sdpa-f32", block=64, grad_out=grads
    )
    values = dense_kernel("gaussian", y, L, h) @ a
    (g,) = torch.autograd.grad(values.sum(), y)
    assert float((got - values.detach()).abs().max()) <= 1e-12 * float(a.abs().sum())
    assert float((grads - g).abs().max()) <= 1e-12 * float(g.abs().max())


@pytest.mark.parametrize("within", ["exact", "unbiased", "nystrom"])
def test_device_path_loss_matches_the_core_on_cpu_tensors(within, rng) -> None:
    from nystrom_kme.torch import _ops

    ref = fitted("laplacian", rng, weighted=True, m=50)
    loss = MMDLoss(ref, within_batch="nystrom" if within == "nystrom" else "exact", unbiased=within == "unbiased")
    y = torch.cat([loss.landmarks_0[:2], torch.from_numpy(rng.normal(size=(40, 3)))])
    args = (y, loss.landmarks_0, loss.weights_0, loss.centre_0, loss.projector_0, loss.reference_norms2_[0])
    kind = ("laplacian", 1.3, 1.0, loss.within_batch, loss.unbiased)
    core_loss, core_grad = _ops.mmd_to_embedding(*args, *kind, "highest", 0, 0)
    dev_loss, dev_grad = _ops._on_device(*args, *kind, "highest", 13)
    assert abs(float(dev_loss) - float(core_loss)) <= 1e-13
    assert float((dev_grad - core_grad).abs().max()) <= 1e-12 * float(core_grad.abs().max())


def test_tf32_switch_restores_either_setting() -> None:
    code = (
        "import torch\n"
        "from nystrom_kme.torch._device import tf32\n"
        "m = torch.backends.cuda.matmul\n"
        "with tf32(True): assert m.allow_tf32\n"
        "assert not m.allow_tf32\n"
        "m.fp32_precision = 'ieee'  # the new setting: the old one can no longer be read\n"
        "with tf32(True): assert m.fp32_precision == 'tf32'\n"
        "assert m.fp32_precision == 'ieee'\n"
    )
    assert subprocess.run([sys.executable, "-W", "error", "-c", code], check=False).returncode == 0


def test_bad_arguments_are_named(rng) -> None:
    ref = fitted("gaussian", rng, m=20)
    loss = MMDLoss(ref)
    with pytest.raises(TypeError, match="y must be a torch.Tensor"):
        loss(np.zeros((3, 3)))
    with pytest.raises(ValueError, match=r"y must have shape \(B, 3\)"):
        loss(torch.zeros(4, 2, dtype=torch.float64))
    with pytest.raises(TypeError, match="floating-point"):
        loss(torch.zeros(4, 3, dtype=torch.int64))
    with pytest.raises(ValueError, match="at least 2 rows"):
        MMDLoss(ref, unbiased=True)(torch.zeros(1, 3, dtype=torch.float64))
    with pytest.raises(ValueError, match="within_batch"):
        MMDLoss(ref, within_batch="diagonal")
    with pytest.raises(ValueError, match="unbiased=True needs"):
        MMDLoss(ref, within_batch="nystrom", unbiased=True)
    with pytest.raises(ValueError, match="aggregate"):
        MMDLoss(ref, aggregate="mean")
    with pytest.raises(ValueError, match="precision"):
        MMDLoss(ref, precision="fp8")
    with pytest.raises(ValueError, match="block_size"):
        MMDLoss(ref, block_size=0)
    with pytest.raises(ValueError, match="is not the kernel of the reference"):
        MMDLoss(ref, nk.Gaussian(2.0))
    for k in (nk.Linear(), nk.LaplacianL1()):  # the l1 Laplacian is radial, but not in the Euclidean distance
        with pytest.raises(ValueError, match=f"Euclidean radial kernels .*not {type(k).__name__}"):
            MMDLoss(rng.normal(size=(100, 2)), k, n_landmarks=10)
    with pytest.raises(nk.NotFittedError):
        MMDLoss(nk.NystromKME())
    with pytest.raises(ValueError, match="reference"):
        MMDLoss(np.zeros(5))
    with pytest.raises(ValueError, match="y contains NaN"):
        loss(torch.full((4, 3), float("nan"), dtype=torch.float64))


ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.skipif(not (ROOT / "bench").is_dir(), reason="needs the source tree")
def test_bench_gpu_mode_fails_cleanly_without_a_gpu() -> None:
    if torch.cuda.is_available():
        pytest.skip("a GPU is present")
    out = subprocess.run([sys.executable, "-m", "bench.loss", "--gpu"], capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 2
    assert "no CUDA device" in out.stderr and "Traceback" not in out.stderr


@pytest.mark.gpu
@pytest.mark.parametrize("name", KERNELS)
@pytest.mark.parametrize("within", ["exact", "nystrom"])
def test_cuda_tensors_match_the_cpu_path(name, within, rng, monkeypatch) -> None:
    """float64: the device and the core agree to 1e-12. float32: both are compared with the
    float64 gradient at the same (float32) point, and the device may be at most 10x less
    accurate than the same blocked products on CPU tensors. A Gaussian reference's weights
    sum to 10^2-10^3 in absolute value (about 1.5 for the Matérn ones), so its float32
    gradients carry relative errors up to ~3e-2 on either path: a fixed 1e-5 cannot hold."""
    if not torch.cuda.is_available():
        pytest.skip("torch sees no CUDA device")
    ref = fitted(name, rng, weighted=True, m=300)
    y64 = torch.from_numpy(rng.normal(size=(257, 3)) + 0.5)
    loss = MMDLoss(ref, within_batch=within, precision="highest")
    on_device = copy.deepcopy(loss).cuda()  # its buffers moved, as users keep it

    def value_and_grad(y: torch.Tensor) -> tuple[float, torch.Tensor]:
        y = y.detach().requires_grad_()
        (g,) = torch.autograd.grad(value := (on_device if y.is_cuda else loss)(y), y)
        return float(value.detach()), g.detach().cpu().double()

    cpu, g = value_and_grad(y64)
    dev, gc = value_and_grad(y64.cuda())
    assert abs(dev - cpu) <= 1e-12 * max(1.0, abs(cpu))
    assert float((gc - g).abs().max()) <= 1e-11 * float(g.abs().max())

    y32 = y64.float()
    exact, g_exact = value_and_grad(y32.double())  # float64 at the float32 point
    monkeypatch.setattr(_ops, "CORE_MAX_FEATURES", 0)  # CPU tensors through the blocked products
    host, g_host = value_and_grad(y32)
    dev, gc = value_and_grad(y32.cuda())
    scale = float(g_exact.abs().max())
    host_error = float((g_host - g_exact).abs().max()) / scale
    assert float((gc - g_exact).abs().max()) / scale <= max(1e-5, 10 * host_error)
    assert abs(dev - exact) <= max(1e-5, 10 * abs(host - exact) / max(1.0, abs(exact))) * max(1.0, abs(exact))


@pytest.mark.parametrize("d", [3, 200])  # the core, and the blocked products on CPU tensors
@pytest.mark.parametrize("within", ["exact", "nystrom"])
def test_float32_gradients_of_a_cancelling_reference_match_float64(d, within, rng) -> None:
    """A Gaussian Nystrom reference's weights cancel (sum |w| >> |sum w|): float32 batches
    meet them in float64 on the CPU, against float64 landmarks, so the float32 loss and
    gradient agree with the float64 ones to float32 rounding (issue 46: 3e-5 to 3e-2 off)."""

    def rows(n: int, shift: float) -> np.ndarray:  # three informative coordinates (smooth: K_m ill-conditioned)
        return np.c_[rng.normal(size=(n, 3)) + shift, np.zeros((n, d - 3))]

    w = rng.uniform(0.2, 3.0, size=2000)
    ref = nk.NystromKME(nk.Gaussian(1.3), n_landmarks=300, random_state=0).fit(rows(2000, 1.0), sample_weight=w)
    assert _ops.cancellation(ref.weights_) >= _ops.CANCELLATION_UPCAST  # the case in point
    loss = MMDLoss(ref, within_batch=within)
    y32 = torch.from_numpy(rows(257, 0.8).astype(np.float32)).requires_grad_()
    y64 = y32.detach().double().requires_grad_()
    l32, l64 = loss(y32), loss(y64)
    (g32,) = torch.autograd.grad(l32, y32)
    (g64,) = torch.autograd.grad(l64, y64)
    assert abs(l32.item() - l64.item()) <= 1e-6 * max(abs(l64.item()), 1e-3)
    assert float((g32.double() - g64).abs().max()) <= 1e-5 * float(g64.abs().max())


def test_cpu_steps_take_float32_landmarks_as_stored(rng, monkeypatch) -> None:
    """A float32 reference on CPU tensors: the operator gets its landmarks as stored, not a
    float64 copy per step (100 MB at 16384 x 768 landmarks, issue 46's memory check), and the
    loss still matches the one against float64 landmarks."""
    L = rng.normal(size=(300, 4)).astype(np.float32)
    loss = MMDLoss(nk.EmpiricalKME(nk.Gaussian(1.5)).fit(L))
    seen = []
    real = _ops._cpu

    def spy(y, landmarks, *args):
        seen.append(landmarks.dtype)
        return real(y, landmarks, *args)

    monkeypatch.setattr(_ops, "_cpu", spy)
    y = torch.from_numpy(rng.normal(size=(40, 4)).astype(np.float32)).requires_grad_()
    got = loss(y)
    (g,) = torch.autograd.grad(got, y)
    assert seen == [torch.float32]
    want = MMDLoss(nk.EmpiricalKME(nk.Gaussian(1.5)).fit(L.astype(np.float64)))(y.detach().double())
    assert abs(got.item() - want.item()) <= 1e-6 * max(abs(want.item()), 1e-3)
    assert g.dtype == torch.float32 and bool(torch.isfinite(g).all())
