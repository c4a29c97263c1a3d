"""Writes ``saved/sequential_drift.npz`` (a SequentialDriftTest, issue 45) and its entry in
``saved/expected.json``: what the writing code computed with it (its state, and the log
wealth after 200 more rows). Run once, when the format was fixed:

    python tests/data/make_sequential_file.py

The other entries of expected.json are left as they are (byte for byte); a second run
refuses to overwrite the file (a failing test means a changed format or result, not a
file to regenerate).
"""

from __future__ import annotations

import json
import pathlib

import numpy as np

import nystrom_kme as nk

SAVED = pathlib.Path(__file__).parent / "saved"
NAME = "sequential_drift.npz"


def rows(seed: int, n: int) -> np.ndarray:
    """N(0, I_3) rows scaled per column (1, 10, 100), from a fixed generator."""
    return np.random.default_rng(seed).normal(size=(n, 3)) * [1.0, 10.0, 100.0]


def main() -> None:
    import pandas as pd

    path = SAVED / NAME
    if path.exists():
        raise SystemExit(f"{path} exists: saved files are not regenerated (see README.md)")
    names = ["age", "income", "score"]
    test = nk.SequentialDriftTest(
        pd.DataFrame(rows(45, 3000), columns=names),
        standardize=True,
        n_landmarks=40,
        n_holdout=200,
        random_state=45,
        n_threads=1,
    )
    stream = rows(46, 300)
    stream[150:, 2] += 100.0  # a standard deviation in "score" from the 151st row
    test.update(pd.DataFrame(stream, columns=names))
    test.save(path)
    record = {
        "repr": repr(test),
        "simd_level": nk.simd_level(),
        "t": test.t_,
        "log_wealth": test.log_wealth_,
        "rejection_time": test.rejection_time_,
        "paired_left": test.n_paired_left_,
        "kernels": [repr(k) for k in test.kernels_],
        "after_200_rows": [float(v) for v in test.update(rows(47, 200) + [0.0, 0.0, 100.0]).log_wealth],
    }
    expected_path = SAVED / "expected.json"
    text = expected_path.read_text()
    head, tail = text.rsplit(',\n "_about"', 1)  # the new entry before "_about", the rest unchanged
    expected_path.write_text(
        head + f",\n {json.dumps(NAME)}: {json.dumps(record, allow_nan=False)}" + ',\n "_about"' + tail
    )


if __name__ == "__main__":
    main()
