"""What a plug-in retriever may return: RankedLists, lists of ids or (id, score) pairs; anything
else is one line naming the type; results that name nothing the run knows stop the run instead of
printing zeros."""

from __future__ import annotations

import pytest
from fakes.plugin_retrievers import WordOverlap

import rageval
from rageval.errors import ConfigError
from rageval.retrieval.results import as_ranked, check_known
from rageval.types import RankedList


def test_ids_and_pairs_measure_as_a_ranked_list_does(mini):
    golden = mini / "golden.jsonl"
    want = rageval.evaluate(WordOverlap(), golden, chunk=64).metrics
    assert rageval.evaluate(WordOverlap("pairs"), golden, chunk=64).metrics == want
    ids_only = rageval.evaluate(WordOverlap("ids"), golden, chunk=64).metrics
    assert ids_only["recall@5"] == want["recall@5"] and ids_only["mrr@5"] == want["mrr@5"]


def test_another_shape_is_one_line_naming_it(mini):
    with pytest.raises(ConfigError, match=r"search\(\) returned a dict for query .*; return a Ra"):
        rageval.evaluate(WordOverlap("dict"), mini / "golden.jsonl", chunk=64)
    with pytest.raises(ConfigError, match=r"returned a list holding a int \(3\)"):
        as_ranked(["a", 3], "q")
    assert as_ranked([], "q") == RankedList((), ())
    assert as_ranked(["b", "a"], "q").scores == (2.0, 1.0)


def test_ids_the_run_does_not_know_stop_it_instead_of_zeros(mini):
    with pytest.raises(ConfigError, match=r"0 of \d+ returned ids match this run's chunks"):
        rageval.evaluate(WordOverlap(prefix="kb-"), mini / "golden.jsonl", chunk=64)
    results = [RankedList(("a", "x", "y"), (3.0, 2.0, 1.0))]
    assert "only 1 of 3 returned ids match" in check_known(results, {"a"})
    assert check_known(results, {"a", "x"}) is None and check_known([], set()) is None
