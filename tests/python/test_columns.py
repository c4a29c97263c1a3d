"""Column names (nystrom_kme._columns): read from data frames and file headers, kept by
fitted embeddings as feature_names_in_, saved with them, and checked against every
later batch: other names or another order are refused with a message naming them."""

from __future__ import annotations

import numpy as np
import pytest

import nystrom_kme as nk
from nystrom_kme._columns import as_feature_names, check_feature_names, column_names
from nystrom_kme.sources import as_rows, as_source

NAMES = ("age", "income", "score")


class Frame:
    """The least a data frame offers (pandas and polars have more): string column
    labels and an array conversion; no data-frame library needed."""

    def __init__(self, X, columns):
        self._X, self.columns = np.asarray(X), list(columns)

    def __array__(self, dtype=None, copy=None):
        return self._X if dtype is None else self._X.astype(dtype)

    def __getitem__(self, names):
        return Frame(self._X[:, [self.columns.index(n) for n in names]], names)


@pytest.fixture
def X(rng):
    return rng.normal(size=(400, 3)) * [1.0, 2.0, 0.5] + [0.0, 1.0, -1.0]


def test_names_come_from_frames_and_only_string_labels_are_names(X):
    assert column_names(Frame(X, NAMES)) == NAMES
    assert column_names(X) is None and column_names(X.tolist()) is None
    assert column_names(Frame(X, [0, 1, 2])) is None  # pandas' labels of unnamed columns: positions
    with pytest.raises(ValueError, match=r"^X has column names of types \['int', 'str'\]: names are used only"):
        column_names(Frame(X, [0, "income", "score"]))
    pd = pytest.importorskip("pandas")
    assert column_names(pd.DataFrame(X, columns=list(NAMES))) == NAMES
    assert column_names(pd.DataFrame(X)) is None
    names = as_feature_names(NAMES)
    assert names.dtype == object and names.tolist() == list(NAMES)


def test_names_from_arrow_and_polars(X):
    pa = pytest.importorskip("pyarrow")
    table = pa.table({n: X[:, j] for j, n in enumerate(NAMES)})
    assert column_names(table) == NAMES  # column_names, not its columns (the data)
    src = as_source(table)
    assert src.feature_names == NAMES and np.array_equal(src.to_array(), X)
    pl = pytest.importorskip("polars")
    assert column_names(pl.DataFrame({n: X[:, j] for j, n in enumerate(NAMES)})) == NAMES


def test_a_batch_with_other_names_or_another_order_is_refused_naming_them():
    check_feature_names(NAMES, NAMES, owner="NystromKME")
    check_feature_names(NAMES, None, owner="NystromKME")  # no names: by position
    check_feature_names(None, ("x", "y", "z"), owner="NystromKME")  # fitted without names
    swapped = ("income", "age", "score")
    with pytest.raises(ValueError, match="same order") as err:
        check_feature_names(NAMES, swapped, owner="NystromKME", what="batch.csv")
    assert "batch.csv has columns ['income', 'age', 'score'] but NystromKME was fitted with " in str(err.value)
    assert "(column index 0 is 'income', not 'age')" in str(err.value)
    with pytest.raises(ValueError) as err:
        check_feature_names(NAMES, ("age", "salary", "score"), owner="NystromKME")
    text = str(err.value)
    assert "Feature names unseen at fit time:\n- salary\n" in text
    assert "Feature names seen at fit time, yet now missing:\n- income\n" in text
    with pytest.raises(ValueError, match=r"\(2 columns, not 3\)"):  # a repeated name
        check_feature_names(("a", "b", "a"), ("a", "b"), owner="NystromKME")


def test_fitted_embeddings_keep_the_names_and_refuse_reordered_batches(X):
    frame = Frame(X, NAMES)
    est = nk.NystromKME(nk.Gaussian(1.0), n_landmarks=40, random_state=0).fit(frame)
    assert est.feature_names_in_.dtype == object and est.feature_names_in_.tolist() == list(NAMES)
    # the names change nothing else: the embedding of the same rows as an array
    plain = nk.NystromKME(nk.Gaussian(1.0), n_landmarks=40, random_state=0).fit(X)
    np.testing.assert_array_equal(est.weights_, plain.weights_)
    assert not hasattr(plain, "feature_names_in_")
    reordered = frame[["income", "age", "score"]]
    for call in (est, est.score, est.partial_fit, lambda b: list(est.evaluate_chunks(b))):
        with pytest.raises(ValueError, match=r"column index 0 is 'income', not 'age'"):
            call(reordered)
    with pytest.raises(ValueError, match="Feature names unseen at fit time:\n- salary"):
        est(Frame(X, ("age", "salary", "score")))
    # by position without names; by name in the fitted order
    np.testing.assert_array_equal(est(X[:5]), est(frame[list(NAMES)]._X[:5]))
    est.partial_fit(frame)  # the same names: accepted
    assert est.n_samples_ == 800
    # a refit on an array drops the names, as scikit-learn does
    est.fit(X)
    assert not hasattr(est, "feature_names_in_") and est(reordered).shape == (400,)


def test_empirical_embeddings_and_merges_keep_and_compare_names(X):
    emp = nk.EmpiricalKME(nk.Gaussian(1.0)).fit(Frame(X, NAMES))
    assert emp.feature_names_in_.tolist() == list(NAMES)
    with pytest.raises(ValueError, match="same order"):
        emp(Frame(X, NAMES[::-1]))
    a = nk.NystromKME(nk.Gaussian(1.0), n_landmarks=20, random_state=0).fit(Frame(X[:200], NAMES))
    b = nk.NystromKME(nk.Gaussian(1.0), n_landmarks=20, random_state=1).fit(Frame(X[200:], NAMES[::-1]))
    with pytest.raises(ValueError, match="an embedding merged has columns"):
        a.merge(b)
    with pytest.raises(ValueError, match="the second embedding has columns"):
        nk.rkhs_distance(a, b)
    c = nk.NystromKME(nk.Gaussian(1.0), n_landmarks=20, random_state=1).fit(X[200:])  # no names
    assert a.merge(c).feature_names_in_.tolist() == list(NAMES)


def test_names_are_saved_and_files_without_names_are_unchanged(tmp_path, X):
    est = nk.NystromKME(nk.Gaussian(1.0), n_landmarks=30, random_state=0).fit(Frame(X, NAMES))
    emp = nk.EmpiricalKME(nk.Gaussian(1.0)).fit(Frame(X[:50], NAMES))
    for obj in (est, emp):
        path = tmp_path / f"{type(obj).__name__}.npz"
        obj.save(path)
        back = nk.load(path)
        assert back.feature_names_in_.dtype == object and back.feature_names_in_.tolist() == list(NAMES)
        with pytest.raises(ValueError, match="same order"):
            back(Frame(X, NAMES[::-1]))
        back.save(tmp_path / "again.npz")
        assert (tmp_path / "again.npz").read_bytes() == path.read_bytes()
    plain = nk.NystromKME(nk.Gaussian(1.0), n_landmarks=30, random_state=0).fit(X)
    plain.save(tmp_path / "plain.npz")
    assert not hasattr(nk.load(tmp_path / "plain.npz"), "feature_names_in_")
    assert b"feature_names_in" not in (tmp_path / "plain.npz").read_bytes()


def test_pandas_frames_pass_scikit_learns_column_name_check(X):
    pd = pytest.importorskip("pandas")
    checks = pytest.importorskip("sklearn.utils.estimator_checks")
    for est in (nk.NystromKME(n_landmarks=20, random_state=0), nk.EmpiricalKME()):
        checks.check_dataframe_column_names_consistency(type(est).__name__, est)
    est = nk.NystromKME(n_landmarks=20, random_state=0).fit(pd.DataFrame(X, columns=list(NAMES)))
    with pytest.raises(ValueError, match="column index 1 is 'score', not 'income'"):
        est.score(pd.DataFrame(X, columns=list(NAMES))[["age", "score", "income"]])


def test_paths_are_row_sources_wherever_rows_are_taken(tmp_path, X):
    path = tmp_path / "ref.csv"
    np.savetxt(path, X, delimiter=",", header=",".join(NAMES), comments="")
    est = nk.NystromKME(nk.Gaussian(1.0), n_landmarks=30, random_state=0).fit(str(path))
    ref = nk.NystromKME(nk.Gaussian(1.0), n_landmarks=30, random_state=0).fit(X)
    np.testing.assert_allclose(est.weights_, ref.weights_, rtol=1e-12, atol=1e-12)
    assert est.feature_names_in_.tolist() == list(NAMES)
    np.testing.assert_allclose(est(path), ref(X), rtol=1e-12)  # a path-like object too
    emp = nk.EmpiricalKME(nk.Gaussian(1.0)).fit(path)
    assert emp.n_samples_ == 400 and emp.feature_names_in_.tolist() == list(NAMES)
    same = nk.mmd(X, X, kernel=nk.Gaussian(1.0), random_state=0)
    assert nk.mmd(path, X, kernel=nk.Gaussian(1.0), random_state=0) == pytest.approx(same, rel=1e-9)
    rows, names = as_rows(path)
    np.testing.assert_allclose(rows, X, rtol=1e-15)
    assert names == NAMES
    res = nk.compress(str(path), 10, kernel=nk.Gaussian(1.0), random_state=0)
    assert res.points.shape == (10, 3)
    with pytest.raises(nk.datafiles.DataFileError, match="missing.csv: no such file"):
        nk.NystromKME().fit(tmp_path / "missing.csv")
    swapped = tmp_path / "batch.csv"
    np.savetxt(swapped, X[:, [1, 0, 2]], delimiter=",", header="income,age,score", comments="")
    with pytest.raises(ValueError, match=r"batch.csv has columns \['income', 'age', 'score'\]"):
        est(swapped)


@pytest.mark.parametrize(
    "columns, match",
    [
        (["b", "a", "c"], r"column index 0 is 'b' in Y but 'a' in X"),
        (["a", "B", "c"], r"Y lacks \['b'\], and has \['B'\] that X lacks"),
        (["a", "b", "d"], r"Y lacks \['c'\]"),
        (["a", "a", "c"], r"Y repeats the column names \['a'\]"),
    ],
)
def test_two_samples_with_other_column_names_are_refused(columns, match):
    """Issue 43 item 3: two_sample_test, the MMDs and the CLI's test ran X and Y with
    reordered, renamed, upper-cased or repeated column names without a word."""
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(0)
    X = pd.DataFrame(rng.normal(size=(60, 3)), columns=["a", "b", "c"])
    Y = pd.DataFrame(rng.normal(size=(60, 3)), columns=columns)
    for run in (
        lambda: nk.two_sample_test(X, Y, n_permutations=19, random_state=0),
        lambda: nk.mmd2(X, Y, n_landmarks=10, random_state=0),
        lambda: nk.mmd2_exact(X, Y),
    ):
        with pytest.raises(ValueError, match=match):
            run()
    nk.two_sample_test(X, Y.to_numpy(), n_permutations=19, random_state=0)  # no names: by position
    nk.two_sample_test(X, Y.set_axis(["a", "b", "c"], axis=1), n_permutations=19, random_state=0)


def test_the_cli_test_refuses_files_with_other_headers(tmp_path):
    from nystrom_kme.cli import main

    rng = np.random.default_rng(1)
    for name, header in (("x.csv", "a,b"), ("y.csv", "b,a")):
        np.savetxt(tmp_path / name, rng.normal(size=(40, 2)), delimiter=",", header=header, comments="")
    with pytest.raises(SystemExit) as exit_info:
        raise SystemExit(main(["test", str(tmp_path / "x.csv"), str(tmp_path / "y.csv")]))
    assert exit_info.value.code == 2


def test_repeated_column_names_are_refused_where_a_model_is_fitted():
    """Issue 43 item 5: an estimator fitted on repeated column names saved a file that
    nk.load refused; the names are refused at fit, as the saved file's check does."""
    pd = pytest.importorskip("pandas")
    df = pd.DataFrame(np.random.default_rng(0).normal(size=(100, 3)), columns=["a", "a", "b"])
    with pytest.raises(ValueError, match=r"repeats the column names \['a'\]"):
        nk.NystromKME(n_landmarks=10, random_state=0).fit(df)
    with pytest.raises(ValueError, match=r"repeats the column names \['a'\]"):
        nk.DriftDetector(pd.concat([df] * 10, ignore_index=True), n_holdout=500, random_state=0)


def test_a_forged_estimator_file_with_a_scaling_but_standardize_false_is_refused(tmp_path):
    """Issue 43 item 5 (the estimator's half; the detectors' is in test_shared_engine)."""
    import json

    X = np.random.default_rng(0).normal(size=(300, 3))
    nk.NystromKME(n_landmarks=10, standardize=True, random_state=0).fit(X).save(tmp_path / "e.npz")
    members = dict(np.load(tmp_path / "e.npz"))
    header = json.loads(bytes(members["header"]))
    header["params"]["standardize"] = False
    members["header"] = np.frombuffer(json.dumps(header).encode(), dtype=np.uint8)
    np.savez(tmp_path / "bad.npz", **members)
    with pytest.raises(nk.FileFormatError, match="standardize=False"):
        nk.load(tmp_path / "bad.npz")
    loaded = nk.load(tmp_path / "e.npz")
    assert loaded.summary()["scaling_scale"] == [float(v) for v in loaded.scaling_.scale]  # info shows it
