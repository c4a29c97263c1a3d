"""Saving and loading without pickle (nystrom_kme.persistence): bit-exact round trips of
every saved type, continuation of partial_fit / merge after a load, portability of the
file, and a clear FileFormatError for truncated, corrupted, incomplete or newer files.
Pickle round trips are checked too."""

from __future__ import annotations

import hashlib
import io
import json
import os
import pickle
import re
import stat
import subprocess
import sys
import tracemalloc
import zipfile

import numpy as np
import pytest
from numpy.testing import assert_array_equal

import nystrom_kme as nk
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
        (X[:7].copy(), X[:7]),  # given points
    ]
    for sampler, expected in cases:
        kme = nk.NystromKME(
            nk.Gaussian(1.0),
            sampler=sampler,
            random_state=0,
            n_landmarks=None if isinstance(sampler, np.ndarray) else 12,
        ).fit(X)
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
    kme = nk.NystromKME(
        nk.Gaussian(1.0),
        n_landmarks=10,
        sampler=lambda X, kernel, m, rng: np.arange(m),
        random_state=np.random.default_rng(0),
    ).fit(X)
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
    res = nk.two_sample_test(X, rng.normal(size=(500, 3)) + 0.2, kernel="gaussian", n_permutations=30, random_state=0)
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
    for kernel in ("gaussian", "auto"):
        res = nk.two_sample_test(X[:200], X[200:400], kernel=kernel, n_permutations=10, random_state=0)
        back = pickle.loads(pickle.dumps(res))
        assert back.pvalue == res.pvalue and back.effect == res.effect
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
        header["arrays"][k].update(dtype=v.dtype.str, sha256=__import__("hashlib").sha256(v.tobytes()).hexdigest())
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
    res_text = json.loads(nk.two_sample_test(np.eye(4), np.eye(4) + 1, n_permutations=5, random_state=0).to_json())
    res_text["format_version"] = FORMAT_VERSION + 1
    (tmp_path / "new.json").write_text(json.dumps(res_text))
    with pytest.raises(nk.FileFormatError, match="new.json: written in format version 2"):
        nk.load(tmp_path / "new.json")


@pytest.mark.parametrize(
    "change, message",
    [
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
    ],
)
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
    for name, message in [
        ("empty.npz", "empty"),
        ("plain.npy", "not a nystrom-kme file"),
        ("text.csv", "not a nystrom-kme file"),
        ("obj.npz", "holds dtype object, not numbers"),
        ("zip.npz", "no 'header' member"),
    ]:
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


# --------------------------------------------------------------------------- #
# every field checked against what the class allows
# --------------------------------------------------------------------------- #
def _rehash(header, members):
    for k, v in members.items():
        header["arrays"][k].update(
            dtype=v.dtype.str, shape=list(v.shape), sha256=hashlib.sha256(np.ascontiguousarray(v).tobytes()).hexdigest()
        )


def _set_member(key, value):
    def change(h, m):
        m[key] = value(m[key])
        _rehash(h, m)

    return change


@pytest.mark.parametrize(
    "change, field",
    [
        (lambda h, m: h["state"].update(n_samples=-5), "n_samples=-5"),
        (lambda h, m: h["state"].update(n_samples=0), "n_samples=0"),
        (lambda h, m: h["state"].update(weight_sum=float("nan")), "weight_sum=nan"),
        (lambda h, m: h["state"].update(weight_sum=0), "weight_sum=0"),
        (lambda h, m: h["state"].update(weight_sum=-3.0), "weight_sum=-3.0"),
        (lambda h, m: h["state"].update(rank=10**9), "rank=1000000000"),
        (lambda h, m: h["state"].update(rank=-1), "rank=-1"),
        (lambda h, m: h["state"].update(solver="magic"), "solver='magic'"),
        (lambda h, m: h["params"].update(solver="magic"), "solver must be one of"),
        (lambda h, m: h["params"].update(n_landmarks=-3), "n_landmarks must be"),
        (lambda h, m: h["params"].update(n_landmarks="many"), "n_landmarks must be"),
        (lambda h, m: h["params"].update(random_state=-1), "random_state"),
        (lambda h, m: h["params"].update(n_threads=0), "n_threads"),
        (lambda h, m: h["params"].update(rcond=2.0), "rcond"),
        (lambda h, m: h["params"].update(sampler={"policy": "Nope", "params": {}}), "not a sampling policy"),
        (_set_member("landmark_indices", lambda a: -a - 1), "'landmark_indices' holds indices outside"),
        (_set_member("landmark_indices", lambda a: a + 600), "'landmark_indices' holds indices outside"),
        (_set_member("weights", lambda a: np.full_like(a, np.inf)), "'weights' must be a finite"),
        (
            lambda h, m: (
                _set_member("s_sum", lambda a: np.full_like(a, 1.7e308))(h, m)
                or _set_member("s_comp", lambda a: np.full_like(a, 1.7e308))(h, m)
            ),
            "s_sum \\+ s_comp overflows",
        ),
        (_set_member("landmarks", lambda a: a[:0]), "'landmarks' has shape"),
    ],
)
def test_each_bad_field_of_an_embedding_is_named(saved, tmp_path, change, field):
    path, _ = saved
    header, members = _read(path)
    change(header, members)
    _write(tmp_path / "bad.npz", header, members)
    with pytest.raises(nk.FileFormatError, match=field) as err:
        nk.load(tmp_path / "bad.npz")
    assert str(tmp_path / "bad.npz") in str(err.value) and "\n" not in str(err.value)


def test_bad_fields_of_the_other_saved_types_are_named(tmp_path, X, rng):
    emp = nk.EmpiricalKME(random_state=0).fit(X)
    comp = nk.compress(X, 10, random_state=0, compute_mmd=True)
    signed = nk.compress(X, 10, weights="signed", ridge=0.1, random_state=0, compute_mmd=False)
    cases = [
        (emp, lambda h, m: h["state"].update(n_samples=5), "n_samples=5 but the support has 600 rows"),
        (emp, _set_member("weights", lambda a: 2 * a), "'weights' is not a probability vector"),
        (emp, _set_member("weights", lambda a: np.r_[-a[:1], a[1:] + 2 * a[0] / 599]), "probability"),
        (comp, lambda h, m: h["state"].update(method="rpcholesky/fancy"), "method='rpcholesky/fancy'"),
        (comp, lambda h, m: h["state"].update(method="simplex"), "method='simplex'"),
        (comp, lambda h, m: h["state"].update(mmd=-1.0), "mmd=-1.0"),
        (comp, lambda h, m: h["state"].update(mmd=float("inf")), "mmd=inf"),
        (comp, lambda h, m: h["state"].update(ridge=0.5), "ridge=0.5"),
        (comp, _set_member("indices", lambda a: -a), "'indices' holds indices outside"),
        (comp, _set_member("weights", lambda a: a + 1), "'weights' is not a probability vector"),
        (signed, lambda h, m: h["state"].update(ridge=float("nan")), "ridge=nan"),
        (signed, lambda h, m: h["state"]["kernel"].update(bandwidth="median"), "no numeric bandwidth"),
    ]
    for obj, change, field in cases:
        obj.save(tmp_path / "ok.npz")
        header, members = _read(tmp_path / "ok.npz")
        change(header, members)
        _write(tmp_path / "bad.npz", header, members)
        with pytest.raises(nk.FileFormatError, match=field):
            nk.load(tmp_path / "bad.npz")
    # unchanged, each loads (the checks accept what the library writes)
    for obj in (emp, comp, signed):
        assert type(_saved(obj, tmp_path / "again.npz")) is type(obj)


@pytest.fixture
def result_dict(X, rng):
    res = nk.two_sample_test(
        X, rng.normal(size=(400, 3)) + 0.3, kernel="gaussian", method="nystrom", n_permutations=19, random_state=0
    )
    return json.loads(res.to_json())


@pytest.mark.parametrize(
    "change, field",
    [
        (dict(pvalue=float("nan")), "pvalue"),
        (dict(pvalue=5.0), "pvalue"),
        (dict(pvalue=0.5), "pvalue must be .* = 0.05"),  # not the p-value of this null distribution
        (dict(statistic=float("inf")), "statistic must be a finite number"),
        (dict(statistic=float("nan")), "statistic must be a finite number"),
        (dict(null_distribution=[0.1] * 5), "null_distribution must hold 19 numbers"),
        (dict(null_distribution=[float("nan")] * 19), "null_distribution must hold"),
        (dict(method="bogus"), "method must be 'nystrom' or 'exact'"),
        (dict(n_permutations=0), "n_permutations must be an integer in"),
        (dict(n_landmarks=None), "n_landmarks must be an integer in"),
        (dict(n_landmarks=-2), "n_landmarks must be an integer in"),
        (dict(n_landmarks=10**30), "n_landmarks must be an integer in|'n_landmarks' holds an integer beyond 64 bits"),
        (dict(null_distribution=["0.1"] * 19), "null_distribution must hold finite real numbers"),
        (dict(null_distribution=[True] * 19), "null_distribution must hold finite real numbers"),
        (dict(statistic=10**400), "statistic must be a finite number"),
        (dict(method="x" * 10**7), "method must be 'nystrom' or 'exact', got 'xxxx"),
        (dict(alpha=1.5), "alpha must be in"),
        (dict(effect={"kernel": None}), "kernel"),
        (dict(method="exact"), "n_landmarks must be None for method='exact'"),
    ],
)
def test_each_bad_field_of_a_test_result_is_named(tmp_path, result_dict, change, field):
    bad = dict(result_dict, **change)
    path = tmp_path / "r.json"
    path.write_text(json.dumps(bad))  # NaN and Infinity as Python's json writes them
    with pytest.raises(nk.FileFormatError, match=field) as err:
        nk.load(path)
    assert str(path) in str(err.value)
    # the same check guards the constructor: one validator for the type
    fields = dict(nk.TwoSampleResult.from_json(json.dumps(result_dict)).__dict__)
    fields.update(change)
    with pytest.raises(ValueError, match=field):
        nk.TwoSampleResult(**fields)


def test_cli_info_refuses_a_result_with_a_nan_pvalue(tmp_path, result_dict):
    (tmp_path / "r.json").write_text(json.dumps(dict(result_dict, pvalue=float("nan"))))
    out = subprocess.run(
        [sys.executable, "-m", "nystrom_kme", "info", "r.json"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        env=dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p)),
    )
    assert out.returncode == 2 and out.stdout == ""
    assert re.fullmatch(r"nystrom-kme info: error: r\.json: not a valid two-sample result: pvalue .*\n", out.stderr), (
        out.stderr
    )


# --------------------------------------------------------------------------- #
# sizes before data: no zip bomb, bounded memory
# --------------------------------------------------------------------------- #
def _npy_header(shape, descr="<f8"):
    buf = io.BytesIO()
    np.lib.format.write_array_header_1_0(buf, {"descr": descr, "fortran_order": False, "shape": shape})
    return buf.getvalue()


def _bomb(path, header, members, key, shape, *, nbytes=None, compress=True):
    """An archive like np.savez's, whose member ``key`` declares ``shape`` in its .npy header
    and holds ``nbytes`` zero bytes (default: what the shape needs), deflated when
    ``compress``: a few hundred KB on disk for 100 MB of zeros."""
    blob = json.dumps(header).encode()
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_STORED) as z:
        z.writestr("header.npy", _npy_header((len(blob),), "|u1") + blob)
        for k, v in members.items():
            if k == key:
                continue
            buf = io.BytesIO()
            np.save(buf, v)
            z.writestr(f"{k}.npy", buf.getvalue())
        info = zipfile.ZipInfo(f"{key}.npy")
        info.compress_type = zipfile.ZIP_DEFLATED if compress else zipfile.ZIP_STORED
        with z.open(info, "w", force_zip64=True) as f:
            f.write(_npy_header(shape))
            left = int(np.prod(shape)) * 8 if nbytes is None else nbytes
            zeros = bytes(1 << 20)
            while left > 0:
                f.write(zeros[: min(left, len(zeros))])
                left -= len(zeros)


def _peak_bytes(call):
    tracemalloc.start()
    try:
        with pytest.raises(nk.FileFormatError) as err:
            call()
        return tracemalloc.get_traced_memory()[1], str(err.value)
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize(
    "shape, manifest_too, compress, nbytes, message",
    [
        # the bomb: the header says (20, 3); the member declares and holds 100 MB of zeros
        ((4_166_667, 3), False, True, None, "'landmarks' has dtype <f8 and shape \\(4166667, 3\\), the header says"),
        # manifest and member agree on 100 MB, deflated to ~100 KB: compressed members are refused
        ((20, 655_360), True, True, None, "'landmarks' is compressed"),
        # the member declares (20, 3) but its zip entry holds 100 MB
        ((20, 3), False, True, 100 << 20, "declares shape \\(20, 3\\) .* but holds"),
        # the member declares 400 GB it does not hold (uncompressed, a few bytes on disk)
        ((50_000_000_000, 1), True, False, 16, "declares shape \\(50000000000, 1\\)"),
    ],
)
def test_a_zip_bomb_is_refused_before_its_data_is_read(saved, tmp_path, shape, manifest_too, compress, nbytes, message):
    path, _ = saved
    header, members = _read(path)
    if manifest_too:
        header["arrays"]["landmarks"]["shape"] = list(shape)
    bomb = tmp_path / "bomb.npz"
    _bomb(bomb, header, members, "landmarks", shape, nbytes=nbytes, compress=compress)
    assert bomb.stat().st_size < 2 << 20  # a small file
    peak, text = _peak_bytes(lambda: nk.load(bomb))
    assert re.search(message, text), text
    assert peak < 4 << 20, peak  # read before the checks, the member alone would take >= 100 MB


def test_a_load_takes_about_the_file_size_in_memory(tmp_path, rng):
    X = rng.normal(size=(20_000, 40))
    kme = nk.NystromKME(nk.Gaussian(6.0), sampler=X[:3000], random_state=0).fit(X[:5000])
    kme.save(tmp_path / "k.npz")
    size = (tmp_path / "k.npz").stat().st_size  # two (3000, 40) float64 arrays: ~1.9 MB
    tracemalloc.start()
    try:
        back = nk.load(tmp_path / "k.npz")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    _same_nystrom(kme, back, X[:10])
    assert size > 1.9e6 and peak < size + (3 << 20), (peak, size)


def test_non_regular_files_are_refused_without_blocking(tmp_path):
    fifo = tmp_path / "pipe.npz"
    os.mkfifo(fifo)
    code = (
        "import nystrom_kme as nk, sys\n"
        "try:\n    nk.load(sys.argv[1])\nexcept nk.FileFormatError as err:\n    print(err)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(fifo)],
        capture_output=True,
        text=True,
        timeout=120,
        env=dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p)),
    )
    assert out.stdout.strip() == f"{fifo}: not a regular file (a FIFO)", out.stderr
    with pytest.raises(nk.FileFormatError, match="not a regular file \\(a directory\\)"):
        nk.load(tmp_path)
    # saving over a FIFO or a folder is refused too (rather than replacing it)
    kme = nk.NystromKME(n_landmarks=3, random_state=0).fit(np.eye(4))
    with pytest.raises(OSError, match="exists and is not a regular file \\(a FIFO\\)"):
        kme.save(fifo)
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)


# --------------------------------------------------------------------------- #
# the package: each module one job, no private state of other modules touched
# --------------------------------------------------------------------------- #
def test_persistence_modules_touch_no_private_state():
    """The codecs build estimators through constructors and ``_from_state`` and read them
    through ``_state()``: no module of the package imports a private name, writes an
    attribute of another object, or reaches into ``__dict__`` / ``vars``."""
    import ast
    import pathlib

    import nystrom_kme.persistence as P

    root = pathlib.Path(P.__file__).parent
    modules = sorted(root.glob("*.py"))
    assert {p.stem for p in modules} == {
        "__init__",
        "codecs",
        "container",
        "detector_fields",
        "fields",
        "registry",
        "results",
        "sequential_codecs",
        "specs",
    }
    hooks = {"_state", "_from_state"}
    for path in modules:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                private = [a.name for a in node.names if a.name.startswith("_") and a.name != "_core"]
                assert not private, (path.name, node.module, private)
            elif isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for target in targets:
                    assert not isinstance(target, ast.Attribute), (path.name, ast.unparse(target))
            elif isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.endswith("__"):
                assert node.attr in hooks, (path.name, ast.unparse(node))
            elif isinstance(node, ast.Attribute):
                assert node.attr != "__dict__", (path.name, ast.unparse(node))
            elif isinstance(node, ast.Name):
                assert node.id != "vars", path.name


def test_the_package_keeps_its_public_names():
    import nystrom_kme.persistence as P

    assert set(P.__all__) == {
        "FORMAT_VERSION",
        "FileFormatError",
        "JsonResult",
        "kernel_from_spec",
        "kernel_spec",
        "load",
        "persistable",
        "read_header",
        "result_from_dict",
        "result_from_json",
        "result_to_dict",
        "result_to_json",
        "save",
    }
    assert all(hasattr(P, name) for name in P.__all__)
    assert nk.load is P.load and nk.FileFormatError is P.FileFormatError
    # the results saved as JSON share one to_json / from_json / save
    assert issubclass(nk.TwoSampleResult, P.JsonResult) and issubclass(nk.AggregatedTestResult, P.JsonResult)


def test_the_suffix_names_the_format_as_on_the_command_line(tmp_path, X):
    """save() refuses a suffix that is not the object's format (the CLI's -o rule), before
    writing anything."""
    kme = nk.NystromKME(n_landmarks=10, random_state=0).fit(X)
    res = nk.two_sample_test(X[:50], X[50:100], kernel="gaussian", n_permutations=9, random_state=0)
    for obj, bad, good in ((kme, "e.json", "e.NPZ"), (res, "r.npz", "r.json"), (kme, "e", "e.npz")):
        with pytest.raises(ValueError, match="the suffix names the format"):
            obj.save(tmp_path / bad)
        assert not (tmp_path / bad).exists()
        obj.save(tmp_path / good)
        assert type(nk.load(tmp_path / good)) is type(obj)
