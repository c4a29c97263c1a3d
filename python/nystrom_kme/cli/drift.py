"""The ``nystrom-kme drift`` commands: ``fit`` a detector on a reference file, ``test``
batches against it, ``watch`` a stream of rows on standard input (``--anytime``: with a
sequential test by betting, whose false-alarm probability over the whole stream is at
most alpha)."""

from __future__ import annotations

import argparse
import inspect
import itertools
import math
import sys
import time
from collections.abc import Iterator
from typing import Any

import numpy as np

from .._columns import check_feature_names, fitted_feature_names
from ..datafiles import column_indices, first_line_is_header, split_fields, split_header
from ..defaults import ALPHA, DRIFT_N_HOLDOUT, N_PERMUTATIONS
from ..drift import DriftDetector, DriftResult, OnlineDriftDetector, batch, online
from ..persistence import load
from ..sampling import SAMPLER_NAMES
from ..sequential import SequentialDriftTest
from ..sequential.drift import POOL
from .inputs import STANDARDIZE_CHOICES, data_source, read_counted, standardize_arg
from .output import EXIT_BAD_INPUT, EXIT_OK, EXIT_REJECTED, BadInput, emit


def cmd_drift_fit(args: argparse.Namespace) -> int:
    if args.anytime:
        return _fit_anytime(args)
    if args.online and (args.ert is None or args.window is None):
        raise BadInput("--online needs --ert (expected updates between false alarms) and --window (rows)")
    if not args.online and (args.ert is not None or args.window is not None):
        raise BadInput("--ert and --window configure an online detector: add --online")
    if args.online and args.statistic is not None:
        raise BadInput(
            "--statistic names a batch detector's permutation statistic; an online detector has one statistic, "
            "the window's MMD, whose threshold is simulated for it (drop --statistic)"
        )
    # the options given, and only those: the detectors' own defaults for the others
    given = {
        name: value
        for name, value in (
            ("kernel", args.kernel),
            ("n_landmarks", args.n_landmarks),
            ("sampler", args.sampler),
            ("statistic", args.statistic),
        )
        if value is not None
    }
    src, bar = read_counted(args, args.reference)  # every pass over the file, in rows
    start = time.perf_counter()
    det: DriftDetector | OnlineDriftDetector
    try:
        if args.online:
            det = OnlineDriftDetector(
                src,
                ert=args.ert,
                window_size=args.window,
                standardize=standardize_arg(args.standardize),
                random_state=args.seed,
                n_threads=args.threads,
                **given,
            )
        else:
            det = DriftDetector(
                src,
                n_permutations=args.permutations,
                n_holdout=args.holdout,
                alpha=args.alpha,
                standardize=standardize_arg(args.standardize),
                random_state=args.seed,
                n_threads=args.threads,
                progress=False,  # the reading bar above counts the reference's passes
                **given,
            )
    finally:
        bar.close()
    return _saved(args, det, time.perf_counter() - start)


def _fit_anytime(args: argparse.Namespace) -> int:
    """``drift fit --anytime``: a SequentialDriftTest, saved for ``drift watch --anytime``."""
    for flag, value in (
        ("--online", args.online),
        ("--ert", args.ert),
        ("--window", args.window),
        ("--statistic", args.statistic),
        ("--sampler", args.sampler),
    ):
        if value not in (None, False):
            raise BadInput(f"{flag} does not apply to --anytime (a sequential test by betting: drop {flag})")
    if args.n_landmarks == "auto":
        raise BadInput("--anytime takes --n-landmarks as a number (its landmarks are drawn uniformly)")
    given = {
        name: value
        for name, value in (("kernel", args.kernel), ("n_landmarks", args.n_landmarks), ("n_holdout", args.paired))
        if value is not None
    }
    src, bar = read_counted(args, args.reference)
    start = time.perf_counter()
    try:
        test = SequentialDriftTest(
            src,
            alpha=args.alpha,
            standardize=standardize_arg(args.standardize),
            random_state=args.seed,
            n_threads=args.threads,
            progress=False,
            **given,
        )
    finally:
        bar.close()
    return _saved(args, test, time.perf_counter() - start)


def _saved(args: argparse.Namespace, det: Any, seconds: float) -> int:
    """Saves a fitted detector to ``-o`` and says so (text or JSON)."""
    det.save(args.output)
    record = {
        "detector": type(det).__name__,
        "n_reference": det.n_reference_,
        "n_features": det.n_features_in_,
        "output": args.output,
        "seconds": seconds,
    }
    emit(args, record, [f"{det!r}", f"  fitted in {seconds:.2f} s, saved to {args.output}"])
    return EXIT_OK


def _detector(path: str, kind: type) -> DriftDetector | OnlineDriftDetector | SequentialDriftTest:
    obj = load(path)
    if not isinstance(obj, (DriftDetector, OnlineDriftDetector, SequentialDriftTest)) or not isinstance(obj, kind):
        if isinstance(obj, SequentialDriftTest):
            raise BadInput(f"{path}: holds a SequentialDriftTest: watch it with 'nystrom-kme drift watch --anytime'")
        how = {OnlineDriftDetector: " --online", SequentialDriftTest: " --anytime"}.get(kind, "")
        raise BadInput(
            f"{path}: holds a {type(obj).__name__}, not a {kind.__name__} (make one with 'nystrom-kme drift fit{how}')"
        )
    return obj


def cmd_drift_test(args: argparse.Namespace) -> int:
    det = _detector(args.detector, DriftDetector)
    assert isinstance(det, DriftDetector)
    rows, errors, any_drift = [], [], False
    for path in args.batches:
        # a bad file is reported in its row and the others are still tested (exit status 2 at the end)
        try:
            res = _test_batch(args, det, path)
        except (BadInput, ValueError, OSError) as err:
            message = " ".join(str(err).split())
            errors.append({"batch": path, "error": message if message.startswith(path) else f"{path}: {message}"})
            rows.append({"batch": path, "error": errors[-1]["error"]})
            continue
        any_drift |= res.is_drift
        d = res.distance
        rows.append(
            {
                "batch": path,
                "n": res.n_batch,
                "pvalue": res.pvalue,
                "distance": d.mmd,
                "low": d.low,
                "high": d.high,
                "drift": res.is_drift,
                "kernel": f"{res.kernel.family}({res.kernel.bandwidth:.4g})",
            }
        )
    width = max(len("batch"), *(len(r["batch"]) for r in rows))
    lines = [f"{'batch':<{width}}  {'n':>7}  {'p-value':>8}  {'MMD [95% interval]':<28}  drift"]
    for r in rows:
        if "error" in r:
            lines.append(f"{r['batch']:<{width}}  {'-':>7}  {'-':>8}  {'-':<28}  ERROR: {r['error']}")
            continue
        interval = f"{r['distance']:.4g} [{r['low']:.4g}, {r['high']:.4g}]"
        lines.append(
            f"{r['batch']:<{width}}  {r['n']:>7}  {r['pvalue']:>8.4g}  {interval:<28}  "
            f"{'DRIFT' if r['drift'] else 'no'}"
        )
    lines.append(f"level alpha = {det.alpha:g}; MMD in the units of {det.kernels_[-1]!r}")
    emit(args, {"alpha": det.alpha, "batches": rows, "drift": any_drift, "errors": len(errors)}, lines)
    if errors:
        print(f"nystrom-kme: error: {len(errors)} of {len(rows)} batches could not be tested", file=sys.stderr)
        return EXIT_BAD_INPUT
    return EXIT_REJECTED if any_drift else EXIT_OK


def _test_batch(args: argparse.Namespace, det: DriftDetector, path: str) -> DriftResult:
    """One batch file's DriftResult; BadInput naming the file for what it holds."""
    src = data_source(args, path)
    try:  # names first: a batch in another order has the reference's width
        check_feature_names(fitted_feature_names(det), src.feature_names, owner="the detector", what=path)
    except ValueError as err:
        raise BadInput(str(err)) from None
    if src.count_rows() and src.n_features != det.n_features_in_:
        raise BadInput(f"{path} has {src.n_features} columns but the reference has {det.n_features_in_}")
    X = np.concatenate([block for _, block in src.chunks()])
    try:
        return det.predict(X)
    except ValueError as err:
        raise BadInput(f"{path}: {err}") from None


def _stdin_lines() -> Iterator[tuple[int, str]]:
    """(line number, line) of standard input's lines that hold fields, as they arrive."""
    for no, line in enumerate(sys.stdin, 1):
        if line.split("#", 1)[0].strip():
            yield no, line


class _Stdin:
    """Standard input as a table: its header (detected as in data files, or --header /
    --no-header), the columns chosen by --columns, and blocks of parsed rows."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.delimiter: str | None = args.delimiter
        self.lines = _stdin_lines()
        self.pending: list[tuple[int, str]] = []
        first = next(self.lines, None)
        self.names: list[str] | None = None
        self.columns: list[int] | None = None
        if first is None:
            return
        fields = split_fields(first[1], self.delimiter)
        self.pending.append(first)
        following = None
        if args.header is None and all(_is_number(x) for x in fields):
            second = next(self.lines, None)  # pandas' numbered header is told by the line after it
            if second is not None:
                self.pending.append(second)
                following = split_fields(second[1], self.delimiter)
        is_header, names = first_line_is_header(fields, following, args.header, f"stdin: line {first[0]}")
        if is_header and names is not None:  # names as csv reads them (quoted delimiters, "#")
            fields = names = split_header(first[1], self.delimiter, f"stdin: line {first[0]}")
        if is_header:
            self.pending.pop(0)
        self.width = len(fields)
        if args.columns is not None:
            self.columns = column_indices("stdin", args.columns, names, len(fields))
        if names is not None:
            self.names = names if self.columns is None else [names[c] for c in self.columns]

    def blocks(self, rows: int) -> Iterator[tuple[int, np.ndarray]]:
        """(first line number, rows) blocks of up to ``rows`` lines, as soon as they arrive."""
        buffer: list[tuple[int, str]] = []
        for item in itertools.chain(self.pending, self.lines):
            buffer.append(item)
            if len(buffer) >= rows:
                yield buffer[0][0], self.parse(buffer)
                buffer = []
        if buffer:
            yield buffer[0][0], self.parse(buffer)

    def parse(self, lines: list[tuple[int, str]]) -> np.ndarray:
        out = []
        for no, line in lines:
            fields = split_fields(line, self.delimiter)
            if len(fields) != self.width:
                raise BadInput(f"stdin: line {no} has {len(fields)} fields but the first line has {self.width}")
            chosen = fields if self.columns is None else [fields[c] for c in self.columns]
            for j, x in enumerate(chosen):
                if not _is_number(x):
                    c = j if self.columns is None else self.columns[j]
                    raise BadInput(f"stdin: line {no}, column index {c}: {x!r} is not a number")
            out.append([float(x) for x in chosen])
        return np.asarray(out, dtype=np.float64)


def _is_number(field: str) -> bool:
    try:
        float(field)
    except ValueError:
        return False
    return True


def _watch_anytime(args: argparse.Namespace) -> int:
    """``drift watch --anytime``: bet on every row; one line when the wealth first reaches
    1 / alpha (the test then stops: its decision is final), or at the end the wealth
    reached; ``--save`` writes the test back with its state, for the next run."""
    test = _detector(args.detector, SequentialDriftTest)
    assert isinstance(test, SequentialDriftTest)
    stdin = _Stdin(args)
    try:
        check_feature_names(fitted_feature_names(test), stdin.names, owner="the test", what="stdin")
    except ValueError as err:
        raise BadInput(str(err)) from None
    rejected = test.rejection_time_ is not None
    for first, X in stdin.blocks(args.rows):
        if rejected:
            break
        if X.shape[1] != test.n_features_in_:
            raise BadInput(f"stdin line {first}: {X.shape[1]} columns but the reference has {test.n_features_in_}")
        t0 = test.t_
        try:
            res = test.update(X)
        except ValueError as err:
            raise BadInput(f"stdin lines from {first}: {err}") from None
        if res.reject and res.rejection_time is not None and res.rejection_time > t0:
            i = res.rejection_time - t0 - 1
            print(
                f"line {first + i}: drift (t = {res.rejection_time}, wealth {math.exp(res.log_wealth[i]):.4g} >= "
                f"1 / alpha' = {res.threshold:.4g}; kernel {res.kernel!r})",
                flush=True,
            )
            rejected = True
    if args.save:
        test.save(args.save)
    if not rejected:
        print(
            f"no drift: t = {test.t_}, wealth {math.exp(test.log_wealth_):.4g} < {test.threshold_:.4g} "
            f"(P(a false alarm ever) <= {test.alpha:g})",
            flush=True,
        )
    return EXIT_REJECTED if rejected else EXIT_OK


def cmd_drift_watch(args: argparse.Namespace) -> int:
    if args.anytime:
        if args.keep_going:
            raise BadInput("--keep-going does not apply to --anytime: a sequential test's rejection is final")
        return _watch_anytime(args)
    if args.save:
        raise BadInput("--save applies to --anytime (an online detector is saved by 'drift fit --online')")
    det = _detector(args.detector, OnlineDriftDetector)
    assert isinstance(det, OnlineDriftDetector)
    alarms = 0
    stdin = _Stdin(args)
    try:
        check_feature_names(fitted_feature_names(det), stdin.names, owner="the detector", what="stdin")
    except ValueError as err:
        raise BadInput(str(err)) from None
    for first, X in stdin.blocks(args.rows):
        if X.shape[1] != det.n_features_in_:
            raise BadInput(f"stdin line {first}: {X.shape[1]} columns but the reference has {det.n_features_in_}")
        try:
            res = det.update(X)
        except ValueError as err:
            raise BadInput(f"stdin lines from {first}: {err}") from None
        for i in np.flatnonzero(res.statistic > res.threshold):
            alarms += 1
            print(
                f"line {first + int(i)}: drift (t = {int(res.time[i])}, statistic {res.statistic[i]:.4g} > "
                f"threshold {res.threshold[i]:.4g})",
                flush=True,
            )
            if not args.keep_going:
                return EXIT_REJECTED
    return EXIT_REJECTED if alarms else EXIT_OK


def _nonnegative_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected an integer >= 0, got {text!r}")
    return value


def _default(cls: type, name: str) -> object:
    """The default of a parameter of ``cls`` (its signature's: the help never restates it)."""
    return inspect.signature(cls).parameters[name].default


def add_drift_commands(
    add: object,
    files: argparse.ArgumentParser,
    threads: argparse.ArgumentParser,
    out: argparse.ArgumentParser,
    positive_int: object,
    probability: object,
    column_list: object,
    landmarks: object,
) -> None:
    """The 'drift' command and its three actions, on the main parser's ``add``."""
    p = add("drift", "drift detection against a reference file: fit, test batches, watch a stream", [])  # type: ignore[operator]
    actions = p.add_subparsers(dest="action", metavar="ACTION", parser_class=type(p))
    actions.required = True

    f = actions.add_parser(
        "fit",
        help="fit a detector on a reference file and save it (.npz)",
        description="fit a detector on a reference file and save it (.npz)",
        parents=[files, threads, out],
    )
    f.add_argument("reference", help="reference data file (n rows, d columns)")
    f.add_argument("-o", "--output", required=True, help="where to save the detector (.npz)")
    f.add_argument(
        "--kernel",
        default=None,
        help="one kernel by name (default: the default test of 'test'; --online: "
        f"{_default(OnlineDriftDetector, 'kernel')})",
    )
    f.add_argument(
        "--n-landmarks",
        type=landmarks,
        default=None,
        help=f"m, drawn from the N reference rows outside the held-out ones (default: "
        f"{batch.DEFAULT_LANDMARKS.describe('those N rows')}; --online: {online.DEFAULT_LANDMARKS.bounds()}); "
        "'auto': the certified landmark search on those rows, for the narrowest kernel",
    )
    f.add_argument(
        "--sampler",
        choices=SAMPLER_NAMES,
        default=None,
        help="how the landmarks are chosen from those rows (default: uniform without replacement)",
    )
    f.add_argument(
        "--statistic",
        choices=tuple(batch.STATISTICS),
        default=None,
        help=f"the per-batch statistic (default: {batch.DEFAULT_STATISTIC}); not with --online",
    )
    f.add_argument(
        "--n-permutations",
        "--permutations",
        dest="permutations",
        type=positive_int,
        default=N_PERMUTATIONS,
        help=f"per batch (default: {N_PERMUTATIONS})",
    )
    f.add_argument(
        "--n-holdout",
        "--holdout",
        dest="holdout",
        type=positive_int,
        default=DRIFT_N_HOLDOUT,
        help=f"reference rows permuted against each batch, at most half the reference (default: {DRIFT_N_HOLDOUT})",
    )
    f.add_argument("--alpha", type=probability, default=ALPHA, help=f"level (default: {ALPHA})")
    f.add_argument(
        "--standardize",
        choices=STANDARDIZE_CHOICES,
        default="none",
        help="centre and scale every column with the reference's statistics, saved with the detector and "
        "applied to every batch or streamed row: 'standard' (mean, standard deviation) or 'robust' "
        "(median, IQR / 1.349); default: none",
    )
    f.add_argument("--online", action="store_true", help="an online detector (for 'watch')")
    f.add_argument(
        "--anytime",
        action="store_true",
        help="a sequential test by betting (for 'watch --anytime'): P(a false alarm ever) <= --alpha, however "
        "long the stream and however often it is looked at",
    )
    f.add_argument(
        "--paired",
        type=_nonnegative_int,
        default=None,
        help="--anytime: reference rows held out, each paired once with a streamed row (exact bets); default: "
        f"a quarter of the reference, at most {POOL}; 0: margin bets only",
    )
    f.add_argument("--ert", type=float, default=None, help="online: expected rows between false alarms")
    f.add_argument(
        "--window-size",
        "--window",
        dest="window",
        type=positive_int,
        default=None,
        help="online: rows in the sliding window",
    )
    f.add_argument(
        "--random-state", "--seed", dest="seed", type=int, default=0, help="seed of every random draw (default: 0)"
    )
    f.set_defaults(run=cmd_drift_fit)

    t = actions.add_parser(
        "test",
        help="test data files against a saved detector; exit 1 if any drifts",
        description="test data files against a saved detector; exit 1 if any drifts",
        parents=[files, out],
    )
    t.add_argument("detector", help="a detector saved by 'drift fit' (.npz)")
    t.add_argument("batches", nargs="+", help="data files, one batch each")
    t.set_defaults(run=cmd_drift_test)

    w = actions.add_parser(
        "watch",
        help="read rows from standard input (CSV, a header line allowed), one line per alarm; exit 1 if any",
        description="read rows from standard input (CSV, a header line allowed), one line per alarm; exit 1 if any",
    )
    w.add_argument(
        "detector",
        help="an online detector saved by 'drift fit --online', or with --anytime 'drift fit --anytime' (.npz)",
    )
    w.add_argument("--delimiter", default=",", help="field separator (default: ',')")
    w.add_argument(
        "--columns",
        type=column_list,
        default=None,
        help="comma-separated columns to use, in this order: names from the header line, or indices counted "
        "from 0 (default: all)",
    )
    w.add_argument(
        "--header",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="whether the first line is a header (default: detected, as in data files: a line with a field "
        "that is not a number); its names are checked against the reference's",
    )
    w.add_argument("--rows", type=positive_int, default=1, help="rows read before each update (default: 1)")
    w.add_argument("--keep-going", action="store_true", help="report every alarm (default: stop at the first)")
    w.add_argument(
        "--anytime",
        action="store_true",
        help="the detector is a sequential test ('drift fit --anytime'): one line when its wealth reaches "
        "1 / alpha, then stop; else the wealth reached",
    )
    w.add_argument("--save", default=None, help="--anytime: write the test with its state here at the end (.npz)")
    w.set_defaults(run=cmd_drift_watch)


__all__ = ["add_drift_commands", "cmd_drift_fit", "cmd_drift_test", "cmd_drift_watch"]
