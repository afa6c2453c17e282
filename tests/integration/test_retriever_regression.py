"""This repository gates its own demo: the default configuration must not fall below
golden/baseline.json (re-promote with `rageval promote RUN_ID` at the repository's root, a
rageval project whose baseline it is, after an intended change)."""

import json
from pathlib import Path

import pytest
from near_ties import same_up_to_near_ties

from rageval.app.main import run_app
from rageval.testing import assert_no_regression

pytestmark = pytest.mark.integration
BASELINE = Path(__file__).resolve().parents[2] / "golden" / "baseline.json"


def test_demo_retrieval_does_not_regress(tmp_path):
    cmp = assert_no_regression(BASELINE, out=tmp_path)
    assert cmp.status == "pass" and all(r.low == r.high == 0.0 for r in cmp.rows)
    # the baseline keeps each query's top 5: an unchanged re-run moves nothing on the gate's page
    page = (tmp_path / "gate.html").read_text()
    assert '<span class="move">new</span>' not in page
    assert page.count('<span class="move">=</span>') >= 5 * 168
    assert (
        "<h2>Verdict</h2>" in page and "ndcg@5 +0.000 [+0.000, +0.000]; detects a drop of" in page
    )
    assert {r.metric for r in cmp.rows} == {
        f"{m}@5" for m in ("precision", "recall", "hit_rate", "mrr", "ndcg", "map")
    }


def test_a_large_drop_on_the_demo_fails(tmp_path):
    # depth=1: one result per query, so precision, recall and hit rate at 5 collapse
    with pytest.raises(AssertionError, match="FAIL: .*regressed"):
        assert_no_regression(BASELINE, ["depth=1"], out=tmp_path)


# pgvector on the demo lives here, not in test_pgvector.py: files are spread over the workers
# whole, and in this one it follows the gate tests, whose run has embedded the demo into the
# session's cache already (in another file it embedded the same corpus at the same time, 65 s).
@pytest.fixture
def no_dsn(monkeypatch):
    monkeypatch.delenv("RAGEVAL_PG_DSN", raising=False)


def test_exact_pgvector_equals_faiss_on_the_demo(shared_cache, tmp_path, no_dsn):
    """docs/backends-pgvector.md: exact pgvector is FAISS flat on the demo; HNSW, full-text and
    hybrid run there too."""
    common = [
        f"cache_dir={shared_cache}",
        "mlflow.enabled=false",
        "latency_sample=0",
    ]

    def demo(name, *extra):
        assert run_app([*common, f"hydra.run.dir={tmp_path / name}", *extra]) == 0
        return json.loads((tmp_path / name / "report.json").read_text())

    faiss = demo("faiss", "search=vector")
    pg = demo("pg", "search=vector", "backend=pgvector")
    # the same ranking, up to results whose scores tie within float error
    identical = same_up_to_near_ties(tmp_path / "faiss", tmp_path / "pg")
    assert len(identical) >= 150
    rows = {r["id"]: r for r in pg["per_query"]}
    for r in faiss["per_query"]:
        if r["id"] in identical:
            assert rows[r["id"]]["ndcg@5"] == pytest.approx(r["ndcg@5"], abs=1e-9)
    hnsw = demo("hnsw", "search=vector", "backend=pgvector", "backend.pgvector.index_type=hnsw")
    assert 0.9 <= hnsw["metrics"]["ann_recall@5"] <= 1.0
    # full-text search and hybrid RRF in SQL on the demo
    text = demo("bm25", "search=bm25", "backend=pgvector")
    both = demo("hybrid", "search=hybrid", "backend=pgvector")
    assert text["metrics"]["hit_rate@5"] > 0.3 and "ann_recall@5" not in text["metrics"]
    assert both["metrics"]["ndcg@5"] > min(text["metrics"]["ndcg@5"], pg["metrics"]["ndcg@5"])
