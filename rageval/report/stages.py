"""Stage by stage: what each stage of a hybrid or reranked run retrieved, how long it took, and what
fusion or reranking added over its input (the ``stages`` block of report.json).

For every stage: ``depth`` (how deep the next stage reads its ranking; the run's search depth for
the final stage) and ``recall@depth`` at that depth (for a reranker's input, the ceiling the
reranker can reach: it only reorders), the stage metrics' means over all queries, the stage's
seconds in the batch search and its single-query latency p50/p95. For every stage made from
others (fusion from dense and lexical, rerank from its candidates), the lift of each metric over
each input: mean after - mean before, per-query wins/ties/losses and the two-sided paired
randomization test (the gate's test, seeded).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from rageval.report.table import Column, Table
from rageval.scoring.stats import paired_randomization_test

# Differences this small are ties (float noise between two scorings of equal rankings).
TIE = 1e-9


@dataclass(frozen=True)
class StageScores:
    """One stage's numbers before summarising: per-query metric values in query order."""

    name: str
    inputs: tuple[str, ...]
    depth: int
    recall_at_depth: np.ndarray
    values: Mapping[str, np.ndarray]
    seconds: float
    latency_ms: Sequence[float] = ()


def _mean(v: np.ndarray) -> float | None:
    v = np.asarray(v, dtype=float)
    v = v[~np.isnan(v)]
    return float(v.mean()) if v.size else None


def lift(
    before: np.ndarray, after: np.ndarray, resamples: int = 10_000
) -> dict[str, float | int | None]:
    """Mean after - before over the queries both define, wins/ties/losses and the paired test."""
    a, b = np.asarray(after, dtype=float), np.asarray(before, dtype=float)
    keep = ~(np.isnan(a) | np.isnan(b))
    a, b = a[keep], b[keep]
    if not a.size:
        return {"before": None, "after": None, "delta": None, "p_value": None}
    d = a - b
    return {
        "before": float(b.mean()),
        "after": float(a.mean()),
        "delta": float(d.mean()),
        "p_value": paired_randomization_test(a, b, n_resamples=resamples, seed=0),
        "wins": int((d > TIE).sum()),
        "ties": int((np.abs(d) <= TIE).sum()),
        "losses": int((d < -TIE).sum()),
    }


def summarise_stages(
    stages: Sequence[StageScores], metrics: Sequence[str], resamples: int = 10_000
) -> dict[str, Any]:
    """The ``stages`` block: per-stage rows in the order the stages ran, then the lifts."""
    by_name = {s.name: s for s in stages}
    rows: dict[str, dict[str, Any]] = {}
    for s in stages:
        row: dict[str, Any] = {
            "inputs": list(s.inputs),
            "depth": s.depth,
            "recall@depth": _mean(s.recall_at_depth),
            "seconds": s.seconds,
        }
        if len(s.latency_ms):
            row["latency_p50_ms"] = float(np.percentile(s.latency_ms, 50))
            row["latency_p95_ms"] = float(np.percentile(s.latency_ms, 95))
        for m in metrics:
            if m in s.values:
                row[m] = _mean(s.values[m])
        rows[s.name] = row
    lifts = []
    for s in stages:
        for src in s.inputs:
            if src not in by_name:
                continue
            for m in metrics:
                if m in s.values and m in by_name[src].values:
                    lifts.append(
                        {
                            "stage": s.name,
                            "over": src,
                            "metric": m,
                            **lift(by_name[src].values[m], s.values[m], resamples),
                        }
                    )
    return {
        "order": [s.name for s in stages],
        "final": stages[-1].name if stages else None,
        "metrics": list(metrics),
        "stages": rows,
        "lift": lifts,
    }


def stages_table(block: Mapping[str, Any], width: int = 120) -> str:
    """The stage block as console lines: one row per stage, then the lifts of each stage over
    each input, wrapped at whole metrics to ``width`` columns."""
    if not block or not block.get("order"):
        return ""
    metrics = list(block.get("metrics", []))
    head = ["depth", "recall@depth", *metrics, "p50 ms", "p95 ms", "batch s"]
    table = Table([Column("stage"), *[Column(h, "right") for h in head]])
    for name in block["order"]:
        r = block["stages"][name]
        cells = [name, str(r["depth"]), _f(r.get("recall@depth"))]
        cells += [_f(r.get(m)) for m in metrics]
        cells += [_f(r.get("latency_p50_ms"), 2), _f(r.get("latency_p95_ms"), 2)]
        cells.append(_f(r.get("seconds"), 2))
        table.add_row(*cells)
    lines = table.console(rule=True).split("\n")
    by_pair: dict[tuple[str, str], list[str]] = {}
    for x in block.get("lift", []):
        if x.get("delta") is not None:
            by_pair.setdefault((x["stage"], x["over"]), []).append(
                f"{x['metric']} {x['delta']:+.4f} (p = {x['p_value']:.2g})"
            )
    for (stage, over), parts in by_pair.items():
        lead = f"{stage} over {over}: "
        line = lead + parts[0]
        for part in parts[1:]:  # room kept for the "," that ends a full line
            if len(line) + len(f", {part},") <= width:
                line += f", {part}"
            else:
                lines.append(line + ",")
                line = " " * len(lead) + part
        lines.append(line)
    return "stage by stage:\n" + "\n".join(lines)


def _f(x: Any, digits: int = 4) -> str:
    return "" if x is None else f"{x:.{digits}f}"
