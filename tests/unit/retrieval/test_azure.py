"""AzureSearchRetriever against a local stand-in for the Azure AI Search REST API.

The stand-in (tests/support/fakes/azure_search.py) is not Azure: these tests pin down what rageval
sends and how it copes with answers, retries and failures; they cannot prove Azure ranks the same
way.
"""

from __future__ import annotations

import hashlib
import logging
import random
import re
import sys

import numpy as np
import pytest
from fakes.azure_search import RRF_K, FakeAzureSearch, fake_reranker_score, tokens

from rageval.errors import BackendError, ConfigError, IndexMismatchError, RagevalError
from rageval.retrieval.azure import retriever as azure_mod
from rageval.retrieval.azure.retriever import AzureSearchRetriever
from rageval.retrieval.base import Encoder, Retriever
from rageval.types import Chunk

KEY = "sk-TEST-9f8e7d6c5b4a39281706f5e4d3c2b1a0"
ENV = "RAGEVAL_TEST_AZURE_SEARCH_KEY"
WORDS = (
    "leave contractor region payments deploy vault secret rotate invoice runbook policy days "
    "parental service cluster alert latency backup restore quota throttle token index shard"
)
_real_git_short_commit = azure_mod._git_short_commit


class HashEncoder:
    """Deterministic stand-in for a model: hashed bag of words, L2-normalised; counts its calls."""

    fingerprint = "hash-bow-32"
    dim = 32

    def __init__(self) -> None:
        self.calls: list[tuple[str, int]] = []

    def _encode(self, texts: list[str]) -> np.ndarray:
        rows = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, text in enumerate(texts):
            for tok in tokens(text):
                h = int(hashlib.sha256(tok.encode()).hexdigest(), 16)
                rows[i, h % self.dim] += 1.0 if (h >> 8) & 1 else -1.0
            rows[i, 0] += 1e-3  # no zero rows
        return rows / np.linalg.norm(rows, axis=1, keepdims=True)

    def encode_documents(self, texts):
        self.calls.append(("documents", len(texts)))
        return self._encode(list(texts))

    def encode_queries(self, texts):
        self.calls.append(("queries", len(texts)))
        return self._encode(list(texts))


def _corpus(n: int = 80) -> list[Chunk]:
    rng, vocab, chunks = random.Random(7), WORDS.split(), []
    for i in range(n):
        text = " ".join(rng.choice(vocab) for _ in range(rng.randint(6, 16))) + f" doc{i}"
        cid = hashlib.sha256(f"d{i // 4}:{i % 4}:{text}".encode()).hexdigest()[:16]
        chunks.append(Chunk(cid, f"d{i // 4}", i % 4, text, 0, len(text), len(text.split())))
    return chunks


CHUNKS = _corpus()
QUERIES = [
    "rotate the vault secret",
    "parental leave days for a contractor",
    "payments region",
    "restore a backup after an alert",
    "doc17 quota throttle",
]


@pytest.fixture(autouse=True)
def _env(monkeypatch):
    monkeypatch.setenv(ENV, KEY)
    monkeypatch.setattr(azure_mod, "_git_short_commit", lambda: "abc1234")


@pytest.fixture
def fake():
    with FakeAzureSearch(api_key=KEY) as server:
        yield server


def make(fake, **kwargs) -> AzureSearchRetriever:
    kwargs = {"api_key_env": ENV, "retry_backoff": 0.01, **kwargs}
    return AzureSearchRetriever(fake.endpoint, **kwargs)


def test_lifecycle_builds_uploads_searches_and_deletes(fake):
    retriever, encoder = make(fake, mode="vector", upload_batch_size=25, run_key="t"), HashEncoder()
    assert isinstance(retriever, Retriever) and isinstance(encoder, Encoder)
    retriever.index(CHUNKS, encoder)
    assert retriever.index_name.startswith("rageval-abc1234-")
    definition = fake.indexes[retriever.index_name]
    by_name = {f["name"]: f for f in definition["fields"]}
    assert by_name["id"]["key"] and by_name["text"]["searchable"]
    assert by_name["vector"]["dimensions"] == 32
    assert (
        definition["vectorSearch"]["algorithms"][0]["exhaustiveKnnParameters"]["metric"] == "cosine"
    )
    assert sorted(len(r.body["value"]) for r in fake.seen("index_documents")) == [5, 25, 25, 25]
    results = retriever.search(QUERIES, 5)
    assert encoder.calls == [("documents", 80), ("queries", len(QUERIES))]
    assert [len(r.ids) for r in results] == [5] * len(QUERIES)
    bodies = [r.body for r in fake.seen("search")]
    # the requests rageval counts (the costs block) are the ones the service saw
    assert retriever.requests == {"index": 4, "search": len(bodies)} and len(bodies) == 5
    assert all(b["top"] == 5 and b["select"] == "id" and "search" not in b for b in bodies)
    assert all(
        b["vectorQueries"][0]["k"] == 5 and b["vectorQueries"][0]["fields"] == "vector"
        for b in bodies
    )
    retriever.close()
    assert retriever.index_name not in fake.indexes
    retriever.close()  # idempotent


def test_keep_index_leaves_the_index(fake):
    with make(fake, mode="bm25", keep_index=True) as retriever:
        retriever.index(CHUNKS, None)
    assert "vectorSearch" not in fake.indexes[retriever.index_name]  # bm25 uploads no vectors


def test_vector_mode_equals_exact_inner_product_search(fake):
    encoder = HashEncoder()
    with make(fake, mode="vector") as retriever:
        retriever.index(CHUNKS, encoder)
        results = retriever.search(QUERIES, 10)
    docs = encoder.encode_documents([c.text for c in CHUNKS]).astype(np.float64)
    ids = [c.id for c in CHUNKS]
    for result, q in zip(results, encoder.encode_queries(QUERIES).astype(np.float64), strict=True):
        ip = docs @ q
        order = sorted(range(len(ids)), key=lambda i: (-ip[i], ids[i]))[:10]
        assert list(result.ids) == [ids[i] for i in order]
        # Azure's cosine score is 1 / (1 + cosine distance) = 1 / (2 - cosine)
        np.testing.assert_allclose(result.scores, [1 / (2 - ip[i]) for i in order], atol=1e-6)


def test_bm25_mode_sends_only_text(fake):
    with make(fake, mode="bm25") as retriever:
        retriever.index(CHUNKS, None)
        (result,) = retriever.search(["doc17 quota"], 3)
    assert result.ids[0] == CHUNKS[17].id
    assert all("vectorQueries" not in r.body and r.body["search"] for r in fake.seen("search"))


def test_hybrid_is_rrf_of_the_text_and_vector_rankings(fake):
    encoder = HashEncoder()
    with make(fake, mode="hybrid", keep_index=True) as hybrid:
        hybrid.index(CHUNKS, encoder)
        fused = hybrid.search(QUERIES, 10)
    same = {"existing": True, "index_name": hybrid.index_name}
    with make(fake, mode="bm25", **same) as bm25, make(fake, mode="vector", **same) as vec:
        bm25.index(CHUNKS, encoder)
        vec.index(CHUNKS, encoder)
        lists = zip(bm25.search(QUERIES, 1000), vec.search(QUERIES, 50), strict=True)
    for result, (text, vector) in zip(fused, lists, strict=True):
        rrf: dict[str, float] = {}
        for ranked in (text, vector):
            for rank, cid in enumerate(ranked.ids, start=1):
                rrf[cid] = rrf.get(cid, 0.0) + 1 / (RRF_K + rank)
        expected = sorted(rrf, key=lambda c: (-rrf[c], c))[:10]
        assert list(result.ids) == expected
        np.testing.assert_allclose(result.scores, [rrf[c] for c in expected], atol=1e-12)


def test_semantic_mode_scores_by_reranker_then_keeps_hybrid_order(fake):
    text = {c.id: c.text for c in CHUNKS}
    with make(fake, mode="semantic") as retriever:
        retriever.index(CHUNKS, HashEncoder())
        assert fake.indexes[retriever.index_name]["semantic"]["defaultConfiguration"]
        (result,) = retriever.search([QUERIES[0]], 60)
    body = fake.seen("search")[0].body
    assert body["queryType"] == "semantic" and body["semanticConfiguration"] == "rageval-semantic"
    head, tail = result.scores[:50], result.scores[50:]
    assert list(head) == [fake_reranker_score(QUERIES[0], text[c]) for c in result.ids[:50]]
    assert list(head) == sorted(head, reverse=True) and all(0 <= s <= 4 for s in head)
    assert len(tail) == 10 and list(tail) == sorted(tail, reverse=True) and max(tail) < 0


@pytest.mark.parametrize("mode", ["vector", "bm25", "hybrid", "semantic"])
def test_existing_index_with_custom_field_names(fake, mode):
    encoder = HashEncoder()
    names = {"id_field": "doc_key", "text_field": "body", "vector_field": "embedding"}
    seed = make(fake, mode="semantic", index_name="team-index", keep_index=True, **names)
    seed.index(CHUNKS, encoder)
    seed.close()
    uploads = len(fake.seen("index_documents"))
    with make(fake, mode=mode, existing=True, index_name="team-index", **names) as retriever:
        retriever.index(CHUNKS, encoder)
        results = retriever.search(QUERIES, 5)
    assert len(fake.seen("index_documents")) == uploads and "team-index" in fake.indexes
    assert all(len(r.ids) == 5 and set(r.ids) <= {c.id for c in CHUNKS} for r in results)
    assert fake.seen("search")[-1].body["select"] == "doc_key"


def test_existing_index_problems_are_config_errors(fake):
    with make(fake, mode="hybrid", index_name="team-index", keep_index=True) as seed:
        seed.index(CHUNKS, HashEncoder())
    with pytest.raises(ConfigError, match="does not exist"):
        make(fake, mode="bm25", existing=True, index_name="nope").index(CHUNKS, None)
    with pytest.raises(ConfigError, match="'body'"):
        make(fake, mode="bm25", existing=True, index_name="team-index", text_field="body").index(
            CHUNKS, None
        )
    with pytest.raises(ConfigError, match="semantic configuration"):
        make(fake, mode="semantic", existing=True, index_name="team-index").index(
            CHUNKS, HashEncoder()
        )

    class Wide(HashEncoder):
        dim = 48

    with pytest.raises(IndexMismatchError, match="32-d"):
        make(fake, mode="vector", existing=True, index_name="team-index").index(CHUNKS, Wide())


@pytest.mark.parametrize("status", [429, 503])
def test_retry_after_is_honoured(fake, status):
    with make(fake, mode="hybrid", parallelism=1) as retriever:
        retriever.index(CHUNKS, HashEncoder())
        expected = retriever.search(QUERIES[:2], 5)
        fake.requests.clear()
        fake.fail(status, times=1, retry_after="1")
        assert retriever.search(QUERIES[:2], 5) == expected
    seen = fake.seen("search")
    assert [r.status for r in seen] == [status, 200, 200]
    assert seen[1].body["search"] == seen[0].body["search"]
    assert seen[1].started - seen[0].finished >= 0.95  # waited the Retry-After second


def test_bare_429_on_post_is_retried(fake):
    with make(fake, mode="bm25") as retriever:
        retriever.index(CHUNKS, None)
        fake.fail(429, times=3, retry_after=None)
        assert len(retriever.search(QUERIES[:1], 5)[0].ids) == 5
    assert [r.status for r in fake.seen("search")] == [429, 429, 429, 200]


def test_stock_azure_policy_would_not_retry_a_bare_429_post(fake):
    """Why the retriever installs its own policy: azure-core skips POST retries on 429."""
    from azure.core.credentials import AzureKeyCredential
    from azure.core.exceptions import HttpResponseError
    from azure.search.documents import SearchClient

    with make(fake, mode="bm25", keep_index=True) as retriever:
        retriever.index(CHUNKS, None)
    fake.fail(429, times=1, retry_after=None)
    client = SearchClient(fake.endpoint, retriever.index_name, AzureKeyCredential(KEY))
    with pytest.raises(HttpResponseError):
        list(client.search(search_text="vault"))
    assert [r.status for r in fake.seen("search")] == [429]


def test_persistent_failure_names_the_queries_and_returns_nothing(fake):
    queries = ["vault secret", "boom one", "payments", "boom two"]
    with make(fake, mode="hybrid", max_retries=2) as retriever:
        retriever.index(CHUNKS, HashEncoder())
        fake.fail(503, times=None, search_contains="boom", retry_after="0")
        with pytest.raises(BackendError) as caught:
            retriever.search(queries, 5)
    assert caught.value.failed_queries == ["boom one", "boom two"]
    assert "#1 'boom one'" in str(caught.value) and "#3 'boom two'" in str(caught.value)
    assert "HTTP 503" in str(caught.value)
    booms = [r for r in fake.seen("search") if "boom" in r.body["search"]]
    assert len(booms) == 2 * 3  # first try + max_retries, per query


def test_item_failures_in_a_207_batch_are_retried(fake):
    fake.fail_documents([CHUNKS[0].id, CHUNKS[1].id], status=503)
    with make(fake, mode="bm25") as retriever:
        retriever.index(CHUNKS, None)
        assert len(fake.docs[retriever.index_name]) == 80
    assert [len(r.body["value"]) for r in fake.seen("index_documents")] == [80, 2]


def test_permanent_item_failure_raises_and_cleans_up(fake):
    fake.fail_documents([CHUNKS[3].id], status=400)
    retriever = make(fake, mode="bm25")
    with pytest.raises(BackendError, match=CHUNKS[3].id):
        retriever.index(CHUNKS, None)
    assert retriever.index_name not in fake.indexes


def test_waits_until_uploads_are_searchable():
    with FakeAzureSearch(api_key=KEY, visibility_delay=0.3) as slow:
        with make(slow, mode="bm25") as retriever:
            retriever.index(CHUNKS, None)
            assert len(retriever.search(["doc5"], 100)[0].ids) >= 1
        assert len(slow.seen("count")) >= 2


def test_queries_run_concurrently_and_keep_their_order():
    with FakeAzureSearch(api_key=KEY, search_delay=0.05) as slow:
        with make(slow, mode="bm25", parallelism=4) as retriever:
            retriever.index(CHUNKS, None)
            together = retriever.search(QUERIES * 2, 5)
            alone = [retriever.search([q], 5)[0] for q in QUERIES * 2]
        assert together == alone and slow.max_in_flight >= 2


def test_the_key_never_leaks(fake, caplog):
    caplog.set_level(logging.DEBUG)
    retriever = make(fake, mode="hybrid", max_retries=1)
    retriever.index(CHUNKS, HashEncoder())
    fake.fail(429, times=1, retry_after="0")
    fake.fail(503, times=None, search_contains="boom", retry_after="0")
    with pytest.raises(BackendError) as caught:
        retriever.search(["vault", "boom"], 5)
    retriever.close()
    assert "Request URL" in caplog.text  # azure-core's HTTP logging did run
    texts = [caplog.text, str(caught.value), repr(retriever), *(r.url for r in fake.seen())]
    assert all(KEY not in t for t in texts)
    assert all(r.authorized for r in fake.seen())


def test_a_wrong_key_is_a_backend_error_without_the_key(fake, monkeypatch):
    monkeypatch.setenv(ENV, "wrong-" + KEY)
    with pytest.raises(BackendError, match="HTTP 403") as caught:
        make(fake, mode="bm25").index(CHUNKS, None)
    assert KEY not in str(caught.value)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"mode": "dense"},
        {"existing": True},
        {"index_name": "Bad_Name"},
        {"upload_batch_size": 1001},
        {"parallelism": 0},
        {"text_field": "has space"},
        {"endpoint": "search.windows.net"},
    ],
)
def test_config_mistakes_fail_at_construction(kwargs):
    kwargs = {"endpoint": "https://x.search.windows.net", **kwargs}
    with pytest.raises(ConfigError):
        AzureSearchRetriever(**kwargs)


def test_throwaway_index_name_follows_config_content_and_run_key(fake, monkeypatch):
    def name(chunks=CHUNKS, **kwargs) -> str:
        with make(fake, mode="bm25", **kwargs) as retriever:
            assert retriever.index_name is None  # named from the content by index()
            retriever.index(chunks, None)
            return retriever.index_name

    base = name()
    assert base == name() and azure_mod._INDEX_NAME.match(base)
    assert re.fullmatch(r"rageval-abc1234-[0-9a-f]{12}", base)
    assert (
        len({base, name(run_key="job-2"), name(chunks=CHUNKS[:10]), name(text_field="body")}) == 4
    )

    def no_git(*args, **kwargs):
        raise FileNotFoundError("git")

    monkeypatch.setattr(azure_mod.subprocess, "run", no_git)
    assert _real_git_short_commit() == "nogit"


def test_missing_sdk_gives_the_install_hint(monkeypatch):
    monkeypatch.setitem(sys.modules, "azure.search.documents", None)
    retriever = AzureSearchRetriever("https://x.search.windows.net", mode="bm25")
    with pytest.raises(RagevalError, match=r"pip install 'rageval\[azure\]'"):
        retriever.index(CHUNKS, None)


def test_without_a_key_it_signs_in_with_default_azure_credential(monkeypatch):
    import azure.identity

    class Stub:
        pass

    monkeypatch.delenv(ENV)
    monkeypatch.setattr(azure.identity, "DefaultAzureCredential", Stub)
    retriever = AzureSearchRetriever("https://x.search.windows.net", api_key_env=ENV)
    assert isinstance(retriever._credential(), Stub)


def test_an_existing_index_with_its_own_ids_is_scored_on_its_passages(fake, mini, model_dir):
    """A team's index built by its own ingestion (ids kb-0000..., paragraphs, a document
    field): with doc_id_field the passages come back with text and are scored on it."""
    from rageval.inputs.chunking import ChunkingSpec
    from rageval.inputs.corpus import load_corpus
    from rageval.retrieval.azure.client import index_definition
    from rageval.retrieval.passages import Passage
    from rageval.run.evaluation import evaluate
    from rageval.run.spec import RunSpec

    paragraphs = [
        (d.id, p.strip())
        for d in load_corpus(str(mini / "corpus"))
        for p in d.text.split("\n\n")
        if p.strip()
    ]
    seed = make(fake, mode="bm25", index_name="team-kb", keep_index=True)
    definition = index_definition("team-kb", "id", "text", "vector", dim=None)
    definition["fields"].append({"name": "source_doc", "type": "Edm.String"})
    seed._index_client().create_or_update_index(definition)
    seed.index_name = "team-kb"
    docs = [
        {"id": f"kb-{i:04d}", "text": p, "source_doc": d} for i, (d, p) in enumerate(paragraphs)
    ]
    seed._search_client().upload_documents(documents=docs)
    seed.close()

    team = dict(existing=True, index_name="team-kb", doc_id_field="source_doc")
    with make(fake, mode="bm25", **team) as retriever:
        retriever.index([], None)
        (hits,) = retriever.search(["parental leave for contractors"], 3)
        assert all(isinstance(h, Passage) and h.id.startswith("kb-") for h in hits)
        assert hits[0].doc_id == "policies/leave" and "ontractors" in hits[0].text
        assert fake.seen("search")[-1].body["select"] == "id,text,source_doc"
        spec = RunSpec(
            corpus=str(mini / "corpus"),
            golden=str(mini / "golden.jsonl"),
            tokenizer_dir=model_dir,
            chunking=ChunkingSpec(64),
            latency_sample=0,
        )
        report = evaluate(spec, retriever, None)
    assert report.metrics["quote_recall@5"] > 0.5 and report.metrics["ndcg@5"] > 0.3
    assert report.counts["passages_located"] == report.counts["passages"]
    assert report.per_query[0]["retrieved"][0].startswith("kb-")
    with pytest.raises(ConfigError, match="doc_id_field is for an existing index"):
        make(fake, mode="bm25", doc_id_field="source_doc")


def test_an_existing_index_is_approximate_and_its_exact_reference_is_exhaustive(fake):
    """ann_recall@k of an existing (HNSW) index is measured against the same vector queries
    with exhaustive: true; a throwaway index searches exhaustively already."""
    encoder = HashEncoder()
    names = {"index_name": "team-hnsw", "keep_index": True}
    seed = make(fake, mode="vector", **names)
    seed.index(CHUNKS, encoder)
    seed.close()
    assert not seed.approximate() and seed.exact_search(QUERIES, 5) is None
    with make(fake, mode="vector", existing=True, index_name="team-hnsw") as retriever:
        retriever.index(CHUNKS, encoder)
        assert retriever.approximate()
        approx = retriever.search(QUERIES, 5)
        assert "exhaustive" not in fake.seen("search")[-1].body["vectorQueries"][0]
        exact = retriever.exact_search(QUERIES, 5)
        assert fake.seen("search")[-1].body["vectorQueries"][0]["exhaustive"] is True
    assert [r.ids for r in exact] == [r.ids for r in approx]  # the stand-in's kNN is exact
