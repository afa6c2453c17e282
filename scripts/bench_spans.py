"""Cost of the span, quote and token-budget metrics beside the trec_eval ranking metrics.

A synthetic corpus (documents of random words, chunked by the real tokenizer into 128-token
chunks), queries with one to three evidence quotes each and rankings as deep as a run searches
(max(ks) and the depth that fills the largest budget). Times, in the same process:

- ``score_rankings``: the six ranking metrics at every k (what every run already pays);
- ``span_metrics``: evidence recall/precision/IoU and quote recall/nDCG at every k;
- ``budget_metrics``: the same within each budget, truncating with the model's tokenizer;
- ``token_counts``.

    .venv/bin/python scripts/bench_spans.py --queries 5000
"""

from __future__ import annotations

import argparse
import random
import time

from rageval.embedding import resolve_model_path
from rageval.inputs.chunking import ChunkingSpec, chunk_documents, load_tokenizer
from rageval.scoring.budget import (
    DEFAULT_BUDGETS,
    budget_metrics,
    depth_for,
    token_counts,
    tokenizer_truncate,
)
from rageval.scoring.metrics import score_rankings
from rageval.scoring.relevance import Span
from rageval.scoring.spans import chunk_extents, span_metrics
from rageval.types import Document

WORDS = [
    "payments",
    "ledger",
    "invoice",
    "vault",
    "region",
    "rotate",
    "secret",
    "deploy",
    "service",
    "leave",
    "policy",
]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--queries", type=int, default=5000)
    ap.add_argument("--docs", type=int, default=200)
    ap.add_argument("--chunk", type=int, default=128)
    args = ap.parse_args()
    rng = random.Random(0)
    docs = [Document(f"d{i}", " ".join(rng.choices(WORDS, k=2000))) for i in range(args.docs)]
    tok = load_tokenizer(str(resolve_model_path("all-MiniLM-L6-v2")))
    chunks = chunk_documents(docs, ChunkingSpec(args.chunk), tok)
    ext = chunk_extents(chunks, {d.id: len(d.text) for d in docs})
    by_id = {c.id: c for c in chunks}
    ks = (1, 3, 5, 10, 20)
    depth = max(max(ks), depth_for(DEFAULT_BUDGETS, [c.n_tokens for c in chunks]))
    qids, rankings, spans, qrels = [], [], {}, {}
    ids = [c.id for c in chunks]
    for q in range(args.queries):
        qid = f"q{q}"
        qids.append(qid)
        qs = []
        for _ in range(rng.randint(1, 3)):
            d = rng.choice(docs)
            s = rng.randrange(0, len(d.text) - 400)
            qs.append(Span(d.id, s, s + rng.randint(50, 400), 1))
        spans[qid] = qs
        touching = [
            c
            for c in chunks
            for sp in qs
            if c.doc_id == sp.doc and c.end > sp.start and c.start < sp.end
        ]
        qrels[qid] = {c.id: 1 for c in touching}
        ranked = [c.id for c in touching[:2]] + rng.sample(ids, depth)
        rankings.append(list(dict.fromkeys(ranked))[:depth])

    def timed(f):
        t = time.perf_counter()
        f()
        return time.perf_counter() - t

    n_tok = {c.id: c.n_tokens for c in chunks}
    ranking_s = timed(lambda: score_rankings(qids, rankings, qrels, ks))
    span_s = timed(lambda: span_metrics(qids, rankings, spans, ext, ks))
    budget_s = timed(
        lambda: budget_metrics(
            qids,
            rankings,
            chunks_by_id=by_id,
            extents=ext,
            spans=spans,
            qrels=qrels,
            unit_of=str,
            budgets=DEFAULT_BUDGETS,
            truncate=tokenizer_truncate(tok),
        )
    )
    tokens_s = timed(lambda: token_counts(rankings, n_tok, ks))
    print(f"{args.queries} queries, {len(chunks)} chunks of {args.chunk} tokens, depth {depth}")
    print("| metrics | seconds | x ranking metrics |\n|---|---:|---:|")
    for name, s in [
        ("ranking (trec_eval)", ranking_s),
        ("span + quote @k", span_s),
        ("budget @Bt (4 budgets)", budget_s),
        ("tokens@k", tokens_s),
    ]:
        print(f"| {name} | {s:.2f} | {s / ranking_s:.1f} |")


if __name__ == "__main__":
    main()
