"""The sweep's per-slice view of the deciding metric: each job's mean and 95% CI on every slice
(the fields and pooling of the jobs' ``slices`` config), the best job per slice marked, and the
slices on which the overall best job is beaten: where a configuration wins and where it loses.
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from rageval.report.fit import fit_table, job_table
from rageval.report.table import Cell, Column, Strong, Table, mean_ci
from rageval.scoring.slices import slice_table
from rageval.scoring.spec import MetricSpec

CONSOLE_WIDTH = 120


@dataclass
class SweepSlices:
    """``cells[job][slice] = (n, mean, low, high)`` for the deciding ``metric``."""

    metric: str
    fields: list[str]
    min_size: int
    names: list[str]
    cells: dict[int, dict[str, tuple[int, float, float, float]]]
    values: dict[int, dict[str, str]]  # job -> its swept values
    keys: list[str]
    best_job: int | None
    pooled: dict[str, list[str]] = field(default_factory=dict)

    def n_of(self, name: str) -> str:
        """The slice's query count, or ``n varies`` when the jobs' golden sets differ."""
        ns = {c[name][0] for c in self.cells.values() if name in c}
        return f"n={ns.pop()}" if len(ns) == 1 else "n varies"

    def best_per_slice(self) -> dict[str, int]:
        """Slice -> the job with the best mean there (highest; lowest for a cost)."""
        sign = 1.0 if MetricSpec.parse(self.metric).higher_is_better else -1.0
        out = {}
        for name in self.names:
            scored = [
                (sign * c[name][1], -job)
                for job, c in self.cells.items()
                if name in c and not math.isnan(c[name][1])
            ]
            if scored:
                out[name] = -max(scored)[1]
        return out

    def beaten(self) -> list[str]:
        """One line per slice where the overall best job is not the best."""
        if self.best_job is None or self.best_job not in self.cells:
            return []
        lines = []
        mine = self.cells[self.best_job]
        for name, job in self.best_per_slice().items():
            if job == self.best_job or name not in mine:
                continue
            a, b = self.cells[job][name], mine[name]
            overlap = a[2] <= b[3] and b[2] <= a[3]
            lines.append(
                f"on {name} job {job} leads: {_fmt(a)} against the best "
                f"job {self.best_job}'s {_fmt(b)}" + (" (the CIs overlap)" if overlap else "")
            )
        return lines

    def markdown(self) -> str:
        """The section of leaderboard.md: a row per job, a column per slice (mean [95% CI]), the
        best per slice in bold, then where the overall best job is beaten."""
        best = self.best_per_slice()
        head = ["job", *self.keys, *[f"{s} ({self.n_of(s)})" for s in self.names]]
        lines = [
            f"### By slice: {self.metric}",
            "",
            f"Slices by {', '.join(self.fields)} (95% bootstrap CIs; slices under "
            f"{self.min_size} queries pooled into <field>=other); the best job per slice in bold.",
            "",
        ]
        table = Table([Column(h) for h in head])
        for job, cells in self.cells.items():
            row: list[Cell] = [str(job), *[self.values[job].get(k, "") for k in self.keys]]
            for name in self.names:
                c = cells.get(name)
                text = "" if c is None or math.isnan(c[1]) else _fmt(c)
                row.append(Strong(text) if text and best.get(name) == job else text)
            table.add_row(*row)
        lines.append(table.markdown(escape_lt=False).rstrip("\n"))
        lines += [""] + [f"- {line}" for line in self.beaten()]
        for name, values in self.pooled.items():
            lines.append(f"- {name} pools: {', '.join(values)}")
        return "\n".join(lines).rstrip() + "\n"

    def console(self, width: int = CONSOLE_WIDTH) -> str:
        """Job by slice means that fit ``width`` columns (leaderboard.md has the CIs and all
        slices); the best per slice marked with ``*``."""
        best = self.best_per_slice()

        def build(shown: list[str]) -> Table:
            table = job_table(self.keys)
            table.columns += [Column(f"{name}\n{self.n_of(name)}", "right") for name in shown]
            for job, cells in self.cells.items():
                row = [str(job), *[self.values[job].get(k, "") for k in self.keys]]
                for name in shown:
                    c = cells.get(name)
                    text = "" if c is None or math.isnan(c[1]) else f"{c[1]:.3f}"
                    row.append(text + ("*" if text and best.get(name) == job else " "))
                table.add_row(*row)
            return table

        body, dropped = fit_table(build, self.names, self.names[::-1], width)
        shown = [n for n in self.names if n not in dropped]
        more = len(self.names) - len(shown)
        head = f"By slice: {self.metric} (* best per slice" + (
            f"; {more} more slices in leaderboard.md)" if more else ")"
        )
        notes = [textwrap.fill(line, width=width) for line in self.beaten()]
        return "\n".join([head, body, *notes])


def _fmt(c: tuple[int, float, float, float]) -> str:
    return mean_ci(c[1], c[2], c[3])


def sweep_slices(
    jobs: Sequence[Any], metric: str, keys: Sequence[str], best_job: int | None
) -> SweepSlices | None:
    """The per-slice view of the finished ``jobs`` (leaderboard Jobs); None when their reports
    carry no slice config (written before slices) or no slice."""
    ok = [j for j in jobs if j.status == "ok"]
    block = next((j.report.get("slices") for j in ok if _is_block(j.report.get("slices"))), None)
    if block is None:
        return None
    fields, min_size = list(block["fields"]), int(block["min_slice_size"])
    names: list[str] = []
    cells: dict[int, dict[str, tuple[int, float, float, float]]] = {}
    pooled: dict[str, list[str]] = {}
    for j in ok:
        rows = _rows_for(j.report, metric, fields, min_size)
        cells[j.job] = {}
        for r in rows:
            if r["slice"] not in names:
                names.append(r["slice"])
            if r.get("pooled"):
                pooled.setdefault(r["slice"], list(r["pooled"]))
            lo, hi = r["ci"].get(metric, [math.nan, math.nan])
            cells[j.job][r["slice"]] = (int(r["n"]), _f(r["metrics"].get(metric)), _f(lo), _f(hi))
    if not names:
        return None
    return SweepSlices(
        metric,
        fields,
        min_size,
        names,
        cells,
        {j.job: j.values for j in ok},
        list(keys),
        best_job,
        pooled,
    )


def _is_block(block: Any) -> bool:
    return isinstance(block, Mapping) and "fields" in block and "rows" in block


def _rows_for(
    report: Mapping[str, Any], metric: str, fields: list[str], min_size: int
) -> list[dict[str, Any]]:
    """The job's slice rows holding ``metric``: report.json's when it sliced that metric with the
    same fields, else computed from its per-query rows."""
    block = report.get("slices")
    if (
        _is_block(block)
        and block["fields"] == fields
        and block.get("min_slice_size") == min_size
        and metric in (block.get("metrics") or [])
    ):
        return list(block["rows"])
    return slice_table(report.get("per_query") or [], fields, [metric], min_size)


def _f(x: Any) -> float:
    return math.nan if x is None else float(x)
