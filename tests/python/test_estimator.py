"""scikit-learn's parameter conventions (ParamsMixin) without scikit-learn, and with it."""

from __future__ import annotations

import math
import os
import subprocess
import sys
import warnings

import numpy as np
import pytest

import nystrom_kme as nk
from nystrom_kme._estimator import ParamsMixin
from references import dense_kernel


class Toy(ParamsMixin):
    def __init__(self, a: int = 1, *, b: object = None, c: str = "x") -> None:
        self.a, self.b, self.c = a, b, c


class Inner(ParamsMixin):
    def __init__(self, tolerance: float = 1e-3) -> None:
        self.tolerance = tolerance


def test_get_set_params_and_repr():
    toy = Toy(2, b=Inner(1e-5))
    assert toy.get_params(deep=False) == {"a": 2, "b": toy.b, "c": "x"}
    assert toy.get_params()["b__tolerance"] == 1e-5
    assert repr(toy) == "Toy(a=2, b=Inner(tolerance=1e-05))"  # defaults are left out
    assert repr(Toy()) == "Toy()"
    assert toy.set_params(a=3, b__tolerance=0.5) is toy and toy.a == 3 and toy.b.tolerance == 0.5
    with pytest.raises(ValueError, match="invalid parameter 'd' for Toy"):
        toy.set_params(d=1)
    with pytest.raises(ValueError, match="has no parameters to set"):
        Toy(b=5).set_params(b__x=1)


def test_sklearn_clone_and_tags_of_the_estimators():
    pytest.importorskip("sklearn")
    from sklearn.base import clone
    from sklearn.utils import get_tags

    for est in (nk.NystromKME(nk.Gaussian(2.0), n_landmarks=7, sampler="rls"), nk.EmpiricalKME("laplacian")):
        twin = clone(est)
        assert type(twin) is type(est) and twin.get_params() == est.get_params()
        assert get_tags(est).target_tags.required is False
    X = np.random.default_rng(0).normal(size=(100, 2))
    fitted = nk.EmpiricalKME(nk.Gaussian(1.0)).fit(X)
    assert repr(fitted) == (
        "EmpiricalKME(kernel=Gaussian(bandwidth=1.0))  # fitted: 100 points in R^2, kernel=Gaussian(bandwidth=1.0)"
    )


# --------------------------------------------------------------------------- #
# scikit-learn's own estimator checks (issue 21)
# --------------------------------------------------------------------------- #
try:  # scikit-learn is a test extra: without it, the tests below that use it are skipped
    from sklearn.utils.estimator_checks import parametrize_with_checks
except ImportError:
    parametrize_with_checks = None

CHECKED = [
    nk.NystromKME(n_landmarks=5, random_state=0),
    nk.NystromKME(n_landmarks=5, sampler="rpcholesky", solver="cod", random_state=0),
    nk.NystromKME(random_state=0),  # the defaults: m = sqrt(n) log sqrt(n)
    nk.NystromKME(),  # the defaults, unseeded, as check_estimator(nk.NystromKME()) is called
    # more landmarks than the checks' samples have rows (10 to 16): capped at n_samples
    # with a warning, as scikit-learn's Nystroem caps n_components
    nk.NystromKME(n_landmarks=20),
    nk.NystromKME(n_landmarks=5, random_state=0, standardize=True),  # issue 37: inputs scaled as fit's
    nk.EmpiricalKME(random_state=0),
    nk.EmpiricalKME(),
]


def expected_failed_checks(estimator):
    """Checks that fail by design, with the reason (strict xfail: they must fail)."""
    if isinstance(estimator, nk.NystromKME) and estimator.sampler != "uniform":
        # A numpy.memmap is streamed block by block (O(chunk) memory, never loaded
        # whole); samplers other than uniform read all of X, so a memmapped X gets a
        # clear error asking for np.asarray(X) or passes=1. Uniform sampling passes.
        return {"check_readonly_memmap_input": "non-uniform samplers need X in memory; a memmap is streamed"}
    return {}


if parametrize_with_checks is None:
    SKLEARN_CHECKS = pytest.mark.parametrize(
        "estimator, check", [pytest.param(None, None, marks=pytest.mark.skip(reason="needs scikit-learn"))]
    )
else:
    with warnings.catch_warnings():
        # The estimators derive from ParamsMixin, not sklearn.base.BaseEstimator: scikit-learn
        # is a test dependency only (get_params/set_params/clone/repr are tested above).
        warnings.filterwarnings("ignore", message="Estimator .* does not inherit from", category=UserWarning)
        SKLEARN_CHECKS = parametrize_with_checks(CHECKED, expected_failed_checks=expected_failed_checks)


@SKLEARN_CHECKS
# n_landmarks=20 on the checks' samples of 10 to 16 rows: the cap's warning, expected
# (test_more_landmarks_than_rows_are_capped_with_a_warning checks it and the result)
@pytest.mark.filterwarnings("ignore:n_landmarks=20 exceeds:UserWarning")
def test_scikit_learn_estimator_checks(estimator, check):
    """Every check of sklearn.utils.estimator_checks for these unsupervised estimators.
    scikit-learn skips two by itself here: check_sample_weights_pandas_series (pandas is
    not a test dependency; lists and non-array array-likes of weights are checked by
    check_sample_weights_list / _not_an_array) and check_array_api_input (it needs
    SCIPY_ARRAY_API=1 before scipy is imported: run in a subprocess below)."""
    check(estimator)


def test_scikit_learn_array_api_check_with_numpy(tmp_path):
    """check_array_api_input (NumPy namespace, what estimators without array API support
    must pass) in a process started with SCIPY_ARRAY_API=1, which the check needs."""
    pytest.importorskip("sklearn")
    code = (
        "import warnings; warnings.simplefilter('ignore')\n"
        "import nystrom_kme as nk\n"
        "from sklearn.utils.estimator_checks import check_array_api_input\n"
        "for est in (nk.NystromKME(n_landmarks=5, random_state=0), nk.NystromKME(), nk.NystromKME(n_landmarks=20),\n"
        "            nk.EmpiricalKME(random_state=0)):\n"
        "    check_array_api_input(type(est).__name__, est, array_namespace='numpy',\n"
        "                          expect_only_array_outputs=False)\n"
        "print('passed')\n"
    )
    env = {
        **os.environ,
        "SCIPY_ARRAY_API": "1",
        "PYTHONPATH": os.pathsep.join(
            [os.path.dirname(os.path.dirname(nk.__file__)), os.environ.get("PYTHONPATH", "")]
        ),
    }
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0 and out.stdout.strip() == "passed", out.stderr[-2000:]


# --------------------------------------------------------------------------- #
# scikit-learn's conventions in full (issue 29): m capped at n_samples with a warning,
# partial_fit's default m, unit weights are no weights, scores of one kernel
# --------------------------------------------------------------------------- #
def test_more_landmarks_than_rows_are_capped_with_a_warning():
    X = np.random.default_rng(2029).normal(size=(15, 2))
    k = nk.Gaussian(1.5)
    with pytest.warns(UserWarning, match=r"^n_landmarks=20 exceeds n_samples=15: n_landmarks=15 is used$") as rec:
        capped = nk.NystromKME(k, n_landmarks=20, random_state=0).fit(X)
    assert [w.filename for w in rec] == [__file__]  # one warning, pointing at the user's call
    asked = nk.NystromKME(k, n_landmarks=15, random_state=0).fit(X)
    np.testing.assert_array_equal(capped.landmarks_, asked.landmarks_)
    np.testing.assert_array_equal(capped.weights_, asked.weights_)
    # a sampler of distinct rows then takes every row, and the Nyström embedding is the
    # empirical one: ||mu_m - mu_hat||^2 from dense kernel matrices
    with pytest.warns(UserWarning, match="n_landmarks=20 exceeds n_samples=15"):
        every = nk.NystromKME(k, n_landmarks=20, sampler="rpcholesky", random_state=0).fit(X)
    assert sorted(every.landmark_indices_.tolist()) == list(range(15))
    L, a, w = every.landmarks_, every.weights_, np.full(15, 1 / 15)
    d2 = a @ dense_kernel("gaussian", L, L, 1.5) @ a - 2 * a @ dense_kernel("gaussian", L, X, 1.5) @ w
    d2 += w @ dense_kernel("gaussian", X, X, 1.5) @ w
    assert abs(d2) < 1e-12
    # partial_fit caps at its first chunk, passes=1 at the rows of a stream shorter than m
    with pytest.warns(UserWarning, match=r"^n_landmarks=20 exceeds the 12 rows of the first chunk") as rec:
        first = nk.NystromKME(k, n_landmarks=20, random_state=0).partial_fit(X[:12])
    assert first.landmarks_.shape == (12, 2) and [w.filename for w in rec] == [__file__]
    with pytest.warns(UserWarning, match=r"^n_landmarks=20 exceeds the 15 rows of the stream") as rec:
        streamed = nk.NystromKME(k, n_landmarks=20, passes=1, random_state=0).fit(iter([X[:7], X[7:]]))
    assert [w.filename for w in rec] == [__file__]
    np.testing.assert_array_equal(streamed.landmarks_, capped.landmarks_)  # the in-memory fit's draws
    np.testing.assert_allclose(streamed.weights_, capped.weights_, rtol=1e-12, atol=1e-12)
    # genuinely bad values stay errors
    for bad in (0, -3, 2.5, True, "many"):
        with pytest.raises(ValueError, match="n_landmarks"):
            nk.NystromKME(k, n_landmarks=bad).fit(X)


def test_partial_fit_sizes_the_default_m_for_its_first_chunk():
    X = np.random.default_rng(292).normal(size=(3000, 2))
    k = nk.Gaussian(1.0)
    est = nk.NystromKME(k, random_state=0).partial_fit(X[:1000])
    m = math.ceil(math.sqrt(1000) * math.log(math.sqrt(1000)))  # the paper's m for 1000 rows: 110
    assert est.landmarks_.shape == (m, 2) and est.landmark_indices_.max() < 1000
    first = nk.NystromKME(k, random_state=0).fit(X[:1000])  # the first call is fit on the chunk
    np.testing.assert_array_equal(est.landmarks_, first.landmarks_)
    np.testing.assert_array_equal(est.weights_, first.weights_)
    est.partial_fit(X[1000:])  # later chunks keep the landmarks
    assert est.landmarks_.shape == (m, 2) and est.n_samples_ == 3000
    whole = nk.NystromKME(k, sampler=est.landmarks_).fit(X)
    np.testing.assert_allclose(est.s_sum_, whole.s_sum_, rtol=1e-14)
    # The statistics agree to rounding (above); the embeddings agree as far as the solve
    # can resolve them. K_m is numerically singular here (rank 103 of 110, its smallest
    # kept eigenvalue 2.7e-14 barely above the rank threshold tau = m eps max K_ii =
    # 2.4e-14), so the weights reach |alpha| ~ 1.5e3 and are not determined by s: a
    # backward-stable solve leaves a residual s - K alpha of about eps || |K| |alpha| ||,
    # and the directions it keeps (eigenvalues >= ~tau) turn that into an RKHS error of
    # up to eps || |K| |alpha| || / sqrt(tau) per fit (9.9e-5 here; the two fits differ
    # by 2.5e-6 at every SIMD level). A tolerance of 1e-7 relative sat below that floor:
    # it passed at avx2 only because rkhs_distance's <a,a> + <b,b> - 2 <a,b>, whose own
    # rounding is eps |alpha|^T K |alpha| ~ 3e-8 in the square here, came out negative
    # (clamped to 0), and failed at avx512 where it came out positive (1.7e-5). So the
    # distance is computed from the weight difference on the shared landmarks (rounding
    # eps |a - b|^T K |a - b| ~ 4e-13 in the square), against the solves' floor.
    eps = np.finfo(np.float64).eps
    K = dense_kernel("gaussian", est.landmarks_, est.landmarks_, 1.0)
    tau = m * eps * K.diagonal().max()
    floor = sum(eps * np.linalg.norm(np.abs(K) @ np.abs(e.weights_)) / math.sqrt(tau) for e in (est, whole))
    diff = est.weights_ - whole.weights_
    assert math.sqrt(max(diff @ K @ diff, 0.0)) < floor < 1e-3 * whole.norm()


@pytest.mark.parametrize(
    "params",
    [
        {},  # the defaults: uniform draws with replacement, m = sqrt(n) log sqrt(n)
        {"n_landmarks": 40, "sampler": nk.UniformSampling(replace=False)},
        {"n_landmarks": 40, "sampler": "rpcholesky"},
        {"n_landmarks": "auto"},
    ],
    ids=["defaults", "without-replacement", "rpcholesky", "auto"],
)
def test_unit_weights_are_no_weights(params):
    X = np.random.default_rng(29).normal(size=(1500, 3))
    plain = nk.NystromKME(random_state=0, **params).fit(X)
    ones = nk.NystromKME(random_state=0, **params).fit(X, sample_weight=np.ones(len(X)))
    for name in ("landmarks_", "landmark_indices_", "weights_", "s_sum_"):
        np.testing.assert_array_equal(getattr(ones, name), getattr(plain, name), err_msg=name)
    assert ones.weight_sum_ == plain.weight_sum_ == len(X)
    # nor is any constant (only ratios matter): the same landmarks and weights, the
    # statistics in its units
    for c in (0.125, 3.0, 5e-324):
        const = nk.NystromKME(random_state=0, **params).fit(X, sample_weight=np.full(len(X), c))
        np.testing.assert_array_equal(const.landmarks_, plain.landmarks_)
        np.testing.assert_array_equal(const.weights_, plain.weights_)
        np.testing.assert_array_equal(const.s_sum_, plain.s_sum_ * c)
        assert const.weight_sum_ == len(X) * c
    # and the uniform policy draws with weights of one value as without weights
    src = nk.sources.as_source(X)
    draw = [
        nk.UniformSampling().draw(src, None, 50, np.random.default_rng(1), sample_weight=w)
        for w in (None, np.full(len(X), 7.0))
    ]
    np.testing.assert_array_equal(draw[0], draw[1])


def test_unit_weights_are_no_weights_in_partial_fit_score_and_the_empirical_embedding():
    rng = np.random.default_rng(2930)
    X, Y = rng.normal(size=(900, 2)), rng.normal(size=(300, 2))
    k = nk.Gaussian(1.0)
    plain = nk.NystromKME(k, n_landmarks=30, random_state=0).partial_fit(X[:400]).partial_fit(X[400:])
    ones = nk.NystromKME(k, n_landmarks=30, random_state=0)
    ones.partial_fit(X[:400], sample_weight=np.ones(400)).partial_fit(X[400:], sample_weight=np.ones(500))
    np.testing.assert_array_equal(ones.landmarks_, plain.landmarks_)
    np.testing.assert_array_equal(ones.weights_, plain.weights_)
    assert ones.weight_sum_ == plain.weight_sum_ == 900
    assert plain.score(Y, sample_weight=np.ones(len(Y))) == plain.score(Y)
    emp = nk.EmpiricalKME(k).fit(X, sample_weight=np.ones(len(X)))
    np.testing.assert_array_equal(emp.weights_, nk.EmpiricalKME(k).fit(X).weights_)


def test_scores_of_different_kernels_on_the_same_rows_warn():
    rng = np.random.default_rng(2931)
    X, Y, Z, V = (
        rng.normal(size=(500, 2)),
        rng.normal(size=(200, 2)),
        rng.normal(size=(200, 2)),
        rng.normal(size=(99, 2)),
    )
    gauss = nk.NystromKME(nk.Gaussian(1.0), n_landmarks=10, random_state=0).fit(X)
    more = nk.NystromKME(nk.Gaussian(1.0), n_landmarks=50, random_state=0).fit(X)
    laplace = nk.NystromKME(nk.Laplacian(1.0), n_landmarks=10, random_state=0).fit(X)
    median_a = nk.NystromKME(n_landmarks=10, random_state=0).fit(X)
    median_b = nk.NystromKME(n_landmarks=10, random_state=0).fit(X[:100])
    assert median_a.kernel_ != median_b.kernel_  # two bandwidths from one choice, "median"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert more.score(Y) > gauss.score(Y)  # one kernel: comparable, no warning
        laplace.score(Z)  # another kernel on other rows
        median_a.score(V)  # one kernel choice, each fit's median bandwidth
        median_b.score(V.copy())
    with pytest.warns(UserWarning, match=r"also scored with kernel Gaussian\(bandwidth=1.0\), now Laplacian") as rec:
        laplace.score(Y.copy())  # the same rows, another array
    assert [w.filename for w in rec] == [__file__]


def test_grid_search_over_bandwidths_is_warned():
    """The silent failure of issue 29: a grid over bandwidths picks the widest, because
    each score lives in its own RKHS. The search now warns."""
    pytest.importorskip("sklearn")
    from sklearn.model_selection import GridSearchCV, KFold

    X = np.random.default_rng(2932).normal(size=(600, 2))
    kernels = [nk.Gaussian(0.3), nk.Gaussian(1.0), nk.Gaussian(10.0)]
    grid = GridSearchCV(
        nk.NystromKME(n_landmarks=30, random_state=0), {"kernel": kernels}, cv=KFold(3, shuffle=True, random_state=0)
    )
    with pytest.warns(UserWarning, match="scores compare embeddings of one kernel"):
        grid.fit(X)
    assert grid.best_params_["kernel"] == nk.Gaussian(10.0)  # what the warning is about


# --------------------------------------------------------------------------- #
# y is ignored: labels are never weights (issue 21, a silent wrong answer)
# --------------------------------------------------------------------------- #
@pytest.fixture(scope="module")
def digits():
    pytest.importorskip("sklearn")
    from sklearn.datasets import load_digits

    X, y = load_digits(return_X_y=True)  # bundled with scikit-learn; 178 labels are 0
    assert (y == 0).sum() > 100
    return X, y


def test_fit_with_labels_equals_fit_without(digits):
    X, y = digits
    kernel = nk.Gaussian(40.0)
    plain = nk.NystromKME(kernel, n_landmarks=100, random_state=0).fit(X)
    with_y = nk.NystromKME(kernel, n_landmarks=100, random_state=0).fit(X, y)
    np.testing.assert_array_equal(with_y.landmarks_, plain.landmarks_)
    np.testing.assert_array_equal(with_y.weights_, plain.weights_)
    assert with_y.weight_sum_ == plain.weight_sum_ == len(X)
    # what fit(X, y) used to compute: the labels as weights, every 0 image dropped
    as_weights = nk.NystromKME(kernel, n_landmarks=100, random_state=0).fit(X, sample_weight=y)
    assert nk.rkhs_distance(as_weights, plain) > 1e-3
    # partial_fit and score ignore y too; EmpiricalKME keeps the weights 1/n
    chunks = nk.NystromKME(kernel, n_landmarks=100, random_state=0)
    chunks.partial_fit(X[:900], y[:900]).partial_fit(X[900:], y[900:])
    ref = nk.NystromKME(kernel, n_landmarks=100, random_state=0)
    ref.partial_fit(X[:900]).partial_fit(X[900:])
    np.testing.assert_array_equal(chunks.weights_, ref.weights_)
    assert plain.score(X, y) == plain.score(X)
    np.testing.assert_array_equal(nk.EmpiricalKME(kernel).fit(X, y).weights_, np.full(len(X), 1 / len(X)))
    with pytest.raises(TypeError):
        plain.fit(X, y, np.ones(len(X)))  # weights are keyword-only


def test_pipeline_and_grid_search_on_labelled_data(digits):
    pytest.importorskip("sklearn")
    from sklearn.model_selection import GridSearchCV, KFold, cross_val_score
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import StandardScaler

    X, y = digits
    kernel = nk.Gaussian(8.0)
    pipe = Pipeline([("scale", StandardScaler()), ("kme", nk.NystromKME(kernel, n_landmarks=50, random_state=0))])
    pipe.fit(X, y)
    Xs = StandardScaler().fit_transform(X)
    alone = nk.NystromKME(kernel, n_landmarks=50, random_state=0).fit(Xs)
    np.testing.assert_array_equal(pipe.named_steps["kme"].weights_, alone.weights_)
    assert pipe.score(X, y) == alone.score(Xs)

    cv = KFold(3, shuffle=True, random_state=0)
    grid = GridSearchCV(nk.NystromKME(kernel, random_state=0), {"n_landmarks": [5, 80]}, cv=cv).fit(Xs, y)
    # each cross-validated score is the held-out score of a fit without weights
    train, test = next(cv.split(Xs))
    manual = nk.NystromKME(kernel, n_landmarks=80, random_state=0).fit(Xs[train]).score(Xs[test])
    i = list(grid.cv_results_["param_n_landmarks"]).index(80)
    assert grid.cv_results_["split0_test_score"][i] == pytest.approx(manual, rel=1e-12)
    assert grid.best_params_ == {"n_landmarks": 80}
    scores = cross_val_score(nk.NystromKME(kernel, n_landmarks=80, random_state=0), Xs, y, cv=cv)
    np.testing.assert_allclose(scores, [grid.cv_results_[f"split{j}_test_score"][i] for j in range(3)], rtol=1e-12)


def test_sparse_input_is_refused_by_name():
    sparse = pytest.importorskip("scipy.sparse")
    X = sparse.random(50, 3, density=0.5, format="csr", random_state=0)
    for call in (
        lambda: nk.NystromKME(n_landmarks=5).fit(X),
        lambda: nk.EmpiricalKME().fit(X),
        lambda: nk.NystromKME(n_landmarks=5).partial_fit(X),
        lambda: nk.mmd2(X, X),
        lambda: nk.mmd2_exact(X, X),
    ):
        with pytest.raises(ValueError, match="X is a scipy.sparse .*sparse input is not supported"):
            call()
    fitted = nk.NystromKME(nk.Gaussian(1.0), n_landmarks=5, random_state=0).fit(X.toarray())
    with pytest.raises(ValueError, match="sparse input is not supported"):
        fitted.score(X)


@pytest.mark.parametrize("source", ["array", "chunks"])
def test_auto_m_on_one_row_is_a_clear_error(source):
    """n_landmarks="auto" estimates the empirical embedding's error from the spread of the
    rows: one row has none (was a ZeroDivisionError); the error names the problem and the
    way out, on every kind of source."""
    X = np.random.default_rng(3).normal(size=(1, 2))
    data = X if source == "array" else [X]
    with pytest.raises(ValueError, match=r"n_landmarks='auto' needs at least 2 rows .*give an integer n_landmarks"):
        nk.NystromKME(nk.Gaussian(1.0), n_landmarks="auto").fit(data)
    assert nk.NystromKME(nk.Gaussian(1.0), n_landmarks=1).fit(data).weights_.shape == (1,)  # an integer m works
