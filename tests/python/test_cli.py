"""The command line (nystrom_kme.cli): the README's main job `nystrom-kme demo` and `--version`."""

from __future__ import annotations

import re
import subprocess
import sys

import numpy as np
import nystrom_kme as nk
from nystrom_kme.cli import main
from nystrom_kme.datasets import GaussianMixture


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


def test_cli_version_prints_the_configuration():
    out = subprocess.run([sys.executable, "-m", "nystrom_kme.cli", "--version"], capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert f"nystrom-kme {nk.__version__}" in out.stdout
    assert f"SIMD level      {nk.simd_level()}" in out.stdout
