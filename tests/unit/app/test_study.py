"""rageval.app.study: the pieces of the study loop that need no launcher."""

from __future__ import annotations

import optuna
import pytest

from rageval.app.study import (
    _fail_stale,
    _grid_size,
    _same_golden_set,
    _sampler,
    _tell,
    _trial_overrides,
)
from rageval.app.tuning import StudySettings, search_space
from rageval.errors import ConfigError

optuna.logging.set_verbosity(optuna.logging.WARNING)


def test_a_resumed_study_on_a_changed_golden_set_stops_before_scores_mix():
    study = optuna.create_study(direction="maximize")
    first, second = study.ask(), study.ask()
    _same_golden_set(study, {"digests": {"golden": "a" * 64}}, first)
    _tell(study, first, 0.5)
    with pytest.raises(
        ConfigError, match=r"was run on another golden set .* hydra\.sweeper\.study_name"
    ):
        _same_golden_set(study, {"digests": {"golden": "b" * 64}}, second)
    assert study.trials[1].state == optuna.trial.TrialState.FAIL  # told, not left running


def test_trials_get_the_fixed_overrides_their_values_and_split_tune():
    space, fixed = search_space({"search.bm25.k1": "interval(0.5, 2.0)"}, ["search=bm25"])
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=3))
    trial = study.ask(space)
    overrides = _trial_overrides(trial, fixed)
    assert overrides[0] == "search=bm25" and overrides[-1] == "split=tune"
    k1 = overrides[1].split("=")[1]
    assert float(k1) == pytest.approx(trial.params["search.bm25.k1"], rel=1e-3) and len(k1) <= 6


def test_a_grid_study_runs_each_point_once_and_a_resumed_sampler_draws_anew():
    s = StudySettings(sampler={"name": "grid"})
    space, _ = search_space({}, ["chunk=choice(64,128)", "chunk_overlap=range(0,48,16)"])
    assert _grid_size(space) == 6
    study = optuna.create_study(sampler=_sampler(s, space))
    seen = set()
    for _ in range(6):
        t = study.ask(space)
        seen.add((t.params["chunk"], t.params["chunk_overlap"]))
        _tell(study, t, 1.0)  # the last one makes the grid sampler call study.stop()
    assert len(seen) == 6
    tpe = StudySettings(sampler={"name": "random", "seed": 0})
    draws = [_sampler(tpe, space, done)._rng.rng.random() for done in (0, 0, 5)]
    assert draws[0] == draws[1] != draws[2]


def test_trials_a_stopped_study_left_running_are_marked_failed_when_it_resumes(tmp_path):
    storage = f"sqlite:///{tmp_path / 'optuna.db'}"
    study = optuna.create_study(study_name="s", storage=storage)
    done, left = study.ask(), study.ask()
    _tell(study, done, 0.5)
    resumed = optuna.load_study(study_name="s", storage=storage)  # as a new process would
    assert _fail_stale(resumed) == [left.number]
    states = [t.state for t in resumed.get_trials()]
    assert states == [optuna.trial.TrialState.COMPLETE, optuna.trial.TrialState.FAIL]
    assert _fail_stale(resumed) == []
