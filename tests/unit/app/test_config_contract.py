"""The config contract (rageval.config_schema): one definition of every key's default and of
whether it changes what a run measures, which every consumer asks."""

from __future__ import annotations

import inspect
from dataclasses import asdict, fields

import pytest

from rageval.app.config import CONF_DIR
from rageval.config_schema import (
    GateConfig,
    RagevalConfig,
    SweepConfig,
    defaults,
    execution_keys,
    gate_metrics,
    measures,
)
from rageval.run.spec import RunSpec


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


def schema_defaults(k: int) -> dict:
    """Every default the schema writes, nested blocks included, the gate's metrics at ``k``."""
    from dataclasses import MISSING as NO_DEFAULT
    from dataclasses import is_dataclass

    out = {}
    for f in fields(RagevalConfig):
        value = f.default_factory() if f.default_factory is not NO_DEFAULT else f.default
        if value == "???":
            continue
        out[f.name] = asdict(value) if is_dataclass(value) else value
    out["gate"]["metrics"] = gate_metrics(k)
    return out


def test_the_packaged_config_is_the_schema_s_defaults():
    from omegaconf import OmegaConf

    from rageval.app.config import compose
    from rageval.project import using

    with using(None):  # the packaged configs alone
        cfg = OmegaConf.to_container(compose([]), resolve=True)
    expected = schema_defaults(cfg["k"])
    assert {key: cfg[key] for key in expected} == expected
    # the gate's defaults are written once: conf/rageval.yaml leaves them to the schema
    raw = OmegaConf.load(CONF_DIR / "rageval.yaml")
    assert "gate" not in raw and {"alpha", "resamples"}.isdisjoint(raw.sweep)
    assert (SweepConfig.alpha, SweepConfig.resamples) == (GateConfig.alpha, GateConfig.resamples)


def test_the_packaged_config_test_can_fail():
    from omegaconf import OmegaConf

    from rageval.app.config import compose
    from rageval.project import using

    with using(None):
        cfg = OmegaConf.to_container(compose(["gate.tolerance=0.05", "k=3"]), resolve=True)
    expected = schema_defaults(cfg["k"])
    assert cfg["gate"]["metrics"] == gate_metrics(3)
    assert {key: cfg[key] for key in expected} != expected


def signature_defaults(function) -> dict:
    return {
        name: list(p.default) if isinstance(p.default, tuple) else p.default
        for name, p in inspect.signature(function).parameters.items()
        if p.default is not inspect.Parameter.empty
    }


def test_the_api_s_defaults_are_the_schema_s():
    import rageval.api as api
    from rageval.gate import compare as gate_compare

    run = schema_defaults(5)
    evaluated = signature_defaults(api.evaluate)
    shared = set(evaluated) & set(run)
    assert shared >= {"k", "ks", "chunk", "chunk_overlap", "level", "budgets", "slices", "labels"}
    assert {key: evaluated[key] for key in shared} == {key: run[key] for key in shared}
    # the scalar settings (a None metrics, tolerances or slices means the gate's own)
    gate = {k: v for k, v in asdict(GateConfig()).items() if not isinstance(v, list | dict)}
    for function in (api.compare, gate_compare.compare):
        given = signature_defaults(function)
        shared = set(given) & set(gate)
        assert shared >= {"tolerance", "alpha", "resamples", "on_inconclusive"}, function
        assert {key: given[key] for key in shared} == {key: gate[key] for key in shared}


def test_the_schema_is_stored_once_and_again_when_its_entry_was_replaced(monkeypatch):
    """Every composition registers the schema first: the ConfigStore entry is made once a
    process (making it converts the dataclasses anew), and made again when something else took
    its name, so a composition always extends rageval's schema."""
    from dataclasses import dataclass

    from hydra.core.config_store import ConfigStore

    from rageval.app.config import compose
    from rageval.app.schema import SCHEMA_NAME, register_schema
    from rageval.errors import ConfigError
    from rageval.project import using

    store = ConfigStore.instance()
    name = f"{SCHEMA_NAME}.yaml"
    register_schema()
    entry = store.repo[name]
    register_schema()
    assert store.repo[name] is entry  # not made anew

    @dataclass
    class Other:
        chunk: str = "not the schema"

    monkeypatch.setitem(store.repo, name, entry)  # restored after the test, whatever happens
    store.store(name=SCHEMA_NAME, node=Other)
    assert store.repo[name] is not entry
    with using(None):
        cfg = compose([])  # registers the schema again before composing
    assert store.repo[name].node.chunk == RagevalConfig.chunk and cfg.chunk == 256
    with pytest.raises(ConfigError, match="chunk"), using(None):
        compose(["chunk=abc"])  # the schema's type check, back in force
