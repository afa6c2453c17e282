"""Test data for the Qdrant backend tests: a hashed bag-of-words encoder and a small corpus.

The corpus draws 40 chunks and 8 queries from a fixed vocabulary with a seeded generator, so every
run and both test files see the same data.
"""

from __future__ import annotations

import hashlib
import re

import numpy as np

from rageval.types import Chunk


class HashEncoder:
    """Hashed, weighted bag of words: deterministic, L2-normalised float32 rows."""

    fingerprint = "test-hash-bow-64"
    dim = 64

    def encode_documents(self, texts):
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in re.findall(r"\w+", text.lower()):
                h = int.from_bytes(hashlib.blake2b(word.encode(), digest_size=8).digest(), "little")
                out[row, h % self.dim] += 1.0 + (h >> 32) % 7 / 10
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.where(norms == 0, 1, norms)

    encode_queries = encode_documents


VOCAB = (
    "leave parental contractor payments region deploy secret vault rotate invoice policy employee "
    "annual days service runbook cluster backup restore alert latency queue budget cache shard "
    "replica tenant quota ledger audit token certificate"
)


def make_chunks(texts):
    return [
        Chunk(
            id=f"c{i:03d}",
            doc_id=f"d{i // 4}",
            ordinal=i % 4,
            text=t,
            start=0,
            end=len(t),
            n_tokens=len(t.split()),
        )
        for i, t in enumerate(texts)
    ]


def make_corpus():
    """(chunks, queries): 40 chunks of 4 to 13 vocabulary words, 8 queries of 3."""
    rng, words = np.random.default_rng(7), VOCAB.split()
    texts = [" ".join(rng.choice(words, size=rng.integers(4, 14))) for _ in range(40)]
    queries = [" ".join(rng.choice(words, size=3)) for _ in range(8)]
    return make_chunks(texts), queries
