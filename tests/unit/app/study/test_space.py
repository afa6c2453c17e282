"""rageval.app.study.space: the search space from ``hydra.sweeper.params`` and the command line."""

from __future__ import annotations

import pytest
from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution

from rageval.app.study.space import search_space
from rageval.errors import ConfigError


def test_the_search_space_reads_hydras_sweep_syntax_and_the_command_line_wins():
    space, fixed = search_space(
        {"chunk": "choice(128, 256)", "search.bm25.k1": "interval(0.5, 2.0)", "search": "bm25"},
        [
            "search.rrf_k=range(10, 40, 10)",
            "search.bm25.b=tag(log, interval(0.1, 1.0))",
            "candidate=int(interval(1, 9))",
            "search.weights=choice([0.3,0.7],[0.5,0.5])",
            "chunk=512",  # a plain override fixes a key of the space
            "latency_sample=0",
        ],
    )
    assert fixed == ["search=bm25", "chunk=512", "latency_sample=0"]
    assert space["search.bm25.k1"] == FloatDistribution(0.5, 2.0)
    assert space["search.rrf_k"] == IntDistribution(10, 30, step=10)  # Hydra's range: stop excluded
    assert space["search.bm25.b"] == FloatDistribution(0.1, 1.0, log=True)
    assert space["candidate"] == IntDistribution(1, 9)
    weights = space["search.weights"]
    assert isinstance(weights, CategoricalDistribution) and len(weights.choices) == 2
    assert "chunk" not in space


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["split=choice(tune,holdout)"], "split cannot be searched"),
        (["split=holdout"], "a study tunes on split=tune"),
        (["holdout_fraction=interval(0.2,0.4)"], "holdout_fraction cannot be searched"),
        (["chunk=256"], "empty search space"),
        (["chunk=choice(1,"], "cannot parse"),
        (["chunk=range(512, 128)"], r"range\(512, 128, 1\) is empty"),
        (["search.bm25.k1=interval(2, 0.5)"], r"low end first .* write interval\(0.5, 2.0\)"),
        (["search.bm25.k1=tag(log, interval(0, 2))"], "log-uniform interval needs a low end"),
        (["search.bm25.b=interval(0.3, 1.5)"], "search.bm25.b must be a number between 0 and 1"),
        (["search.bm25.k1=choice(1.2, -1)"], "search.bm25.k1 must be a number 0 or more"),
    ],
)
def test_a_search_space_a_study_cannot_use_is_a_config_error(arguments, message):
    with pytest.raises(ConfigError, match=message):
        search_space({}, arguments)
