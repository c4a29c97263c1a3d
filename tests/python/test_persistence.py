"""Saving and loading without pickle (nystrom_kme.persistence): bit-exact round trips of
every saved type, continuation of partial_fit / merge after a load, portability of the
file, and a clear FileFormatError for truncated, corrupted, incomplete or newer files.
Pickle round trips are checked too."""

from __future__ import annotations

import io
import json
import pickle
import zipfile

import numpy as np
import nystrom_kme as nk
import pytest
from numpy.testing import assert_array_equal
from nystrom_kme.persistence import FORMAT_VERSION
from references import dense_kernel


@pytest.fixture
def X(rng):
    return rng.normal(size=(600, 3))


def _same_nystrom(a: nk.NystromKME, b: nk.NystromKME, Y: np.ndarray) -> None:
    assert type(b) is nk.NystromKME
    assert_array_equal(a(Y), b(Y))
    for name in ("landmarks_", "support_", "weights_", "s_sum_"):
        got, want = getattr(b, name), getattr(a, name)
        assert got.dtype == want.dtype
        assert_array_equal(got, want)
    for name in ("kernel_", "n_samples_", "n_features_in_", "solver_", "rank_", "weight_sum_"):
        assert getattr(b, name) == getattr(a, name), name
    if a.landmark_indices_ is None:
        assert b.landmark_indices_ is None
    else:
        assert_array_equal(b.landmark_indices_, a.landmark_indices_)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("kernel", [nk.Gaussian(), nk.Matern(0.8, nu=2.5), nk.Polynomial(2.0, degree=3)])
def test_nystrom_round_trip_is_bit_exact(tmp_path, X, rng, dtype, kernel):
    kme = nk.NystromKME(kernel, n_landmarks=40, solver="cod", random_state=3, n_threads=1).fit(X.astype(dtype))
    path = tmp_path / "kme.npz"
    kme.save(path)
    back = nk.load(path)
    Y = rng.normal(size=(50, 3)).astype(dtype)
    _same_nystrom(kme, back, Y)
    assert repr(back) == repr(kme)
    assert back.get_params() == kme.get_params()
    # independently: the loaded embedding is sum_j alpha_j k(l_j, .) with the dense kernel
    extra = {"degree": 3, "offset": 1.0} if isinstance(kernel, nk.Polynomial) else {}
    K = dense_kernel(back.kernel_.name, Y, back.landmarks_, back.kernel_.bandwidth, **extra)
    tol = 1e-9 if dtype == np.float64 else 1e-5  # float32 data: distances in float32
    np.testing.assert_allclose(back(Y), K @ back.weights_, rtol=tol, atol=tol * 1e-3)


def test_partial_fit_and_merge_continue_exactly_after_a_load(tmp_path, X, rng):
    kme = nk.NystromKME(nk.Gaussian(1.2), n_landmarks=30, random_state=0).fit(X)
    kme.save(tmp_path / "a.npz")
    back = nk.load(tmp_path / "a.npz")
    more = rng.normal(size=(200, 3))
    w = rng.uniform(0.5, 2.0, size=200)
    _same_nystrom(kme.partial_fit(more, sample_weight=w), back.partial_fit(more, sample_weight=w), more)
    # merging with a shard on the same landmarks, and on other landmarks
    shard = nk.NystromKME(nk.Gaussian(1.2), sampler=kme.landmarks_).fit(rng.normal(size=(300, 3)))
    other = nk.NystromKME(nk.Gaussian(1.2), n_landmarks=20, random_state=1).fit(rng.normal(size=(300, 3)))
    _same_nystrom(kme.merge(shard), back.merge(shard), more)
    _same_nystrom(kme.merge(other), back.merge(other), more)


def test_sampler_parameters_round_trip(tmp_path, X):
    path = tmp_path / "kme.npz"
    cases = [
        ("rls", "rls"),
        (nk.RPCholeskySampling(tolerance=1e-9), nk.RPCholeskySampling(tolerance=1e-9)),
        (np.array([3, 1, 4, 1, 5]), np.array([3, 1, 4, 1, 5])),  # given indices
        (X[:7].copy(), X[:7]),                                   # given points
    ]
    for sampler, expected in cases:
        kme = nk.NystromKME(nk.Gaussian(1.0), sampler=sampler, random_state=0,
                            n_landmarks=None if isinstance(sampler, np.ndarray) else 12).fit(X)
        kme.save(path)
        back = nk.load(path)
        if isinstance(expected, np.ndarray):
            assert_array_equal(back.sampler, expected)
        else:
            assert repr(back.sampler) == repr(expected)
        _same_nystrom(kme, back, X[:20])
        assert repr(back) == repr(kme)
        # the loaded estimator refits to the same embedding
        _same_nystrom(kme.fit(X), back.fit(X), X[:20])


def test_code_is_never_stored(tmp_path, X):
    """A function sampler or a Generator seed cannot be written as data: the file records
    that; the loaded estimator evaluates identically and asks for a sampler to refit."""
    kme = nk.NystromKME(nk.Gaussian(1.0), n_landmarks=10,
                        sampler=lambda X, kernel, m, rng: np.arange(m),
                        random_state=np.random.default_rng(0)).fit(X)
    kme.save(tmp_path / "f.npz")
    back = nk.load(tmp_path / "f.npz")
    assert back.sampler is None and back.random_state is None
    assert_array_equal(back(X[:30]), kme(X[:30]))
    with pytest.raises(ValueError, match="sampler"):
        back.fit(X)


def test_empirical_and_quadrature_round_trips(tmp_path, X, rng):
    Y = rng.normal(size=(40, 3))
    emp = nk.EmpiricalKME(random_state=0).fit(X.astype(np.float32), sample_weight=rng.uniform(size=600))
    emp.save(tmp_path / "e.npz")
    back = nk.load(tmp_path / "e.npz")
    assert type(back) is nk.EmpiricalKME and repr(back) == repr(emp)
    assert back.support_.dtype == np.float32
    assert_array_equal(back.support_, emp.support_)
    assert_array_equal(back(Y), emp(Y))

    kme = nk.NystromKME(n_landmarks=25, random_state=0).fit(X)
    for rule in (nk.QuadratureRule.from_embedding(kme), nk.QuadratureRule(X[:5], np.arange(5.0))):
        rule.save(tmp_path / "q.npz")
        got = nk.load(tmp_path / "q.npz")
        assert type(got) is nk.QuadratureRule and got.kernel == rule.kernel
        assert_array_equal(got.nodes, rule.nodes)
        assert_array_equal(got.weights, rule.weights)
        f = lambda P: np.sin(P[:, 0])  # noqa: E731
        assert got.integrate(f) == rule.integrate(f)


def test_two_sample_result_json_round_trip(tmp_path, X, rng):
    res = nk.two_sample_test(X, rng.normal(size=(500, 3)) + 0.2, n_permutations=30, random_state=0)
    text = res.to_json()
    assert json.loads(text)["format_version"] == FORMAT_VERSION
    for back in (nk.TwoSampleResult.from_json(text), _saved(res, tmp_path / "r.json")):
        assert type(back) is nk.TwoSampleResult
        assert_array_equal(back.null_distribution, res.null_distribution)
        for name in ("statistic", "pvalue", "method", "kernel", "n_landmarks", "n_permutations"):
            assert getattr(back, name) == getattr(res, name)
    with pytest.raises(nk.FileFormatError, match="missing key"):
        nk.TwoSampleResult.from_json(json.dumps({k: v for k, v in json.loads(text).items() if k != "pvalue"}))


def _saved(obj, path):
    obj.save(path)
    return nk.load(path)


def test_pickle_round_trips(X, rng):
    Y = rng.normal(size=(20, 3))
    kme = nk.NystromKME(n_landmarks=25, random_state=0).fit(X)
    _same_nystrom(kme, pickle.loads(pickle.dumps(kme)), Y)
    emp = nk.EmpiricalKME(random_state=0).fit(X)
    assert_array_equal(pickle.loads(pickle.dumps(emp))(Y), emp(Y))
    rule = nk.QuadratureRule.from_embedding(kme)
    got = pickle.loads(pickle.dumps(rule))
    assert_array_equal(got.weights, rule.weights) and got.kernel == rule.kernel
    res = nk.two_sample_test(X[:200], X[200:400], n_permutations=10, random_state=0)
    back = pickle.loads(pickle.dumps(res))
    assert back.pvalue == res.pvalue and back.kernel == res.kernel
    assert_array_equal(back.null_distribution, res.null_distribution)


def test_the_file_is_portable(tmp_path, X):
    """Explicit little-endian dtypes, ASCII JSON: nothing depends on the writer's machine.
    A file whose arrays are big-endian (as a foreign writer could produce) loads the same."""
    kme = nk.NystromKME(n_landmarks=20, random_state=0).fit(X)
    kme.save(tmp_path / "k.npz")
    header, members = _read(tmp_path / "k.npz")
    assert all(meta["dtype"][0] in "<|" for meta in header["arrays"].values())
    assert header["package_version"] == nk.__version__ and header["object"] == "NystromKME"
    big = {k: v.astype(v.dtype.newbyteorder(">")) for k, v in members.items()}
    for k, v in big.items():
        header["arrays"][k].update(dtype=v.dtype.str,
                                   sha256=__import__("hashlib").sha256(v.tobytes()).hexdigest())
    _write(tmp_path / "big.npz", header, big)
    _same_nystrom(kme, nk.load(tmp_path / "big.npz"), X[:10])


# --------------------------------------------------------------------------- #
# bad files
# --------------------------------------------------------------------------- #
def _read(path):
    with np.load(path, allow_pickle=False) as npz:
        members = {k: npz[k] for k in npz.files}
    header = json.loads(members.pop("header").tobytes())
    return header, members


def _write(path, header, members):
    blob = json.dumps(header).encode()
    np.savez(path, header=np.frombuffer(blob, dtype=np.uint8), **members)


@pytest.fixture
def saved(tmp_path, X):
    path = tmp_path / "kme.npz"
    kme = nk.NystromKME(n_landmarks=20, random_state=0).fit(X)
    kme.save(path)
    return path, kme


def test_truncated_files_are_refused_naming_the_file(saved):
    path, _ = saved
    raw = path.read_bytes()
    for cut in (0, 3, 100, len(raw) // 2, len(raw) - 30, len(raw) - 1):
        bad = path.with_name(f"cut{cut}.npz")
        bad.write_bytes(raw[:cut])
        with pytest.raises(nk.FileFormatError) as err:
            nk.load(bad)
        assert str(bad) in str(err.value) and "\n" not in str(err.value)


def test_flipped_bytes_are_detected(saved):
    path, kme = saved
    raw = path.read_bytes()
    for needle in (kme.weights_.tobytes(), kme.landmarks_.tobytes(), b'"format_version"'):
        at = raw.find(needle)
        assert at > 0
        bad = bytearray(raw)
        bad[at + len(needle) // 2] ^= 0x10
        path.with_name("flip.npz").write_bytes(bytes(bad))
        with pytest.raises(nk.FileFormatError, match="corrupted|CRC"):
            nk.load(path.with_name("flip.npz"))


def test_newer_format_version_is_refused(saved, tmp_path):
    path, _ = saved
    header, members = _read(path)
    header["format_version"] = FORMAT_VERSION + 1
    header["package_version"] = "99.0.0"
    _write(tmp_path / "new.npz", header, members)
    with pytest.raises(nk.FileFormatError, match=r"new\.npz: written in format version 2 .*99\.0\.0.*upgrade"):
        nk.load(tmp_path / "new.npz")
    res_text = json.loads(nk.two_sample_test(np.eye(4), np.eye(4) + 1, n_permutations=5,
                                             random_state=0).to_json())
    res_text["format_version"] = FORMAT_VERSION + 1
    (tmp_path / "new.json").write_text(json.dumps(res_text))
    with pytest.raises(nk.FileFormatError, match="new.json: written in format version 2"):
        nk.load(tmp_path / "new.json")


@pytest.mark.parametrize("change, message", [
    (lambda h, m: h.pop("state"), "key 'state' is missing"),
    (lambda h, m: h["state"].pop("weight_sum"), "key 'weight_sum' is missing"),
    (lambda h, m: h.pop("arrays"), "key 'arrays' is missing"),
    (lambda h, m: m.pop("weights"), "member 'weights' is missing"),
    (lambda h, m: h["arrays"].pop("s_comp") and m.pop("s_comp"), "member 's_comp' is missing"),
    (lambda h, m: h.update(format="other"), "not a nystrom-kme file"),
    (lambda h, m: h.update(object="Pipeline"), "unknown object type 'Pipeline'"),
    (lambda h, m: h["state"].update(n_features_in=7), "n_features_in=7"),
    (lambda h, m: m.update(weights=m["weights"][:-1]), "member 'weights' has dtype"),
    (lambda h, m: h["state"]["kernel"].update(bandwidth=-1.0), "bandwidth"),
])
def test_incomplete_or_inconsistent_files_are_refused(saved, tmp_path, change, message):
    path, _ = saved
    header, members = _read(path)
    change(header, members)
    _write(tmp_path / "bad.npz", header, members)
    with pytest.raises(nk.FileFormatError, match=message) as err:
        nk.load(tmp_path / "bad.npz")
    assert str(tmp_path / "bad.npz") in str(err.value)


def test_other_files_are_refused_without_running_code(tmp_path):
    (tmp_path / "empty.npz").write_bytes(b"")
    np.save(tmp_path / "plain.npy", np.ones(3))
    (tmp_path / "text.csv").write_text("1,2\n3,4\n")
    buf = io.BytesIO()
    np.savez(buf, header=np.array([{"evil": 1}], dtype=object))  # needs pickle to read
    (tmp_path / "obj.npz").write_bytes(buf.getvalue())
    with zipfile.ZipFile(tmp_path / "zip.npz", "w") as z:
        z.writestr("readme.txt", "hello")
    for name, message in [("empty.npz", "empty"), ("plain.npy", "not a nystrom-kme file"),
                          ("text.csv", "not a nystrom-kme file"), ("obj.npz", "corrupted"),
                          ("zip.npz", "no 'header' member")]:
        with pytest.raises(nk.FileFormatError, match=message):
            nk.load(tmp_path / name)
    with pytest.raises(FileNotFoundError):
        nk.load(tmp_path / "missing.npz")


def test_what_cannot_be_saved(tmp_path, X):
    with pytest.raises(nk.NotFittedError):
        nk.NystromKME().save(tmp_path / "x.npz")

    class MyKernel(nk.Gaussian):
        pass

    kme = nk.NystromKME(MyKernel(1.0), n_landmarks=5).fit(X)
    with pytest.raises(ValueError, match="cannot save a kernel of type"):
        kme.save(tmp_path / "x.npz")
    assert not (tmp_path / "x.npz").exists()
