"""Helpers of the paper's figures (bench/figure1.py, bench/figure2.py) and of
bench/samplers.py: m grid, CSV rows, summaries, plots."""

from __future__ import annotations

import csv
import math
import shutil
from pathlib import Path

import numpy as np

from bench.harness import OUT, ROOT

__all__ = [
    "COLORS",
    "DOCS_FIGURES",
    "LABELS",
    "OUT",
    "CsvRows",
    "m_grid",
    "plot_figure",
    "plot_panels",
    "pyplot",
    "save_figure",
    "smallest_m_cells",
    "smallest_m_within",
    "sqrt_log",
    "stats",
]

DOCS_FIGURES = ROOT / "docs" / "figures"

COLORS = {
    "empirical": "C0",
    "uniform": "C1",
    "cortes-scott": "C2",
    "dpp-greedy": "C3",
    "greedy-cholesky": "C4",
    "rpcholesky": "C5",
    "block-rpcholesky": "C6",
    "herding": "C7",
    "rls": "C8",
    "uniform-without-replacement": "C9",
}
LABELS = {"empirical": "empirical (all n points)", "uniform": "Nyström (uniform landmarks)"}


def m_grid(lo: int, hi: int, points: int) -> list[int]:
    """`points` integers spread geometrically over [lo, hi] (duplicates dropped)."""
    return sorted({round(float(v)) for v in np.geomspace(lo, hi, points)})


def sqrt_log(n: int) -> int:
    """m = ceil(sqrt(n) log sqrt(n)) (the paper's rate in the exponential-decay setting)."""
    r = math.sqrt(n)
    return math.ceil(r * math.log(r))


class CsvRows:
    """The rows of a run: each written to a CSV file (columns `fields`) as it comes and
    kept in `.rows`. A context manager; `flush()` after each trial."""

    def __init__(self, path: Path, fields: list[str]):
        self.path, self.fields, self.rows = path, fields, []

    def __enter__(self):
        self._fh = open(self.path, "w", newline="")
        self._writer = csv.DictWriter(self._fh, self.fields)
        self._writer.writeheader()
        return self

    def add(self, **row) -> None:
        self._writer.writerow(row)
        self.rows.append(row)

    def flush(self) -> None:
        self._fh.flush()

    def __exit__(self, *exc) -> None:
        self._fh.close()


def stats(values: list[float]) -> tuple[float, float, float]:
    """Mean, 5th and 95th percentiles."""
    a = np.asarray(values, dtype=float)
    return float(a.mean()), float(np.percentile(a, 5)), float(np.percentile(a, 95))


def smallest_m_within(
    rows: list[dict], key: str, value, policy: str, target: float, tol: float = 0.10
) -> tuple[int | None, int]:
    """Smallest grid m whose mean error is <= (1 + tol) * target; (None, max m) if none."""
    sub = [r for r in rows if r[key] == value and r["policy"] == policy]
    ms = sorted({r["m"] for r in sub})
    for m in ms:
        if np.mean([r["error"] for r in sub if r["m"] == m]) <= (1.0 + tol) * target:
            return m, ms[-1]
    return None, (ms[-1] if ms else 0)


def smallest_m_cells(rows: list[dict], key: str, value, policy: str, target: float) -> tuple[str, str]:
    """The summary cells 'smallest m within 10%' and 'error at that m' (mean) of policy at
    key == value: ('> max m', '–') if no grid m is within 10% of target."""
    m, m_max = smallest_m_within(rows, key, value, policy, target)
    if m is None:
        return f"> {m_max}", "–"
    at = [r["error"] for r in rows if r[key] == value and r["policy"] == policy and r["m"] == m]
    return str(m), f"{np.mean(at):.3e}"


def plot_panels(ax, rows: list[dict], key: str, value, policies: list[str], n_for_rate: int, title: str) -> None:
    """One panel in the paper's layout: error vs m, mean line + 5/95 percentile band."""
    emp = [r["error"] for r in rows if r[key] == value and r["policy"] == "empirical"]
    all_ms = sorted({r["m"] for r in rows if r[key] == value and r["policy"] != "empirical"})
    if emp and all_ms:
        mean, lo, hi = stats(emp)
        x = [all_ms[0], all_ms[-1]]
        ax.plot(x, [mean, mean], color=COLORS["empirical"], lw=2, label=f"{LABELS['empirical']} ({len(emp)} trials)")
        ax.fill_between(x, [lo, lo], [hi, hi], color=COLORS["empirical"], alpha=0.2)
    for policy in policies:
        sub = [r for r in rows if r[key] == value and r["policy"] == policy]
        ms = sorted({r["m"] for r in sub})
        if not ms:
            continue
        s = np.array([stats([r["error"] for r in sub if r["m"] == m]) for m in ms])
        trials = len({r["trial"] for r in sub})
        color = COLORS.get(policy)
        ax.plot(ms, s[:, 0], "o-", ms=3, color=color, label=f"{LABELS.get(policy, policy)} ({trials} trials)")
        ax.fill_between(ms, s[:, 1], s[:, 2], color=color, alpha=0.2)
    rate = sqrt_log(n_for_rate)
    ax.axvline(rate, color="k", ls=":", lw=1, label=r"$m=\sqrt{n}\,\log\sqrt{n}$" + f" = {rate}")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("number of landmarks m")
    ax.set_ylabel(r"$\|\mu - \hat\mu\|$ (exact)")
    ax.set_title(title)
    ax.grid(True, which="both", alpha=0.3)


def pyplot():
    """matplotlib.pyplot on the Agg backend (files only; imported when first needed)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot_figure(
    rows: list[dict],
    key: str,
    panels: list[tuple],
    panel_size: tuple[float, float],
    suptitle: str,
    name: str,
    out: Path,
) -> tuple[Path, Path]:
    """One row of plot_panels, `panels` = [(value, policies, n_for_rate, title), ...], with
    the legend on the first; saved by save_figure (paths printed). Returns (PNG, copy)."""
    plt = pyplot()
    width, height = panel_size
    fig, axes = plt.subplots(1, len(panels), figsize=(width * len(panels), height), squeeze=False)
    for ax, (value, policies, n_for_rate, title) in zip(axes[0], panels):
        plot_panels(ax, rows, key, value, policies, n_for_rate, title)
    axes[0][0].legend(fontsize=7, loc="lower left")
    fig.suptitle(suptitle, fontsize=10)
    fig.tight_layout()
    png, copy = save_figure(fig, name, out)
    print(f"\nFigure: {png} (copy: {copy})")
    return png, copy


def save_figure(fig, name: str, out: Path) -> tuple[Path, Path]:
    """PNG under out/ and a copy under docs/figures/ (checked < 300 kB)."""
    out.mkdir(parents=True, exist_ok=True)
    path = out / name
    fig.savefig(path, dpi=100)
    DOCS_FIGURES.mkdir(parents=True, exist_ok=True)
    copy = DOCS_FIGURES / name
    shutil.copyfile(path, copy)
    size = copy.stat().st_size
    if size > 300_000:
        print(f"warning: {copy} is {size / 1e3:.0f} kB (> 300 kB)")
    return path, copy
