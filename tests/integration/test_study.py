"""Integration: a BM25 tuning study on a small golden set, end to end in-process (rageval's Optuna
sweeper, a real MLflow store and Optuna's SQLite storage): trials on the tune split, resumed,
the holdout verdict and the promote refusal."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from mlflow_store import store_uri
from study_golden import write_study_golden

from rageval.app.main import run_app
from rageval.inputs.split import side_of

METRIC = "evidence_recall@1024t"


def study_args(mini, cache, tmp_path, golden, sweep_dir, n_trials):
    # grid over 2 x 2 points; chunk_overlap=64 fails with either chunk: 2 trials of 4 fail
    return [
        "-m",
        "hydra/sweeper=optuna_bm25",
        "hydra.sweeper.sampler.name=grid",
        "~hydra.sweeper.sampler.n_startup_trials",
        "~hydra.sweeper.sampler.constant_liar",
        f"hydra.sweeper.n_trials={n_trials}",
        f"hydra.sweeper.baseline={tmp_path / 'no-baseline.json'}",
        "search.bm25.k1=1.2",  # a plain override fixes a key of the search space
        "search.bm25.b=0.75",
        "chunk=choice(32,64)",
        "chunk_overlap=choice(0,64)",
        "dataset=custom",
        f"dataset.corpus={mini / 'corpus'}",
        f"dataset.golden={golden}",
        f"cache_dir={cache}",
        f"mlflow.tracking_uri={store_uri(tmp_path / 'mlflow.db')}",
        "latency_sample=0",
        "budgets=[1024]",
        "ks=[5]",
        f"hydra.sweep.dir={sweep_dir}",
    ]


def jobs(sweep_dir: Path) -> list[Path]:
    return sorted(p for p in sweep_dir.iterdir() if p.is_dir() and p.name.isdigit())


def test_a_bm25_study_runs_resumes_and_its_holdout_decides_promote(
    mini, shared_cache, tmp_path, capsys
):
    from mlflow.tracking import MlflowClient

    from rageval.app.promote import promote
    from rageval.errors import InputError, NotConfirmedError

    golden = tmp_path / "golden.jsonl"
    ids = write_study_golden(mini / "corpus", golden)
    side = {q: side_of(q, 0.3, 0) for q in ids}
    s1, s2 = tmp_path / "s1", tmp_path / "s2"

    assert run_app(study_args(mini, shared_cache, tmp_path, golden, s1, 3)) == 0
    out = capsys.readouterr().out
    study = json.loads((s1 / "study.json").read_text())
    assert study["objective"] == METRIC
    assert study["trials"]["complete"] + study["trials"]["failed"] == 3
    assert study["trials"]["failed"] >= 1 and study["trials"]["complete"] >= 1  # went on

    # every trial scored the tune side only, and says so
    for job in jobs(s1):
        if (job / "report.json").is_file():
            rep = json.loads((job / "report.json").read_text())
            assert rep["split"]["name"] == "tune"
            assert [r["id"] for r in rep["per_query"]] == [q for q in ids if side[q] == "tune"]
    # the final runs scored every query; the optimism is tune minus holdout of the best's values
    best = json.loads((s1 / "final-best" / "report.json").read_text())
    assert best["split"]["name"] == "all" and len(best["per_query"]) == len(ids)
    values = {r["id"]: r[METRIC] for r in best["per_query"]}
    tune = [values[q] for q in ids if side[q] == "tune"]
    hold = [values[q] for q in ids if side[q] == "holdout"]
    optimism = sum(tune) / len(tune) - sum(hold) / len(hold)
    summary = study["summary"]
    assert summary["optimism"] == pytest.approx(optimism, abs=1e-9)
    assert summary["optimism_low"] <= summary["optimism"] <= summary["optimism_high"]
    assert summary["best_holdout"]["n"] == len(hold)
    assert f"optimism of the best (tune - holdout): {optimism:+.4f}" in out
    assert "paired randomization test" in out
    assert f"split=tune: {len(tune)} of {len(ids)} golden queries" in out  # each trial says so

    # MLflow: one parent run carrying the study, every finished trial and both final runs nested
    # under it (a trial that failed while building its config never reached MLflow)
    client = MlflowClient(tracking_uri=f"sqlite:///{tmp_path / 'mlflow.db'}")
    parent_id = (s1 / ".rageval_parent_run").read_text().strip()
    parent = client.get_run(parent_id)
    assert parent.data.tags["rageval.study"] == study["study"]
    assert parent.data.metrics["study/optimism"] == pytest.approx(optimism, abs=1e-9)
    exp = parent.info.experiment_id

    def children():
        runs = client.search_runs([exp], f"tags.`mlflow.parentRunId` = '{parent_id}'")
        return [r.data.tags.get("rageval.study_role", "trial") for r in runs]

    n = study["trials"]["complete"]
    assert sorted(children()) == ["baseline", "best", *["trial"] * n]
    # the runs table names the study and each trial by its number, as the console shows them
    assert parent.data.tags["mlflow.runName"] == f"study {study['study']}"
    names = [
        r.data.tags["mlflow.runName"]
        for r in client.search_runs([exp], f"tags.`mlflow.parentRunId` = '{parent_id}'")
        if "rageval.study_role" not in r.data.tags
    ]
    assert len(names) == n and all(x.startswith("trial ") for x in names)
    assert parent.data.params == {}  # the best's values are a tag: a resumed study's may change
    assert parent.data.tags["rageval.study_best_config"].startswith("chunk=")

    # resumed: the same command with a larger budget runs only the missing trial, same parent
    assert run_app(study_args(mini, shared_cache, tmp_path, golden, s2, 4)) == 0
    capsys.readouterr()
    assert len(jobs(s2)) == 1
    assert (s2 / ".rageval_parent_run").read_text().strip() == parent_id
    resumed = json.loads((s2 / "study.json").read_text())
    assert resumed["study"] == study["study"]
    assert resumed["trials"] == {"complete": 2, "failed": 2}  # the grid's four points, once each
    (last,) = [json.loads((j / "report.json").read_text()) for j in jobs(s2)]
    first = [
        json.loads((j / "report.json").read_text())
        for j in jobs(s1)
        if (j / "report.json").is_file()
    ]
    assert last["overrides"] not in [r["overrides"] for r in first]  # the point the first run left
    assert client.get_run(parent_id).info.status == "FINISHED"
    assert children().count("trial") == 2
    # the parent shows the study's best trial, whichever part of the study found it
    best_trial_run = resumed["best_trial_run_id"]
    assert client.get_run(parent_id).data.tags["rageval.best_run_id"] == best_trial_run
    assert client.get_run(best_trial_run).data.tags["mlflow.parentRunId"] == parent_id
    # the final runs are scored again only when their configuration changed
    same_best = resumed["best_trial"] == study["best_trial"]
    assert (s2 / "final-best").exists() != same_best
    assert children().count("best") == (1 if same_best else 2)
    assert children().count("baseline") == 1 and not (s2 / "final-baseline").exists()
    assert (tmp_path / "optuna.db").is_file()  # beside mlflow.db

    # promote: the holdout cannot confirm a gain here, so it refuses (exit 1) unless --force
    base = tmp_path / "baseline.json"
    kwargs = dict(sweep=parent_id, golden=str(golden), uri=f"sqlite:///{tmp_path / 'mlflow.db'}")
    with pytest.raises(NotConfirmedError, match="the holdout does not confirm") as refused:
        promote(None, str(base), best=METRIC, **kwargs)
    assert refused.value.exit_code == 1 and not base.exists()
    with pytest.raises(InputError, match=f"decided by {METRIC}"):
        promote(None, str(base), best="ndcg@5", **kwargs)
    done = promote(None, str(base), best=METRIC, force=True, **kwargs)
    assert done.run_id == client.get_run(parent_id).data.tags["rageval.study_best_run_id"]
    assert json.loads(base.read_text())["config"]["split"] == "all"  # every golden query

    # the split is stable: queries added to the golden set never move the old ones
    from rageval.inputs.golden import load_golden
    from rageval.inputs.split import SplitSpec, split_golden

    grown = write_study_golden(mini / "corpus", golden, extra=12)
    held = [q.id for q in split_golden(load_golden(str(golden)), SplitSpec("holdout"))[0].queries]
    assert [q for q in held if q in side] == [q for q in ids if side[q] == "holdout"]
    assert set(held) - set(ids) == {q for q in grown[len(ids) :] if side_of(q, 0.3) == "holdout"}


def test_a_study_batch_runs_in_parallel_on_the_joblib_launcher(mini, shared_cache, tmp_path):
    from mlflow.tracking import MlflowClient

    golden = tmp_path / "golden.jsonl"
    write_study_golden(mini / "corpus", golden)
    sweep = tmp_path / "s"
    args = study_args(mini, shared_cache, tmp_path, golden, sweep, 2)
    args = [a if not a.startswith("chunk_overlap=") else "chunk_overlap=0" for a in args]
    args += ["hydra.sweeper.n_jobs=2", "hydra/launcher=joblib", "hydra.launcher.n_jobs=2"]
    assert run_app(args) == 0
    study = json.loads((sweep / "study.json").read_text())
    assert study["trials"] == {"complete": 2, "failed": 0}
    assert {
        json.loads((j / "report.json").read_text())["config"]["chunk"] for j in jobs(sweep)
    } == {
        32,
        64,
    }
    client = MlflowClient(tracking_uri=f"sqlite:///{tmp_path / 'mlflow.db'}")
    parent = (sweep / ".rageval_parent_run").read_text().strip()
    exp = client.get_run(parent).info.experiment_id
    nested = client.search_runs([exp], f"tags.`mlflow.parentRunId` = '{parent}'")
    assert len(nested) == 4  # two trials from the workers, the best and the baseline from here


def test_a_trial_draws_only_the_keys_its_search_mode_reads_and_none_runs_twice(
    mini, shared_cache, tmp_path, capsys
):
    """BM25 search reads no rrf_k: a grid of 2 chunk sizes x 2 rrf_k values is 4 trials but 2
    configurations, so 2 jobs run and the other 2 trials take the values of earlier ones."""
    golden = tmp_path / "golden.jsonl"
    write_study_golden(mini / "corpus", golden)
    sweep = tmp_path / "s"
    args = study_args(mini, shared_cache, tmp_path, golden, sweep, 4)
    args = [a if not a.startswith("chunk_overlap=") else "chunk_overlap=0" for a in args]
    args += ["search.rrf_k=choice(10,60)"]
    assert run_app(args) == 0
    err = capsys.readouterr().err
    study = json.loads((sweep / "study.json").read_text())
    assert study["trials"] == {"complete": 4, "failed": 0, "repeated": 2}
    ran = [json.loads((j / "report.json").read_text()) for j in jobs(sweep)]
    assert sorted(r["config"]["chunk"] for r in ran) == [32, 64]
    assert all("search.rrf_k=" not in " ".join(r["overrides"]) for r in ran)
    assert err.count("drew the configuration of trial") == 2
    assert "search.rrf_k is read by no trial (search mode bm25" in err
    import optuna

    storage = f"sqlite:///{tmp_path / 'optuna.db'}"
    trials = optuna.load_study(study_name=study["study"], storage=storage).get_trials()
    assert all("search.rrf_k" not in t.params for t in trials)
    by_chunk: dict[int, set[float]] = {}
    for t in trials:
        by_chunk.setdefault(t.params["chunk"], set()).add(t.value)
    assert {k: len(v) for k, v in by_chunk.items()} == {32: 1, 64: 1}  # same config, same value
    # job N is trial N: the leaderboard's job numbers are the study's trial numbers
    ran_trials = [t.number for t in trials if "same_as" not in t.user_attrs]
    assert [int(j.name) for j in jobs(sweep)] == ran_trials
    for t in trials:
        if "same_as" in t.user_attrs:
            assert (
                f"trial {t.number} drew the configuration of trial {t.user_attrs['same_as']}" in err
            )
            assert t.user_attrs["same_as"] in ran_trials
    assert err.count("not run again") == 2 and "in its batch" not in err  # batches of 1


def test_two_trials_of_one_batch_that_draw_one_configuration_run_it_once(
    mini, shared_cache, tmp_path, capsys
):
    """A batch of 2 whose trials differ only in a key their mode ignores: one job, both told."""
    golden = tmp_path / "golden.jsonl"
    write_study_golden(mini / "corpus", golden)
    sweep = tmp_path / "s"
    args = study_args(mini, shared_cache, tmp_path, golden, sweep, 2)
    args = [a for a in args if not a.startswith(("chunk=", "chunk_overlap="))]
    args += ["chunk=32", "chunk_overlap=0", "search.rrf_k=choice(10,60)", "hydra.sweeper.n_jobs=2"]
    assert run_app(args) == 0
    err = capsys.readouterr().err
    study = json.loads((sweep / "study.json").read_text())
    assert study["trials"] == {"complete": 2, "failed": 0, "repeated": 1}
    assert [j.name for j in jobs(sweep)] == ["0"]
    assert "trial 1 drew the configuration of trial 0 in its batch" in err
    assert "not run again" not in err


def test_a_study_leaks_no_secret_override_into_any_file_or_mlflow(
    mini, shared_cache, tmp_path, monkeypatch
):
    """Secret overrides of a study are masked in its storage (optuna.db), its trials' and final
    runs' files and pages, and the MLflow store: the bytes of every file are searched."""
    monkeypatch.chdir(tmp_path)  # optuna.db, outputs: all under tmp_path
    golden = tmp_path / "golden.jsonl"
    write_study_golden(mini / "corpus", golden)
    args = study_args(mini, shared_cache, tmp_path, golden, tmp_path / "s", 2)
    secrets = ("sk-S1-112233", "sk-P1-998877")
    args += [f"+extra.api_key={secrets[0]}", f"+extra.creds={{user: bob, password: {secrets[1]}}}"]
    assert run_app(args) == 0
    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert any(p.name == "optuna.db" for p in files) and any(p.name == "mlflow.db" for p in files)
    assert (tmp_path / "s" / "final-best" / "report.html").is_file()
    leaked = [
        f"{p.relative_to(tmp_path)}: {s}"
        for p in files
        for s in secrets
        if s.encode() in p.read_bytes()
    ]
    assert leaked == [], "\n".join(leaked)


def test_a_second_command_on_a_running_study_stops_in_one_line_and_touches_nothing(
    mini, shared_cache, tmp_path, capsys
):
    import optuna
    from filelock import FileLock

    golden = tmp_path / "golden.jsonl"
    write_study_golden(mini / "corpus", golden)
    args = study_args(mini, shared_cache, tmp_path, golden, tmp_path / "s1", 1)
    assert run_app(args) == 0
    (lock_file,) = tmp_path.glob("optuna.db.*.lock")
    storage = f"sqlite:///{tmp_path / 'optuna.db'}"
    (summary,) = optuna.get_all_study_summaries(storage)
    before = [
        (t.number, t.state)
        for t in optuna.load_study(study_name=summary.study_name, storage=storage).trials
    ]
    capsys.readouterr()
    with FileLock(str(lock_file), timeout=0):  # the first command, still running
        from rageval.cli.main import main

        args2 = study_args(mini, shared_cache, tmp_path, golden, tmp_path / "s2", 2)
        assert main(args2) == 2
    captured = capsys.readouterr()
    line = [ln for ln in (captured.out + captured.err).splitlines() if "another command" in ln]
    assert len(line) == 1 and summary.study_name in line[0] and "study_name" in line[0]
    assert "Sweep of" not in captured.out and not (tmp_path / "s2").exists()  # before Hydra
    after = optuna.load_study(study_name=summary.study_name, storage=storage).trials
    assert [(t.number, t.state) for t in after] == before  # nothing marked failed, nothing added


def test_a_corrupt_study_storage_is_one_line_and_exit_2_before_anything_runs(
    mini, shared_cache, tmp_path, capsys
):
    from rageval.cli.main import main

    golden = tmp_path / "golden.jsonl"
    write_study_golden(mini / "corpus", golden)
    from mlflow.tracking import MlflowClient

    (tmp_path / "optuna.db").write_bytes(b"SQLite format 3\x00" + b"\xff" * 300)  # truncated
    args = study_args(mini, shared_cache, tmp_path, golden, tmp_path / "s", 2)
    capsys.readouterr()  # the test store's own set-up lines
    assert main(args) == 2
    captured = capsys.readouterr()
    err = [ln for ln in captured.err.splitlines() if ln.strip()]
    assert len(err) == 1 and "optuna.db cannot be read" in err[0] and "Traceback" not in err[0]
    assert not (tmp_path / "s").exists()  # before Hydra: no trial, no sweep folder
    client = MlflowClient(store_uri(tmp_path / "mlflow.db"))
    assert not client.search_runs([e.experiment_id for e in client.search_experiments()])
