"""``standardize=`` on real tables and heavy tails (issue 37): which scaling keeps the
test's power, measured before choosing.

For scikit-learn's bundled tables (breast cancer, wine, diabetes; the rows shuffled and
split in two halves) and a synthetic table with a heavy-tailed column (d = 5, column 0
lognormal with sigma = 2 in thousands, the others N(0, 1)): the second half's column
``shifted`` moved by ``effect`` of its standard deviation, then ``two_sample_test`` with
``standardize=False``, ``"standard"`` and ``"robust"`` on the same halves; the rejection
rate at 0.05 over ``--reps`` repetitions, and under H0 (no shift).

    python -m bench.scaling --reps 100
"""

from __future__ import annotations

import argparse
import warnings

import numpy as np

import nystrom_kme as nk
from bench.harness import machine, utc_now


def _tables() -> dict[str, tuple[np.ndarray, int, float]]:
    """name -> (rows, the column shifted, the shift in its standard deviations)."""
    from sklearn.datasets import load_breast_cancer, load_diabetes, load_wine

    out = {
        "breast cancer (569 x 30)": (load_breast_cancer().data, 1, 0.5),  # mean texture
        "wine (178 x 13)": (load_wine().data, 2, 0.8),  # ash
        "diabetes (442 x 10)": (load_diabetes().data * 1000.0, 0, 0.5),  # age, units changed x1000
    }
    rng = np.random.default_rng(37)
    heavy = rng.normal(size=(600, 5))
    heavy[:, 0] = 1000.0 * rng.lognormal(sigma=2.0, size=600)
    out["lognormal column in thousands (600 x 5)"] = (heavy, 1, 0.5)
    return out


def run(reps: int) -> None:
    print(f"\n## standardize= on tables (issue 37), {utc_now()}; {machine()}\n")
    print("| table | shift | reps | raw | standard | robust |")
    print("|---|---|---|---|---|---|")
    for name, (X, column, effect) in _tables().items():
        for shift in (0.0, effect):
            hits = {False: 0, "standard": 0, "robust": 0}
            for rep in range(reps):
                rng = np.random.default_rng([rep, 37])
                rows = X[rng.permutation(X.shape[0])]
                half = rows.shape[0] // 2
                A, B = rows[:half], rows[half:].copy()
                B[:, column] += shift * X[:, column].std()
                for kind in hits:
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")  # the unit warning is what raw is about
                        res = nk.two_sample_test(A, B, standardize=kind, random_state=rep, n_threads=1)
                    hits[kind] += res.pvalue <= 0.05
            print(
                f"| {name} | {shift} | {reps} | {hits[False] / reps:.3f} | {hits['standard'] / reps:.3f} "
                f"| {hits['robust'] / reps:.3f} |",
                flush=True,
            )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=100)
    run(ap.parse_args().reps)


if __name__ == "__main__":
    main()
