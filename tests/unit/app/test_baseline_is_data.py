"""A baseline is data, never code: replaying it (``rageval check``, a study's baseline) takes only
keys the configs define and no instantiation key, so a baseline arriving in a pull request cannot
make Hydra call a function."""

from __future__ import annotations

import contextlib

import pytest
from omegaconf import OmegaConf

from rageval.app.replay import INSTANTIATION_KEYS, compose_from_baseline, data_only
from rageval.errors import InputError
from rageval.gate.baseline import Baseline
from rageval.project import using

CHOICES = {"dataset": "demo", "embedding": "minilm", "backend": "faiss", "search": "vector"}


def attack(path) -> dict:
    """A node that writes ``path`` when Hydra instantiates it."""
    return {"_target_": "rageval.formats.atomic.atomic_write_text", "_args_": [str(path), "hi"]}


@pytest.mark.parametrize(
    "where",
    [
        lambda a: {"dataset": {"x": a}},  # a new key under a group
        lambda a: {"extra": a},  # a new top-level key
        lambda a: {"backend": {"faiss": {"hnsw": a}}},  # deep under a defined node
        lambda a: {"backend": a},  # the backend's own _target_ replaced
        lambda a: {"search": {"weights": [a, 0.5]}},  # inside a list the configs define
        lambda a: {"dataset": {"_partial_": True, "_target_": a["_target_"]}},
    ],
)
def test_a_baseline_cannot_make_the_check_run_code(tmp_path, monkeypatch, where):
    from rageval.app.build import build

    monkeypatch.chdir(tmp_path)
    pwned = tmp_path / "PWNED"
    baseline = {"choices": CHOICES, "config": {"chunk": 128, **where(attack(pwned))}}
    cfg = compose_from_baseline(Baseline(baseline), [])
    assert cfg.chunk == 128  # the baseline's own values are replayed
    assert cfg.backend._target_ == "rageval.retrieval.local.factory.local_retriever"
    assert cfg.dataset._target_ == "rageval.inputs.dataset.files"
    assert "x" not in cfg.dataset and "extra" not in cfg and "_partial_" not in cfg.dataset
    # a replayed list of the wrong shape may fail to build: never by running code
    with contextlib.suppress(Exception):
        build(cfg).close()
    assert not pwned.exists()


def test_data_only_strips_every_instantiation_key_at_any_depth():
    value = {"a": [{"_target_": "x", "_args_": [1], "k": 1}], "_convert_": "all", "b": {"c": 2}}
    assert data_only(value) == {"a": [{"k": 1}], "b": {"c": 2}}
    assert {"_target_", "_args_", "_partial_", "_recursive_", "_convert_"} <= INSTANTIATION_KEYS


def test_code_arguments_are_never_replayed_data_is():
    from omegaconf import open_dict

    from rageval.app.config import compose
    from rageval.app.replay import replay_values

    cfg = compose(["backend=langchain"])
    with open_dict(cfg):
        left = replay_values(
            cfg,
            {"backend": {"kwargs": {"top": 3}, "factory": "os:system"}, "chunk": 64, "nope": 1},
        )
    # kwargs and factory name code: the project's config names them, a baseline never does
    assert dict(cfg.backend.kwargs) == {} and cfg.chunk == 64
    assert OmegaConf.is_missing(cfg.backend, "factory")
    assert left == ["nope"]


def test_keys_that_measure_nothing_keep_this_machine_s_values():
    from omegaconf import open_dict

    from rageval.app.config import compose
    from rageval.app.replay import replay_values

    cfg = compose([])
    baseline = {
        "embedding": {"executor": "ray", "ray_address": "10.0.0.1:6379", "model": "m"},
        "gate": {"tolerances": {"recall_at_5": 0.05}},
        "retries": 9,
        "cache_dir": "/elsewhere",
    }
    with open_dict(cfg):
        replay_values(cfg, baseline)
    assert cfg.embedding.executor == "local" and cfg.embedding.ray_address is None
    assert cfg.embedding.model == "m"  # what is measured is replayed
    assert "recall_at_5" not in (cfg.gate.get("tolerances") or {}) and cfg.retries == 2
    assert cfg.cache_dir != "/elsewhere"


def test_the_current_line_shows_what_the_re_run_used_not_the_baseline_s_slices():
    from rageval.app.check import _over

    base = ["chunk=512", "slices=[tags]", "min_slice_size=3", "search.bm25.k1=0.9"]
    assert _over(base, ["chunk=256"]) == ["search.bm25.k1=0.9", "chunk=256"]


def test_mandatory_values_the_configs_leave_open_are_replayed():
    baseline = {
        "choices": {**CHOICES, "dataset": "custom"},
        "config": {"dataset": {"corpus": "data/c", "golden": "data/g.jsonl", "x": 1}},
    }
    with using(None):  # outside a project (the checkout is one): relative paths stay as written
        cfg = compose_from_baseline(Baseline(baseline), [])
        assert cfg.dataset.corpus == "data/c" and cfg.dataset.golden == "data/g.jsonl"
        assert "x" not in cfg.dataset
        # a path outside the project is refused, not read
        baseline["config"]["dataset"]["corpus"] = "/data/c"
        with pytest.raises(InputError, match="config.dataset.corpus: '/data/c' is outside"):
            compose_from_baseline(Baseline(baseline), [])


def test_a_check_needs_the_code_from_the_project_or_the_command_line():
    from rageval.errors import ConfigError

    baseline = {"choices": {**CHOICES, "backend": "function"}, "config": {"chunk": 64}}
    with pytest.raises(ConfigError, match="backend.function is code, which a baseline never"):
        compose_from_baseline(Baseline(baseline), [])
    cfg = compose_from_baseline(Baseline(baseline), ["backend=function", "backend.function=a.b:c"])
    assert cfg.backend.function == "a.b:c" and cfg.chunk == 64
