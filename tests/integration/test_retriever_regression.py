"""This repository gates its own demo: the default configuration must not fall below
rageval/demo/baseline.json (re-promote with `rageval promote RUN_ID --baseline
rageval/demo/baseline.json` after an intended change)."""

from pathlib import Path

import pytest

from rageval.testing import assert_no_regression

pytestmark = pytest.mark.integration
BASELINE = Path(__file__).resolve().parents[2] / "rageval" / "demo" / "baseline.json"


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
