"""The commands about one data file: ``fit`` an embedding, ``compress`` to weighted
points, ``eval`` a saved embedding, ``suggest-m``."""

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
from ..bounds import default_n_landmarks, suggest_n_landmarks
from ..compression import EXACT_MMD_MAX_ROWS, MMD_ESTIMATE_ROWS, compress
from ..nystrom import NystromKME
from ..persistence import kernel_spec
from ..sampling import as_policy, resolve_sampler
from ..sources import RowSource
from .inputs import (
    all_rows,
    data_source,
    kernel_of,
    load_embedding,
    progress_callbacks,
    read_counted,
    standardize_arg,
)
from .output import EXIT_OK, BadInput, emit, fmt, report_record


def cmd_fit(args: argparse.Namespace) -> int:
    kernel = kernel_of(args.kernel, args.bandwidth)
    est = NystromKME(
        kernel,
        n_landmarks=args.n_landmarks,
        sampler=args.sampler,
        standardize=standardize_arg(args.standardize),
        random_state=args.seed,
        n_threads=args.threads,
    )
    src, bar = read_counted(args, args.data)
    start = time.perf_counter()
    try:
        # the policies that say so, and m = "bound", look at all rows at once
        in_memory = as_policy(resolve_sampler(args.sampler)).needs_data_in_memory or args.n_landmarks == "bound"
        data: np.ndarray | RowSource = all_rows(src) if in_memory else src
        est.fit(data)
    finally:
        bar.close()
    seconds = time.perf_counter() - start
    est.save(args.output)
    record = {
        "output": args.output,
        "data": args.data,
        "n_samples": est.n_samples_,
        "n_features": est.n_features_in_,
        "n_landmarks": int(est.landmarks_.shape[0]),
        "kernel": kernel_spec(est.kernel_),
        "sampler": args.sampler,
        "solver": est.solver_,
        "rank": est.rank_,
        "seconds": seconds,
    }
    lines = [
        f"Nystrom KME of {args.data}: n = {est.n_samples_} rows, d = {est.n_features_in_} columns",
        f"  kernel     {est.kernel_!r}",
        f"  landmarks  m = {est.landmarks_.shape[0]} (sampler {args.sampler}, solver {est.solver_}, rank {est.rank_})",
    ]
    report = est.n_landmarks_report_  # how --n-landmarks auto or bound chose m
    if report is not None:
        record["n_landmarks_report"] = report_record(report)
        text = record["n_landmarks_report"].get("explanation", record["n_landmarks_report"]["summary"])
        lines += [f"  choice of m  {report!r}"] + [f"    {line}" for line in text.splitlines()]
    emit(args, record, lines + [f"  time       {seconds:.3f} s", f"saved to {args.output}"])
    return EXIT_OK


def cmd_compress(args: argparse.Namespace) -> int:
    kernel = kernel_of(args.kernel, args.bandwidth)
    src, bar = read_counted(args, args.data)  # streamed: compress holds O(m^2 + chunk) memory
    start = time.perf_counter()
    try:
        res = compress(
            src,
            args.n_points,
            kernel=kernel,
            sampler=args.sampler,
            weights=args.weights,
            ridge=args.ridge,
            random_state=args.seed,
            n_threads=args.threads,
            compute_mmd=False if args.no_mmd else "auto",
            standardize=standardize_arg(args.standardize),
        )
    except ImportError as err:
        raise BadInput(str(err)) from None
    finally:
        bar.close()
    seconds = time.perf_counter() - start
    res.save(args.output)
    n, d = src.count_rows(), src.n_features
    w = res.weights
    record = {
        "output": args.output,
        "data": args.data,
        "n_samples": n,
        "n_features": d,
        "n_points": res.n_points,
        "kernel": kernel_spec(res.kernel),
        "sampler": args.sampler,
        "weights": args.weights,
        "ridge": res.ridge,
        "mmd": res.mmd,
        "mmd_kind": res.mmd_kind,
        "mmd_interval": None if res.mmd_interval is None else list(res.mmd_interval),
        "min_weight": float(w.min()),
        "max_weight": float(w.max()),
        "weight_sum": float(w.sum()),
        "seconds": seconds,
    }
    if res.mmd is None:
        mmd = "not computed (--no-mmd)"
    elif res.mmd_interval is None:
        mmd = f"{fmt(res.mmd)} (exact)"
    else:
        low, high = res.mmd_interval
        mmd = (
            f"{fmt(res.mmd)} (estimated from {MMD_ESTIMATE_ROWS} rows, above {EXACT_MMD_MAX_ROWS}: "
            f"95% interval [{fmt(low)}, {fmt(high)}])"
        )
    emit(
        args,
        record,
        [
            f"compressed {args.data}: n = {n} rows, d = {d} columns -> m = {res.n_points} points",
            f"  kernel     {res.kernel!r}",
            f"  method     {res.method}" + (f", ridge {res.ridge:g}" if res.ridge else ""),
            f"  weights    in [{fmt(w.min())}, {fmt(w.max())}], sum {fmt(w.sum())}, {int(np.count_nonzero(w))} nonzero",
            f"  MMD to the data  {mmd}",
            f"  time       {seconds:.3f} s",
            f"saved to {args.output} (points, weights, indices, mmd)",
        ],
    )
    return EXIT_OK


def cmd_eval(args: argparse.Namespace) -> int:
    kme = load_embedding(args.embedding)
    update, close = progress_callbacks("evaluating", args.progress)
    written: list[int] = []
    try:  # mu(y) block by block as the points are read; a file appears only when complete
        blocks = (values for _, values in kme.evaluate_chunks(data_source(args, args.points, update)))
        if args.output and os.path.splitext(args.output)[1].lower() == ".npy":
            atomic_write(args.output, lambda f: written.append(write_npy_vector(f, blocks)))
        elif args.output:
            atomic_write(
                args.output, lambda f: written.append(_write_lines(blocks, lambda text: f.write(text.encode("ascii"))))
            )
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


def cmd_suggest_m(args: argparse.Namespace) -> int:
    src, bar = read_counted(args, args.data)
    try:
        X = all_rows(src)
    finally:
        bar.close()
    kernel = kernel_of(args.kernel, args.bandwidth)
    rep = suggest_n_landmarks(
        X,
        kernel,
        delta=args.delta,
        target_error=args.target_error,
        max_landmarks=args.max_landmarks,
        random_state=args.seed,
        n_threads=args.threads,
    )
    record = {
        "n_landmarks": rep.n_landmarks,
        "n_samples": rep.n_samples,
        "decay": rep.decay,
        "params": rep.params,
        "bound": rep.bound,
        "bound_valid": rep.bound_valid,
        "min_landmarks": rep.min_landmarks,
        "delta": rep.delta,
        "target_error": rep.target_error,
        "reason": rep.reason,
        "paper_default": default_n_landmarks(rep.n_samples),
        "explanation": rep.explain(),
    }
    theorems = [
        "From the spectrum (Corollary 4.1):",
        rep.explain(),
        f"(The paper's default ceil(sqrt(n) log sqrt(n)) is {record['paper_default']}.)",
    ]
    if args.bound_only:
        record["recommended"], record["recommended_by"] = rep.n_landmarks, "corollary 4.1"
        head = (
            f"m = {rep.n_landmarks} is the size Corollary 4.1 finds sufficient for the estimated spectrum: a "
            "worst-case size (without --bound-only, the smallest sufficient m is measured on the data, often far "
            "smaller)."
        )
        emit(args, record, [head, "", *theorems])
        return EXIT_OK
    # measured on the data: the search of n_landmarks="auto", one fit's cost
    est = NystromKME(kernel, n_landmarks="auto", random_state=args.seed, n_threads=args.threads).fit(X)
    search = est.n_landmarks_report_
    assert search is not None  # "auto" always reports
    record["certificate"] = report_record(search)
    record["recommended"], record["recommended_by"] = search.n_landmarks, "certificate"
    head = f"Use m = {search.n_landmarks}: {_why_certified(search)}"
    rest = f"Corollary 4.1 asks for m = {rep.n_landmarks}, the paper's default is {record['paper_default']}."
    measured = ["Measured on the data (n_landmarks='auto'):", str(search.explain())]
    emit(args, record, [head, rest, "", *measured, "", *theorems])
    return EXIT_OK


def _why_certified(search: Any) -> str:
    """Why the search's m is the one to use, in one sentence (its stop)."""
    if search.certified:
        return (
            f"the smallest m the search certifies on the data (its Nystrom embedding within the target of the "
            f"empirical one at confidence {search.confidence:g}; n_landmarks='auto' finds it)."
        )
    if search.stop == "every row":
        return "every row is a landmark: the embedding is the empirical one (fewer did not certify)."
    if search.stop in ("plateau", "exhausted"):
        return f"more landmarks change nothing on these data (the search stopped: {search.stop})."
    return (
        f"the search stopped at {search.stop} before it could certify: use at least this m, "
        "or raise the cap (the bound below says how far it is)."
    )


__all__ = ["cmd_compress", "cmd_eval", "cmd_fit", "cmd_suggest_m"]
