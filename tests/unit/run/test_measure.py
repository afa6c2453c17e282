"""The costs block and the stages of a hybrid run on the mini corpus, with BM25 and a counting
fake encoder (no model): what was embedded or read from the cache, index bytes, requests of a
backend that counts them, stage times that add up, and the hybrid's three stages."""

from __future__ import annotations

import hashlib
import math

import numpy as np
import pytest

from rageval.report.costs import costs_summary
from rageval.report.stages import stages_table
from rageval.retrieval.fusion import HybridRetriever
from rageval.retrieval.local.dense import FaissRetriever
from rageval.retrieval.local.lexical import BM25Retriever
from rageval.retrieval.retry import RetryingRetriever
from rageval.run import memory
from rageval.run.evaluation import evaluate
from rageval.run.spec import RunSpec


class CountingEncoder:
    """Vectors from a hash of the text; ``texts_encoded`` counts texts not seen before, as the
    embedding cache does for the real encoder."""

    fingerprint = "counting"
    dim = 8

    def __init__(self):
        self.seen: set[str] = set()
        self.texts_encoded = 0

    def _vec(self, texts):
        new = {t for t in texts if t not in self.seen}
        self.texts_encoded += len(new)
        self.seen |= new
        rows = [np.frombuffer(hashlib.sha256(t.encode()).digest()[:8], np.uint8) for t in texts]
        v = np.asarray(rows, dtype=np.float32) + 1.0
        return v / np.linalg.norm(v, axis=1, keepdims=True)

    encode_documents = encode_queries = _vec


class CountingBackend(BM25Retriever):
    """A backend that counts its calls, as the Azure and Qdrant retrievers do."""

    def __init__(self):
        super().__init__()
        self.requests = {"index": 0, "search": 0}

    def index(self, chunks, encoder=None):
        super().index(chunks, encoder)
        self.requests["index"] += 3

    def search(self, queries, depth):
        self.requests["search"] += 1
        return super().search(queries, depth)


def _spec(mini, model_dir, **kw):
    return RunSpec(
        corpus=str(mini / "corpus"),
        golden=str(mini / "golden.jsonl"),
        tokenizer_dir=model_dir,
        **{"latency_sample": 3, **kw},
    )


def test_a_second_run_reads_every_text_from_the_cache(mini, model_dir):
    encoder = CountingEncoder()
    first = evaluate(_spec(mini, model_dir), FaissRetriever(), encoder)
    n_texts = first.counts["chunks"] + first.counts["queries"]
    assert first.costs["texts_embedded"] == n_texts and first.costs["texts_cached"] == 0
    second = evaluate(_spec(mini, model_dir), FaissRetriever(), encoder)
    assert second.costs["texts_embedded"] == 0 and second.costs["texts_cached"] == n_texts
    # a flat index: its vectors in memory, and on disk the vectors it is rebuilt from
    assert second.costs["index_memory_bytes"] == first.counts["chunks"] * 8 * 4
    assert second.costs["index_disk_bytes"] == first.counts["chunks"] * 8 * 4
    assert "requests_search" not in second.costs  # a local backend does not count calls
    assert second.costs["tokens_per_query"] == second.metrics["tokens@5"]
    assert second.costs["latency_p95_ms"] == second.latency["p95_ms"]
    assert "embedded, " in costs_summary(second.costs)
    assert second.stages == {}  # one stage: nothing to break down


def test_stage_times_add_up_and_a_counting_backend_reports_its_requests(
    mini, model_dir, monkeypatch
):
    # every latency search repeats, however slow a loaded machine makes it (a search of 20 ms
    # or more is otherwise timed once, and the count below would follow the machine's load)
    monkeypatch.setattr("rageval.run.measure.REPEAT_BELOW_MS", math.inf)
    backend = CountingBackend()
    rep = evaluate(_spec(mini, model_dir, query_batch=3), RetryingRetriever(backend), None)
    costs = rep.costs
    assert costs["requests_index"] == 3
    assert costs["requests_search"] == 3  # 8 queries, 3 a call; the latency sample not counted
    assert backend.requests["search"] == 3 + 1 + 3 * 3  # it did: a warm-up, 3 queries 3 times
    assert "texts_embedded" not in costs and costs["embed_s"] == 0.0
    stages = ("load_s", "chunk_s", "resolve_s", "index_s", "search_s", "score_s")
    assert sum(costs[s] for s in stages) <= costs["total_s"]
    assert "index_disk_bytes" not in costs  # BM25 without a cache_dir stores nothing
    assert costs["index_memory_bytes"] > 0


def test_a_hybrid_run_reports_dense_lexical_and_fusion(mini, model_dir):
    hybrid = HybridRetriever(FaissRetriever(), BM25Retriever(), candidate_depth=30)
    # searched 3 queries a call: each stage's rankings are put together in query order
    spec = _spec(mini, model_dir, query_batch=3)
    rep = evaluate(spec, RetryingRetriever(hybrid), CountingEncoder())
    dense = evaluate(_spec(mini, model_dir), FaissRetriever(), CountingEncoder())
    lexical = evaluate(_spec(mini, model_dir), BM25Retriever(), None)
    block = rep.stages
    assert block["order"] == ["dense", "lexical", "fusion"]
    rows = block["stages"]
    assert rows["fusion"]["inputs"] == ["dense", "lexical"]
    assert rows["dense"]["depth"] == rows["lexical"]["depth"] == 30
    for m in block["metrics"]:
        assert rows["dense"][m] == pytest.approx(dense.metrics[m])
        assert rows["lexical"][m] == pytest.approx(lexical.metrics[m])
        assert rows["fusion"][m] == pytest.approx(rep.metrics[m])
    lifts = {(x["stage"], x["over"], x["metric"]): x for x in block["lift"]}
    x = lifts[("fusion", "lexical", "ndcg@5")]
    assert x["delta"] == pytest.approx(rep.metrics["ndcg@5"] - lexical.metrics["ndcg@5"])
    assert 0 < x["p_value"] <= 1
    # the embedding time is the encoder's, whichever stage asked for it
    assert rep.costs["embed_s"] > 0
    # what a user reads off the table: the ceiling at depth holds the top k, a lift is the
    # difference of the two stages' means (its sign the direction the metric moved)
    for name in block["order"]:
        r = rows[name]
        assert r["depth"] >= 5 and r["recall@depth"] >= r["recall@5"] - 1e-12, name
    for x in block["lift"]:
        before, after = rows[x["over"]][x["metric"]], rows[x["stage"]][x["metric"]]
        assert x["delta"] == pytest.approx(after - before, abs=1e-12)
    text = stages_table(block)
    assert text.splitlines()[1].split()[:3] == ["stage", "depth", "recall@depth"]
    assert "fusion over dense: ndcg@5" in text


def test_the_lift_lines_wrap_at_whole_metrics_within_the_width():
    metrics = ["ndcg@10", "recall@10", "evidence_recall@1024t"]
    row = {"depth": 100, "recall@depth": 0.9, "latency_p50_ms": 0.5, "latency_p95_ms": 0.9}
    block = {
        "order": ["dense", "lexical", "fusion"],
        "metrics": metrics,
        "stages": {s: {**row, "seconds": 0.1, **dict.fromkeys(metrics, 0.5)} for s in "abc"},
        "lift": [
            {"stage": "fusion", "over": over, "metric": m, "delta": -0.1248, "p_value": 1e-4}
            for over in ("dense", "lexical")
            for m in metrics
        ],
    }
    block["stages"] = dict(zip(block["order"], block["stages"].values(), strict=True))
    for width in (120, 80):  # the stage table is 96 wide; its lift lines follow the width
        lines = stages_table(block, width).splitlines()
        lifts = "\n".join(lines[lines.index(next(x for x in lines if " over " in x)) :])
        assert max(map(len, lifts.splitlines())) <= width
        assert lifts.count("fusion over ") == 2
        for m in metrics:  # each part whole on one line
            assert lifts.count(f"{m} -0.1248 (p = 0.0001)") == 2


class SlowBackend(CountingBackend):
    """A search of 25 ms, like a remote service or a reranker: above the repeat threshold."""

    def search(self, queries, depth):
        import time

        if len(queries) == 1:
            time.sleep(0.025)
        return super().search(queries, depth)


def test_a_fast_search_is_timed_three_times_a_slow_one_once(mini, model_dir, monkeypatch):
    import rageval.run.measure as measure

    # thresholds far from the searches' real times, so a busy machine cannot move them across
    monkeypatch.setattr(measure, "REPEAT_BELOW_MS", 1e9)
    fast = CountingBackend()
    fast_report = evaluate(_spec(mini, model_dir, latency_sample=4), fast, None)
    # one batch search, one untimed warm-up, then the sample
    assert fast_report.latency["searches"] == 4 * measure.LATENCY_REPEATS
    assert fast.requests["search"] == 2 + 4 * measure.LATENCY_REPEATS
    monkeypatch.setattr(measure, "REPEAT_BELOW_MS", 5.0)
    slow = SlowBackend()
    slow_report = evaluate(_spec(mini, model_dir, latency_sample=4), slow, None)
    assert slow_report.latency["searches"] == 4 and slow.requests["search"] == 2 + 4
    assert slow_report.latency["p50_ms"] >= 25


class HungryBackend(BM25Retriever):
    """Holds 300 MB for a moment while it indexes, then lets go."""

    def index(self, chunks, encoder=None):
        block = np.ones(300 * 2**20 // 8)
        del block
        super().index(chunks, encoder)


@pytest.mark.skipif(not memory.reset_peak(), reason="needs Linux's resettable VmHWM")
def test_the_index_stage_reports_its_own_peak_memory(mini, model_dir):
    big = np.ones(400 * 2**20 // 8)  # held before the run: the high-water mark is reset
    del big
    lean = evaluate(_spec(mini, model_dir), BM25Retriever(), None).costs
    hungry = evaluate(_spec(mini, model_dir), HungryBackend(), None).costs
    assert lean["index_peak_rss_bytes"] < memory.peak_rss() + 2**20
    assert hungry["index_peak_rss_bytes"] - lean["index_peak_rss_bytes"] > 250 * 2**20
    assert "built at a peak of" in costs_summary(hungry)


class KeepingEncoder(CountingEncoder):
    """The counting encoder as one that keeps its vectors and fills them ahead, as rageval's own
    does (its ``cache``; ``prefill`` embeds the texts not seen yet and returns none)."""

    cache = "kept"

    def prefill(self, documents, queries=()):
        before = self.texts_encoded
        self._vec([*documents, *queries])
        return self.texts_encoded - before


def test_a_scanned_flat_index_is_not_latency_sampled_and_the_report_says_why(mini, model_dir):
    # each search of a scanned index reads the whole cache: a sample of single-query searches
    # would time that read a hundred times; the report says so instead of giving a latency
    spec = _spec(mini, model_dir, latency_sample=5)
    scanned = FaissRetriever(flat_memory_mb=0)
    rep = evaluate(spec, RetryingRetriever(scanned), KeepingEncoder())
    assert scanned.scanned
    assert rep.latency == {} and "latency_p50_ms" not in rep.costs
    assert any("latency not sampled" in w and "flat_memory_mb=null" in w for w in rep.warnings)
    held = evaluate(spec, RetryingRetriever(FaissRetriever()), KeepingEncoder())
    assert held.latency["queries_sampled"] == 5
    assert not any("latency not sampled" in w for w in held.warnings)
    assert held.metrics == pytest.approx(rep.metrics, abs=1e-9)
