"""nystrom-kme independence: one table with --x-columns/--y-columns or two files, the
library's result (the same p-value), exit statuses, -o and info."""

from __future__ import annotations

import json

import numpy as np
import pytest

import nystrom_kme as nk
from nystrom_kme.cli import main


@pytest.fixture
def table(tmp_path):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(300, 2))
    y = np.sin(2 * x[:, :1]) + 0.3 * rng.normal(size=(300, 1))
    noise = rng.normal(size=(300, 1))
    path = tmp_path / "t.csv"
    np.savetxt(path, np.hstack([x, y, noise]), delimiter=",", header="a,b,target,noise", comments="")
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "y.npy", y)
    return tmp_path, x, y, noise


def test_one_table_and_two_files_give_the_librarys_result(table, capsys):
    tmp, x, y, noise = table
    ref = nk.independence_test(x, y, n_permutations=49, random_state=0)
    argv = ["independence", str(tmp / "t.csv"), "--x-columns", "a,b", "--y-columns", "target", "--json"]
    assert main([*argv, "--permutations", "49"]) == 1  # rejected
    record = json.loads(capsys.readouterr().out)
    assert record["pvalue"] == ref.pvalue and record["reject"] is True
    status = main(["independence", str(tmp / "x.npy"), str(tmp / "y.npy"), "--json", "--permutations", "49"])
    assert status == 1 and json.loads(capsys.readouterr().out)["pvalue"] == ref.pvalue
    status = main(["independence", str(tmp / "t.csv"), "--x-columns", "noise", "--y-columns", "target", "--json"])
    assert status == 0 and not json.loads(capsys.readouterr().out)["reject"]


def test_output_and_info(table, capsys):
    tmp, *_ = table
    out = tmp / "r.json"
    assert main(["independence", str(tmp / "x.npy"), str(tmp / "y.npy"), "-o", str(out), "--permutations", "19"]) == 1
    assert "H0 (independence) rejected" in capsys.readouterr().out
    assert isinstance(nk.load(out), nk.IndependenceTestResult)
    assert main(["info", str(out)]) == 0 and "IndependenceTestResult" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--x-columns", "a"], "needs --x-columns and --y-columns"),
        (["--x-columns", "a,b", "--y-columns", "b"], "share"),
        (["--columns", "a", "--x-columns", "a", "--y-columns", "b"], "--x-columns and --y-columns"),
    ],
)
def test_bad_columns_are_named(table, capsys, argv, message):
    tmp, *_ = table
    assert main(["independence", str(tmp / "t.csv"), *argv]) == 2
    assert message in capsys.readouterr().err
