"""The commands that compare two data files: ``mmd`` and ``test`` (one kernel or a
collection)."""

from __future__ import annotations

import argparse
import time
from typing import Any

import numpy as np

from ..kernel_collection import KernelCollection
from ..mmd_estimators import mmd2, mmd2_exact
from ..persistence import kernel_spec
from ..sources import RowSource
from ..two_sample import AggregatedTestResult, TwoSampleResult, two_sample_test
from .inputs import kernel_of, pooled_kernel, progress_callbacks, test_options, two_sources
from .output import EXIT_OK, EXIT_REJECTED, BadInput, emit


def cmd_mmd(args: argparse.Namespace) -> int:
    update, close = progress_callbacks("reading", args.progress)
    try:
        return _mmd(args, *two_sources(args, update))
    finally:
        close()


def _mmd(args: argparse.Namespace, a: RowSource, b: RowSource) -> int:
    n1, n2 = a.count_rows(), b.count_rows()
    kernel = kernel_of(args.kernel, args.bandwidth)  # the median, if asked, on both samples (--seed)
    start = time.perf_counter()
    if args.exact:
        if args.n_landmarks is not None:
            raise BadInput("--n-landmarks applies to the Nystrom MMD only, not with --exact")
        est = mmd2_exact(
            a,
            b,
            kernel=kernel,
            unbiased=args.unbiased,
            random_state=args.seed,
            n_threads=args.threads,
            return_info=True,
        )
        method = "exact U-statistic" if args.unbiased else "exact V-statistic"
    else:
        if args.unbiased:
            raise BadInput("--unbiased applies to --exact only")
        est = mmd2(
            a,
            b,
            kernel=kernel,
            n_landmarks=args.n_landmarks,
            random_state=args.seed,
            n_threads=args.threads,
            return_info=True,
        )
        method = "Nystrom"
    seconds = time.perf_counter() - start
    value, ms = est.mmd2, None if est.n_landmarks is None else list(est.n_landmarks)
    record = {
        "mmd2": value,
        "mmd": est.mmd,
        "method": "exact" if args.exact else "nystrom",
        "unbiased": bool(args.unbiased),
        "n_landmarks": ms,
        "n_x": n1,
        "n_y": n2,
        "kernel": kernel_spec(est.kernel),
        "seconds": seconds,
    }
    emit(
        args,
        record,
        [
            f"MMD between {args.a} (n = {n1}) and {args.b} (n = {n2})",
            f"  method   {method}" + ("" if ms is None else f", m = {ms[0]} and {ms[1]} landmarks"),
            f"  kernel   {est.kernel!r}",
            f"  MMD^2    {value!r}",
            f"  MMD      {est.mmd!r}",
            f"  time     {seconds:.3f} s",
        ],
    )
    return EXIT_OK


def cmd_test(args: argparse.Namespace) -> int:
    a, b = two_sources(args)  # two_sample_test shows its own progress bar
    collection_flags = [
        flag
        for flag, value in (
            ("--aggregate", args.aggregate),
            ("--kernels", args.kernels),
            ("--bandwidths", args.bandwidths),
            ("--grid", args.grid),
            ("--max-bins", args.max_bins),
        )
        if value is not None
    ]
    if args.kernel is None:  # the library's default: a collection of kernels
        return _aggregated_test(args, a, b)
    if collection_flags:
        raise BadInput(
            f"--kernel tests one kernel; {collection_flags[0]} applies to a collection of kernels "
            "(drop --kernel, or --kernels to choose the collection)"
        )
    # the bandwidth of 'mmd' on the same files (two_sample_test would draw its rows after
    # the splits' seed); the splits and landmarks then come from --seed as before
    kernel = pooled_kernel(args, a, b, np.random.default_rng(args.seed))
    res, seconds, reject = _run_test(args, a, b, kernel=kernel)
    assert isinstance(res, TwoSampleResult)  # one kernel
    record = {
        "statistic": res.statistic,
        "pvalue": res.pvalue,
        "alpha": args.alpha,
        "reject": reject,
        "method": res.method,
        "n_landmarks": res.n_landmarks,
        "n_permutations": res.n_permutations,
        "n_x": a.count_rows(),
        "n_y": b.count_rows(),
        "kernel": kernel_spec(res.kernel),
        "seconds": seconds,
    }
    m = "" if res.n_landmarks is None else f", m = {res.n_landmarks}"
    emit(
        args,
        record,
        [
            f"Two-sample permutation test ({res.method}{m}, {res.n_permutations} permutations)",
            f"  samples     {args.a} (n = {record['n_x']}), {args.b} (n = {record['n_y']})",
            f"  kernel      {res.kernel!r}",
            f"  statistic   {res.statistic!r} (squared MMD)",
            f"  p-value     {res.pvalue!r}",
            f"  decision    {'reject' if reject else 'do not reject'} H0 (same distribution) at alpha = {args.alpha:g}",
            f"  time        {seconds:.3f} s",
        ]
        + ([f"saved to {args.output}"] if args.output else []),
    )
    return EXIT_REJECTED if reject else EXIT_OK


def _run_test(
    args: argparse.Namespace, a: RowSource, b: RowSource, **kernel_choice: Any
) -> tuple[TwoSampleResult | AggregatedTestResult, float, bool]:
    """two_sample_test with the options every 'test' shares, timed, saved with -o; the
    result, its seconds and the decision at --alpha."""
    start = time.perf_counter()
    res = two_sample_test(a, b, method=args.method, n_landmarks=args.n_landmarks, **test_options(args), **kernel_choice)
    seconds = time.perf_counter() - start
    if args.output:
        res.save(args.output)
    return res, seconds, bool(res.pvalue <= args.alpha)


def aggregated_record(res: AggregatedTestResult) -> dict[str, Any]:
    """The fields of an aggregated result that 'test' and 'info' print as JSON."""
    return {
        "statistic": res.statistic,
        "pvalue": res.pvalue,
        "method": res.method,
        "aggregation": res.aggregation,
        "n_landmarks": res.n_landmarks,
        "n_permutations": res.n_permutations,
        "bin_size": res.bin_size,
        "kernels": [kernel_spec(k) for k in res.kernels],
        "kernel_statistics": res.kernel_statistics.tolist(),
        "kernel_pvalues": res.kernel_pvalues.tolist(),
        "dominant": res.dominant,
    }


def aggregated_lines(res: AggregatedTestResult, alpha: float) -> list[str]:
    """The explanation, then the kernels by marginal p-value (at most 5)."""
    order = np.lexsort((-res.kernel_scores, res.kernel_pvalues))[:5]
    return (
        res.explain(alpha).splitlines()
        + ["  kernel                          bandwidth     marginal p    MMD^2"]
        + [
            f"  {res.kernels[i].family:<30s}  {float(res.kernels[i].bandwidth):<12.4g}  "
            f"{res.kernel_pvalues[i]:<12.4g}  {res.kernel_statistics[i]:.4g}"
            for i in order
        ]
    )


def _aggregated_test(args: argparse.Namespace, a: RowSource, b: RowSource) -> int:
    if args.bandwidth is not None:
        raise BadInput(
            "--bandwidth fixes one kernel (with --kernel); a collection sets "
            "--bandwidths of each --kernels family from the data"
        )
    choice: dict[str, Any] = {"aggregation": args.aggregate}
    if args.max_bins is not None:
        choice["max_bins"] = args.max_bins
    grid = {k: v for k, v in (("n_bandwidths", args.bandwidths), ("grid", args.grid)) if v is not None}
    if args.kernels is not None or grid:  # a collection of the library's, from the options given
        families = [] if args.kernels is None else [name.strip() for name in args.kernels.split(",") if name.strip()]
        try:
            choice["kernel"] = (
                KernelCollection(families, **grid) if args.kernels is not None else KernelCollection(**grid)
            )
        except ValueError as err:  # the library's words, named by the option
            raise BadInput(f"--kernels {args.kernels!r}: {err}") from None
    res, seconds, reject = _run_test(args, a, b, **choice)  # no kernel given: the library's default test
    assert isinstance(res, AggregatedTestResult)  # a collection
    record = {
        **aggregated_record(res),
        "alpha": args.alpha,
        "reject": reject,
        "n_x": a.count_rows(),
        "n_y": b.count_rows(),
        "explanation": res.explain(args.alpha),
        "seconds": seconds,
    }
    emit(
        args,
        record,
        [f"Aggregated two-sample test of {args.a} (n = {record['n_x']}) and {args.b} (n = {record['n_y']})"]
        + aggregated_lines(res, args.alpha)
        + [f"  time        {seconds:.3f} s"]
        + ([f"saved to {args.output}"] if args.output else []),
    )
    return EXIT_REJECTED if reject else EXIT_OK


__all__ = ["aggregated_lines", "aggregated_record", "cmd_mmd", "cmd_test"]
