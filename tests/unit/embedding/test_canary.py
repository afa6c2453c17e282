"""The embedding canary (rageval.embedding.canary): fixed texts, their vectors beside the baseline
(no pickle, sha256-checked), and the drift verdict with its figure."""

import json

import numpy as np
import pytest

from rageval.embedding import canary
from rageval.types import Document, GoldenQuery


class Encoder:
    """Deterministic vectors from a text's bytes; ``tilt`` moves them as another precision would."""

    fingerprint = "fake"

    def __init__(self, tilt=0.0, dim=8):
        self.tilt, self.dim, self.calls = tilt, dim, []

    def _vec(self, texts, prompt):
        self.calls.append((prompt, list(texts)))
        out = []
        for t in texts:
            rng = np.random.default_rng(sum((prompt + t).encode()))
            v = rng.normal(size=self.dim) + self.tilt * np.arange(self.dim)
            out.append(v / np.linalg.norm(v))
        return np.array(out, dtype=np.float32)

    def encode_queries(self, texts):
        return self._vec(texts, "q:")

    def encode_documents(self, texts):
        return self._vec(texts, "d:")


QUERIES = [GoldenQuery(f"q{i}", f"question number {i}") for i in range(40)]
DOCS = [Document(f"doc{i}", f"document {i} " * 300) for i in range(40)] + [Document("empty", " ")]


def test_the_texts_are_chosen_by_id_whatever_the_order():
    texts = canary.choose(QUERIES, DOCS)
    assert len(texts) == canary.N_TEXTS
    assert sum(t.is_query for t in texts) == canary.N_TEXTS // 2
    assert [t.id for t in canary.choose(QUERIES[::-1], DOCS[::-1])] == [t.id for t in texts]
    assert all(len(t.text) <= canary.PASSAGE_CHARS for t in texts)
    assert "passage:empty" not in {t.id for t in texts}
    # a small golden set leaves room for more passages
    few = canary.choose(QUERIES[:3], DOCS)
    assert len(few) == canary.N_TEXTS and sum(t.is_query for t in few) == 3


def test_queries_are_embedded_as_queries_and_passages_as_documents():
    enc = Encoder()
    block = canary.measure(enc, canary.choose(QUERIES[:2], DOCS[:2]))
    assert [c[0] for c in enc.calls] == ["q:", "d:"]
    ids = [t["id"] for t in block["texts"]]
    assert sorted(ids[:2]) == ["query:q0", "query:q1"]
    assert sorted(ids[2:]) == ["passage:doc0", "passage:doc1"]
    assert canary.unpack(block["vectors"]).shape == (4, 8)
    json.dumps(block)  # plain JSON data


def test_the_same_vectors_are_unchanged_and_moved_ones_report_the_smallest_cosine():
    texts = canary.choose(QUERIES, DOCS)
    base = canary.measure(Encoder(), texts)
    same = canary.drift(base, canary.measure(Encoder(), texts))
    assert same["status"] == "unchanged" and same["texts"] == 32
    assert "changed" not in same["line"]
    moved = canary.drift(base, canary.measure(Encoder(tilt=0.05), texts))
    assert moved["status"] == "changed" and moved["min_cosine"] < 1 - canary.NOISE
    assert moved["line"] == (
        f"embedding changed since the baseline: min cosine {moved['min_cosine']:.3f} over 32 "
        "canary texts; the comparison mixes it with your change"
    )
    other = canary.drift(base, canary.measure(Encoder(dim=4), texts))
    assert (
        other["status"] == "changed"
        and "vectors of 4 dimensions, the baseline's 8" in other["line"]
    )


def test_only_texts_unchanged_on_both_sides_are_compared():
    base = canary.measure(Encoder(), canary.choose(QUERIES, DOCS))
    edited = [Document(d.id, "edited " + d.text) for d in DOCS if d.text.strip()]
    now = canary.measure(Encoder(tilt=0.05), canary.choose(QUERIES, edited))
    assert canary.drift(base, now)["texts"] == 16  # the queries; every passage changed
    assert canary.drift(base, None)["status"] == "skipped"
    assert canary.drift(None, now)["status"] == "not_recorded"
    gone = canary.measure(Encoder(), canary.choose([], edited))
    assert canary.drift(base, gone)["status"] == "not_compared"


def test_the_vectors_live_beside_the_baseline_and_a_wrong_file_is_not_compared(tmp_path):
    block = canary.measure(Encoder(), canary.choose(QUERIES, DOCS))
    baseline = tmp_path / "baseline.json"
    stored = canary.to_file(block, baseline)
    assert "vectors" not in stored and stored["file"] == "baseline.canary.npy"
    assert (tmp_path / "baseline.canary.npy").is_file()
    back = canary.from_file(stored, baseline)
    np.testing.assert_array_equal(canary.unpack(back["vectors"]), canary.unpack(block["vectors"]))
    assert canary.drift(back, block)["status"] == "unchanged"
    arr = np.load(tmp_path / "baseline.canary.npy", allow_pickle=False)
    np.save(tmp_path / "baseline.canary.npy", arr * 0.5, allow_pickle=False)
    broken = canary.from_file(stored, baseline)
    assert "does not match its baseline" in broken["problem"]
    verdict = canary.drift(broken, block)
    assert verdict["status"] == "not_compared" and "re-promote" in verdict["line"]
    (tmp_path / "baseline.canary.npy").unlink()
    assert "missing" in canary.from_file(stored, baseline)["problem"]


def test_a_pickle_is_never_read(tmp_path):
    block = canary.measure(Encoder(), canary.choose(QUERIES[:1], DOCS[:1]))
    baseline = tmp_path / "b.json"
    stored = canary.to_file(block, baseline)
    raw = np.array([object()], dtype=object)
    path = tmp_path / "b.canary.npy"
    with open(path, "wb") as f:
        np.save(f, raw, allow_pickle=True)
    import hashlib

    stored["sha256"] = hashlib.sha256(path.read_bytes()).hexdigest()
    assert "not the canary's vectors" in canary.from_file(stored, baseline)["problem"]
    with pytest.raises(ValueError):
        canary.unpack({"dtype": "float32", "shape": [2, 2], "base64": "AAAA"})
