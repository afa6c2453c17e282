"""rageval.retrieval.local.lexical: BM25's parameters."""

from __future__ import annotations

import pytest

from rageval.errors import ConfigError


def test_bm25_refuses_parameters_outside_their_range():
    from rageval.retrieval.local.lexical import BM25Retriever

    with pytest.raises(
        ConfigError, match=r"search.bm25.b must be a number between 0 and 1, got 1.2"
    ):
        BM25Retriever(b=1.2)
    with pytest.raises(ConfigError, match="search.bm25.k1 must be a number 0 or more"):
        BM25Retriever(k1=-0.5)
    assert BM25Retriever(k1=0, b=1).params["b"] == 1
