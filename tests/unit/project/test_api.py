"""rageval.evaluate and rageval.compare: the Python API over the pipeline and the gate."""

from __future__ import annotations

import json

import pytest
from fakes.plugin_retrievers import WordOverlap

import rageval
from rageval.types import RankedList


def test_evaluate_measures_a_retriever_object_as_the_pipeline_does(mini, tmp_path):
    from rageval.embedding import SentenceTransformerEncoder
    from rageval.embedding.base import tokenizer_dir_of
    from rageval.inputs.chunking import ChunkingSpec
    from rageval.run.evaluation import evaluate
    from rageval.run.spec import RunSpec

    report = rageval.evaluate(
        WordOverlap(), mini / "golden.jsonl", mini / "corpus", chunk=64, judgements=None
    )
    encoder = SentenceTransformerEncoder(cache_dir=str(tmp_path))
    spec = RunSpec(
        corpus=str(mini / "corpus"),
        golden=str(mini / "golden.jsonl"),
        tokenizer_dir=tokenizer_dir_of(encoder),
        chunking=ChunkingSpec(64, 0),
        ks=(1, 3, 5, 10, 20),
    )
    direct = evaluate(spec, WordOverlap(), encoder)
    assert report.metrics == direct.metrics and report.metrics["ndcg@5"] > 0
    assert [r["id"] for r in report.per_query] == [r["id"] for r in direct.per_query]
    assert report.ci["ndcg@5"][0] <= report.metrics["ndcg@5"] <= report.ci["ndcg@5"][1]
    md = report.to_markdown()
    assert md.startswith("| metric | mean | 95% CI |") and "| ndcg@5 |" in md
    folder = report.save(tmp_path / "run")
    saved = json.loads((folder / "report.json").read_text())
    assert saved["metrics"] == json.loads(json.dumps(report.metrics))
    assert {"run.trec", "qrels.trec", "chunks.jsonl", "report.html"} <= {
        p.name for p in folder.iterdir()
    }
    assert report.to_dict()["metrics"] == saved["metrics"]


def test_compare_gives_the_gate_verdict(mini, tmp_path):
    good = rageval.evaluate(WordOverlap(), mini / "golden.jsonl", chunk=64)  # corpus/ beside it
    good.save(tmp_path / "good")

    class Reversed(WordOverlap):
        def search(self, queries, depth):
            return [
                RankedList(r.ids[::-1], tuple(sorted(r.scores)))
                for r in super().search(queries, depth)
            ]

    bad = rageval.evaluate(Reversed(), mini / "golden.jsonl", chunk=64)
    same = rageval.compare(tmp_path / "good" / "report.json", good)
    assert same.status == "pass" and same.exit_code == 0
    worse = rageval.compare(good, bad)
    mrr = next(r for r in worse.rows if r.metric == "mrr@5")
    assert mrr.delta < -0.03 and mrr.verdict in ("regressed", "inconclusive")  # 8 queries
    assert worse.status in ("regressed", "inconclusive")
    assert rageval.compare(good, bad, on_inconclusive="fail").exit_code == 1
    assert [r.metric for r in worse.rows][:2] == ["precision@5", "recall@5"]
    assert rageval.compare(good, bad, metrics=["recall@5"], tolerance=1.0).status == "pass"


def test_local_modes_by_name_and_a_clear_error_otherwise(mini):
    report = rageval.evaluate("bm25", mini / "golden.jsonl", chunk=64)
    assert report.metrics["recall@5"] > 0
    with pytest.raises(rageval.api.ConfigError, match="one of vector, bm25, hybrid"):
        rageval.evaluate("bm52", mini / "golden.jsonl")
    with pytest.raises(AttributeError):
        rageval.nothing  # noqa: B018
