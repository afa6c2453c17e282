"""The sweep callback hands the sweep's outcome back through its outcome file, not a global: the
exit code of the jobs it compared, and while the sweep runs, what is needed to close it if the
launcher dies. No model, no MLflow: job folders are written by hand."""

from __future__ import annotations

import json

from omegaconf import OmegaConf

from rageval.app import sweep
from rageval.app.callbacks import OUTCOME_ENV, SweepCallback, read_outcome
from rageval.app.config import compose

METRICS = {
    "precision@5": 0.4,
    "recall@5": 0.8,
    "hit_rate@5": 1.0,
    "mrr@5": 0.7,
    "ndcg@5": 0.6,
    "map@5": 0.5,
}


def sweep_config(tmp_path):
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir

    from rageval.app.config import CONF_DIR

    compose([])  # registers the resolvers and the schema
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        return hydra_compose(
            "config",
            [f"hydra.sweep.dir={tmp_path / 'sweep'}", "mlflow.enabled=false", "chunk=32"],
            return_hydra_config=True,
        )


def job(sweep_dir, n, ok=True, overrides=("chunk=32",)):
    d = sweep_dir / str(n)
    d.mkdir(parents=True)
    if ok:
        report = {"metrics": METRICS, "ci": {}, "overrides": list(overrides), "k": 5}
        (d / "report.json").write_text(json.dumps(report))
    else:
        (d / "error.json").write_text(json.dumps({"error": "boom", "overrides": list(overrides)}))


def test_the_outcome_file_carries_the_exit_code_of_the_sweep(tmp_path, capsys):
    cfg = sweep_config(tmp_path)
    outcome = tmp_path / "outcome.json"
    cb = SweepCallback(outcome_file=str(outcome))
    assert read_outcome(outcome) is None
    cb.on_multirun_start(cfg)
    started = read_outcome(outcome)
    assert started["state"] == "started"
    assert started["config"]["hydra"]["sweep"]["dir"] == str(tmp_path / "sweep")
    assert started["config"]["chunk"] == 32
    assert started["config"]["sweep"] == {
        "compare_metric": None,
        "alpha": 0.05,
        "resamples": 10000,
        "pareto_cost": "latency_p95_ms",
        "verbose": False,
    }
    job(tmp_path / "sweep", 0, overrides=("chunk=32",))
    job(tmp_path / "sweep", 1, ok=False, overrides=("chunk=64",))
    cb.on_multirun_end(cfg)
    assert read_outcome(outcome) == {"state": "finished", "exit_code": 2}
    assert "Sweep of 2 jobs (1 failed)" in capsys.readouterr().out
    assert "FAILED: boom" in (tmp_path / "sweep" / "leaderboard.md").read_text()


def test_a_sweep_whose_jobs_all_pass_exits_0_and_the_env_names_the_file(tmp_path, monkeypatch):
    cfg = sweep_config(tmp_path)
    outcome = tmp_path / "outcome.json"
    monkeypatch.setenv(OUTCOME_ENV, str(outcome))
    cb = SweepCallback()
    cb.on_multirun_start(cfg)
    job(tmp_path / "sweep", 0)
    cb.on_multirun_end(cfg)
    assert read_outcome(outcome)["exit_code"] == 0


def test_the_started_outcome_is_enough_to_close_a_sweep_whose_launcher_died(tmp_path, capsys):
    cfg = sweep_config(tmp_path)
    outcome = tmp_path / "outcome.json"
    SweepCallback(outcome_file=str(outcome)).on_multirun_start(cfg)
    job(tmp_path / "sweep", 0)
    (tmp_path / "sweep" / "1").mkdir()  # a job killed before it wrote anything
    settings = OmegaConf.create(read_outcome(outcome)["config"])
    assert sweep.abort_sweep(settings, RuntimeError("worker died")) == 2
    err = capsys.readouterr().err
    assert "the sweep stopped early: RuntimeError: worker died" in err
    table = (tmp_path / "sweep" / "leaderboard.md").read_text()
    assert "the sweep stopped: RuntimeError: worker died" in table


def test_the_sweep_module_keeps_no_outcome_in_module_state():
    state = {
        name: value
        for name, value in vars(sweep).items()
        if not name.startswith("__") and isinstance(value, dict | list | set)
    }
    assert state == {}


def test_a_sweep_writes_its_pareto_plot_and_refuses_an_unknown_cost_before_any_job(tmp_path):
    import pytest

    from rageval.errors import ConfigError

    cfg = sweep_config(tmp_path)
    SweepCallback(outcome_file=str(tmp_path / "outcome.json")).on_multirun_start(cfg)
    for n, (chunk, p95) in enumerate([(32, 2.0), (64, 1.0)]):
        job(tmp_path / "sweep", n, overrides=(f"chunk={chunk}",))
        report = tmp_path / "sweep" / str(n) / "report.json"
        data = json.loads(report.read_text())
        data["costs"] = {"latency_p95_ms": p95}
        report.write_text(json.dumps(data))
    assert sweep.finish_sweep(cfg) == 0
    assert (tmp_path / "sweep" / "pareto.png").stat().st_size > 0
    md = (tmp_path / "sweep" / "leaderboard.md").read_text()
    assert "| p95 ms | pareto |" in md  # equal metric: only the cheaper job is on the front
    assert "| 1.00 | front |" in md and "| 2.00 |  |" in md
    cfg.sweep.pareto_cost = "p95"
    with pytest.raises(ConfigError, match="valid costs: .*latency_p95_ms"):
        SweepCallback(outcome_file=str(tmp_path / "outcome2.json")).on_multirun_start(cfg)


def test_a_sweep_names_the_finished_jobs_whose_mlflow_logging_failed(tmp_path, capsys):
    cfg = sweep_config(tmp_path)
    cfg.mlflow.enabled = True
    cfg.mlflow.tracking_uri = "http://user:hunter2@127.0.0.1:9/"
    for n, chunk in enumerate((32, 64, 128)):
        job(tmp_path / "sweep", n, overrides=(f"chunk={chunk}",))
    logged = tmp_path / "sweep" / "0" / "report.json"
    logged.write_text(json.dumps({**json.loads(logged.read_text()), "mlflow_run_id": "abc"}))
    assert sweep.finish_sweep(cfg) == 0  # the results are complete: the verdict stands
    out, err = capsys.readouterr()
    header = " ".join(out.split())  # the console wraps the header at 120 columns
    assert "Sweep of 3 jobs (0 failed)" in header
    assert "2 of 3 finished jobs are not in MLflow (their logging failed): job 1, 2" in header
    md = (tmp_path / "sweep" / "leaderboard.md").read_text()
    assert "2 of 3 finished jobs are not in MLflow" in md
    for n, chunk in ((1, 64), (2, 128)):
        assert (
            f"job {n} (chunk={chunk}) is not in MLflow; log it with: rageval log "
            f"{tmp_path / 'sweep' / str(n)} --tracking-uri" in err
        )
    assert "job 0 (" not in err and "hunter2" not in out + err + md


def test_a_sweep_without_mlflow_says_nothing_of_it(tmp_path, capsys):
    cfg = sweep_config(tmp_path)
    job(tmp_path / "sweep", 0)
    assert sweep.finish_sweep(cfg) == 0
    out, err = capsys.readouterr()
    assert "MLflow" not in out + err
