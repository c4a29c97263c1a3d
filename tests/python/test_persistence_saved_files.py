"""Files written before the persistence rework (tests/data/saved/, see its README) load
unchanged: each object reproduces what the writing code computed with it
(tests/data/saved/expected.json): its stored arrays bit for bit, values computed anew to
float64 or float32 rounding; the embeddings also agree with a dense numpy evaluation; and
saving a loaded object again gives the file's bytes exactly."""

from __future__ import annotations

import json
import pathlib
import re
import zipfile

import numpy as np
import pytest
from numpy.testing import assert_array_equal

import nystrom_kme as nk
from references import dense_kernel

SAVED = pathlib.Path(__file__).parents[1] / "data" / "saved"
EXPECTED = json.loads((SAVED / "expected.json").read_text())
FILES = sorted(p.name for p in SAVED.iterdir() if p.name != "expected.json")
EMBEDDINGS = [name for name in FILES if name.startswith(("nystrom_", "empirical_"))]


def _points(name: str) -> tuple[np.ndarray, np.ndarray]:
    """(evaluation points, partial_fit rows) of a saved embedding, in its data's dtype."""
    record = EXPECTED[name]
    d, dtype = record["n_features_in"], np.dtype(record["support_dtype"])
    Y = np.array(EXPECTED[f"Y{d}"]["values"]).reshape(-1, d).astype(dtype)
    more = np.array(EXPECTED[f"more{d}"]["values"]).reshape(-1, d).astype(dtype)
    return Y, more


def _plain(text: str) -> str:
    """A repr with numpy arrays written as lists: a loaded FixedLandmarks holds its indices
    as an array where the writer's held a list."""
    return re.sub(r"array\(\[([^\]]*)\]\)", lambda m: "[" + ", ".join(m.group(1).replace(",", " ").split()) + "]", text)


def test_every_saved_file_has_its_expectations():
    assert set(FILES) == set(EXPECTED) - {"Y2", "Y3", "more2", "more3", "more_weights", "_about"}
    assert len(FILES) == 12  # 4 Nystrom, 1 empirical, 2 rules, 2 compressions, 2 test results, 1 sequential test


@pytest.mark.parametrize("name", EMBEDDINGS)
def test_saved_embeddings_load_and_evaluate_as_written(name):
    record = EXPECTED[name]
    est = nk.load(SAVED / name)
    Y, more = _points(name)
    support, weights, kernel = est.fitted()
    assert _plain(repr(est)) == record["repr"] and repr(kernel) == record["kernel"]
    assert (support.dtype.str, list(support.shape)) == (record["support_dtype"], record["support_shape"])
    assert_array_equal(weights, record["weights"])
    # computed anew: float64 data to 1e-13 of the writer's values at every level (README,
    # "Platforms"); float32 data to float32 rounding (their distances and kernel values are
    # float32: SSE2 has no FMA, 2e-8 measured, and the float32 kernel map has been in base 2
    # since the files were written, 4e-8), not to the writer's bits
    float64 = support.dtype == np.float64
    np.testing.assert_allclose(est(Y), record["values"], rtol=1e-13 if float64 else 1e-6, atol=0)
    assert (est.n_samples_, est.n_features_in_) == (record["n_samples"], record["n_features_in"])
    # independently of the core: mu(y) = sum_j w_j k(z_j, y) with a dense numpy kernel
    extra = kernel._params() if isinstance(kernel, nk.Polynomial) else {}
    K = dense_kernel(kernel.name, Y, support, kernel.bandwidth, **extra)
    tol = 1e-10 if support.dtype == np.float64 else 1e-5  # float32 data: distances in float32
    np.testing.assert_allclose(est(Y), K @ weights, rtol=tol, atol=tol * np.abs(K @ weights).max())
    if isinstance(est, nk.NystromKME):
        assert_array_equal(est.s_sum_, record["s_sum"])
        assert (est.weight_sum_, est.solver_, est.rank_) == (record["weight_sum"], record["solver"], record["rank"])
        assert _plain(repr(est.sampler)) == record["sampler"] and _plain(repr(est.sampler_)) == record["sampler_"]
        indices = None if est.landmark_indices_ is None else est.landmark_indices_.tolist()
        assert indices == record["landmark_indices"]
        # the saved compensated sums continue as the writer's estimator continued
        weights = np.array(EXPECTED["more_weights"]["values"]) if name == "nystrom_uniform.npz" else None
        np.testing.assert_allclose(
            est.partial_fit(more, sample_weight=weights)(Y),
            record["after_partial_fit"],
            rtol=1e-13 if float64 else 1e-6,
            atol=0,
        )


@pytest.mark.parametrize("name", ["quadrature.npz", "quadrature_no_kernel.npz"])
def test_saved_rules_load_as_written(name):
    record, rule = EXPECTED[name], nk.load(SAVED / name)
    assert type(rule) is nk.QuadratureRule
    assert repr(rule) == record["repr"] and repr(rule.kernel) == record["kernel"]
    assert_array_equal(rule.nodes.ravel(), record["nodes"])
    assert_array_equal(rule.weights, record["weights"])
    f = lambda P: np.sin(P[:, 0]) + P[:, -1] ** 2  # noqa: E731
    assert rule.integrate(f) == record["integral"]
    assert rule.integrate(f) == pytest.approx(float(rule.weights @ f(rule.nodes)), rel=1e-12)


@pytest.mark.parametrize("name", ["compression_simplex.npz", "compression_signed_ridge.npz"])
def test_saved_compressions_load_as_written(name):
    record, res = EXPECTED[name], nk.load(SAVED / name)
    assert type(res) is nk.CompressionResult and repr(res.kernel) == record["kernel"]
    assert res.points.dtype.str == record["points_dtype"]
    assert_array_equal(res.points.ravel(), record["points"])
    assert_array_equal(res.weights, record["weights"])
    assert res.indices.tolist() == record["indices"]
    assert (res.mmd, res.method, res.ridge) == (record["mmd"], record["method"], record["ridge"])


def test_saved_test_results_load_as_written():
    record, res = EXPECTED["two_sample.json"], nk.load(SAVED / "two_sample.json")
    assert type(res) is nk.TwoSampleResult and repr(res) == record["repr"]
    assert (res.statistic, res.pvalue) == (record["statistic"], record["pvalue"])
    assert_array_equal(res.null_distribution, record["null_distribution"])
    # the p-value is the one of the saved statistic and null distribution
    assert res.pvalue == (1 + np.sum(res.null_distribution >= res.statistic)) / (1 + res.n_permutations)
    record, agg = EXPECTED["aggregated.json"], nk.load(SAVED / "aggregated.json")
    assert type(agg) is nk.AggregatedTestResult
    assert (agg.statistic, agg.pvalue) == (record["statistic"], record["pvalue"])
    assert_array_equal(agg.null_distribution, record["null_distribution"])
    assert [repr(k) for k in agg.kernels] == record["kernels"]
    assert_array_equal(agg.kernel_pvalues, record["kernel_pvalues"])
    assert agg.explain(0.05) == record["explain"]


@pytest.mark.parametrize("name", FILES)
def test_saving_a_loaded_file_again_gives_its_bytes(tmp_path, monkeypatch, name):
    """Byte for byte: the header's JSON (keys, floats, package version), the members, their
    order, dtypes and .npy headers, and the zip container (entries are not timestamped)."""
    written = EXPECTED["_about"]["package_version"]
    monkeypatch.setattr(nk._core, "__version__", written)  # the preamble names the writer's version
    obj = nk.load(SAVED / name)
    obj.save(tmp_path / name)
    again, original = (tmp_path / name).read_bytes(), (SAVED / name).read_bytes()
    if name.endswith(".npz"):  # a mismatch named by member before the whole-file check
        with zipfile.ZipFile(SAVED / name) as a, zipfile.ZipFile(tmp_path / name) as b:
            assert a.namelist() == b.namelist()
            for member in a.namelist():
                assert a.read(member) == b.read(member), member
    assert again == original
