"""The paper's Section 6.1 experiment, once (``nystrom-kme demo``): exact errors
||mu - mu_hat|| of the empirical and Nyström estimators of a Gaussian mixture's kernel
mean embedding (Appendix G's closed form), for a few numbers of landmarks around the
paper's m = ceil(sqrt(n) log sqrt(n)).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

from . import _core
from .bounds import default_n_landmarks
from .datasets import GaussianMixture
from .embedding import EmpiricalKME
from .nystrom import NystromKME
from .persistence import kernel_spec


def run_demo(
    n_samples: int = 10_000,
    n_landmarks: Sequence[int] | None = None,
    seed: int = 0,
    *,
    say: Callable[[str], object] | None = print,
) -> dict[str, Any]:
    """Fit the empirical and Nyström embeddings of n points of an 8-component Gaussian
    mixture in R^10 and compute their exact errors; print the table row by row with
    ``say`` (None: silently) and return it as a JSON-ready record.

    Parameters
    ----------
    n_samples : int, >= 2
    n_landmarks : sequence of int or None
        The m to try (those in [1, n_samples]); default: the paper's m times 1/8, 1/4,
        1/2, 1 and 2.
    seed : int
        Seed of the mixture, the sample, the median bandwidth and the landmarks.
    say : callable or None
        Called with each line of the table as soon as it is known.

    Returns
    -------
    dict
        ``rows`` (estimator, n_landmarks, error, fit_seconds, error_seconds), the
        ``conclusion`` (:func:`demo_conclusion`), the kernel, the paper's m and the build.

    Examples
    --------
    >>> from nystrom_kme.demo import run_demo
    >>> record = run_demo(500, [10, 40], seed=1, say=None)
    >>> [(row["estimator"], row["n_landmarks"]) for row in record["rows"]]
    [('empirical', 500), ('nystrom', 10), ('nystrom', 40)]
    >>> record["rows"][1]["error"] > record["rows"][2]["error"] > 0.9 * record["rows"][0]["error"]
    True
    """
    say = say or (lambda text: None)
    mixture = GaussianMixture(n_components=8, dim=10, random_state=seed)
    X = mixture.sample(n_samples)
    m_paper = default_n_landmarks(n_samples)
    grid = sorted(set(n_landmarks or [m_paper // 8, m_paper // 4, m_paper // 2, m_paper, 2 * m_paper]))
    grid = [m for m in grid if 1 <= m <= n_samples]

    start = time.perf_counter()
    empirical = EmpiricalKME("gaussian", random_state=seed).fit(X)
    fit_time = time.perf_counter() - start
    sigma = float(empirical.kernel_.bandwidth)
    start = time.perf_counter()
    err_empirical = mixture.embedding_error(X, empirical.weights_, sigma)
    eval_time = time.perf_counter() - start
    rows = [
        {
            "estimator": "empirical",
            "n_landmarks": n_samples,
            "error": err_empirical,
            "fit_seconds": fit_time,
            "error_seconds": eval_time,
        }
    ]

    say(f"Gaussian mixture (Chatalic et al. 2022, Sec. 6.1): n = {n_samples}, d = 10, 8 components")
    say(
        f"Gaussian kernel, median-heuristic bandwidth sigma = {sigma:.4f}; "
        f"core {_core.__version__}, OpenMP {'on' if _core.with_openmp else 'off'}"
    )
    say(f"paper's m = ceil(sqrt(n) log sqrt(n)) = {m_paper}\n")
    say(f"{'estimator':<22}{'m':>7}{'||mu - mu_hat||':>18}{'fit s':>10}{'error s':>10}")
    say(f"{'empirical (eq. 2)':<22}{n_samples:>7}{err_empirical:>18.6f}{fit_time:>10.4f}{eval_time:>10.4f}")
    errors = {}
    for m in grid:
        start = time.perf_counter()
        nystrom = NystromKME(empirical.kernel_, n_landmarks=m, random_state=seed).fit(X)
        fit_time = time.perf_counter() - start
        start = time.perf_counter()
        err = mixture.embedding_error(nystrom.landmarks_, nystrom.weights_, sigma)
        eval_time = time.perf_counter() - start
        errors[m] = err
        rows.append(
            {
                "estimator": "nystrom",
                "n_landmarks": m,
                "error": err,
                "fit_seconds": fit_time,
                "error_seconds": eval_time,
            }
        )
        say(f"{'Nystrom (eq. 5)':<22}{m:>7}{err:>18.6f}{fit_time:>10.4f}{eval_time:>10.4f}")
    conclusion = demo_conclusion(errors, err_empirical, n_samples, m_paper)
    say("\n" + conclusion)
    return {
        "n_samples": n_samples,
        "n_features": 10,
        "n_components": 8,
        "seed": seed,
        "kernel": kernel_spec(empirical.kernel_),
        "paper_n_landmarks": m_paper,
        "core_version": _core.__version__,
        "openmp": bool(_core.with_openmp),
        "rows": rows,
        "conclusion": conclusion,
    }


def demo_conclusion(
    errors: dict[int, float], err_empirical: float, n_samples: int, m_paper: int, tolerance: float = 0.1
) -> str:
    """The demo's closing sentence, read off its own numbers: the smallest m whose
    Nyström error is within ``tolerance`` (relative) of the empirical error, if any.

    Examples
    --------
    >>> from nystrom_kme.demo import demo_conclusion
    >>> demo_conclusion({100: 0.5, 200: 0.105}, 0.1, 1000, 200)[:60]
    'The smallest m tried whose Nystrom error is within 10% of th'
    """
    if not errors:
        return "No Nystrom estimator was fitted (no landmark count between 1 and n was given)."
    close = [m for m, e in sorted(errors.items()) if e <= (1 + tolerance) * err_empirical]
    if close:
        m = close[0]
        return (
            f"The smallest m tried whose Nystrom error is within {tolerance:.0%} of the empirical "
            f"one is m = {m} ({m / m_paper:.2g} x the paper's m): {m} of the {n_samples} points, "
            f"so its evaluations cost {m / n_samples:.2g} of the empirical embedding's."
        )
    best = min(errors, key=errors.__getitem__)
    return (
        f"No m tried brings the Nystrom error within {tolerance:.0%} of the empirical one: the "
        f"closest, m = {best}, is {errors[best] / err_empirical:.2f} x it; try larger m "
        f"(the paper's m is {m_paper})."
    )


__all__ = ["demo_conclusion", "run_demo"]
