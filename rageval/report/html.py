"""The per-query page: one self-contained HTML file (inline CSS and JS, no network) that shows a
run's queries worst first, or the difference between two runs of the same golden set. This module
gathers what the page shows; the page itself is the template rageval/report/pages/queries.html.j2
(with queries.css and queries.js), which escapes every value it prints.

Every query row holds its top-k chunks (``doc-id:ordinal``, relevant ones marked, the evidence
quote highlighted in the chunk text) in a ``<details>`` element, so the page reads without
JavaScript too (MLflow's artifact preview); with it, column headers sort and the filters (text,
slice, misses / changed only) narrow the rows.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rageval.config_schema import measures, override_key
from rageval.formats.atomic import atomic_write_text
from rageval.report.pages import render_page
from rageval.report.table import mean_ci
from rageval.scoring.slices import field_values
from rageval.scoring.spec import HEADLINE

# Metric columns shown per query, in order, when the report has them (at the run's k).
SHOWN = ("ndcg", "recall", "mrr", "hit_rate", "evidence_recall")


def _number(v: Any) -> float | None:
    """A metric value read from a file: a finite-or-nan number, else None (shown blank)."""
    if isinstance(v, bool) or not isinstance(v, int | float):
        try:
            return float(v) if isinstance(v, str) else None
        except ValueError:
            return None
    return float(v)


def _num(v: Any) -> str:
    x = _number(v)
    return "" if x is None else "n/a" if math.isnan(x) else f"{x:.3f}"


def _sortkey(v: Any) -> str:
    x = _number(v)
    return "" if x is None else repr(x)


def highlight_ranges(chunk: Mapping[str, Any], row: Mapping[str, Any]) -> list[tuple[int, int]]:
    """Character ranges of ``chunk['text']`` covered by the query's evidence: the located spans
    (document offsets) intersected with the chunk, else the quote found verbatim in the text."""
    text = chunk.get("text") or ""
    out = []
    for sp in row.get("evidence_spans") or []:
        if sp["doc"] == chunk.get("doc_id") and "start" in chunk:
            lo, hi = max(sp["start"], chunk["start"]), min(sp["end"], chunk["end"])
            if lo < hi:
                out.append((lo - chunk["start"], hi - chunk["start"]))
    if not out:
        for ev in row.get("evidence") or []:
            i = text.find(ev["quote"]) if ev.get("quote") else -1
            if i >= 0 and ev.get("doc") in (None, chunk.get("doc_id")):
                out.append((i, i + len(ev["quote"])))
    return sorted(out)


def _segments(text: str, ranges: Sequence[tuple[int, int]]) -> list[tuple[str, bool]]:
    """``text`` cut at ``ranges``: (piece, whether it is highlighted) in order."""
    parts, pos = [], 0
    for lo, hi in ranges:
        lo = max(lo, pos)
        if lo >= hi:
            continue
        parts += [(text[pos:lo], False), (text[lo:hi], True)]
        pos = hi
    parts.append((text[pos:], False))
    return parts


def _chunk_list(row, chunks, level: str, moves: Mapping[str, str] | None = None) -> dict:
    """A query's top results as the page lists them (the template's ``chunk_list``)."""
    relevant = set(row.get("relevant_labels") or [])
    ids = row.get("retrieved") or []
    labels = row.get("retrieved_labels") or ids
    items = []
    for rank, (cid, label) in enumerate(zip(ids, labels, strict=False), 1):
        c = chunks.get(cid) or {}
        text = c.get("text")
        items.append(
            {
                "rank": rank,
                "label": label,
                "rel": label in relevant or cid in relevant,
                "move": moves.get(label) if moves else None,
                "segments": _segments(text, highlight_ranges(c, row)) if text else None,
                "missing": "document" if level == "doc" else "no text stored",
            }
        )
    return {
        "expected": ", ".join(row.get("expected_docs") or []) or "none",
        "relevant": ", ".join(sorted(relevant)) or "none",
        "quotes": [
            {"doc": e.get("doc"), "quote": e.get("quote")} for e in row.get("evidence") or []
        ],
        "results": items,
    }


def _slices(row) -> list[str]:
    """The slices a query row is in, as the page's filter lists them: ``source:ticket``,
    ``tag:hr``, and each meta field's value (``difficulty:hard``; a list gives each item)."""
    meta = row.get("meta") or {}
    return (
        ([f"source:{row['source']}"] if row.get("source") else [])
        + [f"tag:{t}" for t in row.get("tags") or []]
        + [f"{key}:{v}" for key in sorted(meta) for v in field_values(row, f"meta.{key}")]
    )


def _metric_names(report: Mapping[str, Any]) -> list[str]:
    k = report.get("k")
    names = [f"{m}@{k}" for m in SHOWN if f"{m}@{k}" in (report.get("metrics") or {})]
    return names or [f"{m}@{k}" for m in HEADLINE][:1]


# data paths: long, and the same in every run of a sweep; left out of a run's title and of a
# config's summary (rageval.gate.baseline.config_summary) like the keys that measure nothing
PATH_KEYS = ("dataset.corpus", "dataset.golden")


def shown_override(override: str) -> bool:
    """Whether an override line belongs in a run's title: it changes what is measured
    (rageval.config_schema.measures) and is not a data path."""
    return measures(override) and not override_key(override).startswith(PATH_KEYS)


PLUMBING = (
    "hydra.",
    "mlflow.",
    "sweep.",
    "cache_dir",
    "latency_sample",
    "dataset.corpus",
    "dataset.golden",
)


def _title(report: Mapping[str, Any]) -> str:
    """The run's overrides that change what it measures (``chunk=512 search=bm25``)."""
    over = [o for o in report.get("overrides") or [] if shown_override(o)]
    return " ".join(over) or "default config"


def _rank(value: Any) -> int | None:
    """A first relevant rank read from a file: a whole number >= 1, else None (a miss), so a
    hand-edited report.json cannot put text into the page or stop it."""
    if isinstance(value, int) and not isinstance(value, bool) and value >= 1:
        return value
    if isinstance(value, float) and value.is_integer() and value >= 1:
        return int(value)
    return None


@dataclass(frozen=True)
class Cell:
    """A table cell: its text, its class and the value it sorts by (``data-v``)."""

    text: Any
    cls: str | None = None
    v: Any = None


def _row(r, cells: list[Cell], chunks: dict, *, miss: bool, changed: bool, dropped=None) -> dict:
    """A query's row (the template's ``row``): id, query with its top results, slices, then
    ``cells``; ``data-slices`` a JSON list, as a slice value may hold spaces."""
    return {
        "id_cell": Cell(r["id"], v=_text(r["id"])),  # every query cell sorts, by "" at least
        "query": r.get("query"),
        "chunks": chunks,
        "dropped": dropped,
        "cells": [Cell(", ".join(_slices(r)), v=" ".join(_slices(r))), *cells],
        "slices_json": json.dumps(_slices(r)),
        "miss": int(miss),
        "changed": int(changed),
    }


def render(report: Mapping[str, Any], chunks: Mapping[str, Mapping[str, Any]]) -> str:
    """The page of one run (``report`` as in report.json, ``chunks`` as in chunks.jsonl)."""
    names = _metric_names(report)
    k = report.get("k")
    head = ["id", "query", "slices", "first relevant rank", *names]
    rows = []
    for r in report.get("per_query") or []:
        rank = _rank(r.get("first_relevant_rank"))
        miss = rank is None or rank > (k or 0)
        cells = [
            Cell(rank or "-", "n", rank or 1e9),
            *(Cell(_num(r.get(m)), "n", _sortkey(r.get(m))) for m in names),
        ]
        listed = _chunk_list(r, chunks, report.get("level", "chunk"))
        rows.append(_row(r, cells, listed, miss=miss, changed=False))
    summary = " · ".join(
        f"{m} {report['metrics'][m]:.4f}"
        for m in names
        if report.get("metrics", {}).get(m) is not None
    )
    return _page(
        f"rageval: {_title(report)}",
        summary,
        head,
        rows,
        _all_slices(report),
        decide_col=len(head) - len(names),
        toggle="misses only",
        run_slices=_run_slices(report, names),
    )


def rank_moves(a: Mapping[str, Any], b: Mapping[str, Any]) -> tuple[dict[str, str], list[str]]:
    """For run B's top-k of a query: each label's move against run A (``↑2``, ``↓1``, ``=``,
    ``new``), and the labels of A's top-k that B dropped."""
    ra = {x: i for i, x in enumerate(a.get("retrieved_labels") or [], 1)}
    rb = {x: i for i, x in enumerate(b.get("retrieved_labels") or [], 1)}
    moves = {}
    for x, i in rb.items():
        j = ra.get(x)
        moves[x] = "new" if j is None else "=" if j == i else f"↑{j - i}" if j > i else f"↓{i - j}"
    return moves, [x for x in ra if x not in rb]


def render_diff(
    a: Mapping[str, Any],
    a_chunks: Mapping[str, Any],
    b: Mapping[str, Any],
    b_chunks: Mapping[str, Any],
    a_name: str = "A",
    b_name: str = "B",
    slice_rows: Sequence[Mapping[str, Any]] = (),
    verdict: Sequence[str] = (),
) -> str:
    """The page comparing run A (e.g. the baseline) with run B (the candidate), query by query:
    the deciding metric in both, its change, first relevant ranks and the rank moves of B's
    top-k; ``verdict``: the gate's lines (each metric's change, interval and what the golden set
    detects), shown first."""
    names = _metric_names(b)
    decide = names[0]
    k = b.get("k")
    by_id = {r["id"]: r for r in a.get("per_query") or []}
    head = [
        "id",
        "query",
        "slices",
        f"{decide} {a_name}",
        f"{decide} {b_name}",
        "change",
        "first relevant rank",
        "rank moves",
    ]
    rows = []
    for r in b.get("per_query") or []:
        ra = by_id.get(r["id"])
        if ra is None:
            continue
        va, vb = ra.get(decide), r.get(decide)
        delta = None if va is None or vb is None else vb - va
        moves, dropped = rank_moves(ra, r)
        news = sum(v == "new" for v in moves.values())
        ups = sum(v.startswith("↑") for v in moves.values())
        downs = sum(v.startswith("↓") for v in moves.values())
        moved = ", ".join(
            f"{n} {w}"
            for n, w in ((news, "new"), (ups, "up"), (downs, "down"), (len(dropped), "dropped"))
            if n
        )
        fa, fb = _rank(ra.get("first_relevant_rank")) or 0, _rank(r.get("first_relevant_rank")) or 0
        direction = "n down" if (delta or 0) < 0 else "n up" if (delta or 0) > 0 else "n"
        cells = [
            Cell(_num(va), "n", _sortkey(va)),
            Cell(_num(vb), "n", _sortkey(vb)),
            Cell("" if delta is None else f"{delta:+.3f}", direction, _sortkey(delta)),
            Cell(f"{fa or '-'} → {fb or '-'}", "n", fb or 1e9),
            Cell(moved or "=", None, news + ups + downs + len(dropped)),
        ]
        changed = bool(delta) or bool(dropped) or any(v != "=" for v in moves.values())
        listed = _chunk_list(r, b_chunks, b.get("level", "chunk"), moves)
        gone = {"run": a_name, "k": k, "labels": ", ".join(dropped)} if dropped else None
        miss = not fb or fb > (k or 0)
        rows.append(_row(r, cells, listed, miss=miss, changed=changed, dropped=gone))
    ma, mb = (a.get("metrics") or {}).get(decide), (b.get("metrics") or {}).get(decide)
    summary = f"{decide}: {a_name} {_num(ma)} → {b_name} {_num(mb)}"
    return _page(
        f"rageval: {a_name} vs {b_name}",
        summary,
        head,
        rows,
        _all_slices(b),
        decide_col=5,
        toggle="changed only",
        verdict=list(verdict),
        gate_slices=_gate_slices(slice_rows),
    )


def _all_slices(report) -> list[str]:
    out: list[str] = []
    for r in report.get("per_query") or []:
        out += [s for s in _slices(r) if s not in out]
    return sorted(out)


def _span(low: Any, high: Any) -> str:
    """``[-0.041, +0.017]``; empty when there is no interval (one query)."""
    ok = all(isinstance(v, int | float) and math.isfinite(v) for v in (low, high))
    return f"[{low:+.3f}, {high:+.3f}]" if ok else ""


def _gate_slices(rows: Sequence[Mapping[str, Any]]) -> dict | None:
    """The gate's slice results (rageval.gate.slices rows as dicts) as the table above the
    queries; None without gated slices."""
    if not rows:
        return None
    head = ["slice", "n", "metric", "baseline", "current", "change", "95% interval", "tolerance"]
    head += ["detects", "p (Holm)", "verdict"]
    body = []
    for r in rows:
        delta = r.get("delta")
        cls = "down" if r.get("verdict") == "regressed" else "up" if (delta or 0) > 0 else ""
        pooled = f" ({', '.join(r['pooled'])})" if r.get("pooled") else ""
        body.append(
            [
                Cell(f"{_text(r.get('slice'))}{pooled}"),
                Cell(r.get("n"), "n"),
                Cell(r.get("metric")),
                Cell(_num(r.get("baseline")), "n"),
                Cell(_num(r.get("current")), "n"),
                Cell("" if delta is None else f"{delta:+.3f}", f"n {cls}".strip()),
                Cell(_span(r.get("low"), r.get("high")), "n"),
                Cell(_num(r.get("tolerance")), "n"),
                Cell(_num(r.get("detects")), "n"),
                Cell(f"{float(r.get('p_value', 1.0)):.3g}", "n"),
                Cell(r.get("verdict"), cls),
            ]
        )
    return {"head": head, "rows": body}


def _run_slices(report: Mapping[str, Any], names: Sequence[str]) -> dict | None:
    """A run's slices (report.json ``slices``) as the table above its queries: n and each shown
    metric as mean [95% CI]; None for a report without slices."""
    block = report.get("slices")
    rows = block.get("rows") if isinstance(block, Mapping) else None
    if not rows:
        return None
    shown = [m for m in names if m in (block.get("metrics") or [])]
    body = []
    for r in rows:
        pooled = f" ({', '.join(r['pooled'])})" if r.get("pooled") else ""
        cells = [Cell(f"{_text(r['slice'])}{pooled}"), Cell(r.get("n"), "n")]
        for m in shown:
            mean, (lo, hi) = r["metrics"].get(m), r["ci"].get(m, [None, None])
            cells.append(Cell(mean_ci(_number(mean), _number(lo), _number(hi)), "n"))
        body.append(cells)
    return {
        "fields": ", ".join(block.get("fields", [])),
        "min_slice_size": block.get("min_slice_size"),
        "head": ["slice", "n", *shown],
        "rows": body,
    }


def _text(x: Any) -> str:
    """A value as the page prints it: None as nothing."""
    return "" if x is None else str(x)


def _page(
    title: str,
    summary: str,
    head: list[str],
    rows: list[dict],
    slices: list[str],
    *,
    decide_col: int,
    toggle: str,
    verdict: Sequence[str] = (),
    gate_slices: dict | None = None,
    run_slices: dict | None = None,
) -> str:
    return render_page(
        "queries.html.j2",
        title=title,
        summary=summary,
        head=head,
        rows=rows,
        slice_options=slices,
        decide_col=decide_col,
        toggle=toggle,
        only_attr="miss" if toggle.startswith("misses") else "changed",
        verdict=verdict,
        gate_slices=gate_slices,
        run_slices=run_slices,
    )


def write_page(path: Path, report: Mapping[str, Any], chunks: Mapping[str, Any]) -> Path:
    """Write the page of one run to ``path``."""
    atomic_write_text(path, render(report, chunks))
    return Path(path)


def write_diff_page(
    path: Path,
    baseline: Mapping[str, Any],
    candidate_dir: Path,
    baseline_chunks: Mapping[str, Any] | None = None,
    names: tuple[str, str] = ("baseline", "candidate"),
    slice_rows: Sequence[Mapping[str, Any]] = (),
    verdict: Sequence[str] = (),
) -> Path:
    """The gate's page: ``baseline`` (report.json contents, e.g. golden/baseline.json) against
    the run in ``candidate_dir``; written to ``path`` (e.g. beside gate.md), with the gate's
    ``verdict`` lines and ``slice_rows`` (rageval.gate.slices) above the queries."""
    from rageval.report.per_query import read_chunks

    cand = json.loads((Path(candidate_dir) / "report.json").read_text(encoding="utf-8"))
    cand_chunks = read_chunks(Path(candidate_dir))
    page = render_diff(
        baseline,
        baseline_chunks or {},
        cand,
        cand_chunks,
        *names,
        slice_rows=slice_rows,
        verdict=verdict,
    )
    atomic_write_text(path, page)
    return Path(path)
