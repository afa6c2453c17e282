"""The EvalReport of one run: means with bootstrap CIs, per-query rows, slices (the configured
fields, each slice with n, means and CIs; rageval.scoring.slices), and its console and JSON
forms."""

from __future__ import annotations

import copy
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import numpy as np

from rageval.formats.atomic import atomic_write_text
from rageval.report.table import Column, Table, mean_ci
from rageval.scoring.slices import (
    DEFAULT_FIELDS,
    DEFAULT_MIN_SIZE,
    KEY_PREFIX,
    key_part,
    slice_table,
)
from rageval.scoring.spec import CONDENSED, HEADLINE
from rageval.scoring.stats import bootstrap_ci
from rageval.types import GoldenSet, RankedList

SCHEMA_VERSION = 1


@dataclass
class EvalReport:
    """Everything a run measured. ``rankings`` and ``qrels`` stay out of report.json (TREC
    files)."""

    metrics: dict[str, float]
    ci: dict[str, list[float]]
    per_query: list[dict[str, Any]]
    # {"fields", "min_slice_size", "metrics", "rows": [{slice, field, value, n, metrics, ci}]}
    slices: dict[str, Any]
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
    # what the run cost (rageval.report.costs) and, for a hybrid or reranked run, its stages
    # (rageval.report.stages)
    costs: dict[str, float] = field(default_factory=dict)
    stages: dict[str, Any] = field(default_factory=dict)
    # the golden-set split this run scored (rageval.inputs.split): name, fraction, seed, counts
    split: dict[str, Any] = field(default_factory=dict)
    rankings: list[RankedList] = field(default_factory=list, repr=False)
    qrels: dict[str, dict[str, int]] = field(default_factory=dict, repr=False)
    # the rows of chunks.jsonl: after a run a rageval.inputs.chunking.ChunkRows, each row made
    # when read; kept out of report.json
    chunks: Sequence[dict[str, Any]] = field(default_factory=list, repr=False)
    # which labels the metrics counted: "gold" (golden set + human judgements) or "all" (also
    # accepted LLM judgements); the judgements file, counts and digest
    # (rageval.run.labels.judgements_summary); what the user should know about the numbers
    label_set: str = "gold"
    judgements: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    # labels=ppi (rageval.report.ppi_report): the human sample, the judge, each ranking metric's
    # estimate beside the human-only and LLM-only ones; empty for other label sets
    ppi: dict[str, Any] = field(default_factory=dict)
    # what the numbers stand on: per-document corpus and per-query golden digests, judgements,
    # the embedding's fingerprint and environment (rageval.report.provenance); and the embedding
    # canary's texts and vectors (rageval.embedding.canary; None: the run embeds nothing)
    provenance: dict[str, Any] = field(default_factory=dict)
    canary: dict[str, Any] | None = None

    def headline(self) -> dict[str, float]:
        """The headline metrics at the report's k, in the usual order."""
        return {
            f"{m}@{self.k}": self.metrics[f"{m}@{self.k}"]
            for m in HEADLINE
            if f"{m}@{self.k}" in self.metrics
        }

    def to_dict(self) -> dict[str, Any]:
        """report.json's content (rankings, qrels and chunks live in their own files)."""
        skip = ("rankings", "qrels", "chunks")  # written as run.trec, qrels.trec, chunks.jsonl
        d = copy.deepcopy(
            {f.name: getattr(self, f.name) for f in fields(self) if f.name not in skip}
        )
        # a metric the run could not measure is null (JSON has no NaN), never 0
        d["metrics"] = {m: _or_none(v) for m, v in d["metrics"].items()}
        d["ci"] = {m: [_or_none(x) for x in v] for m, v in d["ci"].items()}
        return {"schema": SCHEMA_VERSION, **d}

    def write_json(self, path: str | Path) -> Path:
        """Write report.json atomically; returns its path."""
        atomic_write_text(
            path, json.dumps(self.to_dict(), indent=2, sort_keys=False, default=_jsonable)
        )
        return Path(path)

    def summary_names(self) -> list[str]:
        """The metrics a console shows: headline at k, quote and span metrics at k, the budget
        recalls, the precision ceiling and tokens@k (those the run has)."""
        k = self.k
        names = [*self.headline(), f"quote_recall@{k}", f"quote_ndcg@{k}"]
        names += [f"evidence_{m}@{k}" for m in ("recall", "precision", "iou")]
        names.append("evidence_precision_max")
        budgets = sorted({n.split("@")[1] for n in self.metrics if n.endswith("t") and "@" in n})
        for b in sorted(budgets, key=lambda x: int(x[:-1])):
            names.append(
                f"evidence_recall@{b}" if f"evidence_recall@{b}" in self.metrics else f"recall@{b}"
            )
        names.append(f"tokens@{k}")
        names.append(f"judged@{k}")
        names.append(f"ann_recall@{k}")
        return [n for n in names if n in self.metrics]

    def table(self) -> str:
        """A console table of the summary metrics with 95% CIs, the condensed-list value beside
        each headline metric, then the label set and any warnings."""
        condensed = dict(zip(HEADLINE, CONDENSED, strict=True))
        rows = []
        for name in self.summary_names():
            lo, hi = self.ci.get(name, [float("nan")] * 2)
            fmt = ".1f" if name.startswith("tokens@") else ".4f"
            family, _, cut = name.partition("@")
            cond = self.metrics.get(f"{condensed.get(family)}@{cut}")
            rows.append(
                (
                    name,
                    _shown(self.metrics[name], fmt),
                    "" if _unmeasured(self.metrics[name]) else f"[{lo:{fmt}}, {hi:{fmt}}]",
                    "" if _unmeasured(cond) else f"{cond:.4f}",
                )
            )
        head = ["metric", "mean", "95% CI", "condensed"]
        if not any(r[3] for r in rows):
            head, rows = head[:3], [r[:3] for r in rows]
        table = Table([Column(h) for h in head])
        for r in rows:
            table.add_row(*r)
        lines = [table.console(rule=True), self.labels_line()]
        lines += [f"warning: {w}" for w in self.warnings]
        return "\n".join(lines)

    def to_markdown(self) -> str:
        """The summary metrics with their 95% CIs as a markdown table, then the label set and
        any warnings (for a pull-request comment or a notebook)."""
        from rageval.report.markdown import cell

        table = Table([Column("metric"), Column("mean", "right"), Column("95% CI")])
        for name in self.summary_names():
            lo, hi = self.ci.get(name, [float("nan")] * 2)
            fmt = ".1f" if name.startswith("tokens@") else ".4f"
            value = self.metrics[name]
            ci = "" if _unmeasured(value) else f"[{lo:{fmt}}, {hi:{fmt}}]"
            table.add_row(name, _shown(value, fmt), ci)
        lines = [table.markdown().rstrip("\n"), "", cell(self.labels_line())]
        lines += [f"- warning: {cell(w)}" for w in self.warnings]
        return "\n".join(lines) + "\n"

    def labels_line(self) -> str:
        """``labels: gold (golden set + 12 human judgements, digest 1a2b3c4d5e6f)``: which labels
        the numbers count."""
        j = self.judgements or {}
        n = int(j.get("counted") or 0)
        if not n:
            counted = "golden set only"
        else:
            kinds = [
                f"{j.get(kind) or 0} {name}" for kind, name in (("human", "human"), ("llm", "LLM"))
            ]
            counted = "golden set + " + " + ".join(x for x in kinds if not x.startswith("0 "))
            counted += f" judgement{'s' * (n != 1)}, digest {str(j.get('digest', ''))[:12]}"
        left = int(j.get("not_counted") or 0)
        if left:
            why = (
                "no accepted calibration of their model"
                if self.label_set == "all"
                else "labels=all counts them"
            )
            counted += f"; {left} LLM judgement{'s' * (left != 1)} not counted: {why}"
        if self.ppi:  # labels=ppi: what the estimates stand on
            s = self.ppi["sample"]
            counted += (
                f"; ranking metrics are prediction-powered estimates: {s['judge']} labels every "
                f"query, people the {s['size']} sampled (seed {s['seed']}, sample digest "
                f"{str(s['digest'])[:12]})"
            )
        return f"labels: {self.label_set} ({counted})"


def _unmeasured(x: Any) -> bool:
    return x is None or (isinstance(x, float) and math.isnan(x))


def _or_none(x: Any) -> Any:
    return None if _unmeasured(x) else x


def _shown(x: Any, fmt: str) -> str:
    """A metric's mean as the console and markdown show it: ``n/a`` when not measured."""
    return "n/a" if _unmeasured(x) else f"{x:{fmt}}"


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


@dataclass(frozen=True)
class Scored:
    """Per-query metric values of one run (``values[name][i]`` belongs to ``query_ids[i]``), the
    rankings they were computed on (chunk or document ids) and the qrels of this chunking."""

    query_ids: tuple[str, ...]
    rankings: list[RankedList]
    values: Mapping[str, np.ndarray]
    first_relevant_rank: np.ndarray
    qrels: Mapping[str, Mapping[str, int]]
    level: str


@dataclass(frozen=True)
class RunFacts:
    """What a run was and what it cost: cutoffs, timings, latency, digests, counts, config."""

    k: int
    ks: Sequence[int]
    timings: dict
    latency: dict
    digests: dict
    counts: dict
    config: dict
    # the fields to slice by and the smallest slice reported on its own (rageval.scoring.slices)
    slices: Sequence[str] = DEFAULT_FIELDS
    min_slice_size: int = DEFAULT_MIN_SIZE


# Families with a CI at every k; the others (quote, evidence precision, tokens) get one at the
# headline k and at every budget only: a bootstrap costs about 2 s per metric at 100,000 queries.
_CI_EVERY_K = frozenset((*HEADLINE, "evidence_recall", "evidence_iou"))


def _wants_ci(name: str, k: int) -> bool:
    family, _, cut = name.partition("@")
    return not cut or family in _CI_EVERY_K or cut.endswith("t") or cut == str(k)


def summarise(golden: GoldenSet, scored: Scored, facts: RunFacts) -> EvalReport:
    """Assemble the report: means, CIs (95% bootstrap; see ``_wants_ci``), per-query rows and
    slices."""
    values = scored.values
    metrics = {name: _mean(np.asarray(v, dtype=float)) for name, v in values.items()}
    ci = {}
    for name, v in values.items():
        if not _wants_ci(name, facts.k):
            continue
        v = np.asarray(v, dtype=float)
        v = v[~np.isnan(v)]
        ci[name] = list(bootstrap_ci(v)) if v.size else [float("nan"), float("nan")]
    rows = []
    for i, q in enumerate(golden.queries):
        row: dict[str, Any] = {
            "id": q.id,
            "query": q.query,
            "source": q.source,
            "tags": list(q.tags),
            **({"meta": dict(q.meta)} if q.meta else {}),
            "n_relevant": sum(1 for g in scored.qrels.get(q.id, {}).values() if g > 0),
            "first_relevant_rank": int(scored.first_relevant_rank[i]),
            "retrieved": list(scored.rankings[i].ids[: facts.k]),
        }
        for name, v in values.items():
            x = float(v[i])
            row[name] = None if np.isnan(x) else x
        rows.append(row)
    return EvalReport(
        metrics=metrics,
        ci=ci,
        per_query=rows,
        slices=slices_block(rows, list(values), facts),
        config=facts.config,
        digests=facts.digests,
        timings=facts.timings,
        latency=facts.latency,
        counts=facts.counts,
        level=scored.level,
        k=facts.k,
        ks=list(facts.ks),
        rankings=list(scored.rankings),
        qrels={q: dict(r) for q, r in scored.qrels.items()},
    )


def slice_metrics(names: Sequence[str], k: int) -> list[str]:
    """The metrics each slice reports: the headline metrics, quote and evidence recall at k, and
    the recall at the budget a sweep decides by (1,024 tokens, else the middle budget), those
    present. Each costs one bootstrap per slice; other metrics are sliced on demand from the
    per-query rows (the sweep's section does that for another deciding metric)."""
    wanted = [f"{m}@{k}" for m in (*HEADLINE, "quote_recall", "evidence_recall")]
    budgets = sorted(
        {int(n.split("@")[1][:-1]) for n in names if n.endswith("t") and "@" in n},
    )
    if budgets:
        b = 1024 if 1024 in budgets else budgets[len(budgets) // 2]
        wanted += [f"evidence_recall@{b}t", f"recall@{b}t"]
    return [n for n in dict.fromkeys(wanted) if n in names]


def slices_block(
    rows: Sequence[Mapping[str, Any]], names: Sequence[str], facts: RunFacts
) -> dict[str, Any]:
    """report.json's ``slices``: the fields, the pooling threshold, the metrics and one row per
    slice with n, means and 95% bootstrap CIs."""
    metrics = slice_metrics(names, facts.k)
    fields = list(facts.slices)
    return {
        "fields": fields,
        "min_slice_size": int(facts.min_slice_size),
        "metrics": metrics,
        "rows": slice_table(rows, fields, metrics, facts.min_slice_size),
    }


SLICE_WIDTH = 120


def slice_console(report: EvalReport, width: int = SLICE_WIDTH) -> str:
    """The slice table for a terminal (``width`` columns at most): slice, n and up to four metrics
    as ``mean [low, high]``, then what each ``other`` slice pooled. Empty without slices."""
    block = report.slices or {}
    rows = block.get("rows") or []
    if not rows:
        fields = ", ".join(block.get("fields") or [])
        return (  # asked for, but no query has the field (a BEIR set has no source)
            f"Slices by {fields}: none, no query has {'it' if ',' not in fields else 'them'}; "
            "slices=[<field>] slices by tags or a key of the golden lines' meta (docs/slices.md)"
            if fields and report.per_query
            else ""
        )
    k = report.k
    evidence = f"evidence_recall@{k}" in block.get("metrics", [])
    wanted = [f"hit_rate@{k}", f"recall@{k}", f"ndcg@{k}"]
    wanted.append(f"evidence_recall@{k}" if evidence else f"mrr@{k}")
    shown = [m for m in wanted if m in block.get("metrics", [])]
    from rageval.formats.textio import printable

    name_w = min(max(len(printable(r["slice"])) for r in rows), 32)
    while shown and name_w + 7 + 22 * len(shown) > width:
        shown.pop()
    table = Table(
        [
            Column("slice", min_width=name_w),
            Column("n", "right", min_width=5),
            *[Column(m, "right", min_width=20) for m in shown],
        ],
        title=f"Slices by {', '.join(block.get('fields', []))} (95% bootstrap CIs; slices under "
        f"{block.get('min_slice_size')} queries pooled into <field>=other)",
    )
    for r in rows:
        label = printable(r["slice"])
        cells = [label if len(label) <= name_w else label[: name_w - 1] + "…", str(r["n"])]
        for m in shown:
            mean, (lo, hi) = r["metrics"].get(m, math.nan), r["ci"].get(m, [math.nan] * 2)
            cells.append(mean_ci(mean, lo, hi, 3, 2))
        table.add_row(*cells)
    lines = [table.console(rule=True)]
    for r in rows:
        if r.get("pooled"):
            text = printable(f"{r['slice']} pools {len(r['pooled'])}: {', '.join(r['pooled'])}")
            lines.append(text if len(text) <= width else text[: width - 1] + "…")
    return "\n".join(lines)


def slice_csv(block: Mapping[str, Any]) -> str:
    """slices.csv: one line per slice (slice, field, value, n, the prefix of its MLflow keys, then
    each metric's mean, low and high), the values an ``other`` slice pooled in the last column."""
    metrics = list(block.get("metrics") or [])
    head = ["slice", "field", "value", "n", "mlflow_prefix"]
    for m in metrics:
        head += [m, f"{m}_low", f"{m}_high"]
    table = Table([Column(h) for h in [*head, "pooled"]])
    for r in block.get("rows") or []:
        prefix = f"{KEY_PREFIX}/{key_part(r['field'])}.{key_part(r['value'])}"
        row: list[Any] = [r["slice"], r["field"], r["value"], r["n"], prefix]
        for m in metrics:
            lo, hi = r["ci"].get(m, [math.nan] * 2)
            row += [_cell(r["metrics"].get(m)), _cell(lo), _cell(hi)]
        table.add_row(*row, " ".join(r.get("pooled") or []))
    return table.csv()


def _cell(x: Any) -> str:
    return "" if x is None or math.isnan(float(x)) else repr(float(x))
