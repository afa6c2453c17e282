"""The one override parser (rageval/app/override.py): a line read once into a value."""

from __future__ import annotations

import dataclasses

import pytest
from hydra.errors import HydraException
from omegaconf import OmegaConf

from rageval.app.override import Override, apply_to_config, parse, parse_all, prefix_of
from rageval.config_schema import override_key


@pytest.mark.parametrize(
    ("line", "key", "prefix", "value"),
    [
        ("chunk=512", "chunk", "", "512"),
        ("+extra.x=1", "extra.x", "+", "1"),
        ("++gate.tolerances.recall_at_5=0.05", "gate.tolerances.recall_at_5", "++", "0.05"),
        ("~rerank", "rerank", "~", None),
        ("~search.bm25.k1=1.2", "search.bm25.k1", "~", "1.2"),
        ("hydra/sweeper=optuna", "hydra/sweeper", "", "optuna"),
        ("dataset.golden='a b.jsonl'", "dataset.golden", "", "'a b.jsonl'"),
    ],
)
def test_key_prefix_and_value(line, key, prefix, value):
    o = parse(line)
    assert (o.line, o.key, o.prefix, o.value) == (line, key, prefix, value)
    assert not o.is_sweep and not o.is_secret
    assert prefix_of(line) == prefix
    assert override_key(line) == key  # the core's reading of a stored line agrees


@pytest.mark.parametrize(
    ("line", "values"),
    [
        ("chunk=128,256,512", ("128", "256", "512")),
        ("search=choice(vector,bm25)", ("vector", "bm25")),
        ("chunk=range(128,512,128)", ("128", "256", "384")),
        ("++k=5,10", ("5", "10")),
        ("chunk=range(512,128)", ()),  # empty: the pre-flight check says so
        ("search.bm25.b=interval(0.25,1.0)", ("0.25",)),  # an optimiser's range: its low end
    ],
)
def test_the_values_of_a_sweep(line, values):
    o = parse(line)
    assert o.is_sweep and o.values == values
    assert o.is_interval == line.endswith("interval(0.25,1.0)")


def test_a_sweep_value_keeps_the_prefix():
    o = parse("++search.bm25.k1=1.2,1.5")
    assert [o.with_value(v) for v in o.values] == ["++search.bm25.k1=1.2", "++search.bm25.k1=1.5"]
    assert parse("chunk=1").values == ("1",)


@pytest.mark.parametrize(
    ("line", "secret"),
    [
        ("+llm.api_key=sk-abcdef", True),
        ("backend.password=hunter22", True),
        ("+x.api_key=AAAA1,BBBB2", True),
        ("backend.api_key_env=MY_KEY", False),  # the name of a variable, not a secret
        ("backend.url=https://user:pa55word@host/db", True),  # credentials in a URL
        ("chunk=512", False),
    ],
)
def test_secrets_follow_the_redaction_rules(line, secret):
    o = parse(line)
    assert o.is_secret is secret


def test_the_value_is_frozen_and_compares_by_its_text():
    o = parse("chunk=1,2")
    with pytest.raises(dataclasses.FrozenInstanceError):
        o.key = "k"  # type: ignore[misc]
    assert o == parse("chunk=1,2") and isinstance(o, Override)
    assert parse_all(["a=1", "+b=2"])[1].prefix == "+"


def test_a_line_hydra_cannot_read_raises_its_error():
    with pytest.raises(HydraException):
        parse("gate.tolerances.recall@5=0.05")


def test_overrides_are_applied_to_a_config_with_hydra_s_rules():
    from hydra.errors import ConfigCompositionException

    cfg = OmegaConf.create({"a": {"b": 1}, "c": 2})
    OmegaConf.set_struct(cfg, True)
    apply_to_config(parse_all(["a.b=5", "+a.new=x", "++c=3", "~a.new"]), cfg)
    assert OmegaConf.to_container(cfg) == {"a": {"b": 5}, "c": 3}
    with pytest.raises(ConfigCompositionException, match="Could not override 'a.nope'"):
        apply_to_config([parse("a.nope=1")], cfg)
    with pytest.raises(ConfigCompositionException, match="Could not append to config"):
        apply_to_config([parse("+c=4")], cfg)
    with pytest.raises(ConfigCompositionException, match="Could not delete from config"):
        apply_to_config([parse("~zzz")], cfg)
