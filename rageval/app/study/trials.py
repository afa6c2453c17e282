"""A study's trials in its storage: their overrides and job folders, the value each is told (a
failed or valueless job: failed), a configuration an earlier trial ran told that trial's value
instead of running again, and the trials a stopped study left running settled on resume."""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from rageval.errors import ConfigError


def trial_overrides(trial, fixed: Sequence[str]) -> list[str]:
    """The job's overrides: the fixed ones, the trial's values (a float from an interval to 4
    significant digits, which is all a retriever's knob can tell apart), and split=tune."""
    shown = {k: f"{v:.4g}" if isinstance(v, float) else v for k, v in trial.params.items()}
    return [*fixed, *(f"{k}={v}" for k, v in shown.items()), "split=tune"]


def job_folder(ret, sweep_dir: Path, idx: int) -> Path:
    """Where job ``idx`` of the launch wrote (Hydra's output dir, else ``sweep_dir/idx``)."""
    try:
        return Path(str(ret.hydra_cfg.hydra.runtime.output_dir))
    except Exception:
        return sweep_dir / str(idx)


def trial_outcome(job_dir: Path, metric: str | None, varies: Sequence[str]):
    """(value, objective metric, report, error) of one trial's job folder."""
    from rageval.report.leaderboard import default_metric, measured

    report_file, error_file = job_dir / "report.json", job_dir / "error.json"
    if not report_file.is_file():
        if error_file.is_file():
            return None, metric, None, json.loads(error_file.read_text()).get("error", "failed")
        return None, metric, None, "the job left no report"
    report = json.loads(report_file.read_text())
    metrics = report.get("metrics") or {}
    if metric is None:
        names = {m for m, v in metrics.items() if measured(v)}
        metric = default_metric(names, int(report.get("k", 5)), varies)[0]
    value = metrics.get(metric)
    if not isinstance(value, int | float) or not math.isfinite(value):
        return None, metric, report, f"the run reports no finite {metric}"
    return float(value), metric, report, None


def masked(lines: Sequence[str]) -> list[str]:
    """Override lines as the study's storage keeps them: secret values masked, as every file a
    run or sweep writes has them (rageval.formats.redact.redact_override, also in run_job)."""
    from rageval.formats.redact import redact_override

    return [redact_override(str(o)) for o in lines]


def record_trial(study, number: int, overrides, job_dir: Path, report) -> None:
    """A running trial's overrides, job folder and MLflow run, kept with the study."""
    trial = _live(study, next(t for t in study.get_trials(deepcopy=False) if t.number == number))
    trial.set_user_attr("overrides", masked(overrides))
    trial.set_user_attr("job_dir", str(job_dir))
    if report and report.get("mlflow_run_id"):
        trial.set_user_attr("mlflow_run_id", report["mlflow_run_id"])


def _live(study, frozen):
    """The running trial behind a stored one, to write its attributes (Optuna's own callbacks
    reach it the same way)."""
    from optuna.trial import Trial

    return Trial(study, frozen._trial_id)


def tell(study, trial, value: float | None) -> None:
    """Record a trial's value (None: failed). The grid sampler calls ``study.stop()`` once the
    grid is covered, which Optuna refuses outside ``optimize``; the trial is stored by then."""
    from optuna.trial import TrialState

    try:
        if value is None:
            study.tell(trial, state=TrialState.FAIL)
        else:
            study.tell(trial, value)
    except RuntimeError as err:
        if "Study.stop" not in str(err):
            raise


def same_golden_set(study, report: Mapping[str, Any], trial) -> None:
    """A study's trials compare only on one golden set: a resumed study whose golden set changed
    (queries added, labels edited) stops here, before its scores mix with the old ones."""
    digest = (report.get("digests") or {}).get("golden")
    first = study.user_attrs.get("golden_digest")
    if not first:
        study.set_user_attr("golden_digest", digest)
    elif digest != first:
        tell(study, trial, None)
        raise ConfigError(
            f"study {study.study_name!r} was run on another golden set (digest {first[:12]}, now "
            f"{str(digest)[:12]}): its trials' scores do not compare; start a new study with "
            "hydra.sweeper.study_name=NAME (the split keeps every old query on its side)"
        )


def counted(study) -> list:
    """The trials that count against ``n_trials``: finished or failed, not interrupted."""
    from optuna.trial import TrialState

    done = study.get_trials(deepcopy=False, states=(TrialState.COMPLETE, TrialState.FAIL))
    return [t for t in done if not t.user_attrs.get("interrupted")]


def first_job(trials: Sequence[int], used: set[int]) -> int:
    """The job number of a launch's first job: its trial's number when the launch's trials are
    numbered one after another and those folders are free (job N is trial N in the leaderboard,
    as in the study's lines), else the first number after every folder used."""
    consecutive = bool(trials) and trials == list(range(trials[0], trials[0] + len(trials)))
    if consecutive and not used.intersection(trials):
        return trials[0]
    return max(used, default=-1) + 1


def plan_launch(study, trials, overrides, fixed) -> tuple[list[list[str]], list, list[int]]:
    """(the configurations to launch, per trial its place in the launch or None when an earlier
    trial ran its configuration (told already), the trial that runs each place): a
    configuration an earlier trial ran (or one of this batch runs) is not run again."""
    earlier = ran_configurations(study)
    launch: list[list[str]] = []
    slot: dict[tuple[str, ...], int] = {}  # configuration -> its place in this launch
    plan: list[int | None] = []  # per trial: its place in the launch, None: told already
    firsts: list[int] = []  # the trial that runs each place
    for trial, ovr in zip(trials, overrides, strict=True):
        key = tuple(o for o in ovr if o not in fixed)
        if key in earlier:
            repeat_trial(study, trial, earlier[key])
            plan.append(None)
            continue
        if key not in slot:
            slot[key] = len(launch)
            launch.append(ovr)
            firsts.append(trial.number)
        plan.append(slot[key])
    return launch, plan, firsts


def ran_configurations(study) -> dict[tuple[str, ...], Any]:
    """The finished trials by configuration (their overrides beyond the fixed ones): the trial
    that ran it, not one that took its value."""
    from optuna.trial import TrialState

    done = study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
    out: dict[tuple[str, ...], Any] = {}
    for t in sorted(done, key=lambda t: ("same_as" in t.user_attrs, t.number)):
        if t.user_attrs.get("overrides"):
            out.setdefault(tuple(t.user_attrs["overrides"]), t)
    return out


def repeat_trial(study, trial, earlier) -> None:
    """Tell ``trial`` the value of the ``earlier`` trial that ran the same configuration: the
    same retrieval, scored on the same queries, gives the same number."""
    for key in ("overrides", "job_dir", "mlflow_run_id"):
        if key in earlier.user_attrs:
            trial.set_user_attr(key, earlier.user_attrs[key])
    trial.set_user_attr("same_as", earlier.number)
    shown = " ".join(o for o in earlier.user_attrs["overrides"] if o != "split=tune")
    print(
        f"trial {trial.number} drew the configuration of trial {earlier.number} ({shown}): "
        f"its value {earlier.value:.4f}, not run again",
        file=sys.stderr,
    )
    tell(study, trial, earlier.value)


def fail_stale(study) -> list[int]:
    """Settle the trials a stopped study left running (killed mid-trial): see
    :func:`settle_interrupted`. Returns their numbers. Trials waiting to run (enqueued again
    after an interruption) stay: the next ``ask`` runs them."""
    from optuna.trial import TrialState

    stale = [t.number for t in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,))]
    for number in stale:
        study.set_user_attr(f"stale_{number}", "settled on resume")
    settle_interrupted(study, stale, study.user_attrs.get("objective"), ())
    return stale


def settle_interrupted(study, numbers: Sequence[int], metric: str | None, varies) -> None:
    """Trials a stopped study did not tell (Ctrl-C, a killed process or launcher): one whose job
    finished (its report.json is on disk, for the same overrides) is told its value; any other
    is marked failed and ``interrupted``, does not count against ``n_trials``, and its
    configuration is enqueued to run first when the study resumes."""
    from optuna.trial import TrialState

    trials = {t.number: t for t in study.get_trials(deepcopy=False)}
    again = []
    for number in numbers:
        t = trials.get(number)
        if t is None or t.state != TrialState.RUNNING:
            continue
        launched = t.user_attrs.get("launched") or {}
        value = None
        report_file = Path(str(launched.get("dir", ""))) / "report.json"
        if launched and report_file.is_file():
            report = json.loads(report_file.read_text())
            if report.get("overrides") == launched.get("ovr"):
                value, _, _, _ = trial_outcome(report_file.parent, metric, varies)
                record_trial(study, number, launched.get("ovr") or [], report_file.parent, report)
        if value is None:
            _live(study, t).set_user_attr("interrupted", True)
            again.append(t.number)
        tell(study, number, value)
        if value is None:
            study.enqueue_trial(dict(t.params), user_attrs={"retry_of": t.number})
    if again:
        which = f"trial {again[0]}" if len(again) == 1 else f"trials {', '.join(map(str, again))}"
        it = "it runs" if len(again) == 1 else "they run"
        print(
            f"study {study.study_name!r}: {which} did not finish (interrupted); {it} again first "
            "when the study resumes (run the same command)",
            file=sys.stderr,
        )
