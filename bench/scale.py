"""Out-of-core scale benchmark: a float64 (n, d) file on disk, fitted in memory, as a
numpy memmap, as HDF5 and zarr datasets, and on a 2-worker dask LocalCluster.

Each fit runs in a fresh subprocess that samples its own RssAnon (private,
anonymous memory: file-backed pages of a memmap are left out, unlike VmRSS)
from /proc/self/status in a thread every 2 ms. Reported: fit time, peak RssAnon
of the process during the fit, and its increase over the process's RssAnon just
before the fit (after imports and opening the file). All fits use the same
landmarks (same seed); the chunked ones must match the in-memory s_sum_ (checked).

    python -m bench.scale --quick          # n = 10^6
    python -m bench.scale                  # n = 10^7, d = 10: 800 MB per copy on disk
    python -m bench.scale --n 3000000 --m 500

Needs h5py, zarr and dask[distributed] (pip install ".[test]").
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import tempfile
import time

import numpy as np

from bench.harness import RssPeak, run_worker

KINDS = ("memory", "memmap", "hdf5", "zarr", "dask")


def write_data(directory: str, n: int, d: int, chunk: int = 500_000) -> None:
    """The same float64 rows as .npy (memmap), HDF5 and zarr, written chunk by chunk."""
    import h5py
    import zarr

    rng = np.random.default_rng(0)
    mm = np.lib.format.open_memmap(os.path.join(directory, "x.npy"), mode="w+", dtype=np.float64, shape=(n, d))
    with h5py.File(os.path.join(directory, "x.h5"), "w") as f:
        h5 = f.create_dataset("X", shape=(n, d), dtype="f8", chunks=(min(n, 65_536), d))
        z = zarr.create_array(
            store=os.path.join(directory, "x.zarr"), shape=(n, d), chunks=(min(n, 262_144), d), dtype="f8"
        )
        for start in range(0, n, chunk):
            stop = min(n, start + chunk)
            block = rng.normal(size=(stop - start, d))
            mm[start:stop] = block
            h5[start:stop] = block
            z[start:stop] = block
    mm.flush()
    del mm


def worker(kind: str, directory: str, m: int) -> None:
    """One fit in this (fresh) process; prints a JSON line."""
    import nystrom_kme as nk

    est = nk.NystromKME(nk.Gaussian(3.0), n_landmarks=m, random_state=0)
    cleanup = None
    if kind == "memory":
        X = np.load(os.path.join(directory, "x.npy"))
    elif kind == "memmap":
        X = np.load(os.path.join(directory, "x.npy"), mmap_mode="r")
    elif kind == "hdf5":
        import h5py

        f = h5py.File(os.path.join(directory, "x.h5"), "r")
        X, cleanup = f["X"], f.close
    elif kind == "zarr":
        import zarr

        X = zarr.open_array(os.path.join(directory, "x.zarr"), mode="r")
    elif kind == "dask":
        import dask.array as da
        from distributed import Client, LocalCluster

        cluster = LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None, silence_logs=50
        )
        client = Client(cluster)
        X = da.from_zarr(os.path.join(directory, "x.zarr"))

        def cleanup() -> None:
            client.close()
            cluster.close()
    else:
        raise ValueError(kind)
    with RssPeak(interval=0.002, field="RssAnon") as rss:
        t0 = time.perf_counter()
        est.fit(X)
        seconds = time.perf_counter() - t0
    np.save(os.path.join(directory, f"s_{kind}.npy"), est.s_sum_)
    if cleanup is not None:
        cleanup()
    print(
        json.dumps(
            {
                "kind": kind,
                "seconds": seconds,
                "peak_rss_anon_mb": rss.peak_mb,
                "rss_anon_before_mb": rss.start_mb,
                "m": est.landmarks_.shape[0],
            }
        )
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=10_000_000)
    parser.add_argument("--quick", action="store_true", help="n = 10^6")
    parser.add_argument("--d", type=int, default=10)
    parser.add_argument("--m", type=int, default=1000, help="landmarks (fixed, not sqrt(n) log sqrt(n))")
    parser.add_argument("--kinds", default=",".join(KINDS))
    parser.add_argument("--dir", default=None, help="where to write the data (default: a temp dir)")
    parser.add_argument("--worker", nargs=2, metavar=("KIND", "DIR"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args.worker[0], args.worker[1], args.m)
        return
    n = 1_000_000 if args.quick else args.n
    directory = os.path.abspath(tempfile.mkdtemp(prefix="nkme_scale_", dir=args.dir))
    try:
        t0 = time.perf_counter()
        write_data(directory, n, args.d)
        print(
            f"n = {n}, d = {args.d}, m = {args.m}: {n * args.d * 8 / 1e6:.0f} MB per copy, "
            f"written in {time.perf_counter() - t0:.1f} s",
            flush=True,
        )
        rows = []
        for kind in args.kinds.split(","):
            rows.append(run_worker("scale", kind, directory, "--m", str(args.m)))
            print(json.dumps(rows[-1]), flush=True)
        ref = np.load(os.path.join(directory, f"s_{rows[0]['kind']}.npy"))
        base = rows[0]["seconds"]
        print(
            f"\n| source | fit time (s) | vs {rows[0]['kind']} | peak RssAnon (MB) | "
            f"increase during fit (MB) | max rel. diff of s_sum_ |"
        )
        print("| --- | --- | --- | --- | --- | --- |")
        for r in rows:
            s = np.load(os.path.join(directory, f"s_{r['kind']}.npy"))
            diff = float(np.max(np.abs(s - ref) / np.abs(ref)))
            print(
                f"| {r['kind']} | {r['seconds']:.2f} | {r['seconds'] / base:.2f}x | "
                f"{r['peak_rss_anon_mb']:.0f} | {r['peak_rss_anon_mb'] - r['rss_anon_before_mb']:.0f} | "
                f"{diff:.1e} |"
            )
        for r in rows:
            if r["kind"] in ("memmap", "hdf5", "zarr"):
                assert r["peak_rss_anon_mb"] < 300, r
    finally:
        shutil.rmtree(directory, ignore_errors=True)


if __name__ == "__main__":
    main()
