"""A real-text corpus of any size, generated deterministically from the bundled demo (no download).

A word-bigram chain learnt from the demo corpus's text writes documents whose words, word
lengths and word pairs are the demo's (English prose, policy and ticket language, tables' words),
so a tokenizer and an embedding model see the load a real corpus gives: ~1.3 word pieces a word,
varied texts, no two chunks alike. Many chains advance at once (numpy), so a million chunks take
seconds to draw. The golden set quotes a run of words from a drawn document as its evidence and
asks for it with every third word left out, so a run over it scores like a (easy) retrieval task.

    .venv/bin/python scripts/scale_corpus.py OUT_DIR --chunks 1000000 [--chunk 64] [--queries 500]

writes OUT_DIR/corpus.jsonl ({"id", "text"} a line) and OUT_DIR/golden.jsonl; ``texts(n, words)``
gives chunk-sized texts to embed directly (scripts/bench_scale.py --embed).
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

import numpy as np

WORD = re.compile(r"[A-Za-z][A-Za-z'-]*|\d+|[.,;:?!%()|]")


def demo_words() -> list[str]:
    """Every word and punctuation mark of the bundled demo corpus, in reading order."""
    from rageval.app.config import DEMO_DIR

    words: list[str] = []
    for f in sorted((DEMO_DIR / "corpus").rglob("*")):
        if f.is_file():
            words += WORD.findall(f.read_text(encoding="utf-8"))
    return words


class Chain:
    """A word-bigram model: the next word is drawn from the words that followed this one."""

    def __init__(self, words: list[str]):
        vocab = sorted(set(words))
        index = {w: i for i, w in enumerate(vocab)}
        seq = np.array([index[w] for w in words], dtype=np.int64)
        order = np.argsort(seq[:-1], kind="stable")
        self.vocab = np.array(vocab, dtype=object)
        self.successors = seq[1:][order]
        counts = np.bincount(seq[:-1], minlength=len(vocab))
        counts[counts == 0] = 0
        self.start = np.concatenate([[0], np.cumsum(counts)[:-1]])
        self.count = counts
        self.dead = counts == 0  # the last word of the demo: restart anywhere

    def draw(self, rng: np.random.Generator, n_texts: int, n_words: int) -> np.ndarray:
        """(n_texts, n_words) word indexes, all chains stepped together."""
        out = np.empty((n_texts, n_words), dtype=np.int64)
        state = rng.integers(0, len(self.successors), n_texts)
        state = self.successors[state]
        for j in range(n_words):
            out[:, j] = state
            dead = self.dead[state]
            pick = self.start[state] + (rng.random(n_texts) * np.maximum(self.count[state], 1))
            state = self.successors[pick.astype(np.int64)]
            if dead.any():
                state[dead] = self.successors[rng.integers(0, len(self.successors), dead.sum())]
        return out

    def text(self, row: np.ndarray) -> str:
        return " ".join(self.vocab[row].tolist())


def texts(n: int, words: int = 48, seed: int = 0, block: int = 100_000) -> list[str]:
    """``n`` texts of ``words`` words each (48 words: ~64 word pieces, one chunk=64 chunk)."""
    chain = Chain(demo_words())
    rng = np.random.default_rng(seed)
    out: list[str] = []
    for lo in range(0, n, block):
        rows = chain.draw(rng, min(block, n - lo), words)
        out += [chain.text(r) for r in rows]
    return out


def write(out: Path, chunks: int, chunk: int = 64, n_queries: int = 500, seed: int = 0) -> dict:
    """A corpus of about ``chunks`` chunks of ``chunk`` word pieces, and its golden set."""
    chain = Chain(demo_words())
    rng = np.random.default_rng(seed)
    per_doc = 5
    doc_words = int(chunk * per_doc / 1.3)
    n_docs = max(1, chunks // per_doc)
    out.mkdir(parents=True, exist_ok=True)
    picks = set(rng.choice(n_docs, size=min(n_queries, n_docs), replace=False).tolist())
    golden = []
    with open(out / "corpus.jsonl", "w", encoding="utf-8") as fh:
        for lo in range(0, n_docs, 20_000):
            rows = chain.draw(rng, min(20_000, n_docs - lo), doc_words)
            for i, row in enumerate(rows, start=lo):
                text = chain.text(row)
                fh.write(json.dumps({"id": f"d{i:07d}", "text": text}) + "\n")
                if i in picks:
                    start = int(rng.integers(0, doc_words - 14))
                    quote = chain.text(row[start : start + 14])
                    asked = " ".join(w for k, w in enumerate(quote.split()) if k % 3 != 2)
                    golden.append(
                        {
                            "id": f"q{len(golden):05d}",
                            "query": asked,
                            "evidence": [{"doc": f"d{i:07d}", "quote": quote}],
                        }
                    )
    with open(out / "golden.jsonl", "w", encoding="utf-8") as fh:
        for g in golden:
            fh.write(json.dumps(g) + "\n")
    return {"documents": n_docs, "queries": len(golden), "words_per_document": doc_words}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("out", type=Path)
    p.add_argument("--chunks", type=int, default=1_000_000)
    p.add_argument("--chunk", type=int, default=64)
    p.add_argument("--queries", type=int, default=500)
    a = p.parse_args()
    print(json.dumps(write(a.out, a.chunks, a.chunk, a.queries)))


if __name__ == "__main__":
    main()
