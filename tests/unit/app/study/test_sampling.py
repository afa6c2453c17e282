"""rageval.app.study.sampling: the sampler, and the keys a trial draws."""

from __future__ import annotations

import optuna
from omegaconf import OmegaConf

from rageval.app.study.sampling import ask, build_sampler, fixed_values, grid_size, reads, unread
from rageval.app.study.settings import StudySettings
from rageval.app.study.space import search_space
from rageval.app.study.trials import tell

optuna.logging.set_verbosity(optuna.logging.WARNING)


def test_a_grid_study_runs_each_point_once_and_a_resumed_sampler_draws_anew():
    s = StudySettings(sampler={"name": "grid"})
    space, _ = search_space({}, ["chunk=choice(64,128)", "chunk_overlap=range(0,48,16)"])
    assert grid_size(space) == 6
    study = optuna.create_study(sampler=build_sampler(s, space))
    seen = set()
    for _ in range(6):
        t = study.ask(space)
        seen.add((t.params["chunk"], t.params["chunk_overlap"]))
        tell(study, t, 1.0)  # the last one makes the grid sampler call study.stop()
    assert len(seen) == 6
    # resumed, a grid keeps its order: a stored grid id names the same point
    seeded = StudySettings(sampler={"name": "grid", "seed": 0})
    grid = [build_sampler(seeded, space, done)._all_grids for done in (0, 4)]
    assert grid[0] == grid[1]
    tpe = StudySettings(sampler={"name": "random", "seed": 0})
    draws = [build_sampler(tpe, space, done)._rng.rng.random() for done in (0, 0, 5)]
    assert draws[0] == draws[1] != draws[2]


def test_each_search_mode_reads_only_its_own_keys():
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
    space, fixed = search_space(
        {"search.rrf_k": "range(10, 130, 10)", "chunk": "choice(1, 2)"}, ["search=bm25"]
    )
    assert unread(space, fixed_values(fixed)) == ["search.rrf_k"]
    space, fixed = search_space(
        {"search.rrf_k": "range(10, 130, 10)", "search": "choice(bm25, hybrid)"}, []
    )
    assert unread(space, fixed_values(fixed)) == []  # a hybrid trial reads it
