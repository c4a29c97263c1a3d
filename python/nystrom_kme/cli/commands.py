"""The commands: read the inputs, call the library, print (:mod:`.output`). Each
``cmd_*`` takes the parsed arguments and returns the exit status."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from .._files import atomic_write, write_npy_vector
from ..aggregated import DEFAULT_MAX_BINS, AggregatedTestResult
from ..bounds import default_n_landmarks, suggest_n_landmarks
from ..compression import EXACT_MMD_MAX_ROWS, CompressionResult, compress
from ..datafiles import read_data
from ..demo import run_demo
from ..embedding import EmpiricalKME, KernelMeanEmbedding
from ..kernel_collection import KernelCollection
from ..kernels import KERNEL_NAMES as ALL_KERNEL_NAMES
from ..kernels import Kernel, get_kernel, resolve_kernel
from ..mmd_estimators import mmd2, mmd2_exact
from ..nystrom import NystromKME
from ..persistence import kernel_spec, load, read_header
from ..quadrature import QuadratureRule
from ..sampling import as_policy, resolve_sampler
from ..sources import RowSource
from ..two_sample import TwoSampleResult, two_sample_test
from .output import EXIT_OK, EXIT_REJECTED, BadInput, emit, fmt, report_record

#: The kernel names the commands offer (their one table here until kernels.py exports one).
#: The kernel names the CLI offers: the package's table without its aliases (rbf, inverse_multiquadric).
KERNEL_NAMES = tuple(n for n in ALL_KERNEL_NAMES if n not in ("rbf", "inverse_multiquadric"))


# --------------------------------------------------------------------------- #
# inputs
# --------------------------------------------------------------------------- #
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
        raise BadInput(f"{a_name} has {a.n_features} columns but {b_name} has {b.n_features}")


def _load_embedding(path: str) -> KernelMeanEmbedding:
    obj = load(path)
    if not isinstance(obj, KernelMeanEmbedding):
        raise BadInput(f"{path}: holds a {type(obj).__name__}, not an embedding")
    return obj


def _two_sources(args: argparse.Namespace, on_rows: Callable[[int], None] | None = None
                 ) -> tuple[RowSource, RowSource]:
    a, b = _data(args, args.a, on_rows), _data(args, args.b, on_rows)
    _check_widths(a, args.a, b, args.b)
    return a, b


def _pooled_kernel(args: argparse.Namespace, a: RowSource, b: RowSource, rng: np.random.Generator) -> Kernel:
    """The kernel of 'test': the bandwidth given, or the median heuristic on rows of both
    samples (resolve_kernel) drawn first from a generator seeded with --seed, the rule
    of the MMDs (mmd2, mmd2_exact with random_state=--seed), so that 'mmd' and 'test'
    get the same bandwidth on the same files."""
    return resolve_kernel(_kernel(args.kernel, args.bandwidth), [a, b], rng)


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
        # the policies that say so, and m = "bound", look at all rows at once
        in_memory = as_policy(resolve_sampler(args.sampler)).needs_data_in_memory or args.n_landmarks == "bound"
        data: np.ndarray | RowSource = (_in_memory(src) if in_memory
                     else src)
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
        record["n_landmarks_report"] = report_record(report)
        text = record["n_landmarks_report"].get("explanation", record["n_landmarks_report"]["summary"])
        lines += [f"  choice of m  {report!r}"] + [f"    {line}" for line in text.splitlines()]
    emit(args, record, lines + [f"  time       {seconds:.3f} s", f"saved to {args.output}"])
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
        raise BadInput(str(err)) from None
    seconds = time.perf_counter() - start
    res.save(args.output)
    w = res.weights
    record = {"output": args.output, "data": args.data, "n_samples": int(X.shape[0]),
              "n_features": int(X.shape[1]), "n_points": res.n_points, "kernel": kernel_spec(res.kernel),
              "sampler": args.sampler, "weights": args.weights, "ridge": res.ridge, "mmd": res.mmd,
              "min_weight": float(w.min()), "max_weight": float(w.max()), "weight_sum": float(w.sum()),
              "seconds": seconds}
    mmd = (fmt(res.mmd) if res.mmd is not None else "not computed (--no-mmd)" if args.no_mmd
           else f"not computed (exact only up to {EXACT_MMD_MAX_ROWS} rows; --no-mmd skips it)")
    emit(args, record, [
        f"compressed {args.data}: n = {X.shape[0]} rows, d = {X.shape[1]} columns -> m = {res.n_points} points",
        f"  kernel     {res.kernel!r}",
        f"  method     {res.method}" + (f", ridge {res.ridge:g}" if res.ridge else ""),
        f"  weights    in [{fmt(w.min())}, {fmt(w.max())}], sum {fmt(w.sum())}, "
        f"{int(np.count_nonzero(w))} nonzero",
        f"  MMD to the data  {mmd}",
        f"  time       {seconds:.3f} s",
        f"saved to {args.output} (points, weights, indices, mmd)"])
    return EXIT_OK


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


def _write_lines(blocks: Iterator[np.ndarray], write: Callable[[str], object]) -> int:
    """Each value exactly (round-trip repr) on a line of its own, block by block; their number."""
    n = 0
    for values in blocks:
        write("".join(f"{x!r}\n" for x in values.tolist()))
        n += values.size
    return n


def cmd_mmd(args: argparse.Namespace) -> int:
    update, close = _progress("reading")
    try:
        return _mmd(args, *_two_sources(args, update))
    finally:
        close()


def _mmd(args: argparse.Namespace, a: RowSource, b: RowSource) -> int:
    n1, n2 = a.count_rows(), b.count_rows()
    kernel = _kernel(args.kernel, args.bandwidth)  # the median, if asked, on both samples (--seed)
    start = time.perf_counter()
    if args.exact:
        if args.n_landmarks is not None:
            raise BadInput("--n-landmarks applies to the Nystrom MMD only, not with --exact")
        est = mmd2_exact(a, b, kernel=kernel, unbiased=args.unbiased, random_state=args.seed,
                         n_threads=args.threads, return_info=True)
        method = "exact U-statistic" if args.unbiased else "exact V-statistic"
    else:
        if args.unbiased:
            raise BadInput("--unbiased applies to --exact only")
        est = mmd2(a, b, kernel=kernel, n_landmarks=args.n_landmarks, random_state=args.seed,
                   n_threads=args.threads, return_info=True)
        method = "Nystrom"
    seconds = time.perf_counter() - start
    value, ms = est.mmd2, None if est.n_landmarks is None else list(est.n_landmarks)
    record = {"mmd2": value, "mmd": est.mmd, "method": "exact" if args.exact else "nystrom",
              "unbiased": bool(args.unbiased), "n_landmarks": ms, "n_x": n1, "n_y": n2,
              "kernel": kernel_spec(est.kernel), "seconds": seconds}
    emit(args, record, [
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
            raise BadInput(f"{flag} applies to the aggregated test (--aggregate) only")
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
    emit(args, record, [
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
        raise BadInput("--bandwidth fixes one kernel; the aggregated test (--aggregate) sets "
                        "--bandwidths of each --kernels family from the data")
    families = [name.strip() for name in args.kernels.split(",") if name.strip()]
    unknown = [name for name in families if name not in KERNEL_NAMES]
    if unknown:
        raise BadInput(f"--kernels: unknown kernel {unknown[0]!r}; radial kernels: "
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
    emit(args, record, [f"Aggregated two-sample test of {args.a} (n = {record['n_x']}) and {args.b} "
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
    emit(args, record, [rep.explain(),
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
                  f"  RKHS norm   {fmt(obj.norm())}"]
    elif isinstance(obj, EmpiricalKME):
        n, d = obj.support_.shape
        record.update(kernel=kernel_spec(obj.kernel_), n_samples=n, n_features=d, norm=obj.norm())
        lines += [f"  kernel      {obj.kernel_!r}", f"  support     n = {n} points in R^{d}",
                  f"  RKHS norm   {fmt(obj.norm())}"]
    elif isinstance(obj, QuadratureRule):
        m, d = obj.nodes.shape
        record.update(kernel=None if obj.kernel is None else kernel_spec(obj.kernel), n_nodes=m,
                      n_features=d, weight_sum=float(obj.weights.sum()))
        lines += [f"  kernel      {obj.kernel!r}", f"  nodes       m = {m} in R^{d}",
                  f"  weight sum  {fmt(float(obj.weights.sum()))}"]
    elif isinstance(obj, CompressionResult):
        m, d = obj.points.shape
        record.update(kernel=kernel_spec(obj.kernel), n_points=m, n_features=d, method=obj.method,
                      ridge=obj.ridge, mmd=obj.mmd, weight_sum=float(obj.weights.sum()))
        lines += [f"  kernel      {obj.kernel!r}", f"  points      m = {m} in R^{d} ({obj.method})",
                  f"  weight sum  {fmt(float(obj.weights.sum()))}",
                  f"  MMD         {'not computed' if obj.mmd is None else fmt(obj.mmd)}"]
    elif isinstance(obj, AggregatedTestResult):
        record.update(_aggregated_record(obj))
        lines += _aggregated_lines(obj, 0.05)
    elif isinstance(obj, TwoSampleResult):
        record.update({k: header[k] for k in ("statistic", "pvalue", "method", "n_landmarks",
                                              "n_permutations", "kernel")})
        lines += [f"  method      {obj.method}" + ("" if obj.n_landmarks is None else f", m = {obj.n_landmarks}"),
                  f"  kernel      {obj.kernel!r}", f"  statistic   {obj.statistic!r}",
                  f"  p-value     {obj.pvalue!r} ({obj.n_permutations} permutations)"]
    emit(args, record, lines)
    return EXIT_OK


def _describe_sampler(spec: object) -> str:
    if not isinstance(spec, dict):
        return "none"
    if "name" in spec:
        return str(spec["name"])
    if "policy" in spec:
        return f"{spec['policy']}({', '.join(f'{k}={v!r}' for k, v in spec['params'].items())})"
    if "array" in spec:
        return "given landmarks"
    return f"not stored ({spec.get('unsaved', '?')})"


def cmd_demo(args: argparse.Namespace) -> int:
    if args.n_samples < 2:
        args.parser.error("--n-samples must be >= 2")
    bad = [m for m in args.n_landmarks or [] if not 1 <= m <= args.n_samples]
    if bad:
        args.parser.error(f"--n-landmarks must lie in [1, {args.n_samples}] (--n-samples), got {bad}")
    record = run_demo(args.n_samples, args.n_landmarks, args.seed, say=None if args.json else print)
    if args.json:
        print(json.dumps(record, allow_nan=False))
    return EXIT_OK


__all__ = ["KERNEL_NAMES", "cmd_compress", "cmd_demo", "cmd_eval", "cmd_fit", "cmd_info", "cmd_mmd", "cmd_suggest_m",
           "cmd_test"]
