"""The launching side of a multirun: a parent MLflow run before the jobs, the leaderboard after
(rageval.report.leaderboard)."""

from __future__ import annotations

import os
import shlex
import sys
import warnings
from pathlib import Path
from typing import Any

from rageval.formats.atomic import atomic_write_text
from rageval.formats.redact import redact_override, scrub
from rageval.tracking.client import tracking_uri
from rageval.tracking.log import ui_command, view_url

# The hand-off from the launching process to its jobs: the parent run's id in the environment
# (inherited by joblib workers and a local Ray cluster) and in a file in the sweep folder (read by
# the workers of a Ray cluster that was already running).
PARENT_ENV = "RAGEVAL_PARENT_RUN_ID"
# The sweep that PARENT_ENV belongs to: a reused worker process (Ray, joblib) may still hold the
# variables of an earlier sweep launched from the same process.
SWEEP_ENV = "RAGEVAL_SWEEP_DIR"
PARENT_FILE = ".rageval_parent_run"
# MLflow's chart view of the same runs (its "compare" view of the runs table)
CHART_VIEW = "&compareRunsMode=CHART"


def _sweep_dir(config) -> Path:
    return Path(str(config.hydra.sweep.dir))


def start_sweep(config) -> dict[str, Any]:
    """Create the experiment once and the parent run, before any job starts.

    Returns what ``finish_sweep`` needs to close the sweep if the launcher fails: the resolved
    config without Hydra's own node, plus the sweep folder.
    """
    settings = sweep_settings(config)
    pareto_setting(config)  # a misspelt sweep.pareto_cost: one line and exit 2 before any job
    os.environ.pop(PARENT_ENV, None)
    os.environ.pop(SWEEP_ENV, None)
    sweep_dir = _sweep_dir(config)
    sweep_dir.mkdir(parents=True, exist_ok=True)
    if not config.mlflow.enabled:
        return settings
    uri = tracking_uri(config.mlflow.tracking_uri)
    try:
        from rageval.tracking.sweep import start_parent_run

        run_id = start_parent_run(
            uri,
            config.mlflow.experiment,
            sweep_dir,
            list(config.hydra.overrides.task),
            resume=lambda: _resumed_study_parent(config),
        )
    except Exception as err:  # the jobs still run and write their reports
        _mlflow_warning("starting the sweep's parent run", uri, err)
        return settings
    atomic_write_text(sweep_dir / PARENT_FILE, run_id)
    # Inherited by workers started from here on (joblib, a local Ray cluster), not by the workers
    # of a Ray cluster that was already running: those read the file, or ask MLflow.
    os.environ[PARENT_ENV] = run_id
    os.environ[SWEEP_ENV] = str(sweep_dir)
    return settings


def _resumed_study_parent(config) -> str | None:
    from rageval.app.study.settings import is_study
    from rageval.app.study.storage import study_parent_id

    return study_parent_id(config) if is_study(config) else None


def sweep_settings(config) -> dict[str, Any]:
    """The sweep's config as plain data (resolved, Hydra's node reduced to the sweep folder)."""
    from omegaconf import Container, OmegaConf

    settings: dict[str, Any] = {"hydra": {"sweep": {"dir": str(_sweep_dir(config))}}}
    for key in config:
        if key == "hydra":
            continue
        try:
            value = config[key]
            settings[key] = (
                OmegaConf.to_container(value, resolve=True)
                if isinstance(value, Container)
                else value
            )
        except Exception:  # a value left missing (???): the jobs report it, the sweep goes on
            settings[key] = None
    return settings


def parent_run_id(
    sweep_dir: str | None, uri: str | None = None, experiment: str | None = None
) -> str | None:
    """The sweep's parent run: the file in the sweep folder (written before any job starts), else
    the environment when it names this sweep, else (given ``uri`` and ``experiment``) the parent
    run that MLflow holds for this sweep id: a cluster node without the sweep folder."""
    if sweep_dir:
        f = Path(sweep_dir) / PARENT_FILE
        if f.is_file():
            return f.read_text().strip() or None
    env_sweep = os.environ.get(SWEEP_ENV)
    if os.environ.get(PARENT_ENV) and (not sweep_dir or env_sweep in (None, sweep_dir)):
        return os.environ[PARENT_ENV]
    if sweep_dir and uri and experiment and "'" not in sweep_dir:
        from rageval.tracking.sweep import find_parent_run

        return find_parent_run(uri, experiment, sweep_dir)
    return None


def compare_settings(config) -> tuple[str | None, float, int]:
    """``sweep.compare_metric`` (None: the default rule), alpha and resamples."""
    sweep = config.sweep
    chosen = sweep.compare_metric
    return (str(chosen) if chosen else None), float(sweep.alpha), int(sweep.resamples)


def pareto_setting(config) -> str:
    """``sweep.pareto_cost``, checked against the costs a run reports (ConfigError otherwise)."""
    from rageval.report.costs import DEFAULT_PARETO_COST, cost_spec

    sweep = config.get("sweep") or {}
    return cost_spec(sweep.get("pareto_cost") or DEFAULT_PARETO_COST).name


def finish_sweep(config, stopped: str | None = None) -> int:
    """Print and write the leaderboard, close the parent run; returns the sweep's exit code (2 if
    a job failed or sweep.compare_metric names no metric). ``stopped``: why the launcher gave up,
    told for every job that left no report."""
    from rageval.app.study.outcome import load_outcome, print_outcome

    sweep_dir = _sweep_dir(config)
    jobs = _finished_jobs(sweep_dir, stopped)
    failed = [j for j in jobs if j.status != "ok"]
    board, bad_metric = _rank_jobs(config, jobs)
    unlogged = _note_unlogged(config, jobs, failed, board)
    _write_leaderboard(board, sweep_dir, failed)
    _print_unlogged(config, sweep_dir, unlogged)
    study = load_outcome(sweep_dir)  # a tuning study: its verdict on the holdout
    if study is not None:
        print_outcome(study)
    _close_parent_run(config, sweep_dir, jobs, board, study, broken=bool(failed), stopped=stopped)
    os.environ.pop(PARENT_ENV, None)
    os.environ.pop(SWEEP_ENV, None)
    if study is not None:
        return 2 if study.get("error") or bad_metric or stopped else 0
    return 2 if failed or bad_metric else 0


def _finished_jobs(sweep_dir: Path, stopped: str | None) -> list:
    """The sweep's jobs as their folders hold them; a job that left no report because the
    launcher gave up says why."""
    from rageval.report.leaderboard import load_jobs

    jobs = load_jobs(sweep_dir)
    for j in jobs:
        if stopped and j.status == "failed" and "left no report" in j.error:
            j.error = f"the job left no report; the sweep stopped: {stopped}"
    return jobs


def _rank_jobs(config, jobs) -> tuple[Any, bool]:
    """The leaderboard, and whether a setting named no metric or cost (the board then decides by
    the default metric and cost, and says so)."""
    from rageval.errors import RagevalError
    from rageval.report.leaderboard import rank

    chosen, alpha, resamples = compare_settings(config)
    bad_metric = False
    try:
        cost = pareto_setting(config)
    except RagevalError as err:  # checked at the start; a sweep closed from saved settings
        print(f"rageval: error: {err}", file=sys.stderr)
        cost, bad_metric = "latency_p95_ms", True
    try:
        board = rank(jobs, chosen, alpha=alpha, resamples=resamples, pareto_cost=cost)
    except RagevalError as err:  # a misspelt compare_metric: the jobs' reports are all on disk
        print(f"rageval: error: {err}", file=sys.stderr)
        board = rank(jobs, None, resamples=resamples, pareto_cost=cost)
        board.note = f"{err}; decided by the default metric instead"
        bad_metric = True
    return board, bad_metric


def _note_unlogged(config, jobs, failed, board) -> list:
    """The finished jobs whose MLflow logging failed (they warned): the sweep's verdict stands,
    and the board's header says which jobs the MLflow comparison lacks."""
    unlogged = [
        j
        for j in jobs
        if config.mlflow.enabled and j.status == "ok" and not j.report.get("mlflow_run_id")
    ]
    if unlogged:
        which = ", ".join(str(j.job) for j in unlogged)
        text = (
            f"{len(unlogged)} of {len(jobs) - len(failed)} finished jobs are not in MLflow "
            f"(their logging failed): job {which}"
        )
        board.note = f"{board.note}; {text}" if board.note else text
    return unlogged


def _write_leaderboard(board, sweep_dir: Path, failed) -> None:
    """leaderboard.md/.csv and pareto.png in the sweep folder, the board on the console, then
    each failed job's error."""
    md_path, csv_path = sweep_dir / "leaderboard.md", sweep_dir / "leaderboard.csv"
    atomic_write_text(md_path, board.markdown())
    atomic_write_text(csv_path, board.csv())
    plot = _pareto_plot(board, sweep_dir / "pareto.png")
    print()
    print(board.console())
    print(f"leaderboard: {md_path} ({csv_path.name} for spreadsheets)")
    if plot is not None:
        print(f"Pareto plot: {plot}")
    for j in failed:
        print(f"job {j.job} ({' '.join(j.overrides)}) failed: {j.error}", file=sys.stderr)


def _print_unlogged(config, sweep_dir: Path, unlogged) -> None:
    """How to log each job MLflow lacks."""
    if not unlogged:
        return
    shown = scrub(tracking_uri(config.mlflow.tracking_uri), ())
    q = shlex.quote
    for j in unlogged:
        print(
            f"job {j.job} ({' '.join(j.overrides)}) is not in MLflow; log it with: rageval "
            f"log {q(str(sweep_dir / str(j.job)))} --tracking-uri {q(shown)} --experiment "
            f"{q(str(config.mlflow.experiment))}",
            file=sys.stderr,
        )


def _close_parent_run(config, sweep_dir: Path, jobs, board, study, *, broken, stopped) -> None:
    """The sweep's verdict on its MLflow parent run, closed FAILED when a job failed (a study's
    failed trials are part of its search: only its error counts) or the launcher gave up; a
    failure here costs a warning, the leaderboard is on disk already."""
    parent = parent_run_id(str(sweep_dir))
    if not (config.mlflow.enabled and parent):
        return
    from rageval.app.study.settings import STUDY_FILE

    uri = tracking_uri(config.mlflow.tracking_uri)
    try:
        from omegaconf import OmegaConf

        from rageval.tracking.sweep import close_parent_run

        # a sweep whose launcher died is closed from its saved settings: no Hydra node there
        task = OmegaConf.select(config, "hydra.overrides.task", default=None) or []
        rows = [
            {
                "job": j.job,
                "status": j.status,
                "overrides": j.overrides,
                "metrics": j.metrics,
                "run_id": j.report.get("mlflow_run_id"),
            }
            for j in jobs
        ]
        view = close_parent_run(
            uri,
            parent,
            rows,
            board,
            sweep_dir=sweep_dir,
            command="rageval -m " + " ".join(redact_override(o) for o in task),
            study=study,
            study_file=Path(sweep_dir) / STUDY_FILE,
            headline=[str(m) for m in OmegaConf.select(config, "gate.metrics", default=None) or []],
            failed=bool((broken and study is None) or stopped or (study or {}).get("error")),
        )
        shown = scrub(uri, ())
        print(
            f"MLflow parent run {parent}; see it with: {ui_command(shown)}, the sweep's jobs "
            f"sorted by {board.metric}: {view_url(shown, view)}\n"
            f"compare them in charts: {view_url(shown, view + CHART_VIEW)}"
        )
    except Exception as err:  # the leaderboard is on disk already
        _mlflow_warning("closing the sweep's parent run", uri, err)


def _pareto_plot(board, path: Path) -> Path | None:
    """pareto.png beside the leaderboard (logged on the parent run with the sweep's files); a
    plot that fails costs a warning, never the sweep's result."""
    from rageval.report.pareto import pareto_png

    try:
        return pareto_png(board, path)
    except Exception as err:
        warnings.warn(f"could not draw {path.name}: {type(err).__name__}: {err}", stacklevel=2)
        return None


def _mlflow_warning(what: str, uri: str, err: Exception) -> None:
    warnings.warn(
        f"MLflow at {scrub(uri, ())} failed {what} ({type(err).__name__}: "
        f"{scrub(str(err), ())[:200]}); the sweep's files are on disk, and each job's folder can "
        "be logged later with `rageval log JOB_DIR`",
        stacklevel=2,
    )


def abort_sweep(config, exc: BaseException) -> int:
    """The launcher raised (a worker died, the cluster went away, Ctrl-C): still summarise the jobs
    that finished, say why the others have no report, and close the parent run as FAILED.
    ``config``: what ``start_sweep`` returned. Returns the exit code, 2."""
    cause = exc.__context__ if isinstance(exc, SystemExit) and exc.__context__ else exc
    text = " ".join(str(cause).split())[:300]
    reason = f"{type(cause).__name__}: {text}" if text else type(cause).__name__
    print(f"rageval: the sweep stopped early: {reason}", file=sys.stderr)
    finish_sweep(config, stopped=reason)
    return 2
