"""``rageval plan RUN --width W``: how many human-graded queries a ``labels=ppi`` evaluation
needs for intervals of width ``W``, from the judge's agreement measured on the run's human
sample (rageval.scoring.ppi.Moments), beside what the humans alone would need; the widths are
those of the run's interval (``ppi_interval``: Student-t by default, or z) or ``--interval``'s."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from rageval.errors import InputError
from rageval.report.ppi_report import recorded_interval
from rageval.report.table import Column, Table
from rageval.scoring.ppi import Moments, check_interval, human_queries_needed, ppi_width


@dataclass(frozen=True)
class PPIPlanRow:
    metric: str
    correlation: float  # human vs LLM per-query values on the sample
    n_human: int  # graded now
    width_now: float  # the PPI interval's width with them
    needed: int | None  # human-graded queries for the target width with PPI
    needed_human_only: int | None  # ... and without the LLM


@dataclass(frozen=True)
class PPIPlan:
    source: str
    queries: int
    width: float
    alpha: float
    rows: list[PPIPlanRow]
    interval: str = "t"  # t (Student-t) or z (normal), rageval.scoring.ppi

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "rows": [asdict(r) for r in self.rows]}

    def text(self) -> str:
        def count(n: int | None) -> str:
            return f"{n:,}" if n is not None else f"more than {self.queries - 1:,}"

        table = Table(
            [
                Column("metric"),
                Column("agreement r", "right"),
                Column("graded now", "right"),
                Column("width now", "right"),
                Column("graded for PPI", "right"),
                Column("graded, humans alone", "right"),
            ],
            title=f"{self.source}: human-graded queries for a {1 - self.alpha:.0%} "
            f"{KINDS[self.interval]} interval {self.width:g} wide over {self.queries:,} queries",
        )
        for r in self.rows:
            table.add_row(
                r.metric,
                f"{r.correlation:.2f}",
                str(r.n_human),
                f"{r.width_now:.4f}",
                count(r.needed),
                count(r.needed_human_only),
            )
        return table.console() + (
            "\nagreement r: the correlation of the metric per query under the people's and the "
            "LLM's labels on the human sample; the plan assumes the judge stays as measured"
        )


KINDS = {"t": "Student-t", "z": "normal (z)"}


def ppi_plan(
    source: str | Path,
    metrics: Sequence[str],
    width: float,
    alpha: float = 0.05,
    interval: str | None = None,
) -> PPIPlan:
    """The plan from a ``labels=ppi`` run folder, report.json or baseline, for ``interval``
    (``t`` or ``z``; None: the one the run used)."""
    from rageval.gate.baseline import load_report

    p = Path(source)
    report = load_report(p / "report.json" if p.is_dir() else p)
    block = (report.get("ppi") or {}).get("metrics") or {}
    if not block:
        raise InputError(
            "not a labels=ppi run: --width plans the human sample of one (run with labels=ppi "
            "first, on the human grades you have)",
            path=str(source),
        )
    interval = check_interval(interval) if interval is not None else recorded_interval(report)
    k = int(report["k"])
    wanted = list(metrics) or [m for m in (f"ndcg@{k}", f"recall@{k}") if m in block]
    rows = []
    per_query = report["per_query"]
    total = len(per_query)
    for m in wanted:
        if m not in block:
            raise InputError(
                f"metric {m!r} has no prediction-powered estimate here; one of {', '.join(block)}",
                path=str(source),
            )
        sampled = [r for r in per_query if r.get(f"human:{m}") is not None]
        moments = Moments.of(
            [r[f"human:{m}"] for r in sampled],
            [r[m] for r in sampled],
            [r[m] for r in per_query],
        )
        needed, alone = human_queries_needed(moments, width, total, alpha, interval)
        n = len(sampled)
        now = ppi_width(moments, n, total, alpha, interval)
        rows.append(PPIPlanRow(m, moments.correlation, n, now, needed, alone))
    return PPIPlan(str(source), total, width, alpha, rows, interval)
