"""Embedding with and without MKL's strict reproducible mode, side by side.

    python scripts/bench_mkl_mode.py [--texts 400] [--repeats 3]

Each mode runs in its own process (MKL reads MKL_CBWR once, when torch first calls it): the
packaged model embeds the demo corpus (golden/corpus) first ``--texts`` chunks with rageval's
batching, batch 64, ``--repeats`` times; the process's CPU time is reported, and how many vectors
change their bits between batches of 64 and of 4 (0 is what the embedding cache needs).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

CHILD = """
import json, sys, time
import rageval  # sets MKL_CBWR unless it is set (the parent passes "" to turn it off)
import numpy as np
from rageval.inputs.chunking import ChunkingSpec, chunk_documents, load_tokenizer
from rageval.embedding import SentenceTransformerEncoder
from rageval.embedding.batching import encode_stable
from rageval.inputs.corpus import load_corpus
n, repeats = int(sys.argv[1]), int(sys.argv[2])
enc = SentenceTransformerEncoder(progress=False)
model = enc._load()
tok = load_tokenizer(str(enc.model_path))
texts = [c.text for c in chunk_documents(load_corpus("golden/corpus"), \
ChunkingSpec(256, 32), tok)][:n]
encode_stable(model, texts[:8], 64)  # warm-up
start = time.process_time()
for _ in range(repeats):
    big = encode_stable(model, texts, 64)
cpu = (time.process_time() - start) / repeats
small = encode_stable(model, texts, 4)
changed = int(sum(a.tobytes() != b.tobytes() for a, b in zip(big, small)))
print(json.dumps({"texts": len(texts), "cpu_s": cpu, "changed_64_vs_4": changed}))
"""


def run(mode: str, n: int, repeats: int) -> dict:
    env = {**os.environ, "MKL_CBWR": mode, "HF_HUB_OFFLINE": "1"}
    out = subprocess.run(
        [sys.executable, "-c", CHILD, str(n), str(repeats)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--texts", type=int, default=400)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    strict = run("AUTO,STRICT", args.texts, args.repeats)
    default = run("", args.texts, args.repeats)
    print(f"texts: {strict['texts']}")
    print(
        f"CPU s per pass, MKL default:     {default['cpu_s']:.2f}  "
        f"(vectors changed 64 vs 4: {default['changed_64_vs_4']})"
    )
    print(
        f"CPU s per pass, MKL AUTO,STRICT: {strict['cpu_s']:.2f}  "
        f"(vectors changed 64 vs 4: {strict['changed_64_vs_4']})"
    )
    print(f"strict / default: {strict['cpu_s'] / default['cpu_s']:.3f}")


if __name__ == "__main__":
    main()
