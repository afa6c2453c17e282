"""The Pareto front of a sweep: the jobs no other job beats on both the deciding metric and a cost.

Job B *dominates* job A when B is at least as good on both (metric >= A's, cost <= A's) and
strictly better on at least one. A dominated job is not on the front, also when it ties on one
axis: the same metric at a higher cost, or the same cost with a lower metric (weakly dominated).
Jobs equal on both are all on the front (neither beats the other). Failed jobs and jobs that do
not report the metric or the cost take no part. Means are compared as they are; the plot shows
each job's 95% CI so a user sees when the front is within noise.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Point:
    """One job on the quality/cost plane (``quality``: higher is better, ``cost``: lower)."""

    job: int
    quality: float
    cost: float


def dominates(a: Point, b: Point) -> bool:
    """True when ``a`` is at least as good as ``b`` on both axes and better on one."""
    return (
        a.quality >= b.quality and a.cost <= b.cost and (a.quality > b.quality or a.cost < b.cost)
    )


def pareto_front(points: Sequence[Point]) -> list[int]:
    """The jobs on the front, by cost ascending (then job number); NaN points are left out."""
    pts = [p for p in points if not (math.isnan(p.quality) or math.isnan(p.cost))]
    front = [p for p in pts if not any(dominates(q, p) for q in pts)]
    return [p.job for p in sorted(front, key=lambda p: (p.cost, -p.quality, p.job))]


def pareto_png(board, path: Path) -> Path | None:
    """The deciding metric (mean and 95% CI) against the Pareto cost for every finished job of
    ``board`` (a rageval.report.leaderboard.Leaderboard), the front joined, each point labelled by
    its swept values. None (nothing written) when fewer than two jobs have both numbers."""
    from rageval.report.costs import COSTS
    from rageval.report.plots import agg_figure

    spec = COSTS[board.pareto_cost]
    rows = _plotted(board)
    if len(rows) < 2:
        return None
    front = set(board.front)
    fig = agg_figure((8, 5.2), 110)
    ax = fig.subplots()
    _draw_points(ax, rows, front)
    labels = _point_labels(board, rows, front)
    _dress_axes(ax, board, spec)
    fig.tight_layout()
    _place_labels(ax, fig, labels)  # after the layout: boxes are measured where they end up
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    return path


def _plotted(board) -> list[tuple]:
    """(job, cost, mean, CI low, CI high) of every finished job with both numbers."""
    rows = []
    for j in board.jobs:
        if j.status != "ok":
            continue
        q, c = j.metrics.get(board.metric), j.costs.get(board.pareto_cost)
        if q is None or c is None or math.isnan(q) or math.isnan(c):
            continue
        lo, hi = (j.report.get("ci") or {}).get(board.metric) or (q, q)
        rows.append((j, float(c), float(q), float(lo), float(hi)))
    return rows


def _draw_points(ax, rows: list[tuple], front: set[int]) -> None:
    """The points with their CIs (the front's in red, the dominated in grey), the front joined
    as steps, and a log cost axis when the costs span more than 30 times."""
    for on in (False, True):
        part = [r for r in rows if (r[0].job in front) == on]
        if not part:
            continue
        ax.errorbar(
            [r[1] for r in part],
            [r[2] for r in part],
            yerr=[[r[2] - r[3] for r in part], [r[4] - r[2] for r in part]],
            fmt="o",
            color="#c0392b" if on else "#7f8c8d",
            ecolor="#e6b0aa" if on else "#d5d8dc",
            elinewidth=2,
            capsize=3,
            markersize=7 if on else 5,
            zorder=3 if on else 2,
            label="on the Pareto front" if on else "dominated",
        )
    line = sorted((r for r in rows if r[0].job in front), key=lambda r: (r[1], r[2]))
    if len(line) > 1:
        ax.plot(
            [r[1] for r in line],
            [r[2] for r in line],
            color="#c0392b",
            linewidth=1.5,
            drawstyle="steps-post",
            zorder=1,
        )
    costs = [r[1] for r in rows]
    positive = min(costs) > 0
    if positive and max(costs) / min(costs) > 30:
        ax.set_xscale("log")


def _point_labels(
    board, rows: list[tuple], front: set[int]
) -> list[tuple[str, float, float, bool]]:
    """Each point's label (its swept values, else its job number; the best job marked), its
    position, and whether it is on the front."""
    labels = []
    for j, c, q, _, _ in rows:
        label = " / ".join(j.values.get(k, "") for k in board.keys) or f"job {j.job}"
        if board.verdict.get(j.job) == "best":
            label += " (best)"
        labels.append((label, c, q, j.job in front))
    return labels


def _dress_axes(ax, board, spec) -> None:
    """Axis labels (the cost's meaning and unit; bytes as kB / MB on the ticks), the title
    naming the label fields, grid, legend and margins."""
    # bytes as kB / MB on the ticks (not 1e6 times a raw count); the unit then goes unsaid
    unit = {"s": "seconds", "ms": "ms", "bytes": "", "count": "", "tokens": "tokens"}
    if spec.unit == "bytes":
        from matplotlib.ticker import FuncFormatter, NullFormatter

        from rageval.report.costs import human_bytes

        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: human_bytes(v) if v > 0 else "0"))
        ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_xlabel(
        f"{board.pareto_cost} ({spec.meaning}{', ' + unit[spec.unit] if unit[spec.unit] else ''})"
    )
    ax.set_ylabel(f"{board.metric} (mean, 95% CI)")
    keys = board.keys
    title = f"{board.metric} vs {board.pareto_cost}: Pareto front of {len(board.jobs)} jobs"
    ax.set_title(title + (f"\nlabels: {' / '.join(keys)}" if keys else ""), fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(loc="lower right", fontsize=8)
    ax.margins(x=0.15, y=0.1)


def _spots() -> list[tuple[float, float, str]]:
    """Where a label may sit around its point (offset in points, horizontal alignment): nearest
    first, right before left, above before below."""
    import math as m

    out = []
    for r in (10, 24, 40, 58):
        for deg in (25, -25, 155, -155, 70, -70, 110, -110):
            dx, dy = r * m.cos(m.radians(deg)), r * m.sin(m.radians(deg))
            out.append((dx, dy, "left" if dx > 2 else "right" if dx < -2 else "center"))
    return out


def _place_labels(ax, fig, labels) -> None:
    """Each label at the nearest spot around its point where it covers no point and no label
    placed before (greedy, highest points first; when every spot is taken, the one covering the
    least), joined to its point by a thin line."""
    from matplotlib.transforms import Bbox

    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    points = [ax.transData.transform((x, y)) for _, x, y, _ in labels]
    placed: list = [Bbox.from_bounds(px - 6, py - 6, 12, 12) for px, py in points]
    frame = ax.get_window_extent(renderer)
    for label, x, y, on in sorted(labels, key=lambda t: -t[2]):
        best = None
        for dx, dy, ha in _spots():
            text = ax.annotate(
                label,
                (x, y),
                textcoords="offset points",
                xytext=(dx, dy),
                ha=ha,
                va="center",
                fontsize=8.5,
                color="#2c3e50" if on else "#566573",
                arrowprops={"arrowstyle": "-", "color": "#aab7b8", "lw": 0.6, "shrinkB": 5},
            )
            box = text.get_window_extent(renderer).expanded(1.04, 1.25)
            clash = sum(_area(box, b) for b in placed)
            clash += box.width * box.height - _area(box, frame)  # outside the axes
            if best is None or clash < best[0]:
                if best is not None:
                    best[1].remove()
                best = (clash, text, box)
            else:
                text.remove()
            if clash == 0:
                break
        placed.append(best[2])


def _area(a, b) -> float:
    w = min(a.x1, b.x1) - max(a.x0, b.x0)
    h = min(a.y1, b.y1) - max(a.y0, b.y0)
    return w * h if w > 0 and h > 0 else 0.0
