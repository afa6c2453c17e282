"""The golden-set split: deterministic, stable when queries are added, recorded per source."""

from __future__ import annotations

import json
import warnings

import pytest

from rageval.errors import ConfigError
from rageval.inputs.chunking import ChunkingSpec
from rageval.inputs.golden import load_golden
from rageval.inputs.split import SplitSpec, side_of, sides, split_golden
from rageval.types import GoldenQuery, GoldenSet


def golden(ids, source=lambda i: None):
    qs = tuple(GoldenQuery(id=q, query=f"query {q}", source=source(i)) for i, q in enumerate(ids))
    return GoldenSet(path="golden.jsonl", queries=qs, digest="d" * 64)


def test_the_holdout_share_is_close_to_the_fraction_and_the_seed_redraws_it():
    ids = [f"q{i:05d}" for i in range(4000)]
    for fraction in (0.2, 0.3, 0.5):
        share = sum(side_of(q, fraction) == "holdout" for q in ids) / len(ids)
        assert abs(share - fraction) < 0.03  # > 4 standard deviations of a binomial share
    a, b = sides(ids, 0.3, seed=0), sides(ids, 0.3, seed=1)
    assert a == sides(ids, 0.3, seed=0)  # deterministic
    moved = sum(a[q] != b[q] for q in ids) / len(ids)
    assert 0.3 < moved < 0.5  # independent draws differ on 2 * 0.3 * 0.7 = 0.42 of the ids


def test_adding_queries_never_moves_an_old_one():
    old = [f"ticket-{i}" for i in range(300)]
    before = split_golden(golden(old), SplitSpec("tune"))[0]
    grown = old[:150] + [f"new-{i}" for i in range(500)] + old[150:]
    after = split_golden(golden(grown), SplitSpec("tune"))[0]
    tune_before = {q.id for q in before.queries}
    tune_after = {q.id for q in after.queries}
    assert tune_before == tune_after & set(old)
    hold_before = {q.id for q in split_golden(golden(old), SplitSpec("holdout"))[0].queries}
    hold_after = {q.id for q in split_golden(golden(grown), SplitSpec("holdout"))[0].queries}
    assert hold_before == hold_after & set(old)


def test_tune_and_holdout_partition_the_golden_set_and_the_record_counts_sources():
    ids = [f"q{i}" for i in range(60)]
    g = golden(ids, source=lambda i: ("ticket", "synthetic", None)[i % 3])
    tune, rec = split_golden(g, SplitSpec("tune", 0.3, 7))
    hold, _ = split_golden(g, SplitSpec("holdout", 0.3, 7))
    everything, rec_all = split_golden(g, SplitSpec("all", 0.3, 7))
    assert everything is g and rec_all["queries"] == 60
    t, h = {q.id for q in tune.queries}, {q.id for q in hold.queries}
    assert t.isdisjoint(h) and t | h == set(ids)
    assert tune.digest == g.digest  # the same golden set; the record says which part
    assert rec["name"] == "tune" and rec["queries"] == len(t) and rec["of"] == 60
    assert (rec["tune"], rec["holdout"]) == (len(t), len(h))
    assert set(rec["by_source"]) == {"ticket", "synthetic", "(none)"}
    assert sum(r["holdout"] for r in rec["by_source"].values()) == len(h)
    # the subset keeps the golden file's order
    assert [q.id for q in tune.queries] == [q for q in ids if q in t]


def test_a_large_source_with_nothing_held_out_is_warned_about():
    # ids chosen so that the "rare" source lands wholly on the tune side
    rare = [q for q in (f"r{i}" for i in range(400)) if side_of(q, 0.3) == "tune"][:12]
    common = [f"c{i}" for i in range(40)]
    g = golden(rare + common, source=lambda i: "rare" if i < len(rare) else "common")
    with pytest.warns(UserWarning, match="source 'rare' has 12 queries and none on the holdout"):
        split_golden(g, SplitSpec("tune"))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        split_golden(g, SplitSpec("all"))  # nothing is held out: nothing to warn about


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"name": "test"}, "split must be one of all, tune, holdout, got 'test'"),
        ({"holdout_fraction": 0.0}, "holdout_fraction must be a number between 0 and 1"),
        ({"holdout_fraction": 1}, "holdout_fraction must be a number between 0 and 1"),
        ({"seed": 1.5}, "split_seed must be an integer"),
    ],
)
def test_bad_split_settings_are_config_errors(kwargs, message):
    with pytest.raises(ConfigError, match=message):
        SplitSpec(**kwargs)


def test_an_empty_side_is_an_error_naming_the_golden_file():
    g = golden([q for q in (f"x{i}" for i in range(50)) if side_of(q, 0.3) == "tune"][:3])
    with pytest.raises(ConfigError, match=r"split=holdout holds no query of the 3 in golden"):
        split_golden(g, SplitSpec("holdout"))


def test_a_run_on_the_tune_split_scores_only_tune_queries_and_records_the_split(mini, model_dir):
    from rageval.retrieval.local.lexical import BM25Retriever
    from rageval.run.evaluation import evaluate
    from rageval.run.spec import RunSpec

    spec = dict(
        corpus=str(mini / "corpus"),
        golden=str(mini / "golden.jsonl"),
        tokenizer_dir=model_dir,
        chunking=ChunkingSpec(32),
        latency_sample=0,
    )
    full = evaluate(RunSpec(**spec), BM25Retriever(), None)
    part = evaluate(RunSpec(**spec, split=SplitSpec("tune", 0.3, 0)), BM25Retriever(), None)
    ids = [json.loads(line)["id"] for line in (mini / "golden.jsonl").open()]
    want = [q for q in ids if side_of(q, 0.3, 0) == "tune"]
    assert [r["id"] for r in part.per_query] == want
    assert part.split["name"] == "tune" and part.split["queries"] == len(want)
    assert part.digests["golden"] == full.digests["golden"] == load_golden(spec["golden"]).digest
    assert full.split["name"] == "all" and full.split["of"] == len(ids)
    # a query's values do not depend on which other queries were scored
    by_id = {r["id"]: r for r in full.per_query}
    for r in part.per_query:
        assert r["ndcg@5"] == pytest.approx(by_id[r["id"]]["ndcg@5"], abs=1e-12)
    assert part.to_dict()["split"]["tune"] + part.to_dict()["split"]["holdout"] == len(ids)
