"""QdrantRetriever's collection lifecycle, settings and errors, against the real qdrant-client in
embedded mode (``:memory:`` and ``path=``); its rankings are in test_qdrant_backend_ranking.py.
"""

from __future__ import annotations

import logging
import re
import sys

import pytest

pytest.importorskip("qdrant_client")

from qdrant_client import QdrantClient  # noqa: E402
from qdrant_fixture import HashEncoder, make_corpus  # noqa: E402

from rageval.errors import BackendError, ConfigError, RagevalError  # noqa: E402
from rageval.retrieval.base import Encoder, Retriever  # noqa: E402
from rageval.retrieval.qdrant.retriever import QdrantRetriever  # noqa: E402

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def corpus():
    return make_corpus()


def test_is_a_retriever():
    assert isinstance(HashEncoder(), Encoder)
    assert isinstance(QdrantRetriever(), Retriever)


def test_on_disk_collection_persists(corpus, tmp_path):
    chunks, queries = corpus
    enc = HashEncoder()
    with QdrantRetriever(
        path=str(tmp_path), collection="kept", mode="hybrid", upload_batch_size=16
    ) as r:
        r.index(chunks, enc)
        before = r.search(queries, 5)
        # the calls the costs block reports: 40 chunks upserted 16 at a time, one batched query
        assert r.requests == {"index": 3, "search": 1}
    client = QdrantClient(path=str(tmp_path))
    try:
        assert client.count("kept").count == len(chunks)
        (point,) = client.retrieve("kept", [3], with_payload=True)
        assert point.payload == {"chunk_id": "c003", "doc_id": "d0", "label": "d0:3"}
    finally:
        client.close()
    with QdrantRetriever(path=str(tmp_path), collection="kept", mode="hybrid") as r:
        r.index(chunks, enc)  # the lock was released and the collection is rebuilt
        assert r.search(queries, 5) == before


@pytest.mark.parametrize("keep", [False, True])
def test_throwaway_collection_is_dropped_on_close(corpus, tmp_path, keep):
    chunks, _ = corpus
    r = QdrantRetriever(path=str(tmp_path), run_key="sweep/job 3", keep_collection=keep)
    assert r.collection.startswith("rageval-sweep-job-3-")
    r.index(chunks, HashEncoder())
    r.close()
    client = QdrantClient(path=str(tmp_path))
    try:
        assert client.collection_exists(r.collection) is keep
    finally:
        client.close()
    with pytest.raises(RagevalError, match="index"):
        r.search(["leave"], 3)
    assert QdrantRetriever().collection != QdrantRetriever().collection  # unnamed: unique


@pytest.mark.parametrize(
    "kwargs",
    [
        {"mode": "splade"},
        {"fusion": "max"},
        {"rrf_k": -1},
        {"fusion": "weighted", "weights": [1.0]},
        {"bm25_method": "robertson"},
        {"path": "x", "url": "http://y"},
        {"candidate_depth": 0},
        {"b": 2.0},
        {"mode": "bm25", "stemmer": "klingon"},
        {"mode": "bm25", "stopwords": "klingon"},
    ],
)
def test_bad_settings_fail_at_construction(kwargs):
    with pytest.raises(ConfigError):
        QdrantRetriever(**kwargs)


def test_dense_modes_need_an_encoder(corpus):
    with QdrantRetriever(mode="hybrid") as r, pytest.raises(ConfigError, match="encoder"):
        r.index(corpus[0], None)


def test_missing_client_gives_install_hint(monkeypatch):
    monkeypatch.setitem(sys.modules, "qdrant_client", None)  # import fails as if not installed
    with pytest.raises(RagevalError, match=re.escape("pip install 'rageval[qdrant]'")):
        QdrantRetriever()


def test_server_errors_never_show_the_api_key(corpus, monkeypatch, caplog):
    monkeypatch.setenv("RAGEVAL_TEST_QDRANT_KEY", "s3cr3t-key")
    url = "http://user:pw@127.0.0.1:9"  # nothing listens on the discard port
    r = QdrantRetriever(url=url, api_key_env="RAGEVAL_TEST_QDRANT_KEY", mode="bm25")
    with caplog.at_level(logging.DEBUG), pytest.raises(BackendError) as err:
        r.index(corpus[0], None)
    r._client.close()
    shown = f"{err.value} {r!r} {caplog.text}"
    assert "s3cr3t-key" not in shown and ":pw@" not in shown
    assert "127.0.0.1:9" in str(err.value)
