"""The landmark draws of every entry point, pinned: the same random_state gives the same
landmarks as before the draws moved into the sampling policies.

The pinned numbers were drawn by the code of commit c869e47 (the estimator, the search and
the tests then drew for themselves); the search's (``AUTO``, ``TESTS["auto/..."]``) again
after issue 34, whose certificate draws the seed of its validation rows before the stream.
After issue 43 the search's path records the prefixes its exact mode tries before it bisects
back (``AUTO``'s first list); the landmarks it returns, the draws, are unchanged.
Where the law of the draws is plain numpy, the test also rebuilds them from numpy in the
documented order, independently of the package: the median heuristic's rows first
(``kernel="gaussian"``), then the landmarks.
"""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

import nystrom_kme as nk

N, M = 1500, 8


def digest(indices):
    """The first 16 hex digits of the sha256 of the indices as int64 bytes."""
    return hashlib.sha256(np.ascontiguousarray(np.asarray(indices, dtype=np.int64)).tobytes()).hexdigest()[:16]


@pytest.fixture(scope="module")
def data():
    X = np.random.default_rng(100).normal(size=(N, 2))
    w = np.random.default_rng(101).uniform(size=N)
    w[::3] = 0.0
    Y = np.random.default_rng(102).normal(size=(900, 2)) + 0.1
    return X, w, Y


#: NystromKME("gaussian", n_landmarks=8, sampler=name, random_state=seed).fit(X).landmark_indices_
FIT = {
    "uniform/0": [570, 1113, 19, 774, 1241, 1161, 744, 488],
    "uniform/1": [1443, 942, 813, 559, 1451, 956, 1057, 661],
    "uniform/2": [1434, 1397, 1225, 949, 649, 249, 536, 1066],
    "uniform-without-replacement/0": [1108, 567, 19, 1160, 1239, 743, 488, 772],
    "uniform-without-replacement/1": [1436, 661, 1056, 938, 558, 810, 955, 1448],
    "uniform-without-replacement/2": [249, 1066, 1427, 1221, 946, 647, 536, 1392],
    "rpcholesky/0": [143, 294, 223, 467, 329, 219, 108, 688],
    "rpcholesky/1": [351, 1360, 739, 766, 429, 872, 970, 597],
    "rpcholesky/2": [854, 170, 481, 341, 396, 739, 1398, 815],
    "block-rpcholesky/0": [143, 294, 223, 467, 329, 219, 108, 688],
    "block-rpcholesky/1": [351, 1360, 739, 766, 429, 872, 970, 597],
    "block-rpcholesky/2": [854, 170, 481, 341, 396, 739, 1398, 815],
    "greedy-cholesky/0": [0, 1227, 411, 815, 1254, 99, 68, 251],
    "greedy-cholesky/1": [0, 1227, 411, 815, 1254, 99, 68, 251],
    "greedy-cholesky/2": [0, 1227, 411, 815, 1254, 99, 68, 251],
    "dpp-greedy/0": [0, 1227, 411, 815, 1254, 99, 68, 251],
    "dpp-greedy/1": [0, 1227, 411, 815, 1254, 99, 68, 251],
    "dpp-greedy/2": [0, 1227, 411, 815, 1254, 99, 68, 251],
    "herding/0": [773, 1435, 352, 89, 1121, 503, 934, 135],
    "herding/1": [773, 683, 1238, 1251, 696, 1065, 631, 789],
    "herding/2": [773, 236, 1238, 1103, 696, 460, 11, 1449],
    "cortes-scott/0": [570, 1446, 1227, 1283, 258, 1468, 99, 1273],
    "cortes-scott/1": [1443, 1283, 1254, 360, 488, 703, 1324, 1227],
    "cortes-scott/2": [1434, 1446, 258, 1227, 1283, 1468, 99, 1410],
    "rls/0": [1466, 1180, 717, 288, 394, 67, 877, 632],
    "rls/1": [1387, 1350, 749, 884, 811, 30, 1417, 224],
    "rls/2": [1302, 263, 387, 867, 712, 51, 1122, 1202],
}

#: The same with sample_weight=w (uniform draws proportional to the weights).
FIT_WEIGHTED = {
    "uniform/0": [16, 1235, 736, 638, 892, 1267, 442, 404],
    "uniform/1": [809, 1448, 1049, 815, 685, 689, 1010, 355],
    "uniform/2": [1220, 631, 532, 299, 1190, 749, 1312, 730],
    "uniform-without-replacement/0": [16, 1235, 736, 638, 892, 1267, 442, 404],
    "uniform-without-replacement/1": [809, 1448, 1049, 815, 685, 689, 1010, 355],
    "uniform-without-replacement/2": [1220, 631, 532, 299, 1190, 749, 1312, 730],
}

#: Streamed X ([X[:700], X[700:]]): two passes (weighted), one pass, partial_fit(X[:700]).
STREAMED = {
    "two-pass/uniform/0": [16, 1235, 736, 638, 892, 1267, 442, 404],
    "two-pass/uniform/1": [809, 1448, 1049, 815, 685, 689, 1010, 355],
    "two-pass/uniform-without-replacement/0": [16, 1235, 736, 638, 892, 1267, 442, 404],
    "two-pass/uniform-without-replacement/1": [809, 1448, 1049, 815, 685, 689, 1010, 355],
    "one-pass/uniform/0": [595, 445, 357, 188, 215, 28, 52, 11],
    "partial/uniform/0": [595, 445, 357, 188, 215, 28, 52, 11],
    "one-pass/uniform/1": [331, 358, 528, 665, 24, 100, 576, 664],
    "partial/uniform/1": [331, 358, 528, 665, 24, 100, 576, 664],
    "one-pass/rpcholesky/0": [52, 678, 510, 360, 118, 644, 530, 666],
    "partial/rpcholesky/0": [52, 678, 510, 360, 118, 644, 530, 666],
    "one-pass/rpcholesky/1": [357, 168, 344, 364, 319, 87, 121, 411],
    "partial/rpcholesky/1": [357, 168, 344, 364, 319, 87, 121, 411],
}

#: n_landmarks=AutoLandmarks(tol=0.2, max_landmarks=400): (path, digest of landmark_indices_),
#: unweighted ("u") or with sample_weight=w ("w"). Drawn by the certified search of issue 31
#: (blocks of landmarks, the bound checked at each block's end): at tol = 0.2 every search
#: stops with a margin, its bound <= 0.95 tol at the stop and >= 1.37 tol (or none) one
#: block before.
AUTO = {
    "uniform/u/0": [[64, 80], "d512ec091b414ffa"],
    "uniform/u/1": [[64, 80], "63620d9bb695cb3e"],
    "uniform/w/0": [[64, 80], "258f5d6f7a512a07"],
    "uniform/w/1": [[64, 80], "f61cbac5c181efef"],
    "uniform-without-replacement/u/0": [[64, 80], "8ee7265d31d5b9b1"],
    "uniform-without-replacement/u/1": [[64, 80], "3a5962a3cf80fc96"],
    "uniform-without-replacement/w/0": [[64, 80], "56f039df61c654f5"],
    "uniform-without-replacement/w/1": [[64, 80, 96], "f17017e3622b8017"],
    "rpcholesky/u/0": [[64], "c0f1ff7d1bd6aea9"],
    "rpcholesky/u/1": [[64], "338f44034aae299d"],
    "block-rpcholesky/u/0": [[64], "c0f1ff7d1bd6aea9"],
    "block-rpcholesky/u/1": [[64], "338f44034aae299d"],
    "rls/u/0": [[64], "966f5ec840801b81"],
    "rls/u/1": [[64], "7b85831d13cf3a2f"],
    "herding/u/0": [[64], "7626fbb852d55cdd"],
    "herding/u/1": [[64], "7c9d2eda41d1f4eb"],
}

#: two_sample_test(X, Y, kernel="gaussian", ...): the rows of the pooled sample that became
#: the landmarks, n_landmarks=10 (sorted rows) and AutoLandmarks(max_landmarks=300) (digest).
TESTS = {
    "m10/0": [282, 930, 995, 1320, 1347, 1608, 1776, 1879, 1887, 2153],
    "auto/0": "9bf39221070e40a8",
    "m10/1": [407, 1267, 1332, 1611, 1639, 1703, 1936, 1980, 2277, 2372],
    "auto/1": "eed3f630ddd0b47c",
}


@pytest.mark.parametrize("key", sorted(FIT))
def test_fit_draws_are_pinned(data, key):
    X, _, _ = data
    name, seed = key.rsplit("/", 1)
    est = nk.NystromKME("gaussian", n_landmarks=M, sampler=name, random_state=int(seed)).fit(X)
    assert est.landmark_indices_.tolist() == FIT[key]


@pytest.mark.parametrize("key", sorted(FIT_WEIGHTED))
def test_weighted_fit_draws_are_pinned(data, key):
    X, w, _ = data
    name, seed = key.rsplit("/", 1)
    est = nk.NystromKME("gaussian", n_landmarks=M, sampler=name, random_state=int(seed)).fit(X, sample_weight=w)
    assert est.landmark_indices_.tolist() == FIT_WEIGHTED[key]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_uniform_fit_draws_are_numpy_draws_in_the_documented_order(data, seed):
    """Independent of the package: the median's 1000 rows, then the m landmarks."""
    X, w, _ = data
    for name, weighted in (
        ("uniform", False),
        ("uniform-without-replacement", False),
        ("uniform", True),
        ("uniform-without-replacement", True),
    ):
        ref = np.random.default_rng(seed)
        ref.choice(N, size=1000, replace=False)
        replace = name == "uniform"
        if weighted:
            expected = ref.choice(N, size=M, replace=replace, p=w / w.sum())
        else:
            expected = ref.integers(0, N, size=M) if replace else ref.choice(N, size=M, replace=False)
        est = nk.NystromKME("gaussian", n_landmarks=M, sampler=name, random_state=seed).fit(
            X, sample_weight=w if weighted else None
        )
        np.testing.assert_array_equal(est.landmark_indices_, expected)
        assert est.landmark_indices_.tolist() == (FIT_WEIGHTED if weighted else FIT)[f"{name}/{seed}"]


@pytest.mark.parametrize("key", sorted(STREAMED))
def test_streamed_draws_are_pinned(data, key):
    X, w, _ = data
    how, name, seed = key.split("/")
    make = nk.NystromKME(
        "gaussian", n_landmarks=M, sampler=name, random_state=int(seed), passes=1 if how == "one-pass" else 2
    )
    if how == "two-pass":
        est = make.fit([X[:700], X[700:]], sample_weight=w)
    elif how == "one-pass":
        est = make.fit([X[:700], X[700:]])
    else:
        est = make.partial_fit(X[:700])
    assert est.landmark_indices_.tolist() == STREAMED[key]


@pytest.mark.parametrize("key", sorted(AUTO))
def test_search_draws_are_pinned(data, key):
    X, w, _ = data
    name, weighting, seed = key.split("/")
    est = nk.NystromKME(
        "gaussian", n_landmarks=nk.AutoLandmarks(tol=0.2, max_landmarks=400), sampler=name, random_state=int(seed)
    ).fit(X, sample_weight=w if weighting == "w" else None)
    assert [list(est.n_landmarks_report_.path), digest(est.landmark_indices_)] == AUTO[key]


@pytest.mark.parametrize("seed", [0, 1])
def test_uniform_search_draws_are_numpy_streams(data, seed):
    """Independent of the package: the median's rows (the statistical error draws none),
    the validation rows' seed (one integer), then one stream whose prefixes are the nested
    sets: i.i.d. integers (with replacement; numpy draws the same numbers in blocks as at
    once), or the order of Exp(1) keys (without replacement)."""
    X, _, _ = data
    for name in ("uniform", "uniform-without-replacement"):
        est = nk.NystromKME(
            "gaussian", n_landmarks=nk.AutoLandmarks(tol=0.01, max_landmarks=400), sampler=name, random_state=seed
        ).fit(X)
        m = est.landmark_indices_.size
        assert m <= est.n_landmarks_report_.path[-1]  # exact: the smallest certified prefix
        ref = np.random.default_rng(seed)
        ref.choice(N, size=1000, replace=False)
        ref.integers(0, 2**63)  # the validation rows' seed
        if name == "uniform":
            expected = ref.integers(0, N, size=m)
        else:
            expected = np.argsort(ref.standard_exponential(N), kind="stable")[:m]
        np.testing.assert_array_equal(est.landmark_indices_, expected)


def _pooled_rows(Z, L):
    where = {row.tobytes(): i for i, row in enumerate(Z)}
    return [where[row.tobytes()] for row in L]


@pytest.mark.parametrize("seed", [0, 1])
def test_two_sample_draws_are_pinned(data, seed, monkeypatch):
    """The landmarks the tests hand to their statistics, as rows of the pooled sample."""
    from nystrom_kme.two_sample import _statistics

    X, _, Y = data
    Z = np.concatenate([X, Y])
    seen = []

    def spy(original):
        def call(L, *args, **kwargs):
            seen.append(np.array(L))
            return original(L, *args, **kwargs)

        return call

    monkeypatch.setattr(_statistics, "nystrom_quadratic_forms", spy(_statistics.nystrom_quadratic_forms))
    nk.two_sample_test(X, Y, kernel="gaussian", n_landmarks=10, n_permutations=9, random_state=seed)
    assert _pooled_rows(Z, seen.pop()) == TESTS[f"m10/{seed}"]
    nk.two_sample_test(
        X, Y, kernel="gaussian", n_landmarks=nk.AutoLandmarks(max_landmarks=300), n_permutations=9, random_state=seed
    )
    assert digest(_pooled_rows(Z, seen.pop())) == TESTS[f"auto/{seed}"]
    # independent: the splits' seed, the median's rows (up to 1000 of each sample, then
    # 1000 of the pooled ones), then m rows without replacement, sorted
    ref = np.random.default_rng(seed)
    ref.integers(0, 2**63)
    ref.choice(N, size=1000, replace=False), ref.choice(900, size=900, replace=False)
    ref.choice(1900, size=1000, replace=False)
    assert np.sort(ref.choice(N + 900, size=10, replace=False)).tolist() == TESTS[f"m10/{seed}"]
    # a collection: every kernel on the same landmarks; uniform ones drawn after the splits'
    # seed and the grid's 1000 pooled rows
    seen.clear()
    for sampler in ("uniform-without-replacement", "block-rpcholesky"):
        nk.two_sample_test(
            X,
            Y,
            kernel=nk.KernelCollection(n_bandwidths=2),
            n_landmarks=10,
            n_permutations=9,
            max_bins=None,
            sampler=sampler,
            random_state=seed,
        )
        assert len(seen) == 4 and all(np.array_equal(L, seen[0]) for L in seen)
        rows = _pooled_rows(Z, seen[0])
        assert rows == sorted(set(rows)) and len(rows) == 10
        if sampler == "uniform-without-replacement":
            ref = np.random.default_rng(seed)
            ref.integers(0, 2**63)
            ref.choice(N + 900, size=1000, replace=False)
            assert rows == np.sort(ref.choice(N + 900, size=10, replace=False)).tolist()
        seen.clear()
