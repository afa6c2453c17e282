"""Peak memory and time to chunk one single-line document of N MB (default 10).

    python scripts/bench_long_document.py 10

Run each size in its own process: peak RSS is per process. Results in BENCHMARKS.md.
"""

from __future__ import annotations

import random
import resource
import sys
import time

from rageval.embedding import resolve_model_path
from rageval.inputs.chunking import ChunkingSpec, chunk_documents, load_tokenizer
from rageval.types import Document


def main(mb: float) -> None:
    rng = random.Random(0)
    words = ["alpha", "beta", "gamma", "retrieval", "evaluation", "kubernetes", "payments", "x9z"]
    text = " ".join(rng.choice(words) for _ in range(int(mb * 1e6 / 7)))[: int(mb * 1e6)]
    tok = load_tokenizer(str(resolve_model_path("all-MiniLM-L6-v2")))
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    t = time.perf_counter()
    chunks = chunk_documents([Document(id="big", text=text)], ChunkingSpec(256), tok)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(
        f"{mb:g} MB single line: {len(chunks)} chunks in {time.perf_counter() - t:.1f} s, "
        f"peak RSS {peak:.0f} MB (text and tokenizer loaded: {before:.0f} MB)"
    )


if __name__ == "__main__":
    main(float(sys.argv[1]) if len(sys.argv) > 1 else 10.0)
