"""The EvalReport of one run: means with bootstrap CIs, per-query rows, slices by source and tag,
and its console, JSON and markdown forms."""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import numpy as np

from rageval.formats.atomic import atomic_write_text
from rageval.scoring.spec import HEADLINE
from rageval.scoring.stats import bootstrap_ci
from rageval.types import Chunk, GoldenSet, RankedList

SCHEMA_VERSION = 1


@dataclass
class EvalReport:
    """Everything a run measured. ``rankings`` and ``qrels`` stay out of report.json (TREC files)."""

    metrics: dict[str, float]
    ci: dict[str, list[float]]
    per_query: list[dict[str, Any]]
    slices: dict[str, dict[str, float]]
    config: dict[str, Any]
    digests: dict[str, str]
    timings: dict[str, float]
    latency: dict[str, float]
    counts: dict[str, Any]
    level: str
    k: int
    ks: list[int]
    mlflow_run_id: str | None = None
    overrides: list[str] = field(default_factory=list)
    choices: dict[str, str] = field(default_factory=dict)
    rankings: list[RankedList] = field(default_factory=list, repr=False)
    qrels: dict[str, dict[str, int]] = field(default_factory=dict, repr=False)
    # The run's chunks (chunks.jsonl, the per-query page); like rankings, not part of report.json.
    chunks: list[Chunk] = field(default_factory=list, repr=False)

    def headline(self) -> dict[str, float]:
        return {
            f"{m}@{self.k}": self.metrics[f"{m}@{self.k}"]
            for m in HEADLINE
            if f"{m}@{self.k}" in self.metrics
        }

    def to_dict(self) -> dict[str, Any]:
        # shallow: the values are plain JSON-able containers already (asdict's deep copy of every
        # per-query row cost a third of a second on the demo)
        skip = ("rankings", "qrels", "chunks")
        d = {f.name: getattr(self, f.name) for f in fields(self) if f.name not in skip}
        return {"schema": SCHEMA_VERSION, **d}

    def write_json(self, path: str | Path) -> Path:
        atomic_write_text(
            path, json.dumps(self.to_dict(), indent=2, sort_keys=False, default=_jsonable)
        )
        return Path(path)

    def table(self) -> str:
        """A short console table of the headline metrics at k with 95% CIs."""
        rows = [("metric", "mean", "95% CI")]
        for name in [*self.headline(), f"evidence_recall@{self.k}"]:
            if name in self.metrics:
                lo, hi = self.ci.get(name, [float("nan")] * 2)
                rows.append((name, f"{self.metrics[name]:.4f}", f"[{lo:.4f}, {hi:.4f}]"))
        w = [max(len(r[i]) for r in rows) for i in range(3)]
        lines = ["  ".join(c.ljust(w[i]) for i, c in enumerate(r)).rstrip() for r in rows]
        lines.insert(1, "  ".join("-" * x for x in w))
        return "\n".join(lines)


def _jsonable(o: Any) -> Any:
    if isinstance(o, np.integer):
        return int(o)
    if isinstance(o, np.floating):
        return float(o)
    if isinstance(o, np.ndarray):
        return o.tolist()
    return str(o)


def _mean(v: np.ndarray) -> float:
    v = v[~np.isnan(v)]
    return float(v.mean()) if v.size else float("nan")


def summarise(
    *,
    golden: GoldenSet,
    chunks: Sequence[Chunk],
    qrels: Mapping[str, Mapping[str, int]],
    level: str,
    rankings: Sequence[RankedList],
    values: Mapping[str, np.ndarray],
    first_relevant_rank: np.ndarray,
    spec,
    timings: dict,
    latency: dict,
    digests: dict,
    counts: dict,
    config: dict,
    spans: Mapping[str, Sequence[Any]] | None = None,
) -> EvalReport:
    """Assemble the report: means, CIs, per-query rows and slices. ``spans``: each query's
    located evidence (document character ranges), kept in its row for the per-query page."""
    metrics = {name: _mean(np.asarray(v, dtype=float)) for name, v in values.items()}
    ci = {}
    for name, v in values.items():
        v = np.asarray(v, dtype=float)
        v = v[~np.isnan(v)]
        ci[name] = list(bootstrap_ci(v)) if v.size else [float("nan"), float("nan")]
    tokens = {c.id: c.n_tokens for c in chunks}
    if level == "doc":  # rankings hold document ids: a document costs all of its chunks' tokens
        tokens = defaultdict(int)
        for c in chunks:
            tokens[c.doc_id] += c.n_tokens
    # Readable names: a chunk is ``doc-id:ordinal`` (its content id stays the key in TREC files);
    # at document level the ranked units are documents already.
    label_of = {c.id: c.label for c in chunks} if level != "doc" else {}
    doc_of = {c.id: c.doc_id for c in chunks} if level != "doc" else {}
    rows = []
    for i, q in enumerate(golden.queries):
        top = list(rankings[i].ids[: spec.k])
        relevant = [u for u, g in qrels.get(q.id, {}).items() if g > 0]
        expected = [doc_of.get(u, u) for u in relevant]
        expected += [*q.relevant_docs, *(e.doc for e in q.evidence)]
        row: dict[str, Any] = {
            "id": q.id,
            "query": q.query,
            "source": q.source,
            "tags": list(q.tags),
            "n_relevant": sum(1 for g in qrels.get(q.id, {}).values() if g > 0),
            "first_relevant_rank": int(first_relevant_rank[i]),
            f"tokens@{spec.k}": sum(tokens.get(u, 0) for u in top),
            "retrieved": top,
            "retrieved_labels": [label_of.get(u, u) for u in top],
            "relevant_labels": sorted(label_of.get(u, u) for u in relevant),
            "expected_docs": list(dict.fromkeys(expected)),
            "evidence": [{"doc": e.doc, "quote": e.quote} for e in q.evidence],
            "evidence_spans": [
                {"doc": sp.doc, "start": int(sp.start), "end": int(sp.end)}
                for sp in (spans or {}).get(q.id, [])
            ],
        }
        for name, v in values.items():
            x = float(v[i])
            row[name] = None if np.isnan(x) else x
        rows.append(row)
    n_tok = np.array([c.n_tokens for c in chunks] or [0])
    counts = {
        **counts,
        "chunk_tokens_mean": float(n_tok.mean()),
        "chunk_tokens_max": int(n_tok.max()),
    }
    return EvalReport(
        metrics=metrics,
        ci=ci,
        per_query=rows,
        slices=_slices(golden, values, spec.k),
        config=config,
        digests=digests,
        timings=timings,
        latency=latency,
        counts=counts,
        level=level,
        k=spec.k,
        ks=list(spec.ks),
        rankings=list(rankings),
        qrels={q: dict(r) for q, r in qrels.items()},
        chunks=list(chunks),
    )


def _slices(
    golden: GoldenSet, values: Mapping[str, np.ndarray], k: int
) -> dict[str, dict[str, float]]:
    """Headline means by ``source:<name>`` and ``tag:<name>`` (with the query count as ``n``)."""
    groups: dict[str, list[int]] = defaultdict(list)
    for i, q in enumerate(golden.queries):
        if q.source:
            groups[f"source:{q.source}"].append(i)
        for t in q.tags:
            groups[f"tag:{t}"].append(i)
    out = {}
    for g, idx in sorted(groups.items()):
        row: dict[str, float] = {"n": len(idx)}
        for m in HEADLINE:
            name = f"{m}@{k}"
            if name in values:
                row[name] = _mean(np.asarray(values[name], dtype=float)[idx])
        out[g] = row
    return out
