"""The trial loop: :func:`run_study` asks ``n_jobs`` trials at a time and launches them together
through the configured launcher (basic: one after another; joblib and Ray: in parallel), each
with ``split=tune``: every trial is a job of the sweep, a nested MLflow run under the sweep's
parent run; its objective is the sweep's deciding metric (``sweep.compare_metric``, else the
leaderboard's default rule) on the tune queries. A trial that fails or reports no value is told
to Optuna as failed and the study goes on; the final runs follow (rageval.app.study.final)."""

from __future__ import annotations

import contextlib
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rageval.app.study.final import finish_study, write_outcome
from rageval.app.study.sampling import ask, build_sampler, fixed_values, grid_size, unread_lines
from rageval.app.study.settings import PARENT_ATTR, StudySettings
from rageval.app.study.space import search_space
from rageval.app.study.storage import storage_of, study_lock, study_name
from rageval.app.study.trials import (
    counted,
    fail_stale,
    first_job,
    job_folder,
    masked,
    plan_launch,
    record_trial,
    same_golden_set,
    settle_interrupted,
    tell,
    trial_outcome,
    trial_overrides,
)
from rageval.errors import ConfigError


def run_study(sweeper, arguments: list[str]) -> list:
    """The sweeper's ``sweep``: run or resume the study, then score best and baseline on every
    golden query and write study.json (see the module docstring). A mistake the user can fix
    (RagevalError) ends the study with its message in study.json: the sweep's summary prints it
    as one line and exits 2, after the leaderboard of the trials that ran."""
    from rageval.errors import RagevalError

    try:
        with contextlib.ExitStack() as held:
            return _run_study(sweeper, arguments, held)
    except RagevalError as err:
        write_outcome(Path(str(sweeper.config.hydra.sweep.dir)), {"error": str(err)}, None)
        return []


@dataclass
class _StudyRun:
    """A study while its trials run: what every batch reads, and what the batches gather."""

    study: Any
    s: StudySettings
    space: dict[str, Any]
    fixed: list[str]
    sweep_dir: Path
    metric: str | None  # the deciding metric (None until the first report names the default)
    stored: str | None  # the objective the study recorded
    varies: list[str]  # the searched keys that change the chunking
    given: Any  # fixed_values(fixed, config)
    to_go: int
    used: set[int] = field(default_factory=set)  # job folders taken
    names: dict[str, str] = field(default_factory=dict)  # MLflow run id -> "trial N: its values"
    returns: list = field(default_factory=list)


def _run_study(sweeper, arguments: list[str], held: contextlib.ExitStack) -> list:
    run = _open_study(sweeper.config, arguments, held)
    while run.to_go > 0:
        batch = min(run.s.n_jobs, run.to_go)
        _run_batch(sweeper, run, batch)
        run.to_go -= batch
    finish_study(sweeper, run.study, run.s, run.space, run.fixed, run.metric, run.names)
    return run.returns


def _open_study(config, arguments: list[str], held: contextlib.ExitStack) -> _StudyRun:
    """Create or resume the study (its lock held in ``held``), check its objective, and say how
    many trials it has and will run."""
    from rageval.app.sweep import parent_run_id
    from rageval.report.leaderboard import CHUNKING_KEYS

    s = StudySettings.of(config)
    space, fixed = search_space(s.params, arguments)
    # one command at a time runs a study: a second would take the first's live trials for stale
    held.enter_context(study_lock(storage_of(config, s), study_name(config, space, fixed, s)))
    study = _create_study(config, s, space, fixed)
    sweep_dir = Path(str(config.hydra.sweep.dir))
    sweep_dir.mkdir(parents=True, exist_ok=True)
    done = len(study.get_trials(deepcopy=False))
    if done:
        study.sampler = build_sampler(s, space, done)
    metric = _chosen_metric(config)
    stored = study.user_attrs.get("objective")
    if metric and stored and metric != stored:
        raise ConfigError(
            f"study {study.study_name!r} was decided by {stored}, not {metric}: keep "
            f"sweep.compare_metric={stored}, or start another study with hydra.sweeper.study_name"
        )
    parent = parent_run_id(str(sweep_dir))
    if parent:
        study.set_user_attr(PARENT_ATTR, parent)
    fail_stale(study)
    finished = len(counted(study))
    n_trials = s.n_trials
    if (s.sampler or {}).get("name") == "grid":  # each point once: the grid is the budget
        n_trials = min(n_trials, grid_size(space))
    to_go = max(0, n_trials - finished)
    print(
        f"study {study.study_name!r} in {storage_of(config, s)}: {finished} trials already, "
        f"{to_go} to run ({s.n_jobs} at a time); searching {', '.join(space)}",
        file=sys.stderr,
    )
    given = fixed_values(fixed, config)
    used = {int(p.name) for p in sweep_dir.iterdir() if p.is_dir() and p.name.isdigit()}
    for line in unread_lines(space, given):
        print(line, file=sys.stderr)
    varies = [k for k in space if k in CHUNKING_KEYS]
    return _StudyRun(
        study, s, space, fixed, sweep_dir, metric or stored, stored, varies, given, to_go, used
    )


def _run_batch(sweeper, run: _StudyRun, batch: int) -> None:
    """Ask ``batch`` trials, launch each configuration not run before once, and tell every trial
    its value."""
    study, fixed = run.study, run.fixed
    trials = [ask(study, run.space, run.given) for _ in range(batch)]
    overrides = [trial_overrides(t, fixed) for t in trials]
    launch, plan, firsts = plan_launch(study, trials, overrides, fixed)
    job_idx = first_job(firsts, run.used)
    run.used.update(range(job_idx, job_idx + len(launch)))
    waiting = [t for t, i in zip(trials, plan, strict=True) if i is not None]
    for trial, i in zip(trials, plan, strict=True):
        if i is not None:  # where the job writes: what an interrupted study's next start reads
            where = {"dir": str(run.sweep_dir / str(job_idx + i)), "ovr": masked(launch[i])}
            trial.set_user_attr("launched", where)
    rets: list = []
    if launch:
        try:
            rets = list(sweeper.launcher.launch(launch, initial_job_idx=job_idx))
        except BaseException:  # Ctrl-C, a launcher that died: settle this batch, then stop
            settle_interrupted(study, [t.number for t in waiting], run.metric, run.varies)
            raise
    _tell_batch(run, trials, plan, launch, rets, job_idx)
    if run.metric and not run.stored:
        study.set_user_attr("objective", run.metric)
        run.stored = run.metric
    if rets:
        run.returns.append(rets)


def _tell_batch(run: _StudyRun, trials, plan, launch, rets, job_idx: int) -> None:
    """Read each launched job's report once and tell its trials their value (or error)."""
    study, fixed = run.study, run.fixed
    runs: dict[int, int] = {}  # place in the launch -> the trial that ran it
    read: dict[int, tuple] = {}  # place in the launch -> its job folder and outcome
    for trial, i in zip(trials, plan, strict=True):
        if i is None:
            continue
        ovr = launch[i]
        if i not in read:  # a job's report is read once, for all its trials
            job_dir = job_folder(rets[i], run.sweep_dir, job_idx + i)
            read[i] = (job_dir, *trial_outcome(job_dir, run.metric, run.varies))
        job_dir, value, run.metric, report, error = read[i]
        record_trial(study, trial.number, [o for o in ovr if o not in fixed], job_dir, report)
        if i in runs:  # a second trial of this batch drew the same configuration
            trial.set_user_attr("same_as", runs[i])
            print(
                f"trial {trial.number} drew the configuration of trial {runs[i]} in its "
                "batch: run once, its value told to both",
                file=sys.stderr,
            )
        else:
            runs[i] = trial.number
            if report and report.get("mlflow_run_id"):  # its name in MLflow's runs table
                shown = " ".join(o for o in ovr if o not in fixed and o != "split=tune")
                run.names[report["mlflow_run_id"]] = f"trial {trial.number}: {shown}"[:250]
        if report:
            same_golden_set(study, report, trial)
        if value is None:
            trial.set_user_attr("error", str(error)[:500])
        tell(study, trial, value)


def _create_study(config, s: StudySettings, space, fixed):
    import optuna

    from rageval.scoring.spec import MetricSpec

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    chosen = _chosen_metric(config)
    higher = MetricSpec.parse(chosen).higher_is_better if chosen else True
    return optuna.create_study(
        study_name=study_name(config, space, fixed, s),
        storage=storage_of(config, s),
        sampler=build_sampler(s, space),
        direction="maximize" if higher else "minimize",
        load_if_exists=True,
    )


def _chosen_metric(config) -> str | None:
    from rageval.app.sweep import compare_settings
    from rageval.scoring.spec import MetricSpec

    chosen = compare_settings(config)[0]
    return str(MetricSpec.parse(chosen)) if chosen else None
