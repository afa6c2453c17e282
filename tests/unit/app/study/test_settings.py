"""rageval.app.study.settings: ``hydra.sweeper`` read and checked."""

from __future__ import annotations

import optuna
import pytest
from omegaconf import OmegaConf

from rageval.app.config import CONF_DIR
from rageval.app.study.settings import StudySettings, is_study
from rageval.app.study.space import search_space
from rageval.errors import ConfigError

optuna.logging.set_verbosity(optuna.logging.WARNING)


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
