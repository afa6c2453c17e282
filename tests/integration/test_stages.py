"""Stage by stage on a reranked run: BM25 candidates reordered by the tiny CrossEncoder on the mini
corpus. The first stage's numbers must equal a BM25 run of its own, the final stage's the run's,
and the lift the paired test on their per-query values."""

from __future__ import annotations

import pytest

from rageval.retrieval.local.lexical import BM25Retriever
from rageval.retrieval.rerank import CrossEncoderReranker
from rageval.run.evaluation import evaluate
from rageval.run.spec import RunSpec
from rageval.scoring.stats import paired_randomization_test

CANDIDATES = 6


@pytest.fixture(scope="module")
def tiny_cross_encoder(tmp_path_factory, model_dir):
    from tiny_models import build_tiny_cross_encoder

    return build_tiny_cross_encoder(tmp_path_factory.mktemp("tiny-ce"), model_dir)


def _spec(mini, model_dir, ks):
    return RunSpec(
        corpus=str(mini / "corpus"),
        golden=str(mini / "golden.jsonl"),
        tokenizer_dir=model_dir,
        ks=ks,
        latency_sample=4,
    )


def test_a_reranked_run_reports_its_first_stage_ceiling_lift_and_stage_latency(
    mini, model_dir, tiny_cross_encoder
):
    reranker = CrossEncoderReranker(BM25Retriever(), tiny_cross_encoder, candidates=CANDIDATES)
    rep = evaluate(_spec(mini, model_dir, (1, 3, 5, 10)), reranker, None)
    # the first stage on its own, with recall at the reranker's reach among its cutoffs
    alone = evaluate(_spec(mini, model_dir, (1, 3, 5, 10, CANDIDATES)), BM25Retriever(), None)

    block = rep.stages
    assert block["order"] == ["retrieval", "rerank"] and block["final"] == "rerank"
    first, final = block["stages"]["retrieval"], block["stages"]["rerank"]
    assert first["depth"] == CANDIDATES and final["inputs"] == ["retrieval"]
    # the ceiling: recall of the candidate list at the depth the reranker reads
    assert first["recall@depth"] == pytest.approx(alone.metrics[f"recall@{CANDIDATES}"])
    assert final["recall@depth"] <= first["recall@depth"] + 1e-12
    for m in block["metrics"]:
        assert first[m] == pytest.approx(alone.metrics[m])
        assert final[m] == pytest.approx(rep.metrics[m])
    assert "ndcg@5" in block["metrics"]

    lift = next(x for x in block["lift"] if x["metric"] == "ndcg@5")
    assert (lift["stage"], lift["over"]) == ("rerank", "retrieval")
    before = [r["ndcg@5"] for r in alone.per_query]
    after = [r["ndcg@5"] for r in rep.per_query]
    assert lift["delta"] == pytest.approx(rep.metrics["ndcg@5"] - alone.metrics["ndcg@5"])
    assert lift["p_value"] == paired_randomization_test(after, before, seed=0)
    assert lift["wins"] + lift["ties"] + lift["losses"] == len(rep.per_query)

    for row in (first, final):  # each stage timed in the batch search and in the latency sample
        assert row["seconds"] > 0 and row["latency_p95_ms"] >= row["latency_p50_ms"] > 0
    assert rep.costs["rerank_s"] == pytest.approx(final["seconds"])
    assert rep.costs["search_s"] + rep.costs["rerank_s"] <= rep.timings["search_s"] + 1e-9
