"""Results as tables and pictures (issue 43 items 8 and 9): ``.kernel`` on the default
test's result, its statistic (minus a p-value) explained, ``row()``/``to_frame()`` for
every result and ``nk.results_frame`` for lists, ``plot()`` for a test's null and an
online detector's stream; pandas and matplotlib optional, named when missing."""

from __future__ import annotations

import sys

import numpy as np
import pytest

import nystrom_kme as nk
from nystrom_kme._plots import critical_value


@pytest.fixture(scope="module")
def shifted():
    rng = np.random.default_rng(0)
    return rng.normal(size=(300, 2)), rng.normal(size=(300, 2)) + 0.3


@pytest.fixture(scope="module")
def default_result(shifted):
    # the previous default (issue 27): a rule of two parts, whose deciding kernel these tests read
    return nk.two_sample_test(*shifted, aggregation="fuse+median", n_permutations=99, random_state=0)


@pytest.fixture(scope="module")
def detector():
    rng = np.random.default_rng(1)
    return nk.DriftDetector(rng.normal(size=(8000, 2)), n_holdout=4000, n_permutations=99, random_state=0)


@pytest.fixture
def pyplot():
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    yield plt
    plt.close("all")


# --------------------------------------------------------------------------- item 8: .kernel and -p


def test_the_default_results_kernel_is_the_one_that_decided(default_result):
    res = default_result
    assert res.aggregation == "fuse+median" and res.kernel == res.kernels[res.dominant]
    assert res.kernel == res.effect.kernel  # the effect is measured with the deciding kernel
    # the rule's own description of who decided: the median Gaussian (last) when its marginal
    # p-value is the smaller, i.e. equals minus the statistic
    median_decides = res.kernel_pvalues[-1] <= -res.statistic + 1e-12
    assert (res.kernel == res.kernels[-1]) == median_decides


@pytest.mark.parametrize("aggregation", ["fuse+median", "mmdagg"])
def test_a_statistic_that_is_minus_a_pvalue_is_explained(shifted, aggregation):
    X, Y = shifted
    res = nk.two_sample_test(X[:100], Y[:100], aggregation=aggregation, n_permutations=99, random_state=1)
    assert -1 <= res.statistic < 0
    if aggregation == "mmdagg":
        assert res.statistic == pytest.approx(-res.kernel_pvalues.min())
    line = next(s for s in res.explain().splitlines() if s.startswith("Statistic:"))
    assert f"{res.statistic:.4g}" in line and "minus the small" in line and "larger is more extreme" in line
    assert "minus" in nk.AggregatedTestResult.__doc__ and "fuse+median" in nk.AggregatedTestResult.__doc__


# --------------------------------------------------------------------------- rows and frames


def test_a_rows_cells_are_the_results_fields(default_result):
    res = default_result
    row = res.row()
    assert list(row)[:5] == ["H0", "pvalue", "reject", "alpha", "statistic"]
    assert row["pvalue"] == res.pvalue and row["reject"] is res.reject and row["statistic"] == res.statistic
    assert row["kernel"] == repr(res.kernel) and row["n_kernels"] == len(res.kernels)
    e = res.effect
    assert (row["effect"], row["effect_low"], row["effect_high"], row["effect_level"]) == (
        e.mmd,
        e.low,
        e.high,
        e.level,
    )
    assert row["method"] == res.method and row["n_permutations"] == 99 and row["aggregation"] == "fuse+median"
    assert all(isinstance(v, (bool, int, float, str, type(None))) for v in row.values())


def test_to_frame_for_every_result(shifted, default_result, detector):
    pd = pytest.importorskip("pandas")
    X, Y = shifted
    one = nk.two_sample_test(X, Y, kernel="gaussian", n_permutations=49, random_state=0)
    ind = nk.independence_test(X[:, :1], Y[:, :1], n_permutations=49, random_state=0)
    cond = nk.conditional_independence_test(X[:, :1], Y[:, :1], X[:, 1:], random_state=0)
    drift = detector.predict(Y[:100])
    for res in (one, default_result, ind, cond, drift):
        frame = res.to_frame()
        assert isinstance(frame, pd.DataFrame) and frame.shape[0] == 1
        assert frame.iloc[0]["pvalue"] == res.pvalue and frame.iloc[0]["statistic"] == res.statistic
    assert one.to_frame().iloc[0]["kernel"] == repr(one.kernel)
    assert ind.to_frame().iloc[0]["kernel_x"] == repr(ind.deciding_kernels[0])
    assert cond.to_frame().iloc[0]["kernel_z"] == repr(cond.kernel_z)
    row = drift.to_frame().iloc[0]
    assert row["is_drift"] == drift.is_drift and row["distance"] == drift.distance.mmd and row["n_batch"] == 100


def test_results_frame_of_many_results(shifted, default_result, detector):
    pytest.importorskip("pandas")
    X, Y = shifted
    batches = {"monday": X[:100], "tuesday": Y[:100], "wednesday": X[100:200]}
    results = {day: detector.predict(b) for day, b in batches.items()}
    frame = nk.results_frame(results)
    assert frame.index.tolist() == list(batches) and "result" not in frame
    assert frame["pvalue"].tolist() == [r.pvalue for r in results.values()]
    assert frame["is_drift"].tolist() == [r.is_drift for r in results.values()]
    listed = nk.results_frame(list(results.values()))
    assert listed.index.tolist() == [0, 1, 2] and listed["pvalue"].tolist() == frame["pvalue"].tolist()
    mixed = nk.results_frame([default_result, results["monday"]])
    assert mixed["result"].tolist() == ["AggregatedTestResult", "DriftResult"]
    assert mixed["reject"].tolist()[0] is True or mixed["reject"].tolist()[0] == default_result.reject
    with pytest.raises(TypeError, match="results"):
        nk.results_frame([default_result, 0.5])


def test_an_online_stream_as_a_table():
    pytest.importorskip("pandas")
    rng = np.random.default_rng(2)
    det = nk.OnlineDriftDetector(rng.normal(size=(3000, 2)), ert=100, window_size=10, random_state=0)
    first = det.update(rng.normal(size=(30, 2)))
    second = det.update(rng.normal(size=(40, 2)) + 2.0)
    stream = nk.OnlineDriftResult.concatenate([first, second])
    assert stream.time.tolist() == list(range(1, 71)) and stream.drift_time == second.drift_time
    assert stream.is_drift and first.drift_time is None
    frame = nk.results_frame([first, second])
    assert frame.shape[0] == 70 and frame["time"].tolist() == list(range(1, 71))
    expected = np.nan_to_num(stream.statistic, nan=-np.inf) > stream.threshold
    assert frame["alarm"].tolist() == expected.tolist()
    assert frame["alarm"].any() and frame.loc[frame["alarm"], "time"].iloc[0] == stream.drift_time
    np.testing.assert_array_equal(stream.to_frame()["statistic"].to_numpy(), stream.statistic)
    with pytest.raises(ValueError, match="OnlineDriftResult"):
        nk.OnlineDriftResult.concatenate([])


def test_missing_pandas_and_matplotlib_are_named(default_result, monkeypatch):
    monkeypatch.setitem(sys.modules, "pandas", None)  # import pandas raises ImportError
    with pytest.raises(ImportError, match="pandas"):
        default_result.to_frame()
    with pytest.raises(ImportError, match="pandas"):
        nk.results_frame([default_result])
    assert default_result.row()["pvalue"] == default_result.pvalue  # rows need nothing
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    monkeypatch.setitem(sys.modules, "matplotlib.pyplot", None)
    with pytest.raises(ImportError, match="matplotlib"):
        default_result.plot()


# --------------------------------------------------------------------------- pictures


@pytest.mark.parametrize("B", [19, 39, 99, 199, 1000])
@pytest.mark.parametrize("alpha", [0.01, 0.05, 0.1])
def test_the_threshold_separates_the_rejected_statistics(B, alpha):
    """Every candidate statistic T (each null value, and between them) is rejected,
    (1 + #{T_b >= T}) / (1 + B) <= alpha, exactly when it exceeds the threshold."""
    rng = np.random.default_rng(B)
    null = np.round(rng.normal(size=B), 1)  # ties
    c = critical_value(null, alpha)
    values = np.unique(null)
    for T in np.r_[values, values + 0.05, values.min() - 1]:
        rejected = (1 + np.count_nonzero(null >= T)) / (B + 1) <= alpha
        assert rejected == (c is not None and T > c)
    assert (c is None) == (alpha * (B + 1) < 1)


def test_a_tests_plot_shows_its_null_statistic_and_threshold(pyplot, default_result):
    res = default_result
    ax = res.plot()
    heights = sum(p.get_height() for p in ax.patches)
    assert heights == res.n_permutations
    xs = [line.get_xdata()[0] for line in ax.get_lines()]
    assert xs == [res.statistic, critical_value(res.null_distribution, res.alpha)]
    fig, given = pyplot.subplots()
    assert res.plot(ax=given, alpha=0.1) is given
    with pytest.raises(ValueError, match="alpha"):
        res.plot(alpha=2.0)


def test_a_drift_results_plot(pyplot, detector):
    rng = np.random.default_rng(3)
    res = detector.predict(rng.normal(size=(80, 2)) + 0.5)
    assert res.null_distribution.shape == (99,)
    assert res.pvalue == (1 + np.count_nonzero(res.null_distribution >= res.statistic)) / 100
    ax = res.plot()
    assert [line.get_xdata()[0] for line in ax.get_lines()][0] == res.statistic


def test_a_streams_plot(pyplot):
    rng = np.random.default_rng(4)
    det = nk.OnlineDriftDetector(rng.normal(size=(3000, 2)), ert=100, window_size=10, random_state=0)
    res = det.update(np.r_[rng.normal(size=(40, 2)), rng.normal(size=(30, 2)) + 2.0])
    ax = res.plot()
    statistic, threshold, alarms = ax.get_lines()
    np.testing.assert_array_equal(statistic.get_ydata(), res.statistic)
    np.testing.assert_array_equal(threshold.get_ydata(), res.threshold)
    assert alarms.get_xdata()[0] == res.drift_time and len(alarms.get_xdata()) == int(
        (res.statistic > det.threshold_).sum()
    )


def test_a_column_reports_plot(pyplot):
    rng = np.random.default_rng(5)
    X, Y = rng.normal(size=(300, 4)), rng.normal(size=(300, 4))
    Y[:, 2] += 0.8
    rep = nk.column_report(X, Y, random_state=0)
    ax = rep.plot()
    widths = [p.get_width() for p in ax.patches]
    assert widths == [rep.results[j].effect.mmd for j in rep.order]
    at = dict(zip(ax.get_yticks(), (t.get_text() for t in ax.get_yticklabels())))
    assert [at[y] for y in sorted(at, reverse=True)] == [rep.columns[j] for j in rep.order]  # the first at the top
    assert at[max(at)] == "x2" and rep.moved == ("x2",)
