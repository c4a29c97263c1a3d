"""The command line, ``nystrom-kme`` (or ``python -m nystrom_kme``): argument parsing
and output only. Data files are read by :mod:`nystrom_kme.datafiles`, embeddings
saved and loaded by :mod:`nystrom_kme.persistence`.

Commands: ``fit``, ``eval``, ``compress``, ``mmd``, ``test``, ``suggest-m``, ``info``, ``demo``;
``--version``. Output is human-readable unless ``--json``. Exit status: 0 success
(for ``test``: H0 not rejected), 1 ``test`` rejected H0 and nothing else, 2 any failure
(usage error, bad input, out of memory, an unexpected error: one line on stderr, no
traceback), 130 interrupted. Output files are named by their format's suffix
(``OUTPUTS``), written to a temporary file beside them and renamed when complete, so
a failed command leaves no partial file.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any, NoReturn

import numpy as np

from ._files import atomic_write, non_regular_kind, write_npy_vector
from .bounds import default_n_landmarks, suggest_n_landmarks
from .compression import EXACT_MMD_MAX_ROWS, WEIGHTS, CompressionResult, compress
from .config import show_config
from .datafiles import SUFFIXES, DataFileError, read_data
from .demo import run_demo
from .embedding import EmpiricalKME, KernelMeanEmbedding
from .aggregated import DEFAULT_MAX_BINS, AggregatedTestResult
from .aggregation import AGGREGATIONS
from .kernel_collection import GRIDS, KernelCollection
from .kernels import Kernel, get_kernel, resolve_kernel
from .mmd_estimators import mmd2, mmd2_exact
from .nystrom import NystromKME
from .persistence import FileFormatError, kernel_spec, load, read_header
from .quadrature import QuadratureRule
from .sampling import SAMPLER_NAMES
from .sources import RowSource
from .two_sample import TwoSampleResult, two_sample_test

EXIT_OK, EXIT_REJECTED, EXIT_BAD_INPUT, EXIT_INTERRUPTED = 0, 1, 2, 130

#: What each command writes with -o, by suffix: the suffix names the format.
OUTPUTS = {"fit": (".npz",), "compress": (".npz",), "test": (".json",), "eval": (".npy", ".csv", ".txt")}

EPILOG = f"""\
exit status:
  0    success (for 'test': H0 not rejected)
  1    'test' rejected H0 at level --alpha (the samples differ); nothing else
  2    any failure: usage error, bad input (missing or unreadable file, NaN in
       the data, mismatched columns, invalid option), out of memory: one line
       on stderr
  130  interrupted (Ctrl-C)

data files: {', '.join(SUFFIXES)}
  (.npy memory-mapped; .h5 needs h5py, .zarr zarr, .parquet pyarrow);
  regular files only. --columns picks columns by 0-based index or header
  name; messages count lines from 1 and columns from 0 ("column index 2").
output files (-o): the suffix names the format (fit, compress: .npz; test:
  .json; eval: .npy, .csv or .txt); a file appears only when complete.
Output is human-readable; --json prints one JSON object for scripts."""

#: The kernel names the commands offer (their one table here until kernels.py exports one).
KERNEL_NAMES = ("gaussian", "laplacian", "matern12", "matern32", "matern52", "imq", "linear", "polynomial")


class _Parser(argparse.ArgumentParser):
    """Usage errors as one line on stderr and exit status 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_BAD_INPUT, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


class _BadInput(Exception):
    """A problem with the command's input, reported as one line and exit status 2."""


# --------------------------------------------------------------------------- #
# shared pieces
# --------------------------------------------------------------------------- #
def _bandwidth(text: str) -> float | str:
    if text == "median":
        return text
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive number or 'median', got {text!r}") from None
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"expected a positive number or 'median', got {text!r}")
    return value


def _n_landmarks(text: str) -> int | str:
    if text in ("auto", "bound"):
        return text
    try:
        return _positive_int(text)
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(
            f"expected a positive integer, 'auto' or 'bound', got {text!r}") from None


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def _probability(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not 0.0 < value < 1.0:
        raise argparse.ArgumentTypeError(f"expected a number in (0, 1), got {text!r}")
    return value


def _columns(text: str) -> list[str]:
    cols = [c.strip() for c in text.split(",") if c.strip()]
    if not cols:
        raise argparse.ArgumentTypeError("expected comma-separated column names or indices")
    return cols


def _kernel(name: str, bandwidth: float | str | None) -> Kernel:
    k = get_kernel(name)
    return k if bandwidth is None else k.with_bandwidth(bandwidth)


def _progress(desc: str) -> tuple[Callable[[int], None] | None, Callable[[], None]]:
    """(callback told the rows read, close) of a tqdm bar on stderr, only when stderr is
    a terminal and tqdm is installed; (None, no-op) otherwise."""
    if not sys.stderr.isatty():
        return None, lambda: None
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return None, lambda: None
    bar = tqdm(desc=desc, unit=" rows", unit_scale=True, leave=False, file=sys.stderr)
    return bar.update, bar.close


def _data(args: argparse.Namespace, path: str, on_rows: Callable[[int], None] | None = None) -> RowSource:
    return read_data(path, columns=args.columns, key=args.key, delimiter=args.delimiter, on_rows=on_rows)


def _in_memory(src: RowSource) -> np.ndarray:
    """All rows of a source as one array (for what needs the data in memory)."""
    arr = src.to_array()
    if arr is not None:
        return arr
    return np.concatenate([block for _, block in src.chunks()])


def _check_widths(a: RowSource, a_name: str, b: RowSource, b_name: str) -> None:
    """Both sources read their first block if needed, then compare their widths."""
    for s in (a, b):
        if s.n_features is None:
            s.count_rows()
    if a.n_features != b.n_features:
        raise _BadInput(f"{a_name} has {a.n_features} columns but {b_name} has {b.n_features}")


def _emit(args: argparse.Namespace, record: dict[str, Any], lines: Sequence[str]) -> None:
    if args.json:
        print(json.dumps(record, allow_nan=False, default=_json_scalar))
    else:
        print("\n".join(lines))


def _json_scalar(value: Any) -> Any:
    """numpy scalars (e.g. in a report's parameters) as Python numbers."""
    if isinstance(value, np.generic):
        return value.item()
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")


def _plain(value: Any) -> Any:
    """A report's value as JSON data: dataclasses as objects, arrays as lists, numpy
    scalars as numbers, NaN and infinities as None (strict JSON has none)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, np.ndarray)):
        return [_plain(v) for v in (value.tolist() if isinstance(value, np.ndarray) else value)]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return repr(value)


def _report(report: Any) -> dict[str, Any]:
    """How m was chosen (``n_landmarks_report_``: a LandmarkSearch or LandmarkSuggestion)
    as JSON: its type, one-line summary, explanation and fields."""
    record = {"type": type(report).__name__, "summary": repr(report)}
    if hasattr(report, "explain"):
        record["explanation"] = str(report.explain())
    record.update(_plain(report) if dataclasses.is_dataclass(report) else {})
    return record


def _check_output(command: str, path: str) -> None:
    """The one rule for -o: the suffix names the format, the folder exists, and an
    existing path is a regular file (it is replaced only when the command succeeds)."""
    suffixes = OUTPUTS[command]
    if os.path.splitext(path)[1].lower() not in suffixes:
        names = " or ".join(f"*{s}" for s in suffixes)
        raise _BadInput(f"{path}: the output of '{command}' must be named {names} (the suffix names the format)")
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise _BadInput(f"{path}: no such folder {folder}")
    kind = non_regular_kind(path) if os.path.exists(path) else None
    if kind is not None:
        raise _BadInput(f"{path}: exists and is not a regular file ({kind})")


def _fmt(x: float) -> str:
    return f"{x:.6g}"


# --------------------------------------------------------------------------- #
# commands
# --------------------------------------------------------------------------- #
def cmd_fit(args: argparse.Namespace) -> int:
    kernel = _kernel(args.kernel, args.bandwidth)
    est = NystromKME(kernel, n_landmarks=args.n_landmarks, sampler=args.sampler, random_state=args.seed,
                     n_threads=args.threads)
    update, close = _progress("reading")
    src = _data(args, args.data, update)
    start = time.perf_counter()
    try:
        # policies other than uniform sampling, and m = "bound", look at all rows at once
        data: Any = _in_memory(src) if (args.sampler != "uniform" or args.n_landmarks == "bound") else src
        est.fit(data)
    finally:
        close()
    seconds = time.perf_counter() - start
    est.save(args.output)
    record = {"output": args.output, "data": args.data, "n_samples": est.n_samples_,
              "n_features": est.n_features_in_, "n_landmarks": int(est.landmarks_.shape[0]),
              "kernel": kernel_spec(est.kernel_), "sampler": args.sampler, "solver": est.solver_,
              "rank": est.rank_, "seconds": seconds}
    lines = [
        f"Nystrom KME of {args.data}: n = {est.n_samples_} rows, d = {est.n_features_in_} columns",
        f"  kernel     {est.kernel_!r}",
        f"  landmarks  m = {est.landmarks_.shape[0]} (sampler {args.sampler}, solver {est.solver_}, "
        f"rank {est.rank_})"]
    report = est.n_landmarks_report_  # how --n-landmarks auto or bound chose m
    if report is not None:
        record["n_landmarks_report"] = _report(report)
        text = record["n_landmarks_report"].get("explanation", record["n_landmarks_report"]["summary"])
        lines += [f"  choice of m  {report!r}"] + [f"    {line}" for line in text.splitlines()]
    _emit(args, record, lines + [f"  time       {seconds:.3f} s", f"saved to {args.output}"])
    return EXIT_OK


def cmd_compress(args: argparse.Namespace) -> int:
    kernel = _kernel(args.kernel, args.bandwidth)
    X = _in_memory(_data(args, args.data))
    start = time.perf_counter()
    try:
        res = compress(X, args.n_points, kernel=kernel, sampler=args.sampler, weights=args.weights,
                       ridge=args.ridge, random_state=args.seed, n_threads=args.threads,
                       compute_mmd=False if args.no_mmd else "auto")
    except ImportError as err:
        raise _BadInput(str(err)) from None
    seconds = time.perf_counter() - start
    res.save(args.output)
    w = res.weights
    record = {"output": args.output, "data": args.data, "n_samples": int(X.shape[0]),
              "n_features": int(X.shape[1]), "n_points": res.n_points, "kernel": kernel_spec(res.kernel),
              "sampler": args.sampler, "weights": args.weights, "ridge": res.ridge, "mmd": res.mmd,
              "min_weight": float(w.min()), "max_weight": float(w.max()), "weight_sum": float(w.sum()),
              "seconds": seconds}
    mmd = (_fmt(res.mmd) if res.mmd is not None else "not computed (--no-mmd)" if args.no_mmd
           else f"not computed (exact only up to {EXACT_MMD_MAX_ROWS} rows; --no-mmd skips it)")
    _emit(args, record, [
        f"compressed {args.data}: n = {X.shape[0]} rows, d = {X.shape[1]} columns -> m = {res.n_points} points",
        f"  kernel     {res.kernel!r}",
        f"  method     {res.method}" + (f", ridge {res.ridge:g}" if res.ridge else ""),
        f"  weights    in [{_fmt(w.min())}, {_fmt(w.max())}], sum {_fmt(w.sum())}, "
        f"{int(np.count_nonzero(w))} nonzero",
        f"  MMD to the data  {mmd}",
        f"  time       {seconds:.3f} s",
        f"saved to {args.output} (points, weights, indices, mmd)"])
    return EXIT_OK


def _load_embedding(path: str) -> KernelMeanEmbedding:
    obj = load(path)
    if not isinstance(obj, KernelMeanEmbedding):
        raise _BadInput(f"{path}: holds a {type(obj).__name__}, not an embedding")
    return obj


def cmd_eval(args: argparse.Namespace) -> int:
    kme = _load_embedding(args.embedding)
    update, close = _progress("evaluating")
    written: list[int] = []
    try:  # mu(y) block by block as the points are read; a file appears only when complete
        blocks = (values for _, values in kme.evaluate_chunks(_data(args, args.points, update)))
        if args.output and os.path.splitext(args.output)[1].lower() == ".npy":
            atomic_write(args.output, lambda f: written.append(write_npy_vector(f, blocks)))
        elif args.output:
            atomic_write(args.output, lambda f: written.append(
                _write_lines(blocks, lambda text: f.write(text.encode("ascii")))))
        elif args.json:
            values = np.concatenate(list(blocks))
            written.append(values.size)
        else:
            written.append(_write_lines(blocks, sys.stdout.write))
    finally:
        close()
    if args.json:
        record: dict[str, Any] = {"embedding": args.embedding, "points": args.points, "n_points": written[0]}
        if args.output:
            record["output"] = args.output
        else:
            record["values"] = values.tolist()
        print(json.dumps(record, allow_nan=False))
    elif args.output:
        print(f"{written[0]} values of the embedding {args.embedding} written to {args.output}")
    return EXIT_OK


def _write_lines(blocks: Iterator[np.ndarray], write: Callable[[str], Any]) -> int:
    """Each value exactly (round-trip repr) on a line of its own, block by block; their number."""
    n = 0
    for values in blocks:
        write("".join(f"{x!r}\n" for x in values.tolist()))
        n += values.size
    return n


def _two_sources(args: argparse.Namespace, on_rows: Callable[[int], None] | None = None
                 ) -> tuple[RowSource, RowSource]:
    a, b = _data(args, args.a, on_rows), _data(args, args.b, on_rows)
    _check_widths(a, args.a, b, args.b)
    return a, b


def cmd_mmd(args: argparse.Namespace) -> int:
    update, close = _progress("reading")
    try:
        return _mmd(args, *_two_sources(args, update))
    finally:
        close()


def _pooled_kernel(args: argparse.Namespace, a: RowSource, b: RowSource, rng: np.random.Generator) -> Kernel:
    """The kernel of 'test': the bandwidth given, or the median heuristic on rows of both
    samples (resolve_kernel) drawn first from a generator seeded with --seed, the rule
    of the MMDs (mmd2, mmd2_exact with random_state=--seed), so that 'mmd' and 'test'
    get the same bandwidth on the same files."""
    return resolve_kernel(_kernel(args.kernel, args.bandwidth), [a, b], rng)


def _mmd(args: argparse.Namespace, a: RowSource, b: RowSource) -> int:
    n1, n2 = a.count_rows(), b.count_rows()
    kernel = _kernel(args.kernel, args.bandwidth)  # the median, if asked, on both samples (--seed)
    start = time.perf_counter()
    if args.exact:
        if args.n_landmarks is not None:
            raise _BadInput("--n-landmarks applies to the Nystrom MMD only, not with --exact")
        est = mmd2_exact(a, b, kernel=kernel, unbiased=args.unbiased, random_state=args.seed,
                         n_threads=args.threads, return_info=True)
        method = "exact U-statistic" if args.unbiased else "exact V-statistic"
    else:
        if args.unbiased:
            raise _BadInput("--unbiased applies to --exact only")
        est = mmd2(a, b, kernel=kernel, n_landmarks=args.n_landmarks, random_state=args.seed,
                   n_threads=args.threads, return_info=True)
        method = "Nystrom"
    seconds = time.perf_counter() - start
    value, ms = est.mmd2, None if est.n_landmarks is None else list(est.n_landmarks)
    record = {"mmd2": value, "mmd": est.mmd, "method": "exact" if args.exact else "nystrom",
              "unbiased": bool(args.unbiased), "n_landmarks": ms, "n_x": n1, "n_y": n2,
              "kernel": kernel_spec(est.kernel), "seconds": seconds}
    _emit(args, record, [
        f"MMD between {args.a} (n = {n1}) and {args.b} (n = {n2})",
        f"  method   {method}" + ("" if ms is None else f", m = {ms[0]} and {ms[1]} landmarks"),
        f"  kernel   {est.kernel!r}",
        f"  MMD^2    {value!r}",
        f"  MMD      {est.mmd!r}",
        f"  time     {seconds:.3f} s"])
    return EXIT_OK


def cmd_test(args: argparse.Namespace) -> int:
    a, b = _two_sources(args)  # two_sample_test shows its own progress bar
    if args.aggregate is not None:
        return _aggregated_test(args, a, b)
    for flag, value in (("--bandwidths", args.bandwidths), ("--grid", args.grid), ("--max-bins", args.max_bins)):
        if value is not None:
            raise _BadInput(f"{flag} applies to the aggregated test (--aggregate) only")
    # the bandwidth of 'mmd' on the same files (two_sample_test would draw its rows after
    # the splits' seed); the splits and landmarks then come from --seed as before
    kernel = _pooled_kernel(args, a, b, np.random.default_rng(args.seed))
    start = time.perf_counter()
    res = two_sample_test(a, b, kernel=kernel,
                          method="exact" if args.exact else "nystrom", n_landmarks=args.n_landmarks,
                          n_permutations=args.permutations, random_state=args.seed, progress=None,
                          n_threads=args.threads)
    seconds = time.perf_counter() - start
    reject = res.pvalue <= args.alpha
    if args.output:
        res.save(args.output)
    record = {"statistic": res.statistic, "pvalue": res.pvalue, "alpha": args.alpha, "reject": reject,
              "method": res.method, "n_landmarks": res.n_landmarks, "n_permutations": res.n_permutations,
              "n_x": a.count_rows(), "n_y": b.count_rows(), "kernel": kernel_spec(res.kernel),
              "seconds": seconds}
    m = "" if res.n_landmarks is None else f", m = {res.n_landmarks}"
    _emit(args, record, [
        f"Two-sample permutation test ({res.method}{m}, {res.n_permutations} permutations)",
        f"  samples     {args.a} (n = {record['n_x']}), {args.b} (n = {record['n_y']})",
        f"  kernel      {res.kernel!r}",
        f"  statistic   {res.statistic!r} (squared MMD)",
        f"  p-value     {res.pvalue!r}",
        f"  decision    {'reject' if reject else 'do not reject'} H0 (same distribution) at "
        f"alpha = {args.alpha:g}",
        f"  time        {seconds:.3f} s"] + ([f"saved to {args.output}"] if args.output else []))
    return EXIT_REJECTED if reject else EXIT_OK


def _aggregated_record(res: AggregatedTestResult) -> dict[str, Any]:
    """The fields of an aggregated result that 'test' and 'info' print as JSON."""
    return {"statistic": res.statistic, "pvalue": res.pvalue, "method": res.method,
            "aggregation": res.aggregation, "n_landmarks": res.n_landmarks,
            "n_permutations": res.n_permutations, "bin_size": res.bin_size,
            "kernels": [kernel_spec(k) for k in res.kernels],
            "kernel_statistics": res.kernel_statistics.tolist(), "kernel_pvalues": res.kernel_pvalues.tolist(),
            "dominant": res.dominant}


def _aggregated_lines(res: AggregatedTestResult, alpha: float) -> list[str]:
    """The explanation, then the kernels by marginal p-value (at most 5)."""
    order = np.lexsort((-res.kernel_scores, res.kernel_pvalues))[:5]
    return res.explain(alpha).splitlines() + ["  kernel                          bandwidth     marginal p    MMD^2"] + [
        f"  {res.kernels[i].family:<30s}  {float(res.kernels[i].bandwidth):<12.4g}  "
        f"{res.kernel_pvalues[i]:<12.4g}  {res.kernel_statistics[i]:.4g}" for i in order]


def _aggregated_test(args: argparse.Namespace, a: RowSource, b: RowSource) -> int:
    if args.bandwidth is not None:
        raise _BadInput("--bandwidth fixes one kernel; the aggregated test (--aggregate) sets "
                        "--bandwidths of each --kernels family from the data")
    families = [name.strip() for name in args.kernels.split(",") if name.strip()]
    unknown = [name for name in families if name not in KERNEL_NAMES]
    if unknown:
        raise _BadInput(f"--kernels: unknown kernel {unknown[0]!r}; radial kernels: "
                        f"{', '.join(n for n in KERNEL_NAMES if get_kernel(n).radial)}")
    collection = KernelCollection(families, n_bandwidths=args.bandwidths or 10, grid=args.grid or "fuse")
    start = time.perf_counter()
    res = two_sample_test(a, b, kernel=collection, aggregation=args.aggregate,
                          method="exact" if args.exact else "nystrom", n_landmarks=args.n_landmarks,
                          n_permutations=args.permutations,
                          max_bins=DEFAULT_MAX_BINS if args.max_bins is None else args.max_bins,
                          random_state=args.seed, progress=None, n_threads=args.threads)
    seconds = time.perf_counter() - start
    reject = res.pvalue <= args.alpha
    if args.output:
        res.save(args.output)
    record = {**_aggregated_record(res), "alpha": args.alpha, "reject": reject, "n_x": a.count_rows(),
              "n_y": b.count_rows(), "explanation": res.explain(args.alpha), "seconds": seconds}
    _emit(args, record, [f"Aggregated two-sample test of {args.a} (n = {record['n_x']}) and {args.b} "
                         f"(n = {record['n_y']})"] + _aggregated_lines(res, args.alpha) +
          [f"  time        {seconds:.3f} s"] + ([f"saved to {args.output}"] if args.output else []))
    return EXIT_REJECTED if reject else EXIT_OK


def cmd_suggest_m(args: argparse.Namespace) -> int:
    X = _in_memory(_data(args, args.data))
    rep = suggest_n_landmarks(X, _kernel(args.kernel, args.bandwidth), delta=args.delta,
                              target_error=args.target_error, max_landmarks=args.max_landmarks,
                              random_state=args.seed, n_threads=args.threads)
    record = {"n_landmarks": rep.n_landmarks, "n_samples": rep.n_samples, "decay": rep.decay,
              "params": rep.params, "bound": rep.bound, "bound_valid": rep.bound_valid,
              "min_landmarks": rep.min_landmarks, "delta": rep.delta, "target_error": rep.target_error,
              "reason": rep.reason, "paper_default": default_n_landmarks(rep.n_samples),
              "explanation": rep.explain()}
    _emit(args, record, [rep.explain(),
                         f"(The paper's default ceil(sqrt(n) log sqrt(n)) is {record['paper_default']}.)"])
    return EXIT_OK


def cmd_info(args: argparse.Namespace) -> int:
    header = read_header(args.file)
    obj = load(args.file)
    version = (f"{header['object']} (file format {header['format_version']}, written by nystrom-kme "
               f"{header.get('package_version', '?')})")
    record: dict[str, Any] = {"file": args.file, "object": header["object"],
                              "format_version": header["format_version"],
                              "package_version": header.get("package_version")}
    lines = [f"{args.file}: {version}"]
    if isinstance(obj, NystromKME):
        m, d = obj.landmarks_.shape
        record.update(kernel=kernel_spec(obj.kernel_), n_landmarks=m, n_features=d,
                      dtype=obj.landmarks_.dtype.name, n_samples=obj.n_samples_, weight_sum=obj.weight_sum_,
                      sampler=header["params"].get("sampler"), solver=obj.solver_, rank=obj.rank_,
                      norm=obj.norm())
        lines += [f"  kernel      {obj.kernel_!r}",
                  f"  landmarks   m = {m} in R^{d} ({obj.landmarks_.dtype.name})",
                  f"  data        n = {obj.n_samples_} rows (weight sum {obj.weight_sum_:g})",
                  f"  sampler     {_describe_sampler(header['params'].get('sampler'))}",
                  f"  solver      {obj.solver_} (rank {obj.rank_})",
                  f"  RKHS norm   {_fmt(obj.norm())}"]
    elif isinstance(obj, EmpiricalKME):
        n, d = obj.support_.shape
        record.update(kernel=kernel_spec(obj.kernel_), n_samples=n, n_features=d, norm=obj.norm())
        lines += [f"  kernel      {obj.kernel_!r}", f"  support     n = {n} points in R^{d}",
                  f"  RKHS norm   {_fmt(obj.norm())}"]
    elif isinstance(obj, QuadratureRule):
        m, d = obj.nodes.shape
        record.update(kernel=None if obj.kernel is None else kernel_spec(obj.kernel), n_nodes=m,
                      n_features=d, weight_sum=float(obj.weights.sum()))
        lines += [f"  kernel      {obj.kernel!r}", f"  nodes       m = {m} in R^{d}",
                  f"  weight sum  {_fmt(float(obj.weights.sum()))}"]
    elif isinstance(obj, CompressionResult):
        m, d = obj.points.shape
        record.update(kernel=kernel_spec(obj.kernel), n_points=m, n_features=d, method=obj.method,
                      ridge=obj.ridge, mmd=obj.mmd, weight_sum=float(obj.weights.sum()))
        lines += [f"  kernel      {obj.kernel!r}", f"  points      m = {m} in R^{d} ({obj.method})",
                  f"  weight sum  {_fmt(float(obj.weights.sum()))}",
                  f"  MMD         {'not computed' if obj.mmd is None else _fmt(obj.mmd)}"]
    elif isinstance(obj, AggregatedTestResult):
        record.update(_aggregated_record(obj))
        lines += _aggregated_lines(obj, 0.05)
    elif isinstance(obj, TwoSampleResult):
        record.update({k: header[k] for k in ("statistic", "pvalue", "method", "n_landmarks",
                                              "n_permutations", "kernel")})
        lines += [f"  method      {obj.method}" + ("" if obj.n_landmarks is None else f", m = {obj.n_landmarks}"),
                  f"  kernel      {obj.kernel!r}", f"  statistic   {obj.statistic!r}",
                  f"  p-value     {obj.pvalue!r} ({obj.n_permutations} permutations)"]
    _emit(args, record, lines)
    return EXIT_OK


def _describe_sampler(spec: Any) -> str:
    if not isinstance(spec, dict):
        return "none"
    if "name" in spec:
        return str(spec["name"])
    if "policy" in spec:
        return f"{spec['policy']}({', '.join(f'{k}={v!r}' for k, v in spec['params'].items())})"
    if "array" in spec:
        return "given landmarks"
    return f"not stored ({spec.get('unsaved', '?')})"


# --------------------------------------------------------------------------- #
# the parser
# --------------------------------------------------------------------------- #
def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="nystrom-kme", description="Nystrom kernel mean embeddings of your data: fit, "
                     "evaluate, compare (MMD), test, choose m.", epilog=EPILOG,
                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="store_true",
                        help="print the version and build configuration (SIMD level, OpenMP) and exit")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    files = argparse.ArgumentParser(add_help=False)
    g = files.add_argument_group("data files")
    g.add_argument("--columns", type=_columns, default=None,
                   help="comma-separated columns to use: indices counted from 0 (as in error "
                        "messages, which count lines from 1), or names from a CSV header or Parquet "
                        "schema (default: all)")
    g.add_argument("--key", default=None, help="member of a .npz, dataset of an HDF5 file, array of a "
                   "zarr group (default: the only one)")
    g.add_argument("--delimiter", default=None, help="field separator of text files (default: ',' for "
                   ".csv, tab for .tsv, whitespace for .txt)")
    out = argparse.ArgumentParser(add_help=False)
    out.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    threads = argparse.ArgumentParser(add_help=False)
    threads.add_argument("--threads", type=_positive_int, default=None,
                         help="threads of the C++ core (default: all available); results do not depend on it")
    kern = argparse.ArgumentParser(add_help=False)
    k = kern.add_argument_group("kernel")
    k.add_argument("--kernel", choices=KERNEL_NAMES, default="gaussian", help="default: gaussian")
    k.add_argument("--bandwidth", type=_bandwidth, default=None,
                   help="a positive number or 'median' (default: median for radial kernels, 1 otherwise; "
                        "'mmd' and 'test' take the median over rows of both samples drawn from --seed, "
                        "so both give the same bandwidth on the same files)")
    k.add_argument("--seed", type=int, default=0, help="seed of every random draw (default: 0)")

    def add(name: str, help_: str, parents: list[argparse.ArgumentParser]) -> argparse.ArgumentParser:
        return sub.add_parser(name, help=help_, description=help_, parents=parents, epilog=EPILOG,
                              formatter_class=argparse.RawDescriptionHelpFormatter)

    p = add("fit", "fit a Nystrom KME on a data file and save it (.npz)", [files, kern, threads, out])
    p.add_argument("data", help="data file (n rows, d columns)")
    p.add_argument("-o", "--output", required=True, help="where to save the embedding (.npz)")
    p.add_argument("--n-landmarks", type=_n_landmarks, default=None,
                   help="m; 'auto' (the doubling search with its certificate, streamed: one "
                        "read per doubling; its report is printed, and included in --json); 'bound' "
                        "(from the spectrum; reads the data into memory; its explanation is printed); "
                        "default: ceil(sqrt(n) log sqrt(n))")
    p.add_argument("--sampler", choices=SAMPLER_NAMES, default="uniform",
                   help="landmark policy (default: uniform with replacement, streamed; the others read "
                        "the data into memory)")
    p.set_defaults(run=cmd_fit)

    p = add("eval", "evaluate a saved embedding mu(y) at the rows of a data file",
            [files, threads, out])
    p.add_argument("embedding", help="a saved embedding (.npz from 'fit')")
    p.add_argument("points", help="data file of points y (same columns as the embedding's data)")
    p.add_argument("-o", "--output", default=None,
                   help="write the values to .npy, .csv or .txt (default: one per line on stdout)")
    p.set_defaults(run=cmd_eval)

    p = add("compress", "compress a data file to m weighted points close in MMD (reads the data into "
            "memory)", [files, kern, threads, out])
    p.add_argument("data", help="data file (n rows, d columns)")
    p.add_argument("-m", "--n-points", type=_positive_int, required=True, help="m, the number of points")
    p.add_argument("-o", "--output", required=True, help="where to save points, weights, indices (.npz)")
    p.add_argument("--sampler", choices=(*SAMPLER_NAMES, "kernel-thinning"), default="rpcholesky",
                   help="how the points are chosen (default: rpcholesky; kernel-thinning needs goodpoints)")
    p.add_argument("--weights", choices=WEIGHTS, default="simplex",
                   help="simplex: MMD-optimal probability weights (default); signed: Nystrom projection; "
                        "uniform: 1/m")
    p.add_argument("--ridge", type=float, default=0.0, help="Tikhonov lambda for --weights signed (default 0)")
    p.add_argument("--no-mmd", action="store_true", help="skip the exact MMD to the data (O(n^2); computed by default only up to "
                   f"{EXACT_MMD_MAX_ROWS} rows)")
    p.set_defaults(run=cmd_compress)

    p = add("mmd", "maximum mean discrepancy between two data files (Nystrom by default)",
            [files, kern, threads, out])
    p.add_argument("a", help="first sample (data file)")
    p.add_argument("b", help="second sample (data file, same columns)")
    p.add_argument("--exact", action="store_true", help="exact MMD^2, O(n^2) (default: Nystrom)")
    p.add_argument("--unbiased", action="store_true", help="with --exact: the U-statistic")
    p.add_argument("--n-landmarks", type=_positive_int, default=None,
                   help="m per sample (Nystrom; default ceil(sqrt(n) log sqrt(n)))")
    p.set_defaults(run=cmd_mmd)

    p = add("test", "permutation two-sample test: do two data files come from one distribution?",
            [files, kern, threads, out])
    p.add_argument("a", help="first sample (data file)")
    p.add_argument("b", help="second sample (data file, same columns)")
    p.add_argument("--permutations", type=_positive_int, default=200, help="default: 200")
    p.add_argument("--alpha", type=_probability, default=0.05, help="level of the test (default: 0.05)")
    p.add_argument("--exact", action="store_true", help="exact MMD statistic, O(n^2) (default: Nystrom)")
    p.add_argument("--n-landmarks", type=_positive_int, default=None,
                   help="m (Nystrom; default ceil(sqrt(n) log sqrt(n)) of the pooled sample)")
    p.add_argument("--aggregate", choices=AGGREGATIONS, default=None,
                   help="test a collection of kernels at once (--kernels at --bandwidths bandwidths each, "
                        "set from the data) with one permutation test: 'fuse' (MMD-FUSE's soft maximum) or "
                        "'mmdagg' (the smallest marginal p-value); default: one kernel (--kernel)")
    p.add_argument("--kernels", default="gaussian,laplacian",
                   help="with --aggregate: comma-separated radial kernels (default: gaussian,laplacian)")
    p.add_argument("--bandwidths", type=_positive_int, default=None,
                   help="with --aggregate: bandwidths per kernel (default: 10)")
    p.add_argument("--grid", choices=GRIDS, default=None,
                   help="with --aggregate: even ('fuse', the default) or geometric spacing of the bandwidths")
    p.add_argument("--max-bins", type=_positive_int, default=None,
                   help=f"with --aggregate: beyond this many pooled rows the permutations move random bins "
                        f"of rows (default: {DEFAULT_MAX_BINS})")
    p.add_argument("-o", "--output", default=None, help="also save the full result (.json)")
    p.set_defaults(run=cmd_test)

    p = add("suggest-m", "suggest the number of landmarks from the spectrum (Corollary 4.1), with "
            "its explanation (reads the data into memory)", [files, kern, threads, out])
    p.add_argument("data", help="data file")
    p.add_argument("--delta", type=_probability, default=0.05,
                   help="failure probability of the bounds (default 0.05)")
    p.add_argument("--target-error", type=float, default=None, help="aim the Theorem 4.1 bound at this error")
    p.add_argument("--max-landmarks", type=_positive_int, default=None, help="cap on the suggestion")
    p.set_defaults(run=cmd_suggest_m)

    p = add("info", "describe a saved embedding, rule or test result", [out])
    p.add_argument("file", help="a file written by 'fit', 'test -o' or the Python save() methods")
    p.set_defaults(run=cmd_info)

    p = add("demo", "exact errors of the empirical and Nystrom estimators (paper, Sec. 6.1)", [out])
    p.add_argument("--n-samples", type=int, default=10_000)
    p.add_argument("--n-landmarks", type=int, nargs="*", default=None,
                   help="landmark counts to try, each in [1, n-samples] (default: around the paper's m)")
    p.add_argument("--seed", type=int, default=0)
    p.set_defaults(run=None, parser=p)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; the exit status (EPILOG): 1 only for 'test' rejecting H0, 2 for
    every failure, reported as one line on stderr."""
    parser = build_parser()
    args = parser.parse_args(argv)  # usage errors: exit status 2 (_Parser.error)
    prog = "nystrom-kme" if args.command is None else f"nystrom-kme {args.command}"
    try:
        if args.version:
            show_config()
            return EXIT_OK
        if args.command is None:
            parser.error("a command is required (fit, eval, compress, mmd, test, suggest-m, info, demo), "
                         "or --version")
        if args.command == "demo":
            if args.n_samples < 2:
                args.parser.error("--n-samples must be >= 2")
            bad = [m for m in args.n_landmarks or [] if not 1 <= m <= args.n_samples]
            if bad:
                args.parser.error(f"--n-landmarks must lie in [1, {args.n_samples}] (--n-samples), got {bad}")
            record = run_demo(args.n_samples, args.n_landmarks, args.seed, say=None if args.json else print)
            if args.json:
                print(json.dumps(record, allow_nan=False))
            return EXIT_OK
        if getattr(args, "output", None) is not None:
            _check_output(args.command, args.output)
        return args.run(args)
    except KeyboardInterrupt:
        print(f"{prog}: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except MemoryError as err:
        detail = f" ({_one_line(err)})" if str(err) else ""
        print(f"{prog}: error: out of memory{detail}; use a smaller input or smaller options "
              "(e.g. --permutations, --n-landmarks, --n-samples)", file=sys.stderr)
    except OSError as err:
        where = f"{err.filename}: " if getattr(err, "filename", None) else ""
        print(f"{prog}: error: {where}{_one_line(err) if not err.strerror else err.strerror}", file=sys.stderr)
    except (_BadInput, DataFileError, FileFormatError, ValueError) as err:
        print(f"{prog}: error: {_one_line(err)}", file=sys.stderr)
    except Exception as err:  # exit status 1 would read as "H0 rejected": every failure is 2
        print(f"{prog}: error: unexpected {type(err).__name__}: {_one_line(err)} (please report it)",
              file=sys.stderr)
    return EXIT_BAD_INPUT


def _one_line(err: BaseException) -> str:
    return " ".join(str(err).split()) or type(err).__name__


if __name__ == "__main__":
    sys.exit(main())
