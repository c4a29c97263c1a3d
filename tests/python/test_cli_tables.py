"""The command line on tables as people have them: headers (detected, forced, pandas'
numbered one), column names saved with what is fitted and checked against later files,
and ``drift watch`` reading a stream with a header line and ``--columns``."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

import nystrom_kme as nk

NAMES = ["age", "income", "score"]


def run(*args, cwd, stdin=None):
    """`python -m nystrom_kme ARGS` in cwd (standard input from ``stdin``)."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    return subprocess.run(
        [sys.executable, "-m", "nystrom_kme", *map(str, args)],
        cwd=cwd,
        env=env,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=300,
    )


def write_csv(path, X, names=None):
    np.savetxt(path, X, delimiter=",", fmt="%.17g", header="" if names is None else ",".join(names), comments="")


@pytest.fixture(scope="module")
def tables(tmp_path_factory):
    """A reference, a stream that drifts in 'age' from its 201st row, the stream with
    its columns swapped, and the stream without a header."""
    d = tmp_path_factory.mktemp("tables")
    rng = np.random.default_rng(37)
    X = rng.normal(size=(3000, 3))
    Y = rng.normal(size=(400, 3))
    Y[200:, 0] += 3.0
    write_csv(d / "ref.csv", X, NAMES)
    write_csv(d / "stream.csv", Y, NAMES)
    write_csv(d / "swapped.csv", Y[:, [1, 0, 2]], ["income", "age", "score"])
    np.savetxt(d / "plain.csv", Y, delimiter=",", fmt="%.17g")
    out = run("drift", "fit", "ref.csv", "--online", "--ert", 500, "--window-size", 50, "-o", "online.npz", cwd=d)
    assert out.returncode == 0, out.stderr
    return d, X, Y


def test_drift_watch_reads_a_header_line_and_finds_the_drift(tables):
    d, _, Y = tables
    with_header = run("drift", "watch", "online.npz", cwd=d, stdin=(d / "stream.csv").read_text())
    without = run("drift", "watch", "online.npz", cwd=d, stdin=(d / "plain.csv").read_text())
    assert with_header.returncode == without.returncode == 1, (with_header.stderr, without.stderr)
    assert with_header.stderr == ""  # no "could not convert string 'age'"
    # the same rows give the same alarm; lines count from 1, the header being line 1
    t = int(with_header.stdout.split("(t = ")[1].split(",")[0])
    assert with_header.stdout.startswith(f"line {t + 1}: drift (t = {t},")
    assert without.stdout.startswith(f"line {t}: drift (t = {t},")
    assert 200 < t <= 300  # after the drift at row 201, within two windows of it
    # the alarm is the library's: OnlineDriftDetector.update on the same rows
    det = nk.load(d / "online.npz")
    res = det.update(Y)
    assert int(res.drift_time) == t


def test_drift_watch_columns_select_and_reorder_by_name(tables):
    d, _, _ = tables
    stream = run("drift", "watch", "online.npz", cwd=d, stdin=(d / "stream.csv").read_text())
    swapped = (d / "swapped.csv").read_text()
    reordered = run("drift", "watch", "online.npz", "--columns", "age,income,score", cwd=d, stdin=swapped)
    assert reordered.returncode == 1 and reordered.stdout == stream.stdout, reordered.stderr
    by_index = run("drift", "watch", "online.npz", "--columns", "1,0,2", cwd=d, stdin=swapped)
    assert by_index.stdout == stream.stdout
    wrong = run("drift", "watch", "online.npz", "--columns", "agee,income,score", cwd=d, stdin=swapped)
    assert wrong.returncode == 2
    assert wrong.stderr.strip() == (
        "nystrom-kme drift watch: error: stdin: no column 'agee' (did you mean 'age'?); columns: income, age, score"
    )
    narrow = run("drift", "watch", "online.npz", "--columns", "age,score", cwd=d, stdin=swapped)
    # the detector kept the reference's header: the missing column is named
    assert narrow.returncode == 2 and "missing: - income" in narrow.stderr, narrow.stderr
    text = run("drift", "watch", "online.npz", cwd=d, stdin="age,income,score\n1,2,x\n")
    assert text.returncode == 2 and "stdin: line 2, column index 2: 'x' is not a number" in text.stderr


def test_a_numbered_header_is_reported_and_not_read_as_a_row(tables):
    """pandas' DataFrame(X).to_csv(index=False) writes 0,1,2: one warning line, n = 400."""
    d, _, Y = tables
    (d / "today.csv").write_text("0,1,2\n" + (d / "plain.csv").read_text())
    out = run("fit", "today.csv", "-o", "today.npz", "--n-landmarks", 20, cwd=d)
    assert out.returncode == 0, out.stderr
    assert "n = 400 rows" in out.stdout  # not 401
    assert out.stderr.startswith("nystrom-kme fit: warning: today.csv: line 1 (0,1,2) is read as a header")
    forced = run("fit", "today.csv", "-o", "today_data.npz", "--n-landmarks", 20, "--no-header", cwd=d)
    assert forced.returncode == 0 and "n = 401 rows" in forced.stdout and forced.stderr == ""
    streamed = run("drift", "watch", "online.npz", cwd=d, stdin=(d / "today.csv").read_text())
    assert streamed.returncode == 1
    assert "stdin: line 1 (0,1,2) is read as a header" in streamed.stderr
    # the same alarm on the same line as with a named header
    assert streamed.stdout == run("drift", "watch", "online.npz", cwd=d, stdin=(d / "stream.csv").read_text()).stdout


def test_names_are_saved_by_fit_and_checked_by_eval(tables):
    d, X, Y = tables
    out = run("fit", "ref.csv", "-o", "emb.npz", "--n-landmarks", 50, cwd=d)
    assert out.returncode == 0, out.stderr
    emb = nk.load(d / "emb.npz")
    assert emb.feature_names_in_.tolist() == NAMES
    refused = run("eval", "emb.npz", "swapped.csv", cwd=d)
    assert refused.returncode == 2 and refused.stdout == ""
    message = refused.stderr.strip()
    assert message.startswith("nystrom-kme eval: error: The feature names should match those that were passed")
    assert "swapped.csv has columns ['income', 'age', 'score'] but NystromKME was fitted with " in message
    assert "(column index 0 is 'income', not 'age')" in message and "\n" not in message
    reordered = run("eval", "emb.npz", "swapped.csv", "--columns", "age,income,score", cwd=d)
    plain = run("eval", "emb.npz", "plain.csv", cwd=d)  # no names: by position
    assert reordered.returncode == plain.returncode == 0
    assert reordered.stdout == plain.stdout
    np.testing.assert_allclose(np.array(plain.stdout.split(), dtype=float), emb(Y), rtol=1e-12)


def test_progress_bars_count_rows_in_rows_pass_by_pass(tables):
    """A fit reads a CSV several times (count, draws, sums): the bar counts each pass's
    rows out of the file's rows, not values (rows x columns) nor rows x passes."""
    d, X, _ = tables
    out = run("fit", "ref.csv", "-o", "bar.npz", "--n-landmarks", 20, "--progress", cwd=d)
    assert out.returncode == 0, out.stderr
    states = [s.strip() for s in out.stderr.replace("\r", "\n").splitlines() if s.strip()]
    assert states and all(s.startswith("reading ref.csv") and " rows" in s for s in states), states
    assert not any(" it" in s or "it/s" in s for s in states)
    assert any("pass 2" in s and "/3.00k" in s for s in states)  # the total is the file's rows
    quiet = run("fit", "ref.csv", "-o", "quiet.npz", "--n-landmarks", 20, cwd=d)  # stderr not a terminal
    assert quiet.returncode == 0 and quiet.stderr == ""


def test_suggest_m_leads_with_the_m_to_use(tables):
    """By default (and with --certify) the first line is the m the library's search
    certifies on the same rows and seed (the one to use), the theorems' m after it; with
    --bound-only the corollary's, called a worst case (issue 43)."""
    d, X, _ = tables
    out = run("suggest-m", "ref.csv", "--certify", cwd=d)
    assert out.returncode == 0, out.stderr
    search = nk.NystromKME("gaussian", n_landmarks="auto", random_state=0).fit(X).n_landmarks_report_
    suggestion = nk.bounds.suggest_n_landmarks(X, "gaussian", random_state=0)
    assert search.certified and search.n_landmarks < suggestion.n_landmarks  # the two disagree here
    first, second = out.stdout.splitlines()[:2]
    assert first.startswith(f"Use m = {search.n_landmarks}: the smallest m the search certifies on the data")
    assert second.startswith(f"Corollary 4.1 asks for m = {suggestion.n_landmarks}, the paper's default is ")
    rec = json.loads(run("suggest-m", "ref.csv", "--certify", "--json", cwd=d).stdout)
    assert (rec["recommended"], rec["recommended_by"]) == (search.n_landmarks, "certificate")
    plain = run("suggest-m", "ref.csv", cwd=d)
    assert plain.stdout.splitlines()[:2] == [first, second]
    bound = run("suggest-m", "ref.csv", "--bound-only", cwd=d)
    assert bound.stdout.startswith(f"m = {suggestion.n_landmarks} is the size Corollary 4.1 finds sufficient")
    assert "worst-case size" in bound.stdout.splitlines()[0] + bound.stdout.splitlines()[1]


def test_compress_reports_an_estimated_mmd_above_the_exact_limit(tmp_path):
    """Above 20,000 rows: an estimate with its interval (was "not computed"), the
    library's on the same rows and seed."""
    X = np.random.default_rng(5).normal(size=(25_000, 3))
    write_csv(tmp_path / "big.csv", X, NAMES)
    out = run("compress", "big.csv", "-m", 16, "-o", "small.npz", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    line = next(s for s in out.stdout.splitlines() if "MMD to the data" in s)
    assert "(estimated from 2000 rows, above 20000: 95% interval [" in line
    rec = json.loads(run("compress", "big.csv", "-m", 16, "-o", "again.npz", "--json", cwd=tmp_path).stdout)
    res = nk.compress(X, 16, random_state=0)
    assert rec["mmd_kind"] == res.mmd_kind == "estimate"
    assert rec["mmd"] == pytest.approx(res.mmd, rel=1e-9)
    assert rec["mmd_interval"] == pytest.approx(list(res.mmd_interval), rel=1e-9)
    assert nk.load(tmp_path / "small.npz").mmd_interval == pytest.approx(res.mmd_interval, rel=1e-9)


def test_the_docs_render_the_epilogue_once_as_valid_markup(capsys):
    """docs/cli.rst renders docs_parser(): every command's --help keeps its terminal
    epilogue, the documentation shows it once, as a literal block that docutils parses
    without a message (the nine copies read as reST gave 36 docutils errors)."""
    core = pytest.importorskip("docutils.core")
    from nystrom_kme.cli.parser import EPILOG, build_parser, docs_parser

    last = EPILOG.splitlines()[-1]
    for parser in (build_parser(), docs_parser()):
        with pytest.raises(SystemExit):
            parser.parse_args(["fit", "--help"])
        shown = capsys.readouterr().out
        assert shown.rstrip().endswith(last) == (parser.epilog == EPILOG)  # the terminal's, not the docs'
    docs = docs_parser()
    tree = core.publish_doctree(docs.epilog, settings_overrides={"report_level": 5, "halt_level": 2})
    assert tree.astext().count("exit status:") == 1 and "literal_block" in tree.pformat()
    with pytest.raises(core.utils.SystemMessage):  # the terminal text as reST: what the page showed
        core.publish_doctree(EPILOG, settings_overrides={"report_level": 5, "halt_level": 2})
