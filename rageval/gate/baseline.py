"""The committed baseline and the regression gate.

A baseline is a report.json (same schema) promoted from a run, plus where it came from. ``compare``
pairs the current report with it query by query: a metric regresses when its mean drops by more
than its tolerance (absolute); each metric also gets a paired randomization test on the per-query
values (Holm-corrected across metrics), and the queries that lost their hit or whose first
relevant result fell furthest are listed. A golden set that changed since the baseline is its own
verdict: neither a pass nor a regression.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from rageval.errors import InputError
from rageval.formats.atomic import atomic_write_text
from rageval.scoring.spec import mlflow_key
from rageval.scoring.stats import holm, paired_randomization_test

PASS, REGRESSED, GOLDEN_CHANGED = "pass", "regressed", "golden_changed"


def load_report(path: str | Path) -> dict[str, Any]:
    """A report.json or baseline.json, checked for the keys the gate needs."""
    p = Path(path)
    if not p.is_file():
        raise InputError(
            "baseline not found; create one with `rageval promote RUN_ID`", path=str(p)
        )
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as err:
        raise InputError(f"not a valid report/baseline JSON file: {err}", path=str(p)) from None
    missing = (
        [k for k in ("metrics", "per_query", "digests", "k") if k not in data]
        if isinstance(data, dict)
        else ["metrics"]
    )
    if missing:
        raise InputError(f"not a rageval report: missing {', '.join(missing)}", path=str(p))
    return data


def write_baseline(report: dict[str, Any], path: str | Path, source: dict[str, Any]) -> Path:
    """Write ``report`` as the baseline at ``path``, atomically; ``source`` says where it came from."""
    data = {**report, "promoted_from": source}
    atomic_write_text(path, json.dumps(data, indent=2) + "\n")
    return Path(path)


@dataclass
class MetricRow:
    metric: str
    baseline: float
    current: float
    delta: float
    tolerance: float
    p_value: float
    verdict: str  # "regressed", "improved", "ok"


@dataclass
class Comparison:
    status: str
    rows: list[MetricRow]
    lost_hits: list[dict[str, Any]] = field(default_factory=list)
    gained_hits: list[dict[str, Any]] = field(default_factory=list)
    rank_drops: list[dict[str, Any]] = field(default_factory=list)
    golden: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    @property
    def exit_code(self) -> int:
        return {PASS: 0, REGRESSED: 1}.get(self.status, 2)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def markdown(self) -> str:
        head = {PASS: "✅ No retrieval regression", REGRESSED: "❌ Retrieval regressed",
                GOLDEN_CHANGED: "⚠️ Golden set changed since the baseline"}[self.status]  # fmt: skip
        lines = [
            f"### {head}",
            "",
            "| metric | baseline | current | delta | p-value | verdict |",
            "|---|---|---|---|---|---|",
        ]
        for r in self.rows:
            lines.append(
                f"| {r.metric} | {r.baseline:.4f} | {r.current:.4f} | {r.delta:+.4f} | {r.p_value:.3g} | {r.verdict} |"
            )
        if self.lost_hits:
            lines += ["", "**Queries that lost their hit**", ""] + [
                f"- `MISS {q['id']}`: {q['query']}" for q in self.lost_hits
            ]
        if self.rank_drops:
            lines += ["", "**Largest drops of the first relevant rank**", ""]
            lines += [
                f"- `{q['id']}` rank {_rank(q['baseline_rank'])} -> {_rank(q['current_rank'])}: {q['query']}"
                for q in self.rank_drops
            ]
        if self.gained_hits:
            lines += ["", "**Queries that gained a hit**", ""] + [
                f"- `HIT {q['id']}`: {q['query']}" for q in self.gained_hits
            ]
        lines += ["", *[f"_{n}_" for n in self.notes]]
        return "\n".join(lines).rstrip() + "\n"

    def console(self) -> str:
        w = max([len(r.metric) for r in self.rows] + [6])
        out = [f"{'metric':<{w}}  baseline   current     delta   p-value  verdict"]
        for r in self.rows:
            out.append(
                f"{r.metric:<{w}}  {r.baseline:8.4f}  {r.current:8.4f}  {r.delta:+8.4f}  {r.p_value:8.3g}  {r.verdict}"
            )
        out += [f"MISS {q['id']}: {q['query']}" for q in self.lost_hits]
        out += [
            f"RANK {q['id']}: {_rank(q['baseline_rank'])} -> {_rank(q['current_rank'])}: {q['query']}"
            for q in self.rank_drops
        ]
        out += [f"HIT {q['id']}: {q['query']}" for q in self.gained_hits]
        out += self.notes
        verdict = {PASS: "PASS: nothing regressed beyond tolerance", REGRESSED: "FAIL: " + ", ".join(
            r.metric for r in self.rows if r.verdict == "regressed") + " regressed",
            GOLDEN_CHANGED: "GOLDEN SET CHANGED: neither a pass nor a regression; re-promote a baseline"}[self.status]  # fmt: skip
        return "\n".join([*out, verdict])


def _rank(r: int) -> str:
    return str(r) if r else "miss"


def tolerance_for(metric: str, default: float, per_metric: dict[str, float]) -> float:
    key = mlflow_key(metric)
    for name in (metric, key):
        if name in per_metric:
            return float(per_metric[name])
    return float(default)


def compare(
    baseline: dict[str, Any],
    current: dict[str, Any],
    metrics: list[str],
    tolerance: float = 0.03,
    tolerances: dict[str, float] | None = None,
    require_significance: bool = False,
    alpha: float = 0.05,
    resamples: int = 10000,
    top_drops: int = 10,
) -> Comparison:
    """Compare two reports query by query (see the module docstring)."""
    tolerances = tolerances or {}
    golden = {
        "baseline": baseline["digests"].get("golden", ""),
        "current": current["digests"].get("golden", ""),
    }
    base_q = {r["id"]: r for r in baseline["per_query"]}
    cur_q = {r["id"]: r for r in current["per_query"]}
    shared = [q for q in base_q if q in cur_q]
    notes = []
    if len(shared) != len(base_q) or len(shared) != len(cur_q):
        notes.append(
            f"{len(base_q)} baseline queries, {len(cur_q)} current, {len(shared)} compared"
        )
    rows, pvals = [], []
    for m in metrics:
        if m not in baseline["metrics"] or m not in current["metrics"]:
            raise InputError(
                f"metric {m!r} is missing from the baseline or the current report; gate.metrics lists metrics both have"
            )
        a = np.array([_num(base_q[q].get(m)) for q in shared])
        b = np.array([_num(cur_q[q].get(m)) for q in shared])
        ok = ~(np.isnan(a) | np.isnan(b))
        p = (
            paired_randomization_test(a[ok], b[ok], n_resamples=resamples, seed=0)
            if ok.any()
            else 1.0
        )
        pvals.append(p)
        base_mean, cur_mean = float(baseline["metrics"][m]), float(current["metrics"][m])
        rows.append(
            MetricRow(
                m,
                base_mean,
                cur_mean,
                cur_mean - base_mean,
                tolerance_for(m, tolerance, tolerances),
                p,
                "ok",
            )
        )
    for r, p_adj in zip(rows, holm(pvals) if pvals else [], strict=True):
        r.p_value = float(p_adj)
        significant = p_adj < alpha or not require_significance
        if r.delta < -r.tolerance - 1e-12 and significant:
            r.verdict = "regressed"
        elif r.delta > r.tolerance + 1e-12:
            r.verdict = "improved"
    k = baseline["k"]
    hit = f"hit_rate@{k}"
    lost = [
        cur_q[q] for q in shared if _num(base_q[q].get(hit)) > 0 and _num(cur_q[q].get(hit)) == 0
    ]
    gained = [
        cur_q[q] for q in shared if _num(base_q[q].get(hit)) == 0 and _num(cur_q[q].get(hit)) > 0
    ]
    drops = []
    for q in shared:
        a, b = base_q[q].get("first_relevant_rank", 0), cur_q[q].get("first_relevant_rank", 0)
        if a and (b == 0 or b > a):
            drops.append({"id": q, "query": cur_q[q]["query"], "baseline_rank": a, "current_rank": b,
                          "fall": (b or 10**6) - a})  # fmt: skip
    drops.sort(key=lambda d: (-d["fall"], d["id"]))
    if golden["baseline"] != golden["current"]:
        status = GOLDEN_CHANGED
        notes.append(f"golden set digest {golden['baseline'][:12]} (baseline) != {golden['current'][:12]} (now): "
                     "promote a new baseline after reviewing the change")  # fmt: skip
    else:
        status = REGRESSED if any(r.verdict == "regressed" for r in rows) else PASS
    improved = [r.metric for r in rows if r.verdict == "improved"]
    if improved:
        notes.append(
            "improved beyond tolerance: " + ", ".join(improved) + " (consider promoting this run)"
        )
    brief = lambda r: {"id": r["id"], "query": r["query"]}  # noqa: E731
    return Comparison(
        status,
        rows,
        [brief(r) for r in lost],
        [brief(r) for r in gained],
        drops[:top_drops],
        golden,
        notes,
    )


def _num(x: Any) -> float:
    if x is None:
        return math.nan
    return float(x)
