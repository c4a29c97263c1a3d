"""Write the saved files of tests/data/saved/ and what the writing code computed with them
(tests/data/saved/expected.json). See tests/data/README.md.

Run from the repository root, with the package of the commit the files are meant to
pin (a later run overwrites them with the output of the later code):

    PYTHONPATH=python python tests/data/make_saved_files.py
"""

from __future__ import annotations

import json
import pathlib

import numpy as np

import nystrom_kme as nk
from nystrom_kme.sampling import FixedLandmarks

OUT = pathlib.Path(__file__).parent / "saved"


def floats(a) -> list[float]:
    return [float(v) for v in np.asarray(a, dtype=np.float64).ravel()]


def embedding_record(est, Y) -> dict:
    """What a loaded embedding must reproduce: its evaluations at Y and fitted fields."""
    support, weights, kernel = est.fitted()
    record = {
        "repr": repr(est),
        "kernel": repr(kernel),
        "values": floats(est(Y)),
        "support_dtype": support.dtype.str,
        "support_shape": list(support.shape),
        "weights": floats(weights),
        "n_samples": int(est.n_samples_),
        "n_features_in": int(est.n_features_in_),
    }
    if isinstance(est, nk.NystromKME):
        record.update(
            s_sum=floats(est.s_sum_),
            weight_sum=float(est.weight_sum_),
            solver=est.solver_,
            rank=int(est.rank_),
            sampler=repr(est.sampler),
            sampler_=repr(est.sampler_),
            landmark_indices=None if est.landmark_indices_ is None else [int(i) for i in est.landmark_indices_],
        )
    return record


def main() -> None:
    OUT.mkdir(exist_ok=True)
    rng = np.random.default_rng(20240523)
    X = rng.normal(size=(300, 3))
    X2 = rng.normal(size=(200, 2)).astype(np.float32)
    Y3, Y2 = rng.normal(size=(5, 3)), rng.normal(size=(5, 2)).astype(np.float32)
    more3, more2 = rng.normal(size=(40, 3)), rng.normal(size=(40, 2)).astype(np.float32)
    expected: dict[str, dict] = {
        "Y3": {"values": floats(Y3)},
        "Y2": {"values": floats(Y2)},
        "more3": {"values": floats(more3)},
        "more2": {"values": floats(more2)},
    }

    def embedding(name, est, Y, more, more_weights=None):
        est.save(OUT / name)
        record = embedding_record(est, Y)
        if isinstance(est, nk.NystromKME):  # what partial_fit continues to, from the saved sums
            record["after_partial_fit"] = floats(nk.load(OUT / name).partial_fit(more, sample_weight=more_weights)(Y))
        expected[name] = record

    # a weighted fit, median bandwidth, uniform draws by name (landmark indices stored)
    est = nk.NystromKME("gaussian", n_landmarks=12, random_state=5).fit(X, sample_weight=rng.uniform(0.5, 2, 300))
    more_weights = rng.uniform(0.5, 2, 40)
    expected["more_weights"] = {"values": floats(more_weights)}
    embedding("nystrom_uniform.npz", est, Y3, more3, more_weights)
    # float32 data, a policy object with parameters, the Cholesky solver
    embedding(
        "nystrom_policy_float32.npz",
        nk.NystromKME(
            nk.Matern(1.3, nu=1.5),
            n_landmarks=10,
            solver="cholesky",
            sampler=nk.RPCholeskySampling(tolerance=1e-9),
            random_state=2,
            n_threads=1,
        ).fit(X2),
        Y2,
        more2,
    )
    # landmarks given as points (the sampler_array member), a polynomial kernel
    embedding(
        "nystrom_given_points.npz",
        nk.NystromKME(nk.Polynomial(2.0, degree=2, offset=0.5), sampler=X[:6].copy(), rcond=1e-10).fit(X),
        Y3,
        more3,
    )
    # a FixedLandmarks policy (the policy_indices member), Laplacian, fitted in two parts
    est = nk.NystromKME(nk.Laplacian(0.8), sampler=FixedLandmarks([4, 8, 15, 16, 23, 42]), passes=1, chunk_rows=64).fit(
        X[:150]
    )
    embedding("nystrom_fixed_partial.npz", est.partial_fit(X[150:]), Y3, more3)
    # an empirical embedding of float32 data with weights
    embedding(
        "empirical_float32.npz",
        nk.EmpiricalKME(nk.InverseMultiquadric(0.9)).fit(X2[:30], sample_weight=rng.uniform(size=30)),
        Y2,
        None,
    )

    f = lambda P: np.sin(P[:, 0]) + P[:, -1] ** 2  # noqa: E731
    for name, rule in (
        ("quadrature.npz", nk.QuadratureRule.from_embedding(nk.load(OUT / "nystrom_uniform.npz"))),
        ("quadrature_no_kernel.npz", nk.QuadratureRule(X[:4], np.array([0.1, 0.2, 0.3, 0.4]))),
    ):
        rule.save(OUT / name)
        expected[name] = {
            "repr": repr(rule),
            "kernel": repr(rule.kernel),
            "nodes": floats(rule.nodes),
            "weights": floats(rule.weights),
            "integral": float(rule.integrate(f)),
        }

    for name, res in (
        ("compression_simplex.npz", nk.compress(X, 8, random_state=0, compute_mmd=True)),
        (
            "compression_signed_ridge.npz",
            nk.compress(X2, 6, weights="signed", ridge=0.05, random_state=1, compute_mmd=False),
        ),
    ):
        res.save(OUT / name)
        expected[name] = {
            "kernel": repr(res.kernel),
            "points": floats(res.points),
            "weights": floats(res.weights),
            "indices": [int(i) for i in res.indices],
            "mmd": res.mmd,
            "method": res.method,
            "ridge": res.ridge,
            "points_dtype": res.points.dtype.str,
        }

    A, B = X[:120], rng.normal(size=(100, 3)) + 0.3
    res = nk.two_sample_test(A, B, n_permutations=19, random_state=0)
    res.save(OUT / "two_sample.json")
    expected["two_sample.json"] = {
        "repr": repr(res),
        "statistic": res.statistic,
        "pvalue": res.pvalue,
        "null_distribution": floats(res.null_distribution),
    }
    agg = nk.two_sample_test(
        A,
        B,
        kernel=nk.KernelCollection(("gaussian", "laplacian"), n_bandwidths=2),
        aggregation="fuse",
        n_permutations=19,
        random_state=0,
    )
    agg.save(OUT / "aggregated.json")
    expected["aggregated.json"] = {
        "statistic": agg.statistic,
        "pvalue": agg.pvalue,
        "null_distribution": floats(agg.null_distribution),
        "kernels": [repr(k) for k in agg.kernels],
        "kernel_pvalues": floats(agg.kernel_pvalues),
        "explain": agg.explain(0.05),
    }

    expected["_about"] = {"package_version": nk.__version__}
    lines = ",\n".join(f" {json.dumps(k)}: {json.dumps(v, allow_nan=False)}" for k, v in expected.items())
    (OUT / "expected.json").write_text("{\n" + lines + "\n}\n")


if __name__ == "__main__":
    main()
