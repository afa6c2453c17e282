"""The review page for people judging a pool: one self-contained HTML file (inline CSS and JS, no
network) with each query, the evidence the golden set already knows and the pooled passages, each
with grade buttons 0-3 and an optional note. "Save" downloads the grades as JSONL in the
judgements record shape, which ``rageval judge --import FILE`` validates and appends. The page is
the template rageval/report/pages/review.html.j2 (with review.css and review.js).

The page is rendered on the server side, so it reads without JavaScript; the script collects the
chosen grades, counts them, writes the file, and grades from the keyboard (0-3 grade the marked
passage and move to the next ungraded one, j/k move).
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from typing import Any

# The grade scale shown on the page and given to the LLM judge (docs/judging.md): rageval counts
# grade >= 1 as relevant, so 1 means "part of the answer", not merely "on topic".
GRADES: dict[int, tuple[str, str]] = {
    0: ("not relevant", "does not help answer the question, even if it is on the same topic"),
    1: ("partly", "holds part of the answer, or a fact a reader needs to answer"),
    2: ("relevant", "answers the question, perhaps among other things"),
    3: ("exact", "answers the question fully and directly"),
}


def _known(q: Mapping[str, Any]) -> list[dict[str, Any]]:
    """What the golden set already knows of a query: its evidence quotes, else its labelled
    documents' openings (document labels), else the bare labels."""
    if q.get("evidence"):
        return [{"quoted": True, "doc": e["doc"], "text": e["quote"]} for e in q["evidence"]]
    if q.get("relevant_docs"):
        return [{"quoted": True, "doc": d["doc"], "text": d["text"]} for d in q["relevant_docs"]]
    return [{"quoted": False, "text": x} for x in q.get("relevant") or []]


def _passage(p: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "name": p.get("chunk") or p["doc"],
        "runs": sorted(p["runs"].items(), key=lambda x: str(x[1])),
        "text": p["text"],
    }


def render_review(
    queries: Sequence[Mapping[str, Any]],
    title: str = "rageval review",
    pool_file: str | None = None,
) -> str:
    """The review page of a pool (``rageval.authoring.pool.read_pool``'s queries); ``pool_file``
    goes into the import command the page shows, so the grades land in the judgements file the
    pool names (not the demo's default)."""
    from rageval.report.pages import render_page

    records = [
        [
            {"query_id": q["query_id"], "doc": p["doc"], "quote": p["text"], "start": p["start"]}
            for p in q["passages"]
        ]
        for q in queries
    ]
    shown = [
        {
            "id": q["query_id"],
            "query": q["query"],
            "known": _known(q),
            "passages": [_passage(p) for p in q["passages"]],
        }
        for q in queries
    ]
    return render_page(
        "review.html.j2",
        title=title,
        total=sum(len(q["passages"]) for q in queries),
        queries=shown,
        grades=GRADES,
        records=records,
        import_shown=import_command(pool_file, "FILE"),
        import_prefix=import_command(pool_file, ""),
    )


def import_command(pool_file: str | None, grades: str) -> str:
    """``rageval judge POOL --import GRADES``: the command that adds a saved file's grades."""
    pool = f"{shlex.quote(pool_file)} " if pool_file else ""
    return f"rageval judge {pool}--import {grades}"
