"""Each fact once between the two-sample test and the drift detectors (issue 41): the
wiring before a decision, the round-off floor, the default m, the landmark plan
(``sampler=``, ``n_landmarks="auto"``, repeated points), the bandwidths' subsample, the
scaling's generator, a saved detector's invariants, and the online detector's
``standardize=``; each checked against an independent reference (closed forms, numpy)
or against the behaviour the owner promises, on the test and the detectors alike."""

from __future__ import annotations

import ast
import hashlib
import json
import pathlib

import numpy as np
import pytest

import nystrom_kme as nk
from nystrom_kme.two_sample._decision import NOISE, decide
from nystrom_kme.two_sample._statistics import PermutedStatistics
from nystrom_kme.two_sample.rules import ONE_KERNEL, RULES

PACKAGE = pathlib.Path(nk.__file__).parent


@pytest.fixture(scope="module")
def ref():
    return np.random.default_rng(0).normal(size=(6000, 3))


# --------------------------------------------------------------------------- the decision


def test_the_floor_ties_round_off_for_bounded_kernels_only():
    """Statistics below 2^-44 in magnitude are round-off for kernels bounded by 1: the
    splits tie (p-value 1 whatever their order); a linear kernel's are kept."""
    noise = np.random.default_rng(1).normal(size=(1, 20)) * 1e-16
    noise[0, 0] = 5e-16  # the observed split the largest: p = 1/20 if read as evidence
    stats = PermutedStatistics(noise, noise, (10, 10))
    assert decide(ONE_KERNEL, stats, [nk.Gaussian(1.0)]).pvalue == 1.0
    assert decide(ONE_KERNEL, stats, [nk.Linear()]).pvalue == pytest.approx(1 / 20)
    assert NOISE == 2.0**-44


def test_the_unbiased_matrix_is_the_centred_one_when_none_is_given():
    """A detector brings only its biased statistics: the rules that read U (here MaxZ and
    MMDAgg) see T minus each kernel's mean over the splits, which no rule's decision can
    tell from U itself (a shift common to every split)."""
    T = np.random.default_rng(2).normal(size=(3, 40)) ** 2
    for name in ("maxz", "mmdagg"):
        a = decide(RULES[name], PermutedStatistics(T, None, (20, 30)), [nk.Gaussian(h) for h in (1.0, 2.0, 3.0)])
        b = decide(RULES[name], PermutedStatistics(T, T + 7.0, (20, 30)), [nk.Gaussian(h) for h in (1.0, 2.0, 3.0)])
        np.testing.assert_allclose(a.unbiased, T - T.mean(axis=1, keepdims=True))
        assert a.pvalue == b.pvalue and a.deciding == b.deciding


def test_fuse_normalisers_come_from_the_mean_of_squares_over_the_pooled_rows():
    """MMD-FUSE's ||K_0||_F = sqrt(mean k^2 N (N - 1)), N the pooled rows the statistics
    name (``n_pooled``, else the rows of the splits), against the closed form of the
    aggregate; a rule that needs it refuses to decide without the mean of squares."""
    rng = np.random.default_rng(3)
    U = rng.normal(size=(2, 30)) * 1e-3
    mean_sq = np.array([0.3, 0.6])
    kernels = [nk.Gaussian(1.0), nk.Laplacian(1.0)]
    d = decide(RULES["fuse"], PermutedStatistics(U, U, (40, 50), n_pooled=95), kernels, mean_sq)
    n = 40
    frob = np.sqrt(mean_sq * 95 * 94)
    scores = n * (n - 1) * np.sqrt(n * (n - 1)) * U / frob[:, None]
    top = scores.max(axis=0)
    F = top + np.log(np.exp(scores - top).mean(axis=0))
    assert d.statistic == pytest.approx(F[0], rel=1e-12)
    assert d.pvalue == (1 + np.sum(F[1:] >= F[0])) / 30
    called = []
    lazy = decide(RULES["mmdagg"], PermutedStatistics(U, U, (40, 50)), kernels, lambda: called.append(1) or mean_sq)
    assert not called and lazy.pvalue > 0  # computed only for a rule that reads it
    with pytest.raises(ValueError, match="mean_sq"):
        decide(RULES["fuse"], PermutedStatistics(U, U, (40, 50)), kernels)


def test_the_detector_decides_through_the_engine(ref, monkeypatch):
    """DriftDetector.predict hands its permuted statistics, its kernels and its reference's
    mean of squares to the engine's decide, and reports that decision."""
    from nystrom_kme.drift import batch

    seen = []

    def spy(rule, stats, kernels, mean_sq=None, temperature=1.0):
        seen.append((rule, stats, kernels, mean_sq))
        return decide(rule, stats, kernels, mean_sq, temperature)

    monkeypatch.setattr(batch, "decide", spy)
    det = nk.DriftDetector(ref[:3000], n_holdout=1500, n_permutations=19, random_state=0)
    res = det.predict(ref[5000:5040])
    rule, stats, kernels, mean_sq = seen[0]
    assert rule is RULES[nk.two_sample.DEFAULT_RULE] and kernels is det.kernels_ and mean_sq is det.reference_.mean_sq
    assert stats.U is None and stats.n_rows == (40, 1500)
    assert stats.T.shape == (nk.two_sample.DEFAULT_COLLECTION.n_kernels, 20)
    assert res.pvalue == decide(rule, stats, kernels, mean_sq).pvalue


# --------------------------------------------------------------------------- the landmarks


def test_one_default_m_for_the_tests_and_the_detectors():
    """The paper's m (its closed form) in each caller's range: the tests between 1024 and
    3000, the batch detector that of min(n, 5000) rows, the online one of min(n, 20 000)."""
    import math

    from nystrom_kme.drift import batch, online
    from nystrom_kme.two_sample import DEFAULT_LANDMARKS

    def paper(n):
        return max(1, math.ceil(math.sqrt(n) * math.log(math.sqrt(n))))

    for n in (2, 10, 999, 5000, 5001, 20_000, 40_000, 10**6):
        assert batch.DEFAULT_LANDMARKS(n) == paper(min(n, 5000))
        assert online.DEFAULT_LANDMARKS(n) == paper(min(n, 20_000))
        assert DEFAULT_LANDMARKS(n) == min(n, max(1024, min(3000, paper(n))))


def test_a_detector_takes_auto_landmarks_and_a_sampler(ref, tmp_path):
    """n_landmarks="auto" and sampler= (the plan of two_sample_test): the landmarks are
    distinct rows of the reference outside the held-out ones, and the detector saves and
    loads with those arguments."""
    X = ref[:2000]
    for kw in ({"n_landmarks": "auto"}, {"sampler": "rpcholesky", "n_landmarks": 40}):
        det = nk.DriftDetector(X, kernel="gaussian", n_holdout=800, n_permutations=19, random_state=1, **kw)
        L, H = det.reference_.landmarks, det.reference_.holdout
        rows = {r.tobytes() for r in X}
        held = {r.tobytes() for r in H}
        assert all(r.tobytes() in rows and r.tobytes() not in held for r in L)
        assert len({r.tobytes() for r in L}) == L.shape[0]
        if "sampler" in kw:
            assert L.shape[0] == 40
        det.save(tmp_path / "d.npz")
        back = nk.load(tmp_path / "d.npz")
        assert back.get_params()["n_landmarks"] == kw["n_landmarks"]
        assert back.get_params()["sampler"] == kw.get("sampler")
        Y = ref[5000:5020]
        assert back.predict(Y).pvalue == det.predict(Y).pvalue
    online = nk.OnlineDriftDetector(X, ert=100, window_size=10, n_landmarks="auto", n_bootstraps=50_000, random_state=0)
    assert 1 <= online.landmarks_.shape[0] <= 1200
    with pytest.raises(ValueError, match="sampler"):
        nk.DriftDetector(X, sampler="no-such-policy")
    with pytest.raises(ValueError, match="n_landmarks >= 2"):
        nk.DriftDetector(X, n_landmarks=1)  # the default test: several kernels


def test_repeated_landmarks_are_kept_once_in_row_order_everywhere():
    """Rows with few distinct values, sorted so that row order and value order differ:
    the test's and the detector's landmarks are the distinct points in row order (the
    detector once sorted them by value)."""
    values = np.repeat(np.arange(6.0)[::-1], 500)  # 5, 5, ..., 4, ..., 0
    X = np.column_stack([values, -values])
    det = nk.DriftDetector(X, kernel=nk.Gaussian(1.0), n_landmarks=200, n_holdout=600, random_state=0)
    L = det.reference_.landmarks
    assert L.shape[0] == 6 and np.all(np.diff(L[:, 0]) < 0)
    res = nk.two_sample_test(X[::2], X[1::2], kernel=nk.Gaussian(1.0), n_landmarks=200, random_state=0)
    assert res.n_landmarks == 6


def test_the_bandwidths_subsample_is_the_collections_own(ref):
    """A collection's ``subset`` sets the rows its grid is read from, in the detector as in
    the test (the detector once read 1000 rows whatever the collection said)."""
    from nystrom_kme.kernel_collection import GRID_SUBSET
    from nystrom_kme.kernels import MEDIAN_SUBSET

    assert GRID_SUBSET == MEDIAN_SUBSET
    bandwidths = []
    for subset in (8, 1000):
        kc = nk.KernelCollection(n_bandwidths=3, subset=subset)
        det = nk.DriftDetector(ref[:4000], kernel=kc, n_holdout=1000, n_permutations=9, random_state=0)
        bandwidths.append([float(k.bandwidth) for k in det.kernels_])
    assert bandwidths[0] != bandwidths[1]


def test_a_robust_scaling_does_not_depend_on_the_seed():
    """Above ROBUST_ROWS rows the robust scaling reads a subsample: drawn from the one
    generator of _scaling (SCALING_SEED) for the detector as for the test, so two
    detectors of other seeds scale alike (the detector once drew it from its own seed)."""
    from nystrom_kme._scaling import ROBUST_ROWS

    X = np.random.default_rng(4).standard_t(3, size=(ROBUST_ROWS + 5000, 2))
    a = nk.DriftDetector(X, standardize="robust", n_holdout=200, n_landmarks=20, random_state=1)
    b = nk.DriftDetector(X, standardize="robust", n_holdout=200, n_landmarks=20, random_state=2)
    np.testing.assert_array_equal(a.scaling_.center, b.scaling_.center)
    np.testing.assert_array_equal(a.scaling_.scale, b.scaling_.scale)
    assert np.all(np.abs(a.scaling_.center - np.median(X, axis=0)) < 0.05)


# --------------------------------------------------------------------------- the online detector


def test_online_standardize_is_the_detector_on_standardised_rows():
    """standardize=True is the detector of the rows centred and divided by their standard
    deviation (numpy's, ddof=1): the same threshold and statistics, the scaling saved and
    applied to every update."""
    rng = np.random.default_rng(5)
    X = rng.normal(size=(4000, 3)) * np.array([1.0, 1000.0, 0.01]) + np.array([0.0, 5e4, 3.0])
    mean, sd = X.mean(axis=0), X.std(axis=0, ddof=1)
    kw = {"ert": 150, "window_size": 15, "n_landmarks": 60, "n_bootstraps": 60_000, "random_state": 0}
    with pytest.warns(UserWarning, match="column 1"):
        nk.OnlineDriftDetector(X, **kw)  # the unit warning, as the batch detector's
    det = nk.OnlineDriftDetector(X, standardize=True, **kw)
    plain = nk.OnlineDriftDetector((X - mean) / sd, **kw)
    assert det.threshold_ == pytest.approx(plain.threshold_, rel=1e-9)
    Y = rng.normal(size=(40, 3)) * np.array([1.0, 1000.0, 0.01]) + np.array([0.0, 5e4, 3.0])
    a, b = det.update(Y), plain.update((Y - mean) / sd)
    np.testing.assert_allclose(a.statistic, b.statistic, rtol=1e-8, equal_nan=True)


def test_online_standardize_is_saved_and_forgeries_are_refused(tmp_path):
    rng = np.random.default_rng(6)
    X = rng.normal(size=(2000, 2)) * np.array([1.0, 300.0])
    det = nk.OnlineDriftDetector(X, ert=100, window_size=10, n_bootstraps=50_000, standardize="robust", random_state=0)
    det.update(X[:7])
    det.save(tmp_path / "o.npz")
    back = nk.load(tmp_path / "o.npz")
    assert back.scaling_.kind == "robust" and back.get_params()["standardize"] == "robust"
    Y = rng.normal(size=(12, 2)) * np.array([1.0, 300.0])
    np.testing.assert_array_equal(back.update(Y).statistic, det.update(Y).statistic)
    _forge_params(tmp_path / "o.npz", tmp_path / "bad.npz", standardize=False)
    with pytest.raises(nk.FileFormatError, match="standardize=False"):
        nk.load(tmp_path / "bad.npz")


def test_the_online_detector_says_why_it_takes_no_statistic():
    doc = nk.OnlineDriftDetector.__doc__ or ""
    assert "STATISTICS" in doc and "simulat" in doc
    with pytest.raises(TypeError):
        nk.OnlineDriftDetector(np.zeros((100, 2)), ert=50, window_size=5, statistic="nystrom-mmd")


# --------------------------------------------------------------------------- a saved detector


def _forge_params(path, out, **params):
    members = dict(np.load(path))
    header = json.loads(bytes(members["header"]))
    header["params"].update(params)
    members["header"] = np.frombuffer(json.dumps(header).encode(), dtype=np.uint8)
    np.savez(out, **members)


def _forge_state(path, out, **state):
    members = dict(np.load(path))
    header = json.loads(bytes(members["header"]))
    header["state"].update(state)
    members["header"] = np.frombuffer(json.dumps(header).encode(), dtype=np.uint8)
    np.savez(out, **members)


@pytest.fixture(scope="module")
def saved(ref, tmp_path_factory):
    d = tmp_path_factory.mktemp("saved")
    det = nk.DriftDetector(ref[:3000], n_holdout=1500, n_permutations=19, standardize=True, random_state=0)
    det.save(d / "d.npz")
    one = nk.DriftDetector(ref[:3000], kernel="gaussian", n_holdout=1500, n_permutations=19, random_state=0)
    one.save(d / "one.npz")
    return d


@pytest.mark.parametrize(
    "name, forge, match",
    [
        ("one.npz", {"state": {"rule": "fuse+median"}}, "rule 'fuse\\+median' does not take 1 kernels"),
        ("one.npz", {"state": {"rule": "bogus"}}, "rule must be one of"),
        ("d.npz", {"state": {"rule": None}}, "does not take \\d+ kernels"),
        ("d.npz", {"state": {"seed": -1}}, "seed must be an integer"),
        ("d.npz", {"state": {"calls": -1}}, "calls must be"),
        ("one.npz", {"state": {"n_features_in": 2}}, "n_features_in = 2"),
        ("d.npz", {"params": {"standardize": False}}, "standardize=False"),
        ("one.npz", {"params": {"standardize": True}}, "standardize=True but no scaling"),
        ("d.npz", {"params": {"n_landmarks": 0}}, "n_landmarks"),
    ],
)
def test_a_saved_detectors_invariants_are_the_detectors_own(saved, tmp_path, name, forge, match):
    """Every relation between a saved batch detector's fields is checked where a new
    detector's are (DriftDetector._build), and refused on load naming it."""
    if "state" in forge:
        _forge_state(saved / name, tmp_path / "bad.npz", **forge["state"])
    else:
        _forge_params(saved / name, tmp_path / "bad.npz", **forge["params"])
    with pytest.raises(nk.FileFormatError, match=match):
        nk.load(tmp_path / "bad.npz")


def test_nothing_but_the_rules_module_tests_a_rules_name():
    """EXTENDING.md: a rule's semantics live in its Rule object; no module compares a
    value with a rule's name (``x == "fuse+median"``, ``x in ("fuse", ...)``) outside
    two_sample/rules.py (the persistence codec once compared "fuse+median"). A bandwidth
    grid is also called "fuse" (MMD-FUSE's): comparisons of a ``grid`` are not a rule's."""
    names = set(RULES)
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.relative_to(PACKAGE).as_posix() == "two_sample/rules.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Compare):
                sides = [node.left, *node.comparators]
                if any(isinstance(n, ast.Name) and "grid" in n.id for side in sides for n in ast.walk(side)):
                    continue
                for side in sides:
                    for leaf in ast.walk(side):
                        if isinstance(leaf, ast.Constant) and leaf.value in names:
                            found.append(f"{path.name}:{node.lineno}")
    assert not found, found
    checker_sees = ast.parse('if rule == "fuse+median": pass')
    assert any(isinstance(n, ast.Compare) for n in ast.walk(checker_sees))


def test_a_forged_sums_member_is_still_refused(saved, tmp_path):
    """The reference's own checks (Reference.check) still see a forged member."""
    members = dict(np.load(saved / "d.npz"))
    header = json.loads(bytes(members["header"]))
    forged = np.ascontiguousarray(-members["sums"])
    members["sums"] = forged
    header["arrays"]["sums"].update(sha256=hashlib.sha256(forged.view(np.uint8).reshape(-1).data).hexdigest())
    members["header"] = np.frombuffer(json.dumps(header).encode(), dtype=np.uint8)
    np.savez(tmp_path / "bad.npz", **members)
    with pytest.raises(nk.FileFormatError, match="sums must lie"):
        nk.load(tmp_path / "bad.npz")


@pytest.mark.parametrize(
    "name, state, match",
    [
        ("d.npz", {"n_reference": 2**70, "n_rest": 2**70 - 1500}, "beyond 64 bits"),
        ("d.npz", {"calls": 2**64}, "beyond 64 bits"),
        ("one.npz", {"kernels": [{"type": "Linear", "bandwidth": 1.0}]}, "not computed from this reference"),
        ("one.npz", {"kernels": [{"type": "Polynomial", "bandwidth": 1.0, "degree": 2, "offset": 1.0}]}, "mean_sq"),
    ],
)
def test_forged_counts_and_kernels_are_refused(saved, tmp_path, name, state, match):
    """Issue 43 item 5: a count beyond int64 (JSON integers are unbounded) and a detector
    whose kernels are not the ones its saved normalisers were computed with loaded."""
    _forge_state(saved / name, tmp_path / "bad.npz", **state)
    with pytest.raises(nk.FileFormatError, match=match):
        nk.load(tmp_path / "bad.npz")


def test_a_saved_online_detectors_row_count_is_bounded(ref, tmp_path):
    det = nk.OnlineDriftDetector(ref[:2000], ert=100, window_size=10, random_state=0)
    det.update(ref[2000:2050])
    det.save(tmp_path / "o.npz")
    for t in (2**63 - 1, 2**53):  # the next update's row numbers would overflow an int64
        _forge_state(tmp_path / "o.npz", tmp_path / "bad.npz", t=t)
        with pytest.raises(nk.FileFormatError, match="t=|rows seen"):
            nk.load(tmp_path / "bad.npz")
    _forge_state(tmp_path / "o.npz", tmp_path / "big.npz", t=2**70)
    with pytest.raises(nk.FileFormatError, match="beyond 64 bits"):
        nk.load(tmp_path / "big.npz")
    again = nk.load(tmp_path / "o.npz")  # the genuine file loads and goes on
    assert again.t_ == 50 and again.update(ref[2050:2060]).is_drift is not None
