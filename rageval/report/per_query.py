"""Per-query outputs with readable names: the per-query table (CSV, MLflow table), chunks.jsonl and
the chunk-id -> ``doc-id:ordinal`` mapping that sits beside the TREC files.

TREC files key chunks by their content id (stable across re-indexing, what trec_eval reads); a
person reads ``hr-leave-policy:3``. ``chunk_labels.tsv`` maps one to the other, so a run file can
be read by eye or joined in a spreadsheet.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from rageval.formats.atomic import atomic_write_text
from rageval.types import Chunk

# Columns a person reads first; metric columns follow, content ids last.
LEAD = ("id", "query", "source", "tags", "n_relevant", "first_relevant_rank", "expected_docs",
        "retrieved_labels", "relevant_labels")  # fmt: skip
TAIL = ("retrieved",)
SKIP = ("evidence", "evidence_spans")  # quotes are long and nested: report.json and the per-query page hold them


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
            out[c].append(", ".join(map(str, v)) if isinstance(v, list) else v)
    return out


def per_query_csv(rows: Sequence[dict[str, Any]]) -> str:
    """The per-query table as CSV text."""
    cols = table(rows)
    buf = io.StringIO()
    w = csv.writer(buf)
    w.writerow(cols)
    w.writerows(zip(*cols.values(), strict=True))
    return buf.getvalue()


def shown_chunk_ids(rows: Iterable[dict[str, Any]], qrels: dict[str, dict[str, int]]) -> set[str]:
    """Chunk ids the per-query page shows: every top-k result and every judged-relevant chunk."""
    ids: set[str] = set()
    for r in rows:
        ids.update(r.get("retrieved", []))
        ids.update(u for u, g in qrels.get(r["id"], {}).items() if g > 0)
    return ids


def write_chunk_files(
    out: Path, chunks: Sequence[Chunk], rows: Sequence[dict[str, Any]], qrels
) -> None:
    """``chunks.jsonl`` (id, doc, ordinal, offsets, tokens; text for the chunks a query retrieved
    or needed) and ``chunk_labels.tsv`` (content id -> ``doc-id:ordinal``) in ``out``."""
    if not chunks:
        return
    shown = shown_chunk_ids(rows, qrels)
    lines = []
    for c in chunks:
        d = {"id": c.id, "label": c.label, "doc_id": c.doc_id, "ordinal": c.ordinal,
             "start": c.start, "end": c.end, "tokens": c.n_tokens}  # fmt: skip
        if c.id in shown:
            d["text"] = c.text
        lines.append(json.dumps(d, ensure_ascii=False))
    atomic_write_text(out / "chunks.jsonl", "\n".join(lines) + "\n")
    tsv = ["chunk_id\tlabel"] + [f"{c.id}\t{c.label}" for c in chunks]
    atomic_write_text(out / "chunk_labels.tsv", "\n".join(tsv) + "\n")


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

