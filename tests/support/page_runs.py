"""Two small runs of a three-query golden set for the per-query page's tests: report.json
contents (RUN_A, then RUN_B with q1 better and q2 worse) and their chunks.jsonl rows."""

from __future__ import annotations

import json

QUOTE = "contractors get ten days of parental leave"


def chunk(cid, doc, ordinal, text, start=0):
    return {
        "id": cid,
        "label": f"{doc}:{ordinal}",
        "doc_id": doc,
        "ordinal": ordinal,
        "start": start,
        "end": start + len(text),
        "text": text,
    }


CHUNKS = {
    "c1": chunk("c1", "hr-leave", 0, "Leave policy. Employees get twenty days.", 0),
    "c2": chunk("c2", "hr-leave", 1, f"Note: {QUOTE}, paid in full.", 40),
    "c3": chunk("c3", "faq", 0, "Where is the office? In Leeds.", 0),
    "c4": chunk("c4", "runbook", 0, "Payments run in westeurope and northeurope.", 0),
}


def row(
    qid, query, retrieved, ndcg, first, source="ticket", tags=("hr",), evidence=True, meta=None
):
    labels = [CHUNKS[c]["label"] for c in retrieved]
    return {
        "id": qid,
        "query": query,
        "source": source,
        "tags": list(tags),
        **({"meta": meta} if meta else {}),
        "first_relevant_rank": first,
        "retrieved": retrieved,
        "retrieved_labels": labels,
        "relevant_labels": ["hr-leave:1"] if evidence else ["runbook:0"],
        "expected_docs": ["hr-leave"] if evidence else ["runbook"],
        "evidence": [{"doc": "hr-leave", "quote": QUOTE}] if evidence else [],
        "evidence_spans": [{"doc": "hr-leave", "start": 46, "end": 46 + len(QUOTE)}]
        if evidence
        else [],
        "ndcg@3": ndcg,
        "recall@3": 1.0 if first and first <= 3 else 0.0,
    }


def report(rows):
    return {
        "k": 3,
        "level": "chunk",
        "overrides": ["chunk=64"],
        "per_query": rows,
        "metrics": {"ndcg@3": sum(r["ndcg@3"] for r in rows) / len(rows), "recall@3": 0.5},
    }


RUN_A = report(
    [
        row(
            "q1",
            "How much leave do contractors get?",
            ["c1", "c2", "c3"],
            0.63,
            2,
            meta={"difficulty": "very hard", "lang": ["en", "de"]},
        ),
        row(
            "q2",
            "Which regions run payments?",
            ["c4", "c3", "c1"],
            1.0,
            1,
            "synthetic",
            ("ops",),
            False,
        ),
        row(
            "q3",
            "Is the office in Leeds?",
            ["c3", "c1", "c4"],
            0.0,
            0,
            "adversarial",
            ("hr",),
            False,
        ),
    ]
)
RUN_B = report(
    [
        row("q1", "How much leave do contractors get?", ["c2", "c1", "c4"], 1.0, 1),
        row(
            "q2",
            "Which regions run payments?",
            ["c3", "c4", "c1"],
            0.63,
            2,
            "synthetic",
            ("ops",),
            False,
        ),
        row(
            "q3",
            "Is the office in Leeds?",
            ["c3", "c1", "c4"],
            0.0,
            0,
            "adversarial",
            ("hr",),
            False,
        ),
    ]
)


def run_folder(path, report_dict):
    path.mkdir(parents=True)
    (path / "report.json").write_text(json.dumps(report_dict), encoding="utf-8")
    (path / "chunks.jsonl").write_text(
        "\n".join(json.dumps(c) for c in CHUNKS.values()) + "\n", encoding="utf-8"
    )
    return path
