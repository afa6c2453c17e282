"""Plots of a report: the metric@k curve."""

from __future__ import annotations

from pathlib import Path

from rageval.report.eval_report import HEADLINE


def curve_png(report, path: Path) -> Path:
    """Each headline metric against k, as a PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4), dpi=100)
    for m in HEADLINE:
        pts = [(k, report.metrics.get(f"{m}@{k}")) for k in report.ks]
        pts = [(k, v) for k, v in pts if v is not None]
        if pts:
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=m)
    ax.set_xlabel("k")
    ax.set_ylabel("mean over queries")
    ax.set_ylim(0, 1.02)
    ax.set_xticks(report.ks)
    ax.grid(alpha=0.3)
    ax.legend(loc="best", fontsize=8)
    ax.set_title(f"metric@k ({report.counts.get('queries', '?')} queries)")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)
    return path
