"""rageval.app.study.storage: the study's name and where it is stored."""

from __future__ import annotations

import optuna
from omegaconf import OmegaConf

from rageval.app.config import CONF_DIR
from rageval.app.study.settings import StudySettings
from rageval.app.study.space import search_space
from rageval.app.study.storage import default_storage, study_name

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
