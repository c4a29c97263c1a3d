"""The command line (nystrom_kme.cli): the README's main job `nystrom-kme demo`, `--version`, and the
commands on files written here (fit, eval, mmd, test, suggest-m, info), run as subprocesses and
checked against the Python API; bad input gives one line on stderr and exit status 2."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import numpy as np
import pytest
from numpy.testing import assert_array_equal

import nystrom_kme as nk
from nystrom_kme import cli
from nystrom_kme.cli import main
from nystrom_kme.datasets import GaussianMixture
from nystrom_kme.demo import demo_conclusion
from nystrom_kme.kernels import resolve_kernel
from nystrom_kme.persistence import kernel_spec
from nystrom_kme.sources import as_source


def test_demo_prints_exact_errors(capsys):
    assert main(["demo", "--n-samples", "2000", "--n-landmarks", "20", "300", "--seed", "1"]) == 0
    out = capsys.readouterr().out
    rows = re.findall(r"^(empirical \(eq\. 2\)|Nystrom \(eq\. 5\))\s+(\d+)\s+([\d.]+)", out, re.M)
    assert [r[1] for r in rows] == ["2000", "20", "300"]
    errors = {int(m): float(e) for _, m, e in rows}
    # independent check of the empirical error: same data, closed form from the datasets module
    mixture = GaussianMixture(n_components=8, dim=10, random_state=1)
    X = mixture.sample(2000)
    sigma = nk.median_distance(X, random_state=1)
    w = np.full(len(X), 1 / len(X))
    assert errors[2000] == float(f"{mixture.embedding_error(X, w, sigma):.6f}")
    # more landmarks: closer to the empirical error, never far below it
    assert errors[20] > errors[300] >= 0.9 * errors[2000]
    # the closing sentence says what the printed numbers show
    close = [m for m in (20, 300) if errors[m] <= 1.1 * errors[2000]]
    last = out.strip().splitlines()[-1]
    assert (f"m = {close[0]} " in last) if close else last.startswith("No m tried")


def test_cli_version_prints_the_configuration():
    out = subprocess.run(
        [sys.executable, "-m", "nystrom_kme.cli", "--version"], capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    assert f"nystrom-kme {nk.__version__}" in out.stdout
    assert f"SIMD level      {nk.simd_level()}" in out.stdout


# --------------------------------------------------------------------------- #
# the commands on the user's own files, run as a subprocess (python -m nystrom_kme)
# --------------------------------------------------------------------------- #
def run(*args, cwd):
    """`python -m nystrom_kme ARGS` in cwd, with this checkout's package on the path."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    return subprocess.run(
        [sys.executable, "-m", "nystrom_kme", *map(str, args)],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def ok_json(*args, cwd):
    out = run(*args, "--json", cwd=cwd)
    assert out.returncode == 0, out.stderr
    assert out.stderr == ""  # quiet: no progress bar when stderr is not a terminal
    return json.loads(out.stdout)


@pytest.fixture
def files(tmp_path):
    rng = np.random.default_rng(7)
    A, B = rng.normal(size=(900, 3)), rng.normal(size=(700, 3)) + 0.4
    np.save(tmp_path / "A.npy", A)
    np.save(tmp_path / "B.npy", B)
    np.savetxt(tmp_path / "A.csv", np.c_[A, A[:, 0] ** 2], delimiter=",", fmt="%.17g", header="x,y,z,x2", comments="")
    return tmp_path, A, B


def test_fit_then_eval_and_info_match_the_python_api(files):
    tmp, A, B = files
    rec = ok_json("fit", "A.npy", "-o", "emb.npz", "--n-landmarks", "60", "--seed", "3", cwd=tmp)
    ref = nk.NystromKME("gaussian", n_landmarks=60, random_state=3).fit(A)
    kme = nk.load(tmp / "emb.npz")
    assert_array_equal(kme.weights_, ref.weights_)  # a memmap is read bit-identically
    assert_array_equal(kme.landmarks_, ref.landmarks_)
    assert rec["kernel"]["bandwidth"] == ref.kernel_.bandwidth and rec["n_landmarks"] == 60
    assert (rec["n_samples"], rec["n_features"], rec["solver"]) == (900, 3, ref.solver_)
    # eval: one exact value per line, to stdout or to a file
    out = run("eval", "emb.npz", "B.npy", cwd=tmp)
    assert out.returncode == 0, out.stderr
    assert_array_equal(np.array([float(v) for v in out.stdout.split()]), ref(B))
    assert run("eval", "emb.npz", "B.npy", "-o", "mu.npy", cwd=tmp).returncode == 0
    assert_array_equal(np.load(tmp / "mu.npy"), ref(B))
    info = ok_json("info", "emb.npz", cwd=tmp)
    assert info["object"] == "NystromKME" and info["format_version"] == 1
    assert (info["n_landmarks"], info["n_samples"], info["rank"]) == (60, 900, ref.rank_)
    assert info["sampler"] == "uniform" and info["norm"] == ref.norm() and info["kernel"] == repr(ref.kernel_)
    text = run("info", "emb.npz", cwd=tmp).stdout
    assert "n landmarks  60" in text and "uniform" in text and ref.solver_ in text


def test_fit_on_csv_columns_with_options(files):
    tmp, A, _ = files
    rec = ok_json(
        "fit",
        "A.csv",
        "--columns",
        "z,x",
        "-o",
        "e.npz",
        "--kernel",
        "matern32",
        "--bandwidth",
        "1.5",
        "--n-landmarks",
        "40",
        "--sampler",
        "rpcholesky",
        "--threads",
        "1",
        cwd=tmp,
    )
    ref = nk.NystromKME(nk.Matern(1.5, nu=1.5), n_landmarks=40, sampler="rpcholesky", random_state=0).fit(A[:, [2, 0]])
    kme = nk.load(tmp / "e.npz")
    assert rec["n_features"] == 2 and kme.kernel_ == ref.kernel_
    assert_array_equal(kme.landmarks_, ref.landmarks_)
    np.testing.assert_allclose(kme.weights_, ref.weights_, rtol=1e-12)


@pytest.mark.parametrize("choice", ["auto", "bound"])
def test_fit_with_a_chosen_m_matches_the_python_api(files, choice):
    tmp, A, _ = files
    ok_json("fit", "A.npy", "-o", "c.npz", "--n-landmarks", choice, "--seed", "2", cwd=tmp)
    ref = nk.NystromKME("gaussian", n_landmarks=choice, random_state=2).fit(A)
    kme = nk.load(tmp / "c.npz")
    assert kme.landmarks_.shape == ref.landmarks_.shape
    assert_array_equal(kme.weights_, ref.weights_)


def test_mmd_and_test_match_the_python_api(files):
    tmp, A, B = files
    rec = ok_json("mmd", "A.npy", "B.npy", "--seed", "1", cwd=tmp)
    assert rec["mmd2"] == nk.mmd2(A, B, random_state=1)
    assert rec["n_landmarks"] == [nk.default_n_landmarks(900), nk.default_n_landmarks(700)]
    rec = ok_json("mmd", "A.npy", "B.npy", "--exact", "--unbiased", cwd=tmp)
    assert rec["mmd2"] == pytest.approx(nk.mmd2_exact(A, B, unbiased=True, random_state=0), rel=1e-12)
    # 'test' takes the bandwidth of 'mmd' (the median over rows of both files, drawn first
    # from --seed), then the splits and landmarks of two_sample_test from --seed
    kernel = resolve_kernel("gaussian", [as_source(A), as_source(B)], np.random.default_rng(0))
    res = nk.two_sample_test(A, B, kernel=kernel, n_permutations=40, random_state=0)
    out = run("test", "A.npy", "B.npy", "--kernel", "gaussian", "--permutations", "40", "--json", cwd=tmp)
    rec = json.loads(out.stdout)
    assert rec["kernel"] == ok_json("mmd", "A.npy", "B.npy", cwd=tmp)["kernel"] == kernel_spec(kernel)
    # two memmaps pooled are summed in other blocks than one in-memory array: ~1e-10 relative
    # on this statistic (a difference of sums), not bit for bit
    assert rec["statistic"] == pytest.approx(res.statistic, rel=1e-8) and rec["pvalue"] == res.pvalue
    assert rec["reject"] is True and out.returncode == 1  # exit status 1: H0 rejected
    # the same distribution: not rejected at this seed, exit status 0; text output
    kernel = resolve_kernel("gaussian", [as_source(A[:450]), as_source(A[450:])], np.random.default_rng(0))
    same = nk.two_sample_test(A[:450], A[450:], kernel=kernel, n_permutations=40, random_state=0)
    np.save(tmp / "A1.npy", A[:450])
    np.save(tmp / "A2.npy", A[450:])
    out = run("test", "A1.npy", "A2.npy", "--kernel", "gaussian", "--permutations", "40", "-o", "r.json", cwd=tmp)
    assert same.pvalue > 0.05 and out.returncode == 0, out.stderr
    assert f"p-value     {same.pvalue!r}" in out.stdout and "do not reject H0" in out.stdout
    assert re.search(r"time\s+[\d.]+ s", out.stdout)
    assert nk.load(tmp / "r.json").statistic == pytest.approx(same.statistic, rel=1e-8)


def test_aggregated_test_matches_the_python_api(files):
    tmp, A, B = files
    res = nk.two_sample_test(
        A,
        B,
        kernel=nk.KernelCollection(("gaussian", "imq"), n_bandwidths=3),
        aggregation="mmdagg",
        n_permutations=40,
        random_state=0,
    )
    out = run(
        "test",
        "A.npy",
        "B.npy",
        "--aggregate",
        "mmdagg",
        "--kernels",
        "gaussian,imq",
        "--bandwidths",
        "3",
        "--permutations",
        "40",
        "--json",
        "-o",
        "agg.json",
        cwd=tmp,
    )
    rec = json.loads(out.stdout)
    assert out.returncode == 1 and rec["reject"] is True  # the samples differ
    assert rec["pvalue"] == res.pvalue and rec["aggregation"] == "mmdagg" and len(rec["kernels"]) == 6
    assert rec["kernel_pvalues"] == pytest.approx(res.kernel_pvalues.tolist())
    assert rec["kernels"] == [kernel_spec(k) for k in res.kernels]
    saved = nk.load(tmp / "agg.json")
    assert saved.pvalue == res.pvalue and saved.kernels == res.kernels
    info = run("info", "agg.json", cwd=tmp)
    assert info.returncode == 0 and "Decided by" in info.stdout
    text = run("test", "A.npy", "B.npy", "--aggregate", "fuse", "--permutations", "19", cwd=tmp)
    assert text.returncode == 1 and "MMD-FUSE" in text.stdout and "marginal p" in text.stdout


@pytest.mark.parametrize(
    "args, message",
    [
        (["--aggregate", "fuse", "--bandwidth", "1.0"], "--bandwidth fixes one kernel"),
        (["--aggregate", "fuse", "--kernels", "gaussian,nope"], "got 'nope'"),  # the library's words
        (["--aggregate", "fuse", "--kernels", "linear"], "radial"),
        (["--bandwidth", "1.0"], "--bandwidth fixes one kernel"),
        (["--kernel", "gaussian", "--bandwidths", "3"], "--bandwidths applies to a collection"),
        (["--kernel", "gaussian", "--max-bins", "100"], "--max-bins applies to a collection"),
    ],
)
def test_aggregated_options_are_checked(files, args, message):
    tmp, _, _ = files
    out = run("test", "A.npy", "B.npy", "--permutations", "9", *args, cwd=tmp)
    assert out.returncode == 2 and message in out.stderr, out.stderr


def test_kernels_without_aggregation_test_that_collection(files):
    """`test --kernels laplacian` alone used to run the one-kernel Gaussian test silently:
    it tests the Laplacian collection, as two_sample_test(kernel=KernelCollection(("laplacian",)))."""
    tmp, A, B = files
    out = run("test", "A.npy", "B.npy", "--kernels", "laplacian", "--n-permutations", "19", "--json", cwd=tmp)
    assert out.returncode == 1, out.stderr  # 1: H0 rejected (B is shifted)
    rec = json.loads(out.stdout)
    res = nk.two_sample_test(
        A, B, kernel=nk.KernelCollection(("laplacian",)), n_permutations=19, random_state=0, effect=False
    )
    assert {k["type"] for k in rec["kernels"]} == {"Laplacian"} and rec["aggregation"] == "fuse"
    assert rec["pvalue"] == res.pvalue and len(rec["kernels"]) == len(res.kernels)


def test_an_empty_kernels_list_is_refused(files):
    """`test --aggregation fuse --kernels ""` used to run MMD-FUSE's 20-kernel grid silently:
    the collection is the library's, which refuses it by name."""
    tmp, _, _ = files
    out = run("test", "A.npy", "B.npy", "--aggregation", "fuse", "--kernels", "", cwd=tmp)
    assert out.returncode == 2 and "--kernels '': kernels must name at least one kernel" in out.stderr, out.stderr


def test_suggest_m_matches_the_bounds_module(files):
    tmp, A, _ = files
    rec = ok_json("suggest-m", "A.npy", "--bound-only", cwd=tmp)
    rep = nk.bounds.suggest_n_landmarks(A, "gaussian", random_state=0)
    assert rec["n_landmarks"] == rep.n_landmarks and rec["explanation"] == rep.explain()


def test_suggest_m_certify_reports_the_auto_search_of_the_library(files):
    """By default: the m that NystromKME(n_landmarks="auto") certifies on the same data and
    seed leads, beside the theorems' worst-case m (issue 43: plain suggest-m led with the
    worst case); --bound-only skips the measurement; --certify is the default kept."""
    tmp, A, _ = files
    rec = ok_json("suggest-m", "A.npy", cwd=tmp)
    est = nk.NystromKME("gaussian", n_landmarks="auto", random_state=0).fit(A)
    cert = rec["certificate"]
    assert cert["type"] == "LandmarkSearch" and cert["n_landmarks"] == est.n_landmarks_report_.n_landmarks
    assert cert["certified"] == est.n_landmarks_report_.certified
    assert rec["recommended"] == cert["n_landmarks"] and rec["recommended_by"] == "certificate"
    again = ok_json("suggest-m", "A.npy", "--certify", cwd=tmp)["certificate"]
    assert (again["n_landmarks"], again["certified"]) == (cert["n_landmarks"], cert["certified"])
    assert "certificate" not in ok_json("suggest-m", "A.npy", "--bound-only", cwd=tmp)


@pytest.mark.parametrize(
    "args, message",
    [
        (["fit", "nope.npy", "-o", "x.npz"], "nope.npy: no such file"),
        (["fit", "nan.csv", "-o", "x.npz", "--n-landmarks", "1"], "nan.csv: line 2, column index 1: NaN or inf"),
        (["fit", "A.npy", "-o", "x.npz", "--bandwidth", "-1"], "--bandwidth: .*positive number"),
        (["mmd", "A.npy", "A.csv"], "A.npy has 3 columns but A.csv has 4"),
        (["test", "A.csv", "B.npy"], "A.csv has 4 columns but B.npy has 3"),
        (["eval", "emb.npz", "A.csv"], "A.csv has 4 features but the embedding has 3"),
        (["eval", "A.npy", "B.npy"], "A.npy: not a nystrom-kme file"),
        (["info", "cut.npz"], "cut.npz: truncated or corrupted"),
        (["demo", "--n-landmarks", "0"], "--n-landmarks must lie in"),
        ([], "a command is required"),
    ],
)
def test_bad_input_is_one_line_and_exit_status_2(files, args, message):
    tmp, A, _ = files
    (tmp / "nan.csv").write_text("1,2\n3,nan\n")
    nk.NystromKME(n_landmarks=5, random_state=0).fit(A).save(tmp / "emb.npz")
    (tmp / "cut.npz").write_bytes((tmp / "emb.npz").read_bytes()[:200])
    out = run(*args, cwd=tmp)
    assert out.returncode == 2
    assert "Traceback" not in out.stderr and len(out.stderr.strip().splitlines()) == 1, out.stderr
    assert re.search(message, out.stderr), out.stderr


def test_help_documents_the_exit_status():
    out = subprocess.run(
        [sys.executable, "-m", "nystrom_kme", "--help"],
        capture_output=True,
        text=True,
        timeout=120,
        env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)),
    )
    assert out.returncode == 0
    for line in (
        "0    success",
        "1    'test' rejected H0 at level --alpha (the samples differ), or 'drift",
        "2    any failure: usage error, bad input",
    ):
        assert line in out.stdout
    for command in ("fit", "eval", "mmd", "test", "drift", "suggest-m", "info", "demo"):
        assert command in out.stdout


def test_demo_conclusion_is_read_off_its_numbers():
    assert "m = 200" in demo_conclusion({100: 0.5, 200: 0.105, 400: 0.101}, 0.1, 1000, 200)
    text = demo_conclusion({10: 0.9, 20: 0.4}, 0.1, 1000, 200)
    assert text.startswith("No m tried") and "m = 20, is 4.00 x" in text
    assert demo_conclusion({}, 0.1, 1000, 200).startswith("No Nystrom estimator")


def test_compress_writes_points_and_weights(tmp_path):
    X = np.random.default_rng(0).normal(size=(600, 3))
    np.save(tmp_path / "x.npy", X)
    rec = ok_json("compress", "x.npy", "-m", "20", "-o", "c.npz", cwd=tmp_path)
    res = nk.compress(X, 20, random_state=0)
    with np.load(tmp_path / "c.npz") as f:
        assert_array_equal(f["weights"], res.weights)
        assert_array_equal(f["indices"], res.indices)
    assert rec["mmd"] == res.mmd and rec["weights"] == "simplex" and rec["n_points"] == 20
    text = run("compress", "x.npy", "-m", "20", "-o", "c.npz", "--weights", "signed", "--no-mmd", cwd=tmp_path)
    assert text.returncode == 0 and "not computed" in text.stdout
    info = ok_json("info", "c.npz", cwd=tmp_path)
    assert info["object"] == "CompressionResult" and info["n_points"] == 20 and info["mmd"] is None


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["-m", "2000", "-o", "c.npz"], "n_points"),
        (["-m", "5", "-o", "c.npz", "--ridge", "0.1"], "ridge"),
        (["-m", "5", "-o", "c.txt"], ".npz"),
    ],
)
def test_compress_bad_input_exits_2(tmp_path, args, message):
    np.save(tmp_path / "x.npy", np.random.default_rng(0).normal(size=(100, 2)))
    out = run("compress", "x.npy", *args, cwd=tmp_path)
    assert out.returncode == 2 and message in out.stderr and len(out.stderr.strip().splitlines()) == 1


# --------------------------------------------------------------------------- #
# one bandwidth rule, one output rule, whole files only, exit status 1 for H0 only
# --------------------------------------------------------------------------- #
def test_mmd_and_test_share_the_bandwidth_on_large_files(tmp_path):
    """Above 2 x 1000 rows the median heuristic draws rows; 'test' used to draw them after
    the splits' seed and got another bandwidth (49.173 vs 49.183 in the issue)."""
    rng = np.random.default_rng(3)
    A, B = 30 * rng.normal(size=(3000, 3)), 30 * rng.normal(size=(2500, 3)) + 1
    np.save(tmp_path / "A.npy", A)
    np.save(tmp_path / "B.npy", B)
    for seed in ("0", "5"):
        mmd = ok_json("mmd", "A.npy", "B.npy", "--seed", seed, cwd=tmp_path)
        test = json.loads(
            run(
                "test",
                "A.npy",
                "B.npy",
                "--kernel",
                "gaussian",
                "--permutations",
                "9",
                "--seed",
                seed,
                "--json",
                cwd=tmp_path,
            ).stdout
        )
        want = resolve_kernel("gaussian", [as_source(A), as_source(B)], np.random.default_rng(int(seed)))
        assert mmd["kernel"] == test["kernel"] == kernel_spec(want)
        assert mmd["mmd2"] == nk.mmd2(A, B, random_state=int(seed))  # mmd's own draws unchanged


@pytest.mark.parametrize(
    "args",
    [
        ["fit", "A.npy", "-o", "e.json"],
        ["fit", "A.npy", "-o", "e"],
        ["compress", "A.npy", "-m", "5", "-o", "c.csv"],
        ["eval", "emb.npz", "B.npy", "-o", "v.json"],
        ["test", "A.npy", "B.npy", "--permutations", "5", "-o", "r.npz"],
    ],
)
def test_the_output_suffix_names_the_format(files, monkeypatch, capsys, args):
    tmp, A, _ = files
    monkeypatch.chdir(tmp)
    nk.NystromKME(n_landmarks=5, random_state=0).fit(A).save(tmp / "emb.npz")
    before = sorted(os.listdir(tmp))
    assert main(args) == 2
    out = capsys.readouterr()
    assert out.out == ""
    assert re.fullmatch(
        rf"nystrom-kme {args[0]}: error: {re.escape(args[-1])}: the output of '{args[0]}' "
        r"must be named \*\.(npz|json|npy or \*\.csv or \*\.txt) \(the suffix names the "
        r"format\)\n",
        out.err,
    ), out.err
    assert sorted(os.listdir(tmp)) == before  # nothing written


def test_outputs_into_a_missing_folder_or_onto_a_fifo_are_refused(files):
    tmp, _, _ = files
    os.mkfifo(tmp / "pipe.npz")
    out = run("fit", "A.npy", "-o", "nowhere/e.npz", cwd=tmp)
    assert out.returncode == 2 and "nowhere/e.npz: no such folder" in out.stderr
    out = run("fit", "A.npy", "-o", "pipe.npz", cwd=tmp)
    assert out.returncode == 2 and "pipe.npz: exists and is not a regular file (a FIFO)" in out.stderr


def test_non_regular_inputs_are_refused_without_blocking(files):
    tmp, A, _ = files
    nk.NystromKME(n_landmarks=5, random_state=0).fit(A).save(tmp / "emb.npz")
    os.mkfifo(tmp / "pipe.npz")
    os.mkfifo(tmp / "pipe.csv")
    for args, message in [
        (["info", "pipe.npz"], "pipe.npz: not a regular file (a FIFO)"),
        (["eval", "pipe.npz", "A.npy"], "pipe.npz: not a regular file (a FIFO)"),
        (["eval", "emb.npz", "pipe.csv"], "pipe.csv: not a regular file (a FIFO)"),
        (["fit", "pipe.csv", "-o", "e.npz"], "pipe.csv: not a regular file (a FIFO)"),
        (["mmd", "A.npy", "pipe.csv"], "pipe.csv: not a regular file (a FIFO)"),
    ]:
        out = run(*args, cwd=tmp)  # timeout=120: a regression fails instead of hanging
        assert out.returncode == 2 and message in out.stderr, (args, out.stderr)


def test_a_ragged_csv_is_an_error_naming_the_line(tmp_path):
    (tmp_path / "r.csv").write_text("1,2\n3,4,5\n6,7\n8,9\n")
    out = run("fit", "r.csv", "-o", "e.npz", "--n-landmarks", "2", cwd=tmp_path)
    assert out.returncode == 2
    assert out.stderr == "nystrom-kme fit: error: r.csv: line 2 has 3 fields but line 1 has 2 fields\n"
    assert not (tmp_path / "e.npz").exists()


@pytest.mark.parametrize("suffix", [".csv", ".txt", ".npy"])
def test_eval_leaves_no_partial_output(files, monkeypatch, capsys, suffix):
    """The issue's case: a NaN far into the points (here in the 4th block of 64 lines)
    used to leave the values of the first blocks in the output."""
    tmp, A, B = files
    monkeypatch.chdir(tmp)
    monkeypatch.setattr("nystrom_kme.datafiles.TEXT_BLOCK_LINES", 64)
    nk.NystromKME(n_landmarks=20, random_state=0).fit(A).save("emb.npz")
    lines = [",".join(map(repr, row)) for row in B.tolist()]
    lines[200] = "1.0,nan,2.0"
    (tmp / "pts.csv").write_text("\n".join(lines) + "\n")
    (tmp / "wide.csv").write_text("1,2,3,4\n5,6,7,8\n")
    out = f"out{suffix}"
    for points, message in [
        ("pts.csv", "pts.csv: line 201, column index 1: NaN or inf in the data"),
        ("wide.csv", "wide.csv has 4 features but the embedding has 3"),
    ]:
        assert main(["eval", "emb.npz", points, "-o", out]) == 2
        err = capsys.readouterr().err
        assert err == f"nystrom-kme eval: error: {message}\n"
        assert sorted(os.listdir(tmp)) == ["A.csv", "A.npy", "B.npy", "emb.npz", "pts.csv", "wide.csv"]
    # an existing output is replaced only by a complete one
    (tmp / out).write_bytes(b"previous")
    assert main(["eval", "emb.npz", "pts.csv", "-o", out]) == 2
    assert (tmp / out).read_bytes() == b"previous"
    lines[200] = "1.0,2.0,3.0"
    (tmp / "pts.csv").write_text("\n".join(lines) + "\n")
    assert main(["eval", "emb.npz", "pts.csv", "-o", out]) == 0
    capsys.readouterr()
    got = np.load(out) if suffix == ".npy" else np.loadtxt(out)
    Y, kme = np.loadtxt(tmp / "pts.csv", delimiter=","), nk.load("emb.npz")
    assert_array_equal(got, np.concatenate([kme(Y[i : i + 64]) for i in range(0, len(Y), 64)]))  # as read
    assert oct(os.stat(out).st_mode & 0o777) != oct(0o600)  # not the temporary file's mode


# every command, with the call that fails: exit status 2 and one line, never 1 (H0 rejected)
COMMANDS = [
    (["fit", "A.npy", "-o", "e.npz"], "inputs", "read_data"),
    (["eval", "emb.npz", "B.npy"], "inputs", "load"),
    (["compress", "A.npy", "-m", "5", "-o", "c.npz"], "embeddings", "compress"),
    (["mmd", "A.npy", "B.npy"], "compare", "mmd2"),
    (["test", "A.npy", "B.npy", "--permutations", "5"], "compare", "two_sample_test"),
    (["suggest-m", "A.npy"], "embeddings", "suggest_n_landmarks"),
    (["drift", "fit", "A.npy", "-o", "d.npz"], "drift", "DriftDetector"),
    (["info", "emb.npz"], "about", "read_header"),
    (["demo", "--n-samples", "100"], "about", "run_demo"),
    (["--version"], None, "show_config"),
]


@pytest.mark.parametrize(
    "error",
    [
        MemoryError("Unable to allocate 74.5 GiB"),
        MemoryError(),
        RuntimeError("boom"),
        KeyError("k"),
        TypeError("t"),
        OSError(28, "No space left on device"),
    ],
)
@pytest.mark.parametrize("args, module, target", COMMANDS, ids=[c[0][0] for c in COMMANDS])
def test_no_failure_exits_1(files, monkeypatch, capsys, args, module, target, error):
    tmp, A, _ = files
    monkeypatch.chdir(tmp)
    nk.NystromKME(n_landmarks=5, random_state=0).fit(A).save("emb.npz")

    def fail(*a, **k):
        raise error

    import importlib

    monkeypatch.setattr(cli if module is None else importlib.import_module(f"nystrom_kme.cli.{module}"), target, fail)
    assert main(args) == 2
    captured = capsys.readouterr()
    assert captured.err.count("\n") == 1 and captured.err.startswith("nystrom-kme"), captured.err
    assert "Traceback" not in captured.err
    if isinstance(error, MemoryError):
        assert "out of memory" in captured.err


@pytest.mark.parametrize(
    "args",
    [
        ["fit", "A.npy", "-o", "e.npz", "--n-landmarks", "0"],
        ["eval", "A.npy", "B.npy"],
        ["compress", "A.npy", "-m", "5000", "-o", "c.npz"],
        ["mmd", "A.npy", "missing.npy"],
        ["test", "A.npy", "B.csv"],
        ["test", "A.npy", "B.npy", "--alpha", "1"],
        ["suggest-m", "A.npy", "--delta", "2"],
        ["info", "A.npy"],
        ["demo", "--n-samples", "1"],
        ["nonsense"],
        [],
    ],
)
def test_bad_input_to_every_command_exits_2(files, monkeypatch, capsys, args):
    tmp, A, B = files
    monkeypatch.chdir(tmp)
    (tmp / "B.csv").write_text("1,2\n")
    try:
        status = main(args)
    except SystemExit as stop:  # argparse's usage errors
        status = stop.code
    err = capsys.readouterr().err
    assert status == 2, err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err


def test_huge_requests_are_out_of_memory_with_exit_2(files):
    """A request beyond the machine's memory fails with exit 2 and one line: refused
    before allocating when the core can size it (the test's split states), else the
    MemoryError reported as out of memory."""
    tmp, _, _ = files
    for args, says in (
        (["test", "A.npy", "B.npy", "--kernel", "gaussian", "--permutations", str(10**11)], "too large"),
        (["test", "A.npy", "B.npy", "--permutations", str(10**11)], "too large"),
        (["demo", "--n-samples", str(10**11), "--n-landmarks", "2"], "out of memory"),
    ):
        out = run(*args, cwd=tmp)
        assert out.returncode == 2 and says in out.stderr, out.stderr
        assert len(out.stderr.strip().splitlines()) == 1


def test_a_bad_simd_setting_exits_2_with_one_line(files):
    tmp, _, _ = files
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p), NYSTROM_KME_SIMD="sse9")
    for command in (
        [sys.executable, "-m", "nystrom_kme", "info", "x.npz"],
        [sys.executable, "-m", "nystrom_kme.cli", "--version"],
    ):
        out = subprocess.run(command, cwd=tmp, env=env, capture_output=True, text=True, timeout=120)
        assert out.returncode == 2
        assert re.fullmatch(r"nystrom-kme: error: NYSTROM_KME_SIMD=sse9: unknown SIMD level 'sse9'.*\n", out.stderr), (
            out.stderr
        )
    # the library itself still fails at import, with the reason
    out = subprocess.run(
        [sys.executable, "-c", "import nystrom_kme"], cwd=tmp, env=env, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 1 and "ImportError: NYSTROM_KME_SIMD=sse9" in out.stderr


def test_demo_json_has_the_table_numbers(capsys):
    args = ["demo", "--n-samples", "1500", "--n-landmarks", "20", "200", "--seed", "2"]
    assert main(args) == 0
    text = capsys.readouterr().out
    assert main([*args, "--json"]) == 0
    rec = json.loads(capsys.readouterr().out)
    printed = {
        int(m): float(e)
        for m, e in re.findall(r"^(?:empirical \(eq\. 2\)|Nystrom \(eq\. 5\))\s+(\d+)\s+([\d.]+)", text, re.M)
    }
    assert [(r["estimator"], r["n_landmarks"]) for r in rec["rows"]] == [
        ("empirical", 1500),
        ("nystrom", 20),
        ("nystrom", 200),
    ]
    assert {r["n_landmarks"]: float(f"{r['error']:.6f}") for r in rec["rows"]} == printed
    assert rec["conclusion"] == text.strip().splitlines()[-1]
    X = GaussianMixture(n_components=8, dim=10, random_state=2).sample(1500)
    assert rec["kernel"]["bandwidth"] == nk.median_distance(X, random_state=2)


@pytest.mark.parametrize("choice, kind", [("auto", "LandmarkSearch"), ("bound", "LandmarkSuggestion")])
def test_fit_prints_how_m_was_chosen(files, choice, kind):
    tmp, A, _ = files
    ref = nk.NystromKME("gaussian", n_landmarks=choice, random_state=2).fit(A)
    report = ref.n_landmarks_report_
    rec = ok_json("fit", "A.npy", "-o", "c.npz", "--n-landmarks", choice, "--seed", "2", cwd=tmp)
    got = rec["n_landmarks_report"]
    assert got["type"] == kind and got["explanation"] == str(report.explain())
    assert got["n_landmarks"] == report.n_landmarks and rec["n_landmarks"] == ref.landmarks_.shape[0]
    out = run("fit", "A.npy", "-o", "c.npz", "--n-landmarks", choice, "--seed", "2", cwd=tmp)
    assert out.returncode == 0 and "choice of m" in out.stdout
    assert str(report.explain()).splitlines()[0] in out.stdout
    # a given m has no report
    assert "n_landmarks_report" not in ok_json("fit", "A.npy", "-o", "c.npz", "--n-landmarks", "9", cwd=tmp)


@pytest.mark.parametrize("suffix", [".npy", ".csv"])
def test_eval_streams_a_long_file_in_the_memory_of_a_block(tmp_path, monkeypatch, capsys, suffix):
    """200 000 points (4.8 MB of data, 1.6 MB of values) in blocks of 2000 lines: the
    values are written block by block as the points are read, never gathered."""
    import tracemalloc

    rng = np.random.default_rng(5)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr("nystrom_kme.datafiles.TEXT_BLOCK_LINES", 2000)
    kme = nk.NystromKME(nk.Gaussian(1.0), n_landmarks=20, random_state=0).fit(rng.normal(size=(500, 3)))
    kme.save("emb.npz")
    Y = np.round(rng.normal(size=(200_000, 3)), 3)
    np.savetxt("pts.csv", Y, delimiter=",", fmt="%.3f")
    tracemalloc.start()
    try:
        assert main(["eval", "emb.npz", "pts.csv", "-o", f"out{suffix}"]) == 0
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert capsys.readouterr().out == f"200000 values of the embedding emb.npz written to out{suffix}\n"
    got = np.load(f"out{suffix}") if suffix == ".npy" else np.loadtxt(f"out{suffix}")
    assert_array_equal(got, np.concatenate([kme(Y[i : i + 2000]) for i in range(0, len(Y), 2000)]))
    assert peak < 1 << 20, peak  # the values alone are 1.6 MB


def test_the_cli_package_uses_the_library_through_public_names():
    """Parsing, commands and output in their own modules, each under 600 lines; no private
    name of the library (or of a sibling) imported, no private attribute read."""
    import ast
    import pathlib

    root = pathlib.Path(cli.__file__).parent
    modules = sorted(root.glob("*.py"))
    assert {p.stem for p in modules} == {
        "__init__",
        "__main__",
        "about",
        "compare",
        "drift",
        "embeddings",
        "independence",
        "inputs",
        "output",
        "parser",
    }
    for path in modules:
        text = path.read_text(encoding="utf-8")
        assert len(text.splitlines()) < 600, path.name
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.ImportFrom):
                assert not [a.name for a in node.names if a.name.startswith("_")], (path.name, node.module)
            elif isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.endswith("__"):
                raise AssertionError(f"{path.name}: {ast.unparse(node)}")


def test_options_speak_the_python_names_and_suggest_them(files):
    """--n-permutations / --random-state / --n-landmarks auto work; the Python spelling of
    an option gets the CLI's as a suggestion; the library's own kernel names are taken."""
    tmp, _, _ = files
    out = run(
        "test",
        "A.npy",
        "B.npy",
        "--n-permutations",
        "19",
        "--random-state",
        "0",
        "--n-landmarks",
        "auto",
        "--kernel",
        "inverse_multiquadric",
        "--json",
        cwd=tmp,
    )
    assert out.returncode in (0, 1) and json.loads(out.stdout)["n_permutations"] == 19, out.stderr
    out = run("test", "A.npy", "B.npy", "--n_permutations", "19", cwd=tmp)
    assert out.returncode == 2 and "did you mean --n-permutations?" in out.stderr
    old = run(
        "test", "A.npy", "B.npy", "--permutations", "19", "--seed", "0", "--kernel", "gaussian", "--json", cwd=tmp
    )
    new = run(
        "test",
        "A.npy",
        "B.npy",
        "--n-permutations",
        "19",
        "--random-state",
        "0",
        "--kernel",
        "gaussian",
        "--json",
        cwd=tmp,
    )
    assert json.loads(old.stdout)["pvalue"] == json.loads(new.stdout)["pvalue"]


def test_library_warnings_and_errors_are_one_line_in_the_clis_words(files):
    tmp, _, _ = files
    out = run("fit", "A.npy", "-o", "x.npz", "--n-landmarks", "5000", cwd=tmp)
    assert out.returncode == 0 and out.stderr.count("\n") == 1, out.stderr
    assert out.stderr.startswith("nystrom-kme fit: warning: --n-landmarks 5000") and ".py" not in out.stderr
    out = run("test", "A.npy", "B.npy", "--n-landmarks", "auto", "--n-permutations", "9", cwd=tmp)
    assert out.returncode in (0, 1) and out.stderr == "", out.stderr  # the default test takes "auto" too
    out = run("test", "A.npy", "B.npy", "--n-landmarks", "100000", "--n-permutations", "9", cwd=tmp)
    assert out.returncode in (0, 1) and out.stderr.count("\n") == 1, out.stderr  # capped at the rows: a warning
    assert out.stderr.startswith("nystrom-kme test: warning: --n-landmarks 100000 exceeds")


def test_a_closed_pipe_ends_quietly(files):
    """'nystrom-kme info f.npz | head -1' used to say "Broken pipe" and exit 2."""
    tmp, A, _ = files
    nk.NystromKME(n_landmarks=5, random_state=0).fit(A).save(tmp / "emb.npz")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    for _ in range(5):
        p = subprocess.run(
            f"'{sys.executable}' -m nystrom_kme info emb.npz | head -c 1",
            shell=True,
            cwd=tmp,
            capture_output=True,
            text=True,
            timeout=120,
            env=env,
        )
        assert p.stderr == "" and len(p.stdout) == 1, p.stderr


@pytest.mark.filterwarnings("always")
def test_a_column_in_thousands_warns_and_standardize_changes_the_decision(tmp_path, capsys):
    """Data files with one column in thousands: 'test' and 'drift fit' name the column in a
    warning (read from the file's first block: no extra pass), and --standardize gives the
    decision of the same test on the standardised columns (the library's, compared here)."""
    rng = np.random.default_rng(0)
    A, B = rng.normal(size=(300, 3)), rng.normal(size=(300, 3))
    B[:, 1] += 0.6  # the difference lives in 'age'
    A[:, 0] *= 1000
    B[:, 0] *= 1000
    for name, rows in (("a.csv", A), ("b.csv", B)):
        np.savetxt(tmp_path / name, rows, delimiter=",", header="income,age,height", comments="")
    a, b = str(tmp_path / "a.csv"), str(tmp_path / "b.csv")
    assert main(["test", a, b, "--seed", "0", "--json"]) == 0
    captured = capsys.readouterr()
    assert "'income' carries" in captured.err and "--standardize standard" in captured.err
    assert main(["test", a, b, "--seed", "0", "--standardize", "standard", "--json"]) == 1
    scaled = json.loads(capsys.readouterr().out)
    library = nk.two_sample_test(A, B, standardize=True, random_state=0)
    assert scaled["pvalue"] == pytest.approx(library.pvalue)
    assert main(["drift", "fit", a, "-o", str(tmp_path / "det.npz"), "--n-holdout", "150"]) == 0
    assert "'income' carries" in capsys.readouterr().err
    assert main(["fit", a, "-o", str(tmp_path / "kme.npz"), "--standardize", "standard", "--seed", "0"]) == 0
    kme = nk.load(tmp_path / "kme.npz")
    direct = nk.NystromKME(standardize=True, random_state=0).fit(A)
    np.testing.assert_allclose(kme(A[:20]), direct(A[:20]), rtol=1e-12)  # eval applies the saved scaling
    assert main(["drift", "fit", a, "-o", str(tmp_path / "s.npz"), "--standardize", "robust"]) == 0
    assert nk.load(tmp_path / "s.npz").scaling_.kind == "robust"
    assert (
        main(
            [
                "drift",
                "fit",
                a,
                "-o",
                str(tmp_path / "o.npz"),
                "--online",
                "--ert",
                "100",
                "--window",
                "10",
                "--standardize",
                "standard",
            ]
        )
        == 0  # issue 43: the online detector takes --standardize too
    )
    online = nk.load(tmp_path / "o.npz")
    assert online.scaling_.kind == "standard" and online.get_params()["standardize"] == "standard"


# --------------------------------------------------------------------------- #
# the command line asks the library (issue 41)
# --------------------------------------------------------------------------- #
def test_test_help_describes_the_rules_in_the_librarys_words(capsys):
    """`test --help` reads each rule's Rule.description and the library's numbers (the
    default m's range, the exact method's limit) rather than restating them."""
    from nystrom_kme.two_sample import DEFAULT_LANDMARKS, EXACT_ROWS
    from nystrom_kme.two_sample.rules import RULES

    with pytest.raises(SystemExit):
        main(["test", "--help"])
    text = " ".join(capsys.readouterr().out.split()).replace("- ", "-")  # argparse wraps after hyphens
    for name, rule in RULES.items():
        assert f"'{name}': {rule.description}" in text, name
    assert DEFAULT_LANDMARKS.describe("the N pooled rows") in text and f"exact up to {EXACT_ROWS}" in text


def test_drift_fit_takes_the_statistic_the_landmark_plan_and_standardize_online(files):
    """`drift fit` passes --statistic, --n-landmarks auto and --sampler to the detector
    (the options not given keep the detector's own defaults); --online takes
    --standardize and refuses --statistic, saying why."""
    tmp, A, _ = files
    common = ["--n-holdout", "300", "--seed", "1"]
    ok_json(
        "drift", "fit", "A.npy", "-o", "s.npz", "--statistic", "nystrom-mmd", "--n-landmarks", "auto", *common, cwd=tmp
    )
    det = nk.load(tmp / "s.npz")
    direct = nk.DriftDetector(A, n_landmarks="auto", n_holdout=300, random_state=1)
    assert det.get_params()["statistic"] == "nystrom-mmd" and det.get_params()["n_landmarks"] == "auto"
    np.testing.assert_array_equal(det.reference_.landmarks, direct.reference_.landmarks)
    ok_json("drift", "fit", "A.npy", "-o", "r.npz", "--sampler", "rpcholesky", "--n-landmarks", "30", *common, cwd=tmp)
    assert nk.load(tmp / "r.npz").get_params()["sampler"] == "rpcholesky"
    online = ["drift", "fit", "A.npy", "-o", "o.npz", "--online", "--ert", "100", "--window", "10"]
    out = run(*online, "--statistic", "nystrom-mmd", cwd=tmp)
    assert out.returncode == 2 and "an online detector has one statistic" in out.stderr, out.stderr
    ok_json(*online, "--standardize", "robust", cwd=tmp)
    assert nk.load(tmp / "o.npz").scaling_.kind == "robust"


def test_drift_test_reports_every_good_batch_when_one_file_is_bad(tmp_path, capsys):
    """A bad file among several is named in its row and the others are still tested and
    printed (issue 43: nothing of the good batches was printed); the exit status is 2."""
    from nystrom_kme.cli import main

    rng = np.random.default_rng(3)
    np.save(tmp_path / "ref.npy", rng.normal(size=(6000, 2)))  # 3000 held out calibrate batches of 100
    np.save(tmp_path / "good.npy", rng.normal(size=(100, 2)))
    np.save(tmp_path / "shifted.npy", rng.normal(size=(100, 2)) + 1.0)
    np.save(tmp_path / "wide.npy", rng.normal(size=(100, 3)))  # one column too many
    det = str(tmp_path / "det.npz")
    assert main(["drift", "fit", str(tmp_path / "ref.npy"), "-o", det, "--n-holdout", "3000", "--seed", "0"]) == 0
    capsys.readouterr()
    batches = [str(tmp_path / f) for f in ("good.npy", "wide.npy", "shifted.npy", "missing.npy")]
    assert main(["drift", "test", det, *batches, "--json"]) == 2
    out = capsys.readouterr()
    record = json.loads(out.out)
    by_name = {os.path.basename(r["batch"]): r for r in record["batches"]}
    assert by_name["good.npy"]["drift"] is False and by_name["shifted.npy"]["drift"] is True
    assert "3 columns" in by_name["wide.npy"]["error"] and "missing.npy" in by_name["missing.npy"]["error"]
    assert record["errors"] == 2 and "2 of 4 batches" in out.err
    assert main(["drift", "test", det, *batches]) == 2  # the text table too
    text = capsys.readouterr().out
    assert "good.npy" in text and "DRIFT" in text and text.count("ERROR:") == 2


def test_compress_standardize_and_info_show_the_scaling(tmp_path, capsys):
    """`compress --standardize` saves the scaling and `info` shows it, as for a detector
    (issue 43 items 6 and 8)."""
    from nystrom_kme.cli import main

    rng = np.random.default_rng(5)
    X = rng.normal(size=(800, 2)) * [1.0, 500.0]
    np.save(tmp_path / "X.npy", X)
    out = str(tmp_path / "c.npz")
    assert (
        main(["compress", str(tmp_path / "X.npy"), "-m", "8", "-o", out, "--standardize", "robust", "--seed", "1"]) == 0
    )
    capsys.readouterr()
    assert main(["info", out, "--json"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["standardize"] == "robust" and len(record["scaling_scale"]) == 2
    det = str(tmp_path / "d.npz")
    assert (
        main(["drift", "fit", str(tmp_path / "X.npy"), "-o", det, "--standardize", "standard", "--n-holdout", "300"])
        == 0
    )
    capsys.readouterr()
    assert main(["info", det]) == 0
    assert "standardize" in capsys.readouterr().out
