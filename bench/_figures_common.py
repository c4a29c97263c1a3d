"""Shared helpers of bench/figure1.py and bench/figure2.py: m grid, summaries, plots."""

from __future__ import annotations

import math
import shutil
from pathlib import Path

import numpy as np

OUT = Path(__file__).parent / "out"
DOCS_FIGURES = Path(__file__).resolve().parent.parent / "docs" / "figures"

COLORS = {"empirical": "C0", "uniform": "C1", "cortes-scott": "C2", "dpp-greedy": "C3",
          "greedy-cholesky": "C4", "rpcholesky": "C5", "block-rpcholesky": "C6",
          "herding": "C7", "rls": "C8", "uniform-without-replacement": "C9"}
LABELS = {"empirical": "empirical (all n points)", "uniform": "Nyström (uniform landmarks)"}


def m_grid(lo: int, hi: int, points: int) -> list[int]:
    """`points` integers spread geometrically over [lo, hi] (duplicates dropped)."""
    return sorted({int(round(v)) for v in np.geomspace(lo, hi, points)})


def sqrt_log(n: int) -> int:
    """m = ceil(sqrt(n) log sqrt(n)) (the paper's rate in the exponential-decay setting)."""
    r = math.sqrt(n)
    return int(math.ceil(r * math.log(r)))


def stats(values: list[float]) -> tuple[float, float, float]:
    """Mean, 5th and 95th percentiles."""
    a = np.asarray(values, dtype=float)
    return float(a.mean()), float(np.percentile(a, 5)), float(np.percentile(a, 95))


def smallest_m_within(rows: list[dict], key: str, value, policy: str, target: float,
                      tol: float = 0.10) -> tuple[int | None, int]:
    """Smallest grid m whose mean error is <= (1 + tol) * target; (None, max m) if none."""
    sub = [r for r in rows if r[key] == value and r["policy"] == policy]
    ms = sorted({r["m"] for r in sub})
    for m in ms:
        if np.mean([r["error"] for r in sub if r["m"] == m]) <= (1.0 + tol) * target:
            return m, ms[-1]
    return None, (ms[-1] if ms else 0)


def plot_panels(ax, rows: list[dict], key: str, value, policies: list[str], n_for_rate: int,
                title: str) -> None:
    """One panel in the paper's layout: error vs m, mean line + 5/95 percentile band."""
    emp = [r["error"] for r in rows if r[key] == value and r["policy"] == "empirical"]
    all_ms = sorted({r["m"] for r in rows if r[key] == value and r["policy"] != "empirical"})
    if emp and all_ms:
        mean, lo, hi = stats(emp)
        x = [all_ms[0], all_ms[-1]]
        ax.plot(x, [mean, mean], color=COLORS["empirical"], lw=2,
                label=f"{LABELS['empirical']} ({len(emp)} trials)")
        ax.fill_between(x, [lo, lo], [hi, hi], color=COLORS["empirical"], alpha=0.2)
    for policy in policies:
        sub = [r for r in rows if r[key] == value and r["policy"] == policy]
        ms = sorted({r["m"] for r in sub})
        if not ms:
            continue
        s = np.array([stats([r["error"] for r in sub if r["m"] == m]) for m in ms])
        trials = len({r["trial"] for r in sub})
        color = COLORS.get(policy)
        ax.plot(ms, s[:, 0], "o-", ms=3, color=color,
                label=f"{LABELS.get(policy, policy)} ({trials} trials)")
        ax.fill_between(ms, s[:, 1], s[:, 2], color=color, alpha=0.2)
    rate = sqrt_log(n_for_rate)
    ax.axvline(rate, color="k", ls=":", lw=1, label=r"$m=\sqrt{n}\,\log\sqrt{n}$" + f" = {rate}")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("number of landmarks m")
    ax.set_ylabel(r"$\|\mu - \hat\mu\|$ (exact)")
    ax.set_title(title)
    ax.grid(True, which="both", alpha=0.3)


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
