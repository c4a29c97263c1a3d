"""The adversarial suite of ``n_landmarks="auto"``'s certificate (issue 34), behind
``python -m bench.auto_m --adversarial TRIALS``.

Each distribution has its population's E k(x, x') for the Gaussian kernel in closed form
(Gaussian mixtures and atoms: E exp(-||x - y||^2 / 2h^2) for x ~ N(m1, s1^2 I),
y ~ N(m2, s2^2 I) is (h^2 / (h^2 + s1^2 + s2^2))^(d/2) exp(-||m1 - m2||^2 / 2 (h^2 + s1^2 +
s2^2))), from a uniform pool (digits), or from a large independent sample (Cauchy), so
the exact sigma = ((1 - E k(x, x')) / n)^(1/2) of the distribution is known. Every fit's
error ||mu_hat_n - mu_m|| is computed exactly, O(n^2) (dense sums of the core; with the
bandwidth 10^3 x the median, where every kernel value is 1 - O(1e-6), from k - 1 =
expm1(...) in numpy so that nothing cancels).

The family of issue 43 (:func:`far_targets`, names starting with "far:"): a far mass of
1e-4 to 1e-2 beside identical or normal rows, which validation rows usually never see;
``--only far:`` runs it alone.

A fit is a **false certificate** when it reports ``certified`` and its exact distance
exceeds tol sigma (0.458 sigma). m* is the smallest m of the fit's own landmark stream
whose path projection meets the target (exact, every prefix up to the chosen m).
"""

from __future__ import annotations

import math
import time
import warnings
from dataclasses import dataclass
from typing import Callable

import numpy as np

import nystrom_kme as nk
from nystrom_kme import _core
from nystrom_kme.datasets import GaussianMixture


def _pair(h: float, d: int, m1: np.ndarray, s1: float, m2: np.ndarray, s2: float) -> float:
    v = h * h + s1 * s1 + s2 * s2
    return float((h * h / v) ** (d / 2.0) * math.exp(-float(np.sum((m1 - m2) ** 2)) / (2.0 * v)))


@dataclass
class Components:
    """A mixture of isotropic Gaussians and atoms (s = 0) in d dimensions."""

    weights: list[float]
    means: list[np.ndarray]
    spreads: list[float]

    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        d = self.means[0].size
        comp = rng.choice(len(self.weights), size=n, p=np.asarray(self.weights))
        X = rng.normal(size=(n, d))
        out = np.empty((n, d))
        for c, (mu, s) in enumerate(zip(self.means, self.spreads)):
            rows = comp == c
            out[rows] = mu + s * X[rows]
        return out

    def cross(self, h: float) -> float:
        d = self.means[0].size
        total = 0.0
        for wa, ma, sa in zip(self.weights, self.means, self.spreads):
            for wb, mb, sb in zip(self.weights, self.means, self.spreads):
                total += wa * wb * _pair(h, d, ma, sa, mb, sb)
        return total


def _gauss_with(extra: list[tuple[float, tuple[float, float], float]]) -> Components:
    """N(0, I_2) with the rest of the mass, plus components (mass, centre, spread)."""
    rest = 1.0 - sum(q for q, _, _ in extra)
    return Components(
        [rest] + [q for q, _, _ in extra],
        [np.zeros(2)] + [np.asarray(c, dtype=float) for _, c, _ in extra],
        [1.0] + [s for _, _, s in extra],
    )


@dataclass
class Target:
    """A distribution of the suite: ``sample(n, rng)``, ``cross(h)`` = E k(x, x') under it,
    and the bandwidth as a multiple of the sample's median distance."""

    name: str
    sample: Callable[[int, np.random.Generator], np.ndarray]
    cross: Callable[[float], float]
    bandwidth_factor: float = 1.0
    bandwidth: float | None = None  # fixed (the median of mostly identical rows says little)


def targets() -> list[Target]:
    out = []
    atom = _gauss_with([(0.02, (8.0, 8.0), 0.0)])
    out.append(Target("0.98 N(0,I) + 0.02 δ(8,8)", atom.sample, atom.cross))
    three = _gauss_with([(0.01, (10.0, 0.0), 0.1), (0.01, (0.0, 10.0), 0.1), (0.01, (-10.0, -10.0), 0.1)])
    out.append(Target("0.97 N(0,I) + 3 clusters of 1%", three.sample, three.cross))
    for q in (0.005, 0.01, 0.05):
        c = _gauss_with([(q, (6.0, -6.0), 0.0)])
        out.append(Target(f"atom of {q:.1%} at (6,-6)", c.sample, c.cross))
    pool = np.random.default_rng(123).standard_cauchy(size=(20_000, 2))

    def cauchy_cross(h: float, pool: np.ndarray = pool) -> float:
        core = _core.Kernel("gaussian", h)
        total = _core.kernel_total_sum(pool, pool, core)
        return float((total - len(pool)) / (len(pool) * (len(pool) - 1.0)))

    out.append(Target("Cauchy (d=2)", lambda n, rng: rng.standard_cauchy(size=(n, 2)), cauchy_cross))
    base = _gauss_with([])

    def repeated(n: int, rng: np.random.Generator) -> np.ndarray:
        return np.repeat(rng.normal(size=(n // 4, 2)), 4, axis=0)[rng.permutation(n // 4 * 4)]

    out.append(Target("rows repeated 4 times", repeated, base.cross))
    out.append(Target("bandwidth 10^3 x median", base.sample, base.cross, bandwidth_factor=1000.0))
    mix = GaussianMixture(8, 10, random_state=0)
    out.append(
        Target("Section 6.1 mixture (d=10)", lambda n, rng: mix.sample(n, random_state=rng), mix.embedding_norm2)
    )
    try:
        from sklearn.datasets import load_digits  # the test extra
    except ImportError:
        return out
    digits = np.ascontiguousarray(load_digits().data, dtype=np.float64)

    def digits_cross(h: float) -> float:
        return float(_core.kernel_total_sum(digits, digits, _core.Kernel("gaussian", h)) / len(digits) ** 2)

    out.append(
        Target(
            "digits (uniform over the 1797 rows)",
            lambda n, rng: np.ascontiguousarray(digits[rng.integers(0, len(digits), size=n)]),
            digits_cross,
        )
    )
    return out


#: The far-point family's masses (issue 43: one row in 10^4 up to one in 100).
FAR_MASSES = (1e-4, 1e-3, 1e-2)


def far_targets() -> list[Target]:
    """Issue 43's family: a rare far mass, of mass q, beside the bulk, which validation
    rows (and landmarks) usually never see. Names start with "far:" (``--only far:``).

    * identical rows + a far atom (duplicates everywhere; issue 43's reproducer at q = 1e-4),
    * identical rows + a far cluster N(c, 0.5^2 I) (the far rows distinct),
    * N(0, I) + a far atom (the bulk distinct, the far rows duplicates),
    * N(0, I) + a far cluster N(c, 0.05^2 I) (no duplicates at all),

    with c = (40, 40): k(bulk, c) = 0 to float64 at the bandwidths used (1 for the first two,
    where the median heuristic sees only the atom; the median for the others)."""
    out = []
    far = (40.0, 40.0)
    for q in FAR_MASSES:
        atom = Components([1.0 - q, q], [np.zeros(2), np.asarray(far)], [0.0, 0.0])
        out.append(Target(f"far: identical rows + far atom, q={q:g}", atom.sample, atom.cross, bandwidth=1.0))
        blob = Components([1.0 - q, q], [np.zeros(2), np.asarray(far)], [0.0, 0.5])
        out.append(Target(f"far: identical rows + far cluster, q={q:g}", blob.sample, blob.cross, bandwidth=1.0))
        gauss_atom = _gauss_with([(q, far, 0.0)])
        out.append(Target(f"far: N(0,I) + far atom, q={q:g}", gauss_atom.sample, gauss_atom.cross))
        gauss_blob = _gauss_with([(q, far, 0.05)])
        out.append(Target(f"far: N(0,I) + far cluster, q={q:g}", gauss_blob.sample, gauss_blob.cross))
    return out


def _accurate_sums(A: np.ndarray, B: np.ndarray, wa: np.ndarray, wb: np.ndarray, h: float) -> float:
    """sum_ij wa_i wb_j (k(a_i, b_j) - 1), k - 1 = expm1(-r^2 / 2 h^2) in blocks."""
    total = 0.0
    for s in range(0, len(A), 512):
        a = A[s : s + 512]
        r2 = (a * a).sum(1)[:, None] + (B * B).sum(1)[None, :] - 2.0 * a @ B.T
        total += float(wa[s : s + 512] @ np.expm1(-np.maximum(r2, 0.0) / (2.0 * h * h)) @ wb)
    return total


def exact_errors(X: np.ndarray, est: nk.NystromKME, h: float, accurate: bool) -> tuple[float, float, np.ndarray]:
    """(e^2 of the fitted weights, N^2 = ||mu_hat_n||^2, e(m')^2 of every prefix of the
    landmarks' path projection), all exact."""
    from nystrom_kme.landmark_search._nested_projection import NestedProjection

    n = len(X)
    core = _core.Kernel("gaussian", h)
    L, w = np.ascontiguousarray(est.landmarks_, dtype=np.float64), est.weights_
    means = _core.kernel_row_sums(L, X, core) / n
    if accurate:  # e^2 = (1 - sum w)^2 + the (k - 1) terms: no cancellation near k = 1
        p = np.full(n, 1.0 / n)
        pp = _accurate_sums(X, X, p, p, h)
        pw = _accurate_sums(X, L, p, w, h)
        ww = _accurate_sums(L, L, w, w, h)
        e2 = (1.0 - w.sum()) ** 2 + pp - 2.0 * pw + ww
        N2 = 1.0 + pp
    else:
        N2 = _core.kernel_total_sum(X, X, core) / float(n) ** 2
        e2 = N2 - 2.0 * w @ means + w @ _core.kernel_matrix(L, L, core) @ w
    path = NestedProjection(core, 0)
    idx = est.landmark_indices_
    pts = np.ascontiguousarray(X[idx])
    pm = _core.kernel_row_sums(pts, X, core) / n
    for a in range(0, len(idx), 256):
        path.extend(pts[a : a + 256], pm[a : a + 256])
    return float(e2), float(N2), N2 - path.t


def trial(target: Target, n: int, seed: int, check: str, old: bool = False) -> dict:
    """One fit on fresh data: the report against the exact errors."""
    rng = np.random.default_rng(50_000 + seed)
    X = np.ascontiguousarray(target.sample(n, rng), dtype=np.float64)
    h = target.bandwidth or target.bandwidth_factor * nk.median_distance(X, random_state=seed)
    spec = nk.AutoLandmarks() if old else nk.AutoLandmarks(check=check)
    t0 = time.perf_counter()
    with warnings.catch_warnings():  # "max_landmarks reached" is counted in the table's stops
        warnings.simplefilter("ignore", RuntimeWarning)
        est = nk.NystromKME(nk.Gaussian(h), n_landmarks=spec, random_state=seed).fit(X)
    seconds = time.perf_counter() - t0
    rep = est.n_landmarks_report_
    e2, N2, path_e2 = exact_errors(X, est, h, accurate=target.bandwidth_factor > 10)
    sigma = math.sqrt(max(1.0 - target.cross(h), 0.0) / n)
    target_e = rep.tol * sigma
    e = math.sqrt(max(e2, 0.0))
    good = np.flatnonzero(np.sqrt(np.maximum(path_e2, 0.0)) <= target_e)
    m = rep.n_landmarks
    return {
        "m": m,
        "m_star": int(good[0]) + 1 if good.size else None,  # None: not reached by the chosen m
        "certified": bool(rep.certified),
        "false": bool(rep.certified and e > target_e),
        "covered": bool(rep.approximation_error >= e),
        "e_over_sigma": e / sigma,
        "sigma_lower_ok": bool(getattr(rep.statistical_error, "lower", 0.0) <= sigma),
        "stop": rep.stop,
        "validation": rep.validation,
        "seconds": seconds,
    }


def run(trials: int, ns: list[int], check: str, old: bool, only: str | None = None) -> None:
    """The table of issue 34: per distribution and n, over ``trials`` fits."""
    import statistics

    from bench.harness import machine, utc_now

    what = "the search before issue 34" if old else f"check={check!r}"
    print(f"# bench.auto_m --adversarial {trials} ({what}), {utc_now()}; {machine()}\n")
    print(
        "| distribution | n | fits | certified | false certificates | bound covers e | σ lower bound <= σ "
        "| m median [max] | m/m* median [max] | e/σ max | exact/validation | stops | s median |"
    )
    print("|---|" + "---|" * 12)
    totals = {"fits": 0, "certified": 0, "false": 0, "covered": 0}
    ratios_all: dict[str, list[float]] = {}
    for target in targets() + far_targets():
        if only is not None and only not in target.name:
            continue
        for n in ns:
            rows = [trial(target, n, seed, check, old) for seed in range(trials)]
            ratios = [r["m"] / r["m_star"] for r in rows if r["m_star"]]
            ratios_all.setdefault(target.name, []).extend(ratios)
            stops: dict[str, int] = {}
            for r in rows:
                stops[r["stop"]] = stops.get(r["stop"], 0) + 1
            modes = sum(r["validation"] == "exact" for r in rows)
            for key in totals:
                totals[key] += len(rows) if key == "fits" else sum(r[key] for r in rows)
            ms = [r["m"] for r in rows]
            print(
                f"| {target.name} | {n} | {len(rows)} | {sum(r['certified'] for r in rows)} "
                f"| {sum(r['false'] for r in rows)} | {sum(r['covered'] for r in rows)} "
                f"| {sum(r['sigma_lower_ok'] for r in rows)} | {int(statistics.median(ms))} [{max(ms)}] "
                f"| {statistics.median(ratios) if ratios else math.nan:.2f} [{max(ratios, default=math.nan):.2f}] "
                f"| {max(r['e_over_sigma'] for r in rows):.3f} | {modes}/{len(rows) - modes} "
                f"| {', '.join(f'{k} {v}' for k, v in sorted(stops.items()))} "
                f"| {statistics.median(r['seconds'] for r in rows):.2f} |",
                flush=True,
            )
    f = totals["fits"]
    print(
        f"\nall: {f} fits, certified {totals['certified']} ({totals['certified'] / max(f, 1):.1%}), "
        f"false certificates {totals['false']} ({totals['false'] / max(f, 1):.2%}), "
        f"bound covers e in {totals['covered']} ({totals['covered'] / max(f, 1):.1%})"
    )
    for name, r in ratios_all.items():
        if r:
            print(f"m/m* over both n, {name}: median {statistics.median(r):.2f}, max {max(r):.2f}")
    print(f"finished {utc_now()}; {machine()}")


__all__ = ["FAR_MASSES", "Target", "exact_errors", "far_targets", "run", "targets", "trial"]
