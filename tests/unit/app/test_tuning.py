"""rageval.app.tuning: the study's settings, search space and storage."""

from __future__ import annotations

import pytest
from omegaconf import OmegaConf
from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution

from rageval.app.config import CONF_DIR
from rageval.app.tuning import (
    StudySettings,
    default_storage,
    is_study,
    search_space,
    study_name,
)
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


def settings_config(**sweeper):
    node = OmegaConf.load(CONF_DIR / "hydra" / "sweeper" / "optuna.yaml")
    node.merge_with(sweeper)
    return OmegaConf.create(
        {
            "hydra": {"sweeper": node},
            "dataset": {"name": "demo"},
            "holdout_fraction": 0.3,
            "split_seed": 0,
        }
    )


def test_the_conf_file_is_a_study_with_the_documented_knobs_in_its_space():
    cfg = settings_config()
    assert is_study(cfg)
    s = StudySettings.of(cfg)
    space, fixed = search_space(s.params, [])
    assert fixed == []
    assert {
        "chunk",
        "chunk_overlap",
        "search",
        "search.fusion",
        "search.rrf_k",
        "search.weights",
        "search.candidate_depth",
        "search.bm25.k1",
        "search.bm25.b",
    } == set(space)
    bm25 = OmegaConf.load(CONF_DIR / "hydra" / "sweeper" / "optuna_bm25.yaml")
    space, fixed = search_space(bm25.params, [])
    assert fixed == ["search=bm25"] and "search" not in space


def test_bad_settings_are_config_errors_naming_the_key():
    with pytest.raises(ConfigError, match="hydra.sweeper.n_trials must be an integer >= 1"):
        StudySettings.of(settings_config(n_trials=0))
    with pytest.raises(ConfigError, match="sampler.name must be one of tpe, random, grid"):
        StudySettings.of(settings_config(sampler={"name": "annealing"}))
    with pytest.raises(ConfigError, match="hydra.sweeper has no key 'trials'"):
        StudySettings.of(settings_config(trials=3))


def test_the_study_name_follows_the_search_space_so_the_same_command_resumes():
    cfg = settings_config()
    s = StudySettings.of(cfg)
    space, fixed = search_space(s.params, [])
    name = study_name(cfg, space, fixed, s)
    assert name.startswith("demo-") and name == study_name(cfg, space, fixed, s)
    other, _ = search_space(s.params, ["chunk=choice(64,128)"])
    assert study_name(cfg, other, fixed, s) != name
    assert study_name(cfg, space, ["latency_sample=0"], s) != name
    named = StudySettings.of(settings_config(study_name="mine"))
    assert study_name(cfg, space, fixed, named) == "mine"


def test_the_study_is_stored_beside_the_mlflow_store(tmp_path, monkeypatch):
    assert default_storage("sqlite:////data/runs/mlflow.db") == "sqlite:////data/runs/optuna.db"
    assert default_storage("sqlite:///mlflow.db") == "sqlite:///optuna.db"
    assert default_storage("file:///data/mlruns") == "sqlite:////data/optuna.db"
    monkeypatch.chdir(tmp_path)
    assert default_storage("http://127.0.0.1:5000") == f"sqlite:///{tmp_path / 'optuna.db'}"


def test_a_bad_study_command_line_is_a_config_error_before_hydra_starts():
    from rageval.app.preflight import check_study

    with pytest.raises(ConfigError, match="a study tunes on split=tune"):
        check_study(["-m", "hydra/sweeper=optuna_bm25", "split=holdout"], CONF_DIR)
    with pytest.raises(ConfigError, match="hydra.sweeper.n_trials must be an integer >= 1"):
        check_study(["-m", "hydra/sweeper=optuna", "hydra.sweeper.n_trials=0"], CONF_DIR)
    check_study(["-m", "hydra/sweeper=optuna_bm25", "chunk=choice(64,128)"], CONF_DIR)
    check_study(["-m", "chunk=1,2"], CONF_DIR)  # no study: nothing to check


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("hydra.sweeper.n_trial=3", r"hydra.sweeper has no key 'n_trial'; did you mean n_trials\?"),
        ("hydra.sweeper.sampler.n_startup=3", r"did you mean n_startup_trials\?; .* write \+hydra"),
        ("+hydra.sweeper.sampler.multivariat=true", r"has no argument .*did you mean multivariate"),
    ],
)
def test_a_mistyped_sweeper_setting_is_one_line_with_the_closest_key(override, message):
    from rageval.app.preflight import check_study

    with pytest.raises(ConfigError, match=message) as err:
        check_study(["-m", "hydra/sweeper=optuna_bm25", override], CONF_DIR)
    assert "\n" not in str(err.value)
