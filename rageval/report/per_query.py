"""Per-query outputs with readable names: the per-query table (CSV, MLflow table), chunks.jsonl and
the chunk-id -> ``doc-id:ordinal`` mapping that sits beside the TREC files.

TREC files key chunks by their content id (stable across re-indexing, what trec_eval reads); a
person reads ``hr-leave-policy:3``. ``chunk_labels.tsv`` maps one to the other, so a run file can
be read by eye or joined in a spreadsheet.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from rageval.formats.atomic import atomic_open
from rageval.inputs.chunking import ChunkRows
from rageval.report.table import Column, Table
from rageval.types import Chunk

# Columns a person reads first; metric columns follow, content ids last.
LEAD = (
    "id",
    "query",
    "source",
    "tags",
    "meta",
    "n_relevant",
    "first_relevant_rank",
    "expected_docs",
    "retrieved_labels",
    "relevant_labels",
)
TAIL = ("retrieved",)
# quotes are long and nested: report.json and the per-query page hold them
SKIP = ("evidence", "evidence_spans")


def columns(rows: Sequence[dict[str, Any]]) -> list[str]:
    """The per-query table's columns: readable ones, then metrics and counts, then content ids."""
    seen: list[str] = []
    for r in rows:
        for k in r:
            if k not in seen and k not in SKIP:
                seen.append(k)
    lead = [c for c in LEAD if c in seen]
    tail = [c for c in TAIL if c in seen]
    return [*lead, *(c for c in seen if c not in lead and c not in tail), *tail]


def table(rows: Sequence[dict[str, Any]]) -> dict[str, list]:
    """Column name -> values (lists joined with ", "), the form ``mlflow.log_table`` takes."""
    cols = columns(rows)
    out: dict[str, list] = {c: [] for c in cols}
    for r in rows:
        for c in cols:
            v = r.get(c)
            if isinstance(v, dict):  # meta: JSON, so a spreadsheet or script can read it back
                v = json.dumps(v, ensure_ascii=False, sort_keys=True)
            out[c].append(", ".join(map(str, v)) if isinstance(v, list) else v)
    return out


def per_query_csv(rows: Sequence[dict[str, Any]]) -> str:
    """The per-query table as CSV text."""
    cols = table(rows)
    out = Table([Column(c) for c in cols])
    for row in zip(*cols.values(), strict=True):
        out.add_row(*row)
    return out.csv(lineterminator="\r\n")  # the csv module's default, as this file always had


def shown_chunk_ids(rows: Iterable[dict[str, Any]], qrels: dict[str, dict[str, int]]) -> set[str]:
    """Chunk ids the per-query page shows: every top-k result and every judged-relevant chunk."""
    ids: set[str] = set()
    for r in rows:
        ids.update(r.get("retrieved", []))
        ids.update(u for u, g in qrels.get(r["id"], {}).items() if g > 0)
    return ids


def add_readable_ids(report, golden, chunks: Sequence[Chunk], spans=None) -> None:
    """Name what each query expected and got as people do: per-query rows gain
    ``retrieved_labels`` (``doc-id:ordinal``, in the order of ``retrieved``), ``relevant_labels``,
    ``expected_docs``, the evidence quotes and their located spans; the rows of chunks.jsonl gain
    ``label`` and, for the chunks a query retrieved or needed, ``text`` (the per-query page)."""
    doc_level = report.level == "doc"  # rankings hold document ids already
    label_of = {} if doc_level else {c.id: c.label for c in chunks}
    doc_of = {} if doc_level else {c.id: c.doc_id for c in chunks}
    by_id = {q.id: q for q in golden.queries}
    for row in report.per_query:
        q = by_id.get(row["id"])
        relevant = [u for u, g in report.qrels.get(row["id"], {}).items() if g > 0]
        expected = [doc_of.get(u, u) for u in relevant]
        if q is not None:
            expected += [*q.relevant_docs, *(e.doc for e in q.evidence)]
        row["retrieved_labels"] = [label_of.get(u, u) for u in row.get("retrieved", [])]
        row["relevant_labels"] = sorted(label_of.get(u, u) for u in relevant)
        row["expected_docs"] = list(dict.fromkeys(expected))
        row["evidence"] = [{"doc": e.doc, "quote": e.quote} for e in (q.evidence if q else ())]
        row["evidence_spans"] = [
            {"doc": sp.doc, "start": int(sp.start), "end": int(sp.end)}
            for sp in (spans or {}).get(row["id"], [])
        ]
    shown = shown_chunk_ids(report.per_query, report.qrels)
    text_of = {c.id: c.text for c in chunks if c.id in shown}
    rows: ChunkRows = report.chunks  # made when read: they are told what to add
    rows.label, rows.texts = "readable", text_of


def write_chunk_labels(out: Path, rows: Sequence[dict[str, Any]]) -> None:
    """``chunk_labels.tsv`` in ``out``: content id (the key in run.trec and qrels.trec) ->
    ``doc-id:ordinal``."""
    if rows:  # a line at a time: a million rows are not held as one text
        with atomic_open(Path(out) / "chunk_labels.tsv") as fh:
            fh.write("chunk_id\tlabel\n")
            for r in rows:
                fh.write(f"{r['id']}\t{r['doc_id']}:{r['ordinal']}\n")


def read_chunks(run_dir: Path) -> dict[str, dict[str, Any]]:
    """chunks.jsonl of a run folder by chunk id (empty when the folder has none)."""
    path = Path(run_dir) / "chunks.jsonl"
    if not path.is_file():
        return {}
    out = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            d = json.loads(line)
            out[d["id"]] = d
    return out
