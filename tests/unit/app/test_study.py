"""rageval.app.study: the pieces of the study loop that need no launcher."""

from __future__ import annotations

import json

import optuna
import pytest
from optuna.trial import TrialState

from rageval.app.study import (
    _counted,
    _fail_stale,
    _grid_size,
    _same_golden_set,
    _sampler,
    _settle_interrupted,
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
    # resumed, a grid keeps its order: a stored grid id names the same point
    seeded = StudySettings(sampler={"name": "grid", "seed": 0})
    grid = [_sampler(seeded, space, done)._all_grids for done in (0, 4)]
    assert grid[0] == grid[1]
    tpe = StudySettings(sampler={"name": "random", "seed": 0})
    draws = [_sampler(tpe, space, done)._rng.rng.random() for done in (0, 0, 5)]
    assert draws[0] == draws[1] != draws[2]


def test_a_trial_killed_mid_run_is_run_again_first_and_not_counted(tmp_path):
    storage = f"sqlite:///{tmp_path / 'optuna.db'}"
    space, _ = search_space({}, ["chunk=choice(64,128,256)", "search.bm25.k1=interval(0.5,2)"])
    study = optuna.create_study(study_name="s", storage=storage, direction="maximize")
    done, left = study.ask(space), study.ask(space)
    _tell(study, done, 0.5)
    resumed = optuna.load_study(study_name="s", storage=storage)  # as a new process would
    assert _fail_stale(resumed) == [left.number]
    trials = resumed.get_trials()
    assert [t.state for t in trials] == [TrialState.COMPLETE, TrialState.FAIL, TrialState.WAITING]
    assert trials[1].user_attrs["interrupted"]
    assert [t.number for t in _counted(resumed)] == [done.number]  # the budget: one trial done
    again = resumed.ask(space)  # the interrupted configuration comes back first
    assert again.params == left.params
    assert _fail_stale(resumed) == [again.number]  # interrupted again: enqueued again, once
    assert len(resumed.get_trials(states=(TrialState.WAITING,))) == 1


def test_a_trial_whose_job_finished_before_the_stop_keeps_its_value(tmp_path):
    space, fixed = search_space({}, ["chunk=choice(64,128)"])
    study = resumed = optuna.create_study(direction="maximize")
    trial = study.ask(space)
    ovr = _trial_overrides(trial, fixed)
    job = tmp_path / "0"
    trial.set_user_attr("launched", {"dir": str(job), "ovr": ovr})
    job.mkdir()
    report = {"overrides": ovr, "metrics": {"ndcg@5": 0.25}, "k": 5, "mlflow_run_id": "r1"}
    (job / "report.json").write_text(json.dumps(report))
    _settle_interrupted(resumed, [trial.number], "ndcg@5", ())
    (t,) = resumed.get_trials()
    assert t.state == TrialState.COMPLETE and t.value == 0.25
    assert t.user_attrs["mlflow_run_id"] == "r1" and not t.user_attrs.get("interrupted")
    other = study.ask(space)  # a job folder of another configuration is not taken for it
    other.set_user_attr("launched", {"dir": str(job), "ovr": ["chunk=999", "split=tune"]})
    _settle_interrupted(resumed, [other.number], "ndcg@5", ())
    assert resumed.get_trials()[1].user_attrs["interrupted"]


def test_the_final_runs_keep_libraries_info_lines_out_of_the_console(caplog):
    import logging

    from rageval.app.study import _job_log_level

    root = logging.getLogger()
    saved = root.level
    root.setLevel(logging.INFO)  # as Hydra leaves the launching process
    try:
        with caplog.at_level(logging.INFO), _job_log_level():
            logging.getLogger("faiss.loader").info("Loading faiss with AVX512 support.")
            logging.getLogger("faiss.loader").warning("a warning still shows")
        assert [r.getMessage() for r in caplog.records] == ["a warning still shows"]
        assert root.level == logging.INFO
    finally:
        root.setLevel(saved)


def test_each_search_mode_reads_only_its_own_keys():
    from rageval.app.study import reads

    assert reads("chunk", "vector", None) and reads("chunk_overlap", "bm25", "rrf")
    for key in ("search.fusion", "search.candidate_depth", "search.rrf_k", "search.weights"):
        assert not reads(key, "vector", "rrf") and not reads(key, "bm25", "rrf")
    assert reads("search.rrf_k", "hybrid", "rrf") and not reads(
        "search.rrf_k", "hybrid", "weighted"
    )
    assert reads("search.weights", "hybrid", "weighted") and not reads(
        "search.weights", "hybrid", "rrf"
    )
    assert not reads("search.bm25.k1", "vector", None) and reads("search.bm25.b", "hybrid", "rrf")
    # a mode rageval does not know (Azure's semantic, a plug-in's) may read anything
    assert reads("search.rrf_k", "semantic", "rrf") and reads("search.bm25.k1", None, None)


def test_a_trial_draws_only_the_keys_of_the_mode_it_drew():
    from omegaconf import OmegaConf

    from rageval.app.study import ask, fixed_values

    space, fixed = search_space(
        {
            "chunk": "choice(128, 256)",
            "search": "choice(vector, bm25, hybrid)",
            "search.fusion": "choice(rrf, weighted)",
            "search.rrf_k": "range(10, 130, 10)",
            "search.weights": "choice([0.3,0.7], [0.7,0.3])",
            "search.candidate_depth": "choice(50, 100)",
            "search.bm25.k1": "interval(0.5, 2.0)",
        },
        [],
    )
    config = OmegaConf.create({"search": {"mode": "vector", "fusion": "rrf"}})
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=1))
    modes = set()
    for _ in range(60):
        p = ask(study, space, fixed_values(fixed, config)).params
        mode, fusion = p["search"], p.get("search.fusion")
        modes.add((mode, fusion))
        assert "chunk" in p
        assert ("search.bm25.k1" in p) == (mode != "vector")
        assert ("search.fusion" in p) == ("search.candidate_depth" in p) == (mode == "hybrid")
        assert ("search.rrf_k" in p) == (fusion == "rrf")
        assert ("search.weights" in p) == (fusion == "weighted")
    assert modes == {("vector", None), ("bm25", None), ("hybrid", "rrf"), ("hybrid", "weighted")}


def test_a_fixed_mode_and_the_configs_own_decide_what_a_trial_draws():
    from omegaconf import OmegaConf

    from rageval.app.study import ask, fixed_values

    space, fixed = search_space({"search.rrf_k": "range(10, 130, 10)"}, ["search=hybrid"])
    vector = OmegaConf.create({"search": {"mode": "vector", "fusion": "rrf"}})
    study = optuna.create_study()
    assert "search.rrf_k" in ask(study, space, fixed_values(fixed, vector)).params  # the line wins
    assert ask(study, space, fixed_values([], vector)).params == {}  # the config's vector mode
    weighted = OmegaConf.create({"search": {"mode": "hybrid", "fusion": "weighted"}})
    assert ask(study, space, fixed_values([], weighted)).params == {}
    fused = fixed_values(["search.fusion=rrf"], weighted)
    assert "search.rrf_k" in ask(study, space, fused).params


def test_a_searched_key_no_trial_can_read_is_named():
    from rageval.app.study import fixed_values, unread

    space, fixed = search_space(
        {"search.rrf_k": "range(10, 130, 10)", "chunk": "choice(1, 2)"}, ["search=bm25"]
    )
    assert unread(space, fixed_values(fixed)) == ["search.rrf_k"]
    space, fixed = search_space(
        {"search.rrf_k": "range(10, 130, 10)", "search": "choice(bm25, hybrid)"}, []
    )
    assert unread(space, fixed_values(fixed)) == []  # a hybrid trial reads it


def test_job_n_is_trial_n_unless_its_folder_is_taken():
    from rageval.app.study import _first_job

    assert _first_job([4, 5, 6], set()) == 4
    assert _first_job([4, 6], {0, 1}) == 2  # a gap (a repeat between them): after the used ones
    assert _first_job([3], {3}) == 4  # a resumed study writing into the same sweep folder
    assert _first_job([], {0, 1}) == 2
