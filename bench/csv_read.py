"""CSV reading at 10^6 rows (issue 43, item 6): ``read_data`` on an n x 5 CSV with a
header line (quoted names, one holding the delimiter and one a ``#``) and without one,
all blocks read, median of ``--repeats``; and the same file with a trailing ``# comment``
on every 100th data line (the slower path that removes comments).

    python -m bench.csv_read                  # 10^6 rows, 3 repeats
    python -m bench.csv_read --rows 200000

To compare with another version of the package, run this file with that version first
on ``sys.path`` (e.g. ``git archive`` of a commit, run with ``PYTHONPATH``; the editable
install's import hook is dropped by ``--no-editable``).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--no-editable", action="store_true", help="drop the editable install's import hook")
    args = parser.parse_args()
    if args.no_editable:
        sys.meta_path[:] = [f for f in sys.meta_path if "editable" not in type(f).__module__]
    import numpy as np

    from nystrom_kme.datafiles import read_data

    print("nystrom_kme from", os.path.dirname(sys.modules["nystrom_kme"].__file__ or ""))
    X = np.random.default_rng(0).normal(size=(args.rows, 5))
    with tempfile.TemporaryDirectory() as folder:
        plain = os.path.join(folder, "plain.csv")
        np.savetxt(plain, X, delimiter=",", fmt="%.17g")
        named = os.path.join(folder, "named.csv")
        np.savetxt(named, X, delimiter=",", fmt="%.17g", header="a,b,c,d,e", comments="")
        commented = os.path.join(folder, "commented.csv")
        with open(plain) as f, open(commented, "w") as g:
            g.write("a,b,c,d,e\n")
            for i, line in enumerate(f):
                g.write(line if i % 100 else line.rstrip("\n") + "  # note\n")
        for label, path in [
            ("no header", plain),
            ("header a,b,c,d,e", named),
            ("header, 1% lines commented", commented),
        ]:
            times = []
            for _ in range(args.repeats):
                start = time.perf_counter()
                n = sum(block.shape[0] for _, block in read_data(path).chunks())
                times.append(time.perf_counter() - start)
                assert n == args.rows, n
            print(
                f"| {label} | {args.rows} x 5 | median {statistics.median(times):.3f} s of {args.repeats} "
                f"({', '.join(f'{t:.3f}' for t in times)}) |",
                flush=True,
            )


if __name__ == "__main__":
    main()
