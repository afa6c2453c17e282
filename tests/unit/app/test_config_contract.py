"""The config contract (rageval.config_schema): one definition of every key's default and of
whether it changes what a run measures, which every consumer asks."""

from __future__ import annotations

from dataclasses import fields

import pytest

from rageval.config_schema import RagevalConfig, defaults, execution_keys, measures
from rageval.pipeline import RunSpec


@pytest.mark.parametrize(
    "key, measured",
    [
        ("chunk", True),
        ("search.mode", True),
        ("embedding.model", True),
        ("embedding.backend", True),
        ("embedding.executor", False),
        ("+embedding.ray_address=HEAD:6379", False),
        ("embedding.cache_dir", False),
        ("backend.faiss.cache_dir", False),
        ("cache_dir=/tmp/x", False),
        ("hydra.run.dir=out", False),
        ("mlflow.experiment", False),
        ("sweep.verbose=true", False),
        ("retries", False),
        ("slices", False),
        ("gate.tolerance", False),
        ("judgements", True),
        ("labels", True),
    ],
)
def test_what_changes_a_measurement(key, measured):
    assert measures(key) is measured


def test_the_flag_comes_from_the_schema_fields():
    flagged = {f.name for f in fields(RagevalConfig) if f.metadata.get("measures") is False}
    assert flagged and flagged <= set(execution_keys())
    assert "chunk" not in execution_keys()


def test_runspec_defaults_are_the_schema_defaults():
    spec = RunSpec(corpus="c", golden="g", tokenizer_dir="t")
    d = defaults()
    assert list(spec.ks) == sorted(set(d["ks"]) | {d["k"]})
    assert list(spec.budgets) == d["budgets"] and spec.k == d["k"]
    assert (spec.chunking.size, spec.chunking.overlap) == (d["chunk"], d["chunk_overlap"])
    assert (spec.split.name, spec.split.holdout_fraction, spec.split.seed) == (
        d["split"],
        d["holdout_fraction"],
        d["split_seed"],
    )


def test_runspec_from_a_config_takes_every_field_by_name():
    config = {
        **defaults(),
        "chunk": 128,
        "chunk_overlap": 16,
        "k": 3,
        "ks": [1, 2],
        "query_batch": 7,
        "split": "tune",
        "split_seed": 4,
        "slices": ["tags"],
        "unrelated": {"x": 1},
    }
    spec = RunSpec.from_config(config, corpus="c", golden="g", tokenizer_dir="t")
    assert (spec.chunking.size, spec.chunking.overlap, spec.k, spec.ks) == (128, 16, 3, (1, 2, 3))
    assert spec.query_batch == 7 and spec.slices == ("tags",)
    assert (spec.split.name, spec.split.seed) == ("tune", 4)
    assert RunSpec.from_config({}, corpus="c", golden="g", tokenizer_dir="t") == RunSpec(
        corpus="c", golden="g", tokenizer_dir="t"
    )
