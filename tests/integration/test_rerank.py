"""Reranking with a tiny, randomly initialised CrossEncoder built here (no model ships for it)."""

import numpy as np
import pytest

from rageval.errors import ConfigError
from rageval.retrieval.rerank import CrossEncoderReranker
from rageval.types import Chunk, RankedList

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def tiny_cross_encoder(tmp_path_factory, model_dir):
    from tiny_models import build_tiny_cross_encoder

    return build_tiny_cross_encoder(tmp_path_factory.mktemp("tiny-ce"), model_dir)


class _Base:
    def __init__(self, lists):
        self.lists, self.depths = lists, []

    def index(self, chunks, encoder):
        self.indexed = len(chunks)

    def search(self, queries, depth):
        self.depths.append(depth)
        return self.lists


def test_reranker_reorders_candidates_by_cross_encoder_score(tiny_cross_encoder):
    from sentence_transformers import CrossEncoder

    chunks = [
        Chunk(f"c{i}", "d", i, f"text number {i} about leave and regions", 0, 1, 5)
        for i in range(6)
    ]
    base = _Base([RankedList(tuple(c.id for c in chunks), tuple(np.linspace(1, 0, 6)))] * 2)
    rr = CrossEncoderReranker(base, tiny_cross_encoder, candidates=4)
    rr.index(chunks, None)
    out = rr.search(["how many leave days", "which region"], 3)
    assert base.depths == [4]
    ce = CrossEncoder(tiny_cross_encoder, device="cpu")
    for q, rl in zip(["how many leave days", "which region"], out, strict=True):
        scores = ce.predict([(q, c.text) for c in chunks[:4]])
        want = sorted(
            zip([c.id for c in chunks[:4]], scores, strict=True), key=lambda p: (-p[1], p[0])
        )
        assert list(rl.ids) == [i for i, _ in want][:3]
        assert rl.scores == pytest.approx([float(s) for _, s in want][:3], abs=1e-5)
    assert rr.pairs_scored == 8


def test_reranker_needs_a_local_model(tmp_path):
    with pytest.raises(ConfigError, match="local CrossEncoder folder"):
        CrossEncoderReranker(_Base([]), str(tmp_path / "missing"))
