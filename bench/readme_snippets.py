"""Wall time of each line of the README's Python snippets at n = 10^5, in order, in one
process: the times the README quotes after its snippets (which run at n = 10^4, as
tests/python/test_readme.py checks them).

    python -m bench.readme_snippets
"""

from __future__ import annotations

import time

import numpy as np

from .harness import machine, utc_now


def main() -> None:
    import nystrom_kme as nk
    from nystrom_kme import bounds
    from nystrom_kme.datasets import GaussianMixture

    print(f"{utc_now()}; {machine()}")
    X = np.random.default_rng(0).normal(size=(100_000, 10))
    Y = np.random.default_rng(1).normal(size=(100_000, 10)) + 0.1
    state: dict = {}

    def fit():
        state["kme"] = nk.NystromKME(kernel="gaussian", random_state=0).fit(X)

    def other():
        kme = state["kme"]
        kme(Y[:5])
        kme.distance(nk.NystromKME(kernel=kme.kernel_, random_state=0).fit(Y))

    def quadrature():
        rule = nk.QuadratureRule.from_embedding(state["kme"])
        rule.integrate(lambda P: np.sin(P[:, 0]))
        mix = GaussianMixture(8, 10, random_state=0)
        fitted = nk.NystromKME(random_state=0).fit(mix.sample(10_000))
        nk.QuadratureRule.from_embedding(fitted).worst_case_error(mix)

    steps = [
        ("NystromKME(...).fit(X), n = 10^5", fit),
        ("kme(Y[:5]) + a second fit + kme.distance(other)", other),
        (
            "EmpiricalKME(...).fit(X).distance(kme)",
            lambda: nk.EmpiricalKME(kernel=state["kme"].kernel_).fit(X).distance(state["kme"]),
        ),
        ("nk.mmd(X, Y)", lambda: nk.mmd(X, Y, random_state=0)),
        ("nk.mmd2_exact(X[:5000], Y[:5000], unbiased=True)", lambda: nk.mmd2_exact(X[:5000], Y[:5000], unbiased=True)),
        (
            "nk.two_sample_test(X, Y, n_permutations=200)",
            lambda: nk.two_sample_test(X, Y, n_permutations=200, random_state=0),
        ),
        ("quadrature lines (rule, mixture fit, worst_case_error)", quadrature),
        (
            "bounds.suggest_n_landmarks(X, kernel).explain()",
            lambda: bounds.suggest_n_landmarks(X, state["kme"].kernel_).explain(),
        ),
    ]
    print("| line | wall s |\n|---|---|")
    for name, step in steps:
        start = time.perf_counter()
        step()
        print(f"| {name} | {time.perf_counter() - start:.2f} |", flush=True)
    print(f"end: {machine()}")


if __name__ == "__main__":
    main()
