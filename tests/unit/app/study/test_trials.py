"""rageval.app.study.trials: each trial's overrides, value and job folder; a stopped study
settled."""

from __future__ import annotations

import json

import optuna
import pytest
from optuna.trial import TrialState

from rageval.app.study.space import search_space
from rageval.app.study.trials import (
    counted,
    fail_stale,
    first_job,
    same_golden_set,
    settle_interrupted,
    tell,
    trial_overrides,
)
from rageval.errors import ConfigError

optuna.logging.set_verbosity(optuna.logging.WARNING)


def test_a_resumed_study_on_a_changed_golden_set_stops_before_scores_mix():
    study = optuna.create_study(direction="maximize")
    first, second = study.ask(), study.ask()
    same_golden_set(study, {"digests": {"golden": "a" * 64}}, first)
    tell(study, first, 0.5)
    with pytest.raises(
        ConfigError, match=r"was run on another golden set .* hydra\.sweeper\.study_name"
    ):
        same_golden_set(study, {"digests": {"golden": "b" * 64}}, second)
    assert study.trials[1].state == optuna.trial.TrialState.FAIL  # told, not left running


def test_trials_get_the_fixed_overrides_their_values_and_split_tune():
    space, fixed = search_space({"search.bm25.k1": "interval(0.5, 2.0)"}, ["search=bm25"])
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=3))
    trial = study.ask(space)
    overrides = trial_overrides(trial, fixed)
    assert overrides[0] == "search=bm25" and overrides[-1] == "split=tune"
    k1 = overrides[1].split("=")[1]
    assert float(k1) == pytest.approx(trial.params["search.bm25.k1"], rel=1e-3) and len(k1) <= 6


def test_a_trial_killed_mid_run_is_run_again_first_and_not_counted(tmp_path):
    storage = f"sqlite:///{tmp_path / 'optuna.db'}"
    space, _ = search_space({}, ["chunk=choice(64,128,256)", "search.bm25.k1=interval(0.5,2)"])
    study = optuna.create_study(study_name="s", storage=storage, direction="maximize")
    done, left = study.ask(space), study.ask(space)
    tell(study, done, 0.5)
    resumed = optuna.load_study(study_name="s", storage=storage)  # as a new process would
    assert fail_stale(resumed) == [left.number]
    trials = resumed.get_trials()
    assert [t.state for t in trials] == [TrialState.COMPLETE, TrialState.FAIL, TrialState.WAITING]
    assert trials[1].user_attrs["interrupted"]
    assert [t.number for t in counted(resumed)] == [done.number]  # the budget: one trial done
    again = resumed.ask(space)  # the interrupted configuration comes back first
    assert again.params == left.params
    assert fail_stale(resumed) == [again.number]  # interrupted again: enqueued again, once
    assert len(resumed.get_trials(states=(TrialState.WAITING,))) == 1


def test_a_trial_whose_job_finished_before_the_stop_keeps_its_value(tmp_path):
    space, fixed = search_space({}, ["chunk=choice(64,128)"])
    study = resumed = optuna.create_study(direction="maximize")
    trial = study.ask(space)
    ovr = trial_overrides(trial, fixed)
    job = tmp_path / "0"
    trial.set_user_attr("launched", {"dir": str(job), "ovr": ovr})
    job.mkdir()
    report = {"overrides": ovr, "metrics": {"ndcg@5": 0.25}, "k": 5, "mlflow_run_id": "r1"}
    (job / "report.json").write_text(json.dumps(report))
    settle_interrupted(resumed, [trial.number], "ndcg@5", ())
    (t,) = resumed.get_trials()
    assert t.state == TrialState.COMPLETE and t.value == 0.25
    assert t.user_attrs["mlflow_run_id"] == "r1" and not t.user_attrs.get("interrupted")
    other = study.ask(space)  # a job folder of another configuration is not taken for it
    other.set_user_attr("launched", {"dir": str(job), "ovr": ["chunk=999", "split=tune"]})
    settle_interrupted(resumed, [other.number], "ndcg@5", ())
    assert resumed.get_trials()[1].user_attrs["interrupted"]


def test_job_n_is_trial_n_unless_its_folder_is_taken():
    assert first_job([4, 5, 6], set()) == 4
    assert first_job([4, 6], {0, 1}) == 2  # a gap (a repeat between them): after the used ones
    assert first_job([3], {3}) == 4  # a resumed study writing into the same sweep folder
    assert first_job([], {0, 1}) == 2
