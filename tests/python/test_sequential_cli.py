"""``nystrom-kme drift fit --anytime`` and ``drift watch --anytime``: the saved test is the
library's (the same wealth on the same rows), the line of the rejection, ``--save`` to go
on in a later run, names checked, options that do not apply refused by name."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

import nystrom_kme as nk

NAMES = ["age", "income", "score"]


def run(*args, cwd, stdin=None):
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


def csv_text(X, names=NAMES):
    rows = "\n".join(",".join(f"{v:.17g}" for v in row) for row in X)
    return ",".join(names) + "\n" + rows + "\n"


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("anytime")
    rng = np.random.default_rng(45)
    (d / "ref.csv").write_text(csv_text(rng.normal(size=(4000, 3))))
    out = run("drift", "fit", "--anytime", "ref.csv", "--paired", 500, "--seed", 3, "-o", "test.npz", cwd=d)
    assert out.returncode == 0, out.stderr
    calm = rng.normal(size=(300, 3))
    drift = rng.normal(size=(600, 3))
    drift[100:, 0] += 1.0
    return d, calm, drift


def test_watch_finds_the_drift_and_names_its_line(files):
    d, calm, drift = files
    out = run("drift", "watch", "--anytime", "test.npz", "--rows", 7, cwd=d, stdin=csv_text(drift))
    assert out.returncode == 1, out.stderr
    test = nk.load(d / "test.npz")
    res = test.update(drift)  # the library on the same rows: the same rejection
    assert res.reject
    assert out.stdout.startswith(f"line {res.rejection_time + 1}: drift (t = {res.rejection_time}, wealth ")
    assert repr(res.kernel) in out.stdout and out.stdout.count("\n") == 1  # one line, then it stops


def test_watch_saves_the_state_for_the_next_run(files):
    d, calm, drift = files
    out = run("drift", "watch", "--anytime", "test.npz", "--save", "after.npz", cwd=d, stdin=csv_text(calm))
    assert out.returncode == 0, out.stderr
    test = nk.load(d / "test.npz")
    test.update(calm)
    assert out.stdout.startswith(f"no drift: t = 300, wealth {np.exp(test.log_wealth_):.4g} < ")
    later = nk.load(d / "after.npz")  # rows one at a time there: the same wealth to round-off
    assert later.t_ == 300 and later.n_paired_left_ == 200
    assert later.log_wealth_ == pytest.approx(test.log_wealth_, abs=1e-7)
    np.testing.assert_allclose(later.update(drift).log_wealth, test.update(drift).log_wealth, rtol=0, atol=1e-7)


def test_names_and_options_refused_by_name(files):
    d, calm, _ = files
    renamed = run("drift", "watch", "--anytime", "test.npz", cwd=d, stdin=csv_text(calm, ["age", "salary", "score"]))
    assert renamed.returncode == 2 and "salary" in renamed.stderr
    online = run("drift", "watch", "test.npz", cwd=d, stdin=csv_text(calm))
    assert online.returncode == 2 and "watch it with 'nystrom-kme drift watch --anytime'" in online.stderr
    keep = run("drift", "watch", "--anytime", "--keep-going", "test.npz", cwd=d, stdin=csv_text(calm))
    assert keep.returncode == 2 and "--keep-going does not apply to --anytime" in keep.stderr
    both = run("drift", "fit", "--anytime", "--online", "ref.csv", "-o", "x.npz", cwd=d)
    assert both.returncode == 2 and "--online does not apply to --anytime" in both.stderr
    assert not (d / "x.npz").exists()
