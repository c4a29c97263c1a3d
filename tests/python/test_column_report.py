"""nk.column_report and DriftDetector.column_report (issue 43 item 9): which columns moved,
each column's own test, the corrections for the number of columns against independent
references (scipy's Benjamini-Hochberg and -Yekutieli, Holm as closed testing), the
family-wise error over repetitions, and the names of DataFrames and file headers."""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest
from scipy.stats import binom, false_discovery_control

import nystrom_kme as nk
from nystrom_kme.column_report import adjusted_pvalues, default_permutations

# --------------------------------------------------------------------------- corrections


def _holm_by_closed_testing(p: np.ndarray) -> np.ndarray:
    """Holm's adjusted p-values as closed testing with Bonferroni tests: column i's is the
    largest, over the sets S holding i, of min(1, |S| min_{j in S} p_j)."""
    k = p.size
    out = np.zeros(k)
    for size in range(1, k + 1):
        for S in itertools.combinations(range(k), size):
            local = min(1.0, size * p[list(S)].min())
            for i in S:
                out[i] = max(out[i], local)
    return out


@pytest.mark.parametrize("seed", range(6))
def test_holm_is_closed_testing_with_bonferroni(seed):
    rng = np.random.default_rng(seed)
    p = rng.choice([0.001, 0.004, 0.01, 0.02, 0.2, 0.5, 1.0], size=7) * rng.uniform(0.5, 1, 7)
    p[:2] = p[2]  # ties
    np.testing.assert_allclose(adjusted_pvalues(p, "holm"), _holm_by_closed_testing(p), rtol=1e-12)


@pytest.mark.parametrize("method", ["bh", "by"])
def test_benjamini_corrections_match_scipy(method):
    rng = np.random.default_rng(1)
    for k in (1, 2, 10, 57):
        p = rng.uniform(size=k) ** 3
        np.testing.assert_allclose(adjusted_pvalues(p, method), false_discovery_control(p, method=method), rtol=1e-12)


def test_correction_arguments_are_checked():
    with pytest.raises(ValueError, match="correction"):
        adjusted_pvalues([0.1], "bonferroni")
    with pytest.raises(ValueError, match="pvalues"):
        adjusted_pvalues([0.1, 1.5])
    with pytest.raises(ValueError, match="correction"):
        nk.column_report(np.zeros((5, 2)), np.zeros((5, 2)), correction="fdr")


def test_default_permutations_let_a_column_be_named():
    """k columns need B + 1 >= k / alpha for the smallest adjusted p-value to reach alpha."""
    for k, alpha in ((1, 0.05), (10, 0.05), (100, 0.05), (40, 0.01)):
        B = default_permutations(k, alpha)
        assert B >= 200 and k / (B + 1) <= alpha / 2
    rng = np.random.default_rng(0)
    X, Y = rng.normal(size=(150, 30)), rng.normal(size=(150, 30))
    Y[:, 7] += 3.0
    rep = nk.column_report(X, Y, kernel="gaussian", random_state=0)
    assert rep.n_permutations == 1199 and rep.moved == ("x7",)
    few = nk.column_report(X, Y, kernel="gaussian", n_permutations=199, columns=list(range(30)), random_state=0)
    assert few.moved == () and few.adjusted_pvalues.min() == pytest.approx(30 / 200)  # B too small to name any


# --------------------------------------------------------------------------- each column's test


def test_each_column_is_tested_alone_with_its_own_statistic():
    """With every pooled row a landmark the Nystrom statistic is the dense V-statistic of
    that column (numpy reference), so the report tested column j and nothing else."""
    rng = np.random.default_rng(2)
    X, Y = rng.normal(size=(60, 3)), rng.normal(size=(50, 3))
    Y[:, 1] += 0.8
    k = nk.Gaussian(bandwidth=0.7)
    rep = nk.column_report(X, Y, kernel=k, random_state=0)
    for j, res in enumerate(rep.results):
        x, y = X[:, [j]], Y[:, [j]]

        def gram(A, B):
            return np.exp(-((A - B.T) ** 2) / (2 * 0.7**2))

        biased = gram(x, x).mean() + gram(y, y).mean() - 2 * gram(x, y).mean()
        assert res.n_landmarks == 110 and res.statistic == pytest.approx(biased, rel=1e-6, abs=1e-12)
    np.testing.assert_array_equal(rep.pvalues, [r.pvalue for r in rep.results])


def test_a_moved_column_is_named_and_ranked_first():
    rng = np.random.default_rng(3)
    X, Y = rng.normal(size=(800, 5)), rng.normal(size=(800, 5))
    Y[:, 3] += 0.6  # a large shift
    Y[:, 0] *= 1.25  # a smaller change of spread
    rep = nk.column_report(X, Y, random_state=1)
    assert set(rep.moved) == {"x3", "x0"} and rep.rank[3] == 1 and rep.rank[0] == 2
    assert rep.moved == ("x3", "x0")
    assert (rep.adjusted_pvalues >= rep.pvalues).all() and rep.reject.tolist() == [True, False, False, True, False]
    # ties in the adjusted p-value are ranked by the MMD: the larger change first
    assert rep.results[3].effect.mmd > rep.results[0].effect.mmd
    text = rep.explain()
    assert "2 of 5 columns moved" in text and "Holm" in text and "1. x3: moved" in text
    assert repr(rep).startswith("ColumnReport(2 of 5 columns moved")


def test_reproducible_and_each_column_independent_of_the_others():
    rng = np.random.default_rng(4)
    X, Y = rng.normal(size=(300, 4)), rng.normal(size=(300, 4)) + 0.05
    a = nk.column_report(X, Y, random_state=7)
    b = nk.column_report(X, Y, random_state=7, columns=["x2", 0])
    np.testing.assert_array_equal(a.pvalues, nk.column_report(X, Y, random_state=7).pvalues)
    assert b.columns == ("x2", "x0")
    assert b.pvalues.tolist() == [a.pvalues[2], a.pvalues[0]]
    np.testing.assert_allclose(b.adjusted_pvalues, adjusted_pvalues(b.pvalues))  # the family: the 2 tested


def test_family_wise_error_over_repetitions():
    """Under H0 for every column (5 correlated columns, 100 repetitions) Holm names a
    column in at most alpha of the repetitions: the count stays below binomial(100, 0.05)'s
    0.999 quantile (without the correction about 1 - 0.95^5 = 23% would). BH and BY, whose
    false discovery rate is the family-wise error when no column moved, likewise."""
    R, alpha = 100, 0.05
    C = np.full((5, 5), 0.6) + 0.4 * np.eye(5)
    L = np.linalg.cholesky(C)
    named = {"holm": 0, "bh": 0, "by": 0}
    raw = []
    for r in range(R):
        rng = np.random.default_rng(1000 + r)
        X, Y = rng.normal(size=(100, 5)) @ L.T, rng.normal(size=(100, 5)) @ L.T
        rep = nk.column_report(X, Y, n_permutations=199, random_state=r)
        raw.append(rep.pvalues)
        for method in named:
            named[method] += bool((adjusted_pvalues(rep.pvalues, method) <= alpha).any())
    bound = binom.ppf(0.999, R, alpha)
    assert all(count <= bound for count in named.values()), named
    raw = np.array(raw)
    uncorrected = int((raw <= alpha).any(axis=1).sum())
    assert uncorrected > bound  # the correction is what keeps the error down
    share = float((raw <= alpha).mean())  # each column's own test: level alpha
    assert abs(share - alpha) <= 3 * np.sqrt(alpha * (1 - alpha) / raw.size) + 0.01


# --------------------------------------------------------------------------- names


def test_names_from_dataframes_and_file_headers(tmp_path):
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(5)
    X, Y = rng.normal(size=(200, 3)), rng.normal(size=(200, 3))
    Y[:, 1] += 1.0
    cols = ["age", "income", "height"]
    rep = nk.column_report(pd.DataFrame(X, columns=cols), pd.DataFrame(Y, columns=cols), random_state=0)
    assert rep.columns == tuple(cols) and rep.moved == ("income",)
    frame = rep.to_frame()
    assert frame.index.tolist()[0] == "income" and frame["rank"].tolist() == [1, 2, 3]
    assert frame.loc["income", "reject"] and frame.loc["income", "effect"] == rep.results[1].effect.mmd
    with pytest.raises(ValueError, match="same columns"):
        nk.column_report(pd.DataFrame(X, columns=cols), pd.DataFrame(Y, columns=["age", "height", "income"]))
    px, py = tmp_path / "x.csv", tmp_path / "y.csv"
    for path, data in ((px, X), (py, Y)):
        path.write_text(",".join(cols) + "\n" + "\n".join(",".join(repr(float(v)) for v in row) for row in data) + "\n")
    from_files = nk.column_report(px, py, random_state=0)
    assert from_files.columns == tuple(cols) and from_files.pvalues.tolist() == rep.pvalues.tolist()
    with pytest.raises(ValueError, match="differ from the data's column names"):
        nk.column_report(px, py, names=["a", "b", "c"])


def test_names_and_columns_are_checked():
    X = np.zeros((10, 3))
    with pytest.raises(ValueError, match="names must be 3 strings"):
        nk.column_report(X, X, names=["a", "b"])
    with pytest.raises(ValueError, match="names must differ"):
        nk.column_report(X, X, names=["a", "a", "b"])
    with pytest.raises(ValueError, match="no column named 'z'"):
        nk.column_report(X, X, names=["a", "b", "c"], columns=["z"])
    with pytest.raises(ValueError, match="neither a column name nor a position"):
        nk.column_report(X, X, columns=[3])
    with pytest.raises(ValueError, match="twice"):
        nk.column_report(X, X, columns=[0, "x0"])
    with pytest.raises(ValueError, match="n_landmarks"):
        nk.column_report(X, X, n_landmarks=0)
    with pytest.raises(ValueError, match="features"):
        nk.column_report(X, np.zeros((10, 2)))


def test_a_constant_column_did_not_move():
    X, Y = np.ones((50, 2)), np.ones((40, 2))
    rng = np.random.default_rng(6)
    X[:, 1], Y[:, 1] = rng.normal(size=50), rng.normal(size=40) + 2
    rep = nk.column_report(X, Y, random_state=0)
    assert rep.pvalues[0] == 1.0 and rep.results[0].effect.mmd == 0.0 and rep.moved == ("x1",)


# --------------------------------------------------------------------------- the detector


def test_detector_column_report_against_the_held_out_rows():
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(7)
    cols = ["a", "b", "c", "d"]
    ref = pd.DataFrame(rng.normal(size=(10_000, 4)), columns=cols)
    det = nk.DriftDetector(ref, n_holdout=5000, random_state=0)
    twin = nk.DriftDetector(ref, n_holdout=5000, random_state=0)
    batch = pd.DataFrame(rng.normal(size=(150, 4)), columns=cols)
    batch["c"] += 0.7
    rep = det.column_report(batch)
    assert rep.columns == tuple(cols) and rep.moved == ("c",)
    # the held-out rows are the sample X: the report is column_report(holdout, batch)
    mine = det.column_report(batch, random_state=3)
    same = nk.column_report(det.reference_.holdout, batch.to_numpy(), names=cols, random_state=3)
    np.testing.assert_array_equal(mine.pvalues, same.pvalues)
    # reproducible, and the batches' draws are untouched
    np.testing.assert_array_equal(det.column_report(batch).pvalues, rep.pvalues)
    assert det.predict(batch).pvalue == twin.predict(batch).pvalue
    with pytest.raises(ValueError, match="feature names"):
        det.column_report(batch[["b", "a", "c", "d"]])


def test_standardized_detector_reports_in_its_units():
    rng = np.random.default_rng(8)
    ref = rng.normal(size=(4000, 2)) * [1.0, 1000.0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        det = nk.DriftDetector(ref, n_holdout=1500, standardize=True, random_state=0)
    batch = rng.normal(size=(120, 2)) * [1.0, 1000.0]
    batch[:, 1] += 800.0
    rep = det.column_report(batch, correction="bh")
    assert rep.moved == ("x1",) and rep.correction == "bh"


def test_a_preprocessed_detector_names_the_columns_it_tests():
    """A preprocess may change the columns (here it drops one): the report names the
    columns it tests, not the input's."""
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(9)
    ref = pd.DataFrame(rng.normal(size=(3000, 3)), columns=["a", "b", "c"])
    det = nk.DriftDetector(ref, n_holdout=1500, preprocess=lambda x: np.asarray(x)[:, :2], random_state=0)
    batch = pd.DataFrame(rng.normal(size=(40, 3)) + [0.0, 1.5, 0.0], columns=["a", "b", "c"])
    rep = det.column_report(batch)
    assert rep.columns == ("x0", "x1") and rep.moved == ("x1",)
