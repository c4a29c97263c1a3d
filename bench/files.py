"""Files in (issue 21): the cost of reading what users give the package.

1. CSV parsing: ``read_data`` on an n x 5 CSV, all blocks read (median of repeats):
   the field-count check of every row must not slow parsing down.
2. A zip bomb: an archive like ``save``'s whose ``landmarks`` member holds (and
   declares in its .npy header) ``--bomb-gib`` GiB of zeros, deflated to ~1/1000, while
   the JSON header says (20, 3): ``nk.load``'s traced peak memory and time until its
   FileFormatError.
3. A genuine load: traced peak memory of ``nk.load`` on a saved NystromKME (m x d
   float64 landmarks) over the file's size.

    python -m bench.files                     # 300k-row CSV, 2 GiB bomb, m = 4000, d = 50
    python -m bench.files --bomb-gib 0.25     # quicker

Peak memory is Python's tracemalloc (numpy registers its buffers there).
"""

from __future__ import annotations

import argparse
import io
import json
import os
import statistics
import tempfile
import time
import tracemalloc
import zipfile

import numpy as np

import nystrom_kme as nk
from bench.harness import machine, utc_now
from nystrom_kme.datafiles import read_data


def csv_seconds(folder: str, rows: int, repeats: int) -> float:
    path = os.path.join(folder, "x.csv")
    np.savetxt(path, np.random.default_rng(0).normal(size=(rows, 5)), delimiter=",", fmt="%.17g")
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        n = sum(block.shape[0] for _, block in read_data(path).chunks())
        times.append(time.perf_counter() - start)
        assert n == rows
    return statistics.median(times)


def _npy_header(shape: tuple[int, ...], descr: str) -> bytes:
    buf = io.BytesIO()
    np.lib.format.write_array_header_1_0(buf, {"descr": descr, "fortran_order": False, "shape": shape})
    return buf.getvalue()


def traced(call) -> tuple[float, float, str]:
    """(peak MiB, seconds, outcome) of call() under tracemalloc."""
    tracemalloc.start()
    start = time.perf_counter()
    try:
        call()
        outcome = "loaded"
    except nk.FileFormatError as err:
        outcome = f"FileFormatError: {str(err).split(': ', 1)[1][:90]}"
    finally:
        seconds = time.perf_counter() - start
        peak = tracemalloc.get_traced_memory()[1] / 2**20
        tracemalloc.stop()
    return peak, seconds, outcome


def bomb(folder: str, gib: float) -> tuple[int, tuple[float, float, str]]:
    saved = os.path.join(folder, "k.npz")
    nk.NystromKME(n_landmarks=20, random_state=0).fit(np.random.default_rng(0).normal(size=(600, 3))).save(saved)
    with np.load(saved) as z:
        members = {k: z[k] for k in z.files}
    blob = members.pop("header").tobytes()
    assert json.loads(blob)["arrays"]["landmarks"]["shape"] == [20, 3]
    rows = int(gib * 2**30 / 24)
    path = os.path.join(folder, "bomb.npz")
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("header.npy", _npy_header((len(blob),), "|u1") + blob)
        for key, value in members.items():
            if key != "landmarks":
                buf = io.BytesIO()
                np.save(buf, value)
                z.writestr(f"{key}.npy", buf.getvalue())
        info = zipfile.ZipInfo("landmarks.npy")
        info.compress_type = zipfile.ZIP_DEFLATED
        with z.open(info, "w", force_zip64=True) as f:
            f.write(_npy_header((rows, 3), "<f8"))
            left = rows * 24
            while left > 0:
                f.write(bytes(min(left, 1 << 20)))
                left -= 1 << 20
    return os.path.getsize(path), traced(lambda: nk.load(path))


def genuine(folder: str, m: int, d: int) -> tuple[int, tuple[float, float, str]]:
    X = np.random.default_rng(1).normal(size=(m, d))
    path = os.path.join(folder, "g.npz")
    nk.NystromKME(nk.Gaussian(float(d)), sampler=X, solver="cholesky").fit(X[: m // 2]).save(path)
    return os.path.getsize(path), traced(lambda: nk.load(path))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--csv-rows", type=int, default=300_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--bomb-gib", type=float, default=2.0)
    parser.add_argument("--m", type=int, default=4000)
    parser.add_argument("--d", type=int, default=50)
    args = parser.parse_args()
    print(f"{utc_now()}; {machine()}; nystrom-kme {nk.__version__} from {os.path.dirname(nk.__file__)}")
    with tempfile.TemporaryDirectory() as folder:
        s = csv_seconds(folder, args.csv_rows, args.repeats)
        print(f"| CSV {args.csv_rows} x 5, read_data, all blocks | median {s:.3f} s of {args.repeats} |")
        size, (peak, secs, outcome) = bomb(folder, args.bomb_gib)
        print(
            f"| bomb: {args.bomb_gib:g} GiB member in a {size / 2**20:.1f} MiB file | peak {peak:.1f} MiB, "
            f"{secs:.2f} s | {outcome} |"
        )
        size, (peak, secs, outcome) = genuine(folder, args.m, args.d)
        print(
            f"| saved NystromKME, m = {args.m}, d = {args.d}: {size / 2**20:.1f} MiB file | peak {peak:.1f} MiB "
            f"({peak * 2**20 / size:.2f} x the file), {secs:.2f} s | {outcome} |"
        )
    print(f"end: {machine()}")


if __name__ == "__main__":
    main()
