"""A tuning study: Optuna searches the config on the tune split, the holdout proves the result.

``python -m rageval -m hydra/sweeper=optuna`` (or ``optuna_bm25``) runs :func:`run_study` from
the sweeper plugin (hydra_plugins/rageval_optuna). It

1. reads the search space from ``hydra.sweeper.params`` and sweep overrides on the command line
   (Hydra's syntax: ``choice``, ``range`` (stop excluded, as everywhere in Hydra), ``interval``,
   ``tag(log, interval(...))``); plain overrides are fixed for every trial;
2. opens (or resumes) the Optuna study in SQLite beside the MLflow store (``optuna.db``), named
   after the dataset and the search space unless ``hydra.sweeper.study_name`` is set;
3. asks ``n_jobs`` trials at a time and launches them together through the configured launcher
   (basic: one after another; joblib and Ray: in parallel), each with ``split=tune``: every
   trial is a job of the sweep, a nested MLflow run under the sweep's parent run; its objective
   is the sweep's deciding metric (``sweep.compare_metric``, else the leaderboard's default rule)
   on the tune queries. A trial that fails or reports no value is told to Optuna as failed and
   the study goes on;
4. scores the best trial's configuration and the baseline's on every golden query (two more
   nested runs, split=all) and writes study.json and study.md beside the leaderboard:
   :class:`rageval.report.study.StudySummary` (tune and holdout scores, the optimism with its
   CI, the paired test of best vs baseline on the holdout).

``finish_sweep`` then prints the study's block after the leaderboard and logs it on the parent
run; ``rageval promote --best METRIC --sweep PARENT`` promotes a study's best only when the
holdout confirms it (:func:`rageval.app.promote.confirm_for_promote`). Settings, search
space, storage and the outcome files are in :mod:`rageval.app.tuning`.
"""

from __future__ import annotations

import contextlib
import json
import math
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rageval.app.tuning import (
    FINAL_DIRS,
    PARENT_ATTR,
    SAMPLERS,
    SPLIT_KEYS,
    STUDY_FILE,
    StudySettings,
    search_space,
    storage_of,
    study_lock,
    study_name,
)
from rageval.config_schema import override_key
from rageval.errors import ConfigError


def _sampler(s: StudySettings, space: Mapping[str, Any], done: int = 0):
    """The sampler of ``s``; ``done`` trials already in the study shift its seed, so a resumed
    study does not draw its first trials again. Not the grid sampler's: its seed shuffles the
    grid, and a trial's stored grid id means a point only under the same shuffle (a shifted
    seed made a resumed grid study run a visited point and skip a missing one)."""
    import optuna

    args = dict(s.sampler or {})
    name = args.pop("name", "tpe")
    if done and isinstance(args.get("seed"), int) and name != "grid":
        args["seed"] += done
    cls = getattr(optuna.samplers, SAMPLERS[name])
    if name == "grid":
        from optuna.distributions import CategoricalDistribution

        grid = {}
        for key, dist in space.items():
            if isinstance(dist, CategoricalDistribution):
                grid[key] = list(dist.choices)
            elif getattr(dist, "step", None):
                n = int(round((dist.high - dist.low) / dist.step))
                grid[key] = [dist.low + i * dist.step for i in range(n + 1)]
            else:
                raise ConfigError(
                    f"search space {key}: the grid sampler needs choice() or range(), not an "
                    "interval"
                )
        return cls(grid, **args)
    try:
        return cls(**args)
    except TypeError as err:
        raise ConfigError(f"hydra.sweeper.sampler ({name}): {err}") from None


def _create_study(config, s: StudySettings, space, fixed):
    import optuna

    from rageval.scoring.spec import MetricSpec

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    chosen = _chosen_metric(config)
    higher = MetricSpec.parse(chosen).higher_is_better if chosen else True
    return optuna.create_study(
        study_name=study_name(config, space, fixed, s),
        storage=storage_of(config, s),
        sampler=_sampler(s, space),
        direction="maximize" if higher else "minimize",
        load_if_exists=True,
    )


def _chosen_metric(config) -> str | None:
    from rageval.app.sweep import compare_settings
    from rageval.scoring.spec import MetricSpec

    chosen = compare_settings(config)[0]
    return str(MetricSpec.parse(chosen)) if chosen else None


# ------------------------------------------------------------------ what a trial reads

# the search modes whose reading of the search keys rageval knows (the local and Qdrant
# backends); another mode (Azure's semantic, a plug-in's) is taken to read every key
KNOWN_MODES = ("vector", "bm25", "hybrid")


def reads(key: str, mode: str | None, fusion: str | None) -> bool:
    """Whether a trial whose search ``mode`` fuses with ``fusion`` reads ``key``: fusion and
    candidate depth only in hybrid search (rrf_k with rrf fusion, weights with weighted), BM25's
    knobs only in bm25 and hybrid search; every other key, and every key of a mode outside
    :data:`KNOWN_MODES`, is read."""
    if mode not in KNOWN_MODES:
        return True
    if key in ("search.fusion", "search.candidate_depth"):
        return mode == "hybrid"
    if key == "search.rrf_k":
        return mode == "hybrid" and fusion in (None, "rrf")
    if key == "search.weights":
        return mode == "hybrid" and fusion in (None, "weighted")
    if key.startswith("search.bm25."):
        return mode in ("bm25", "hybrid")
    return True


def _first(key: str) -> int:
    """Sampling order: the mode first, then the fusion, then the keys they decide on."""
    return {"search": 0, "search.mode": 0, "search.fusion": 1}.get(key, 2)


def fixed_values(fixed: Sequence[str], config=None) -> dict[str, str | None]:
    """What a trial's mode and fusion are when the space does not draw them: the fixed
    overrides (``search=bm25``, ``search.mode=...``, ``search.fusion=...``), else the config's
    own ``search.mode`` and ``search.fusion``."""
    from omegaconf import OmegaConf

    lines = {}
    for line in fixed:
        key, value = override_key(line), line.partition("=")[2]
        lines[key.strip()] = value.strip()

    def default(key: str) -> str | None:
        found = OmegaConf.select(config, key, default=None) if config is not None else None
        return None if found is None else str(found)

    mode = lines.get("search.mode") or lines.get("search") or default("search.mode")
    return {
        "search.mode": mode,
        "search.fusion": lines.get("search.fusion") or default("search.fusion"),
    }


def ask(study, space: Mapping[str, Any], fixed: Mapping[str, str | None]):
    """A new trial that samples only the keys its own search mode reads (:func:`reads`; ``fixed``:
    :func:`fixed_values`): a vector trial draws no BM25 k1/b or rrf_k, so two trials that differ
    only in keys their mode ignores are one configuration, and the second is not run again."""
    trial = study.ask()
    drawn: dict[str, Any] = {}
    for key in sorted(space, key=_first):  # stable: the space's order otherwise
        mode = drawn.get("search.mode", drawn.get("search", fixed.get("search.mode")))
        fusion = drawn.get("search.fusion", fixed.get("search.fusion"))
        if reads(key, None if mode is None else str(mode), fusion):
            drawn[key] = _suggest(trial, key, space[key])
    return trial


def unread(space: Mapping[str, Any], fixed: Mapping[str, str | None]) -> list[str]:
    """The searched keys no trial can read, whatever it draws (``search.rrf_k`` with
    ``search=bm25`` fixed): no trial draws them, so searching them is a mistake to name."""

    def options(keys: Sequence[str], otherwise: str | None) -> list:
        for key in keys:  # drawn: any of its choices (a non-categorical draw: anything)
            if key in space:
                return list(getattr(space[key], "choices", None) or [None])
        return [otherwise]

    modes = options(("search.mode", "search"), fixed.get("search.mode"))
    fusions = options(("search.fusion",), fixed.get("search.fusion"))
    return [
        k
        for k in space
        if not any(reads(k, None if m is None else str(m), f) for m in modes for f in fusions)
    ]


def _unread_lines(space: Mapping[str, Any], fixed: Mapping[str, str | None]) -> list[str]:
    """One line per searched key no trial reads (:func:`unread`), naming the modes it can draw."""
    drawn = next((k for k in ("search.mode", "search") if k in space), None)
    modes = (
        "search modes " + ", ".join(map(str, space[drawn].choices))
        if drawn
        else f"search mode {fixed['search.mode']}"
    )
    fusion = "drawn" if "search.fusion" in space else fixed["search.fusion"]
    return [
        f"search space: {key} is read by no trial ({modes}; fusion {fusion}); it is not searched"
        for key in unread(space, fixed)
    ]


def _suggest(trial, key: str, dist):
    from optuna.distributions import CategoricalDistribution, IntDistribution

    if isinstance(dist, CategoricalDistribution):
        return trial.suggest_categorical(key, list(dist.choices))
    if isinstance(dist, IntDistribution):
        return trial.suggest_int(key, dist.low, dist.high, step=dist.step, log=dist.log)
    return trial.suggest_float(key, dist.low, dist.high, step=dist.step, log=dist.log)


# ---------------------------------------------------------------------------- the study


def _trial_overrides(trial, fixed: Sequence[str]) -> list[str]:
    """The job's overrides: the fixed ones, the trial's values (a float from an interval to 4
    significant digits, which is all a retriever's knob can tell apart), and split=tune."""
    shown = {k: f"{v:.4g}" if isinstance(v, float) else v for k, v in trial.params.items()}
    return [*fixed, *(f"{k}={v}" for k, v in shown.items()), "split=tune"]


def _job_dir(ret, sweep_dir: Path, idx: int) -> Path:
    try:
        return Path(str(ret.hydra_cfg.hydra.runtime.output_dir))
    except Exception:
        return sweep_dir / str(idx)


def _outcome(job_dir: Path, metric: str | None, varies: Sequence[str]):
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
        _write(Path(str(sweeper.config.hydra.sweep.dir)), {"error": str(err)}, None)
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
    _finish(sweeper, run.study, run.s, run.space, run.fixed, run.metric, run.names)
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
        study.sampler = _sampler(s, space, done)
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
    _fail_stale(study)
    finished = len(_counted(study))
    n_trials = s.n_trials
    if (s.sampler or {}).get("name") == "grid":  # each point once: the grid is the budget
        n_trials = min(n_trials, _grid_size(space))
    to_go = max(0, n_trials - finished)
    print(
        f"study {study.study_name!r} in {storage_of(config, s)}: {finished} trials already, "
        f"{to_go} to run ({s.n_jobs} at a time); searching {', '.join(space)}",
        file=sys.stderr,
    )
    given = fixed_values(fixed, config)
    used = {int(p.name) for p in sweep_dir.iterdir() if p.is_dir() and p.name.isdigit()}
    for line in _unread_lines(space, given):
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
    overrides = [_trial_overrides(t, fixed) for t in trials]
    launch, plan, firsts = _plan_launch(study, trials, overrides, fixed)
    job_idx = _first_job(firsts, run.used)
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
            _settle_interrupted(study, [t.number for t in waiting], run.metric, run.varies)
            raise
    _tell_batch(run, trials, plan, launch, rets, job_idx)
    if run.metric and not run.stored:
        study.set_user_attr("objective", run.metric)
        run.stored = run.metric
    if rets:
        run.returns.append(rets)


def _plan_launch(study, trials, overrides, fixed) -> tuple[list[list[str]], list, list[int]]:
    """(the configurations to launch, per trial its place in the launch or None when an earlier
    trial ran its configuration (told already), the trial that runs each place): a
    configuration an earlier trial ran (or one of this batch runs) is not run again."""
    earlier = _ran(study)
    launch: list[list[str]] = []
    slot: dict[tuple[str, ...], int] = {}  # configuration -> its place in this launch
    plan: list[int | None] = []  # per trial: its place in the launch, None: told already
    firsts: list[int] = []  # the trial that runs each place
    for trial, ovr in zip(trials, overrides, strict=True):
        key = tuple(o for o in ovr if o not in fixed)
        if key in earlier:
            _repeat(study, trial, earlier[key])
            plan.append(None)
            continue
        if key not in slot:
            slot[key] = len(launch)
            launch.append(ovr)
            firsts.append(trial.number)
        plan.append(slot[key])
    return launch, plan, firsts


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
            job_dir = _job_dir(rets[i], run.sweep_dir, job_idx + i)
            read[i] = (job_dir, *_outcome(job_dir, run.metric, run.varies))
        job_dir, value, run.metric, report, error = read[i]
        _record(study, trial.number, [o for o in ovr if o not in fixed], job_dir, report)
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
            _same_golden_set(study, report, trial)
        if value is None:
            trial.set_user_attr("error", str(error)[:500])
        _tell(study, trial, value)


def _first_job(trials: Sequence[int], used: set[int]) -> int:
    """The job number of a launch's first job: its trial's number when the launch's trials are
    numbered one after another and those folders are free (job N is trial N in the leaderboard,
    as in the study's lines), else the first number after every folder used."""
    consecutive = bool(trials) and trials == list(range(trials[0], trials[0] + len(trials)))
    if consecutive and not used.intersection(trials):
        return trials[0]
    return max(used, default=-1) + 1


def _ran(study) -> dict[tuple[str, ...], Any]:
    """The finished trials by configuration (their overrides beyond the fixed ones): the trial
    that ran it, not one that took its value."""
    from optuna.trial import TrialState

    done = study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
    out: dict[tuple[str, ...], Any] = {}
    for t in sorted(done, key=lambda t: ("same_as" in t.user_attrs, t.number)):
        if t.user_attrs.get("overrides"):
            out.setdefault(tuple(t.user_attrs["overrides"]), t)
    return out


def _repeat(study, trial, earlier) -> None:
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
    _tell(study, trial, earlier.value)


def _fail_stale(study) -> list[int]:
    """Settle the trials a stopped study left running (killed mid-trial): see
    :func:`_settle_interrupted`. Returns their numbers. Trials waiting to run (enqueued again
    after an interruption) stay: the next ``ask`` runs them."""
    from optuna.trial import TrialState

    stale = [t.number for t in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,))]
    for number in stale:
        study.set_user_attr(f"stale_{number}", "settled on resume")
    _settle_interrupted(study, stale, study.user_attrs.get("objective"), ())
    return stale


def _settle_interrupted(study, numbers: Sequence[int], metric: str | None, varies) -> None:
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
                value, _, _, _ = _outcome(report_file.parent, metric, varies)
                _record(study, number, launched.get("ovr") or [], report_file.parent, report)
        if value is None:
            _live(study, t).set_user_attr("interrupted", True)
            again.append(t.number)
        _tell(study, number, value)
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


def _counted(study) -> list:
    """The trials that count against ``n_trials``: finished or failed, not interrupted."""
    from optuna.trial import TrialState

    done = study.get_trials(deepcopy=False, states=(TrialState.COMPLETE, TrialState.FAIL))
    return [t for t in done if not t.user_attrs.get("interrupted")]


def masked(lines: Sequence[str]) -> list[str]:
    """Override lines as the study's storage keeps them: secret values masked, as every file a
    run or sweep writes has them (rageval.redact.redact_override, also in run_job)."""
    from rageval.redact import redact_override

    return [redact_override(str(o)) for o in lines]


def _record(study, number: int, overrides, job_dir: Path, report) -> None:
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


def _same_golden_set(study, report: Mapping[str, Any], trial) -> None:
    """A study's trials compare only on one golden set: a resumed study whose golden set changed
    (queries added, labels edited) stops here, before its scores mix with the old ones."""
    digest = (report.get("digests") or {}).get("golden")
    first = study.user_attrs.get("golden_digest")
    if not first:
        study.set_user_attr("golden_digest", digest)
    elif digest != first:
        _tell(study, trial, None)
        raise ConfigError(
            f"study {study.study_name!r} was run on another golden set (digest {first[:12]}, now "
            f"{str(digest)[:12]}): its trials' scores do not compare; start a new study with "
            "hydra.sweeper.study_name=NAME (the split keeps every old query on its side)"
        )


def _tell(study, trial, value: float | None) -> None:
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


def _grid_size(space: Mapping[str, Any]) -> int:
    n = 1
    for dist in space.values():
        choices = getattr(dist, "choices", None)
        n *= len(choices) if choices else int(round((dist.high - dist.low) / dist.step)) + 1
    return n


def _finish(sweeper, study, s: StudySettings, space, fixed, metric: str | None, names=None) -> None:
    from optuna.trial import TrialState

    from rageval.report.study import summarise_study

    config = sweeper.config
    sweep_dir = Path(str(config.hydra.sweep.dir))
    trials = study.get_trials(deepcopy=False)
    interrupted = sum(bool(t.user_attrs.get("interrupted")) for t in trials)
    counts = {
        "complete": sum(t.state == TrialState.COMPLETE for t in trials),
        "failed": sum(t.state == TrialState.FAIL for t in trials) - interrupted,
    }
    if interrupted:  # stopped mid-trial and run again: not a failure of the configuration
        counts["interrupted"] = interrupted
    repeated = sum("same_as" in t.user_attrs for t in trials)
    if repeated:  # drew an earlier trial's configuration: told its value, not run again
        counts["repeated"] = repeated
    record: dict[str, Any] = {
        "study": study.study_name,
        "storage": storage_of(config, s),
        "objective": metric,
        "trials": counts,
        "trial_run_names": dict(names or {}),
    }
    if not counts["complete"]:
        record["error"] = (
            f"no trial of study {study.study_name!r} finished ({counts['failed']} failed: see "
            "their error.json); nothing to evaluate on the holdout"
        )
        _write(sweep_dir, record, None)
        return
    best = study.best_trial
    best_overrides = list(best.user_attrs.get("overrides") or [])
    last = study.user_attrs.get("final") or {}
    best_lines = [*fixed, *best_overrides]
    reused = _reuse(last, "best", best_lines)
    best_report, best_run = reused or _final_run(
        sweeper, best_lines, "best", f"study best (trial {best.number})"
    )
    base_lines, replay, source = _baseline_config(s, fixed, best_report)
    base_key = [*base_lines, json.dumps(replay, sort_keys=True, default=str)]
    reused = _reuse(last, "baseline", base_key)
    base_report, base_run = reused or _final_run(
        sweeper, base_lines, "baseline", "study baseline", replay=replay
    )
    sweep_dir_now = Path(str(config.hydra.sweep.dir))
    study.set_user_attr(
        "final",
        {
            "best": _final_record(best_lines, sweep_dir_now, "best", best_run, last),
            "baseline": _final_record(base_key, sweep_dir_now, "baseline", base_run, last),
        },
    )
    gate_alpha = float(config.gate.alpha)
    summary = summarise_study(
        metric,
        best_report,
        base_report,
        holdout_fraction=float(config.holdout_fraction),
        seed=int(config.split_seed),
        alpha=gate_alpha,
        best_trial=best.number,
        best_overrides=[o for o in best_overrides if o != "split=tune"],
        resamples=int(config.gate.resamples),
        baseline_source=source,
        trials=counts,
    )
    record.update(
        best_trial=best.number,
        best_trial_value=best.value,
        best_trial_run_id=best.user_attrs.get("mlflow_run_id"),
        best_run_id=best_run,
        baseline_run_id=base_run,
        summary=summary.to_dict(),
    )
    _write(sweep_dir, record, summary)


def _reuse(last: Mapping[str, Any], role: str, key: Sequence[str]):
    """The (report, run id) of an earlier part of the study that scored the same configuration
    on every query (a resumed study whose best did not change), or None."""
    rec = last.get(role) or {}
    report_file = Path(str(rec.get("dir", ""))) / "report.json"
    if rec.get("key") != masked(key) or not rec.get("dir") or not report_file.is_file():
        return None
    print(f"the {role} configuration was scored on every query already: {report_file}")
    return json.loads(report_file.read_text()), rec.get("run_id")


def _final_record(key, sweep_dir: Path, role: str, run_id, last: Mapping[str, Any]) -> dict:
    key = masked(key)  # the study's storage holds no secret (compared masked on resume)
    rec = last.get(role) or {}
    if rec.get("key") == list(key) and rec.get("run_id") == run_id and rec.get("dir"):
        return dict(rec)  # reused: it stays where it was written
    return {"key": list(key), "dir": str(sweep_dir / FINAL_DIRS[role]), "run_id": run_id}


def _write(sweep_dir: Path, record: dict[str, Any], summary) -> None:
    from rageval.formats.atomic import atomic_write_text

    if summary is not None:
        from rageval.app.sweep import parent_run_id

        parent = parent_run_id(str(sweep_dir)) or "PARENT_RUN_ID"
        where = (
            f"\n\nStudy `{record['study']}` in `{record['storage']}`: run the same command to "
            "resume it (raise `hydra.sweeper.n_trials` for more trials). `rageval promote --best "
            f"{record['objective']} --sweep {parent}` promotes the best configuration only "
            "when the holdout confirms its gain.\n"
        )
        atomic_write_text(sweep_dir / "study.md", summary.markdown() + where)
    atomic_write_text(sweep_dir / STUDY_FILE, json.dumps(record, indent=2, default=str))


def _final_run(
    sweeper, overrides: list[str], role: str, name: str, replay: Mapping[str, Any] | None = None
):
    """Score ``overrides`` (with a baseline's resolved values laid over them, as ``rageval
    check`` does, when ``replay``) on every golden query (split=all) in this process, nested
    under the sweep's parent run; returns (report.json as a dict, MLflow run id)."""
    from omegaconf import OmegaConf, open_dict

    from rageval.app.config import GROUPS
    from rageval.app.main import run_job
    from rageval.app.replay import replay_values

    lines = [o for o in overrides if override_key(o) not in ("split",)]
    lines.append("split=all")
    loader = sweeper.hydra_context.config_loader
    cfg = loader.load_sweep_config(sweeper.config, lines)
    choices = {g: str(cfg.hydra.runtime.choices.get(g) or "none") for g in GROUPS}
    sweep_dir = str(sweeper.config.hydra.sweep.dir)
    with open_dict(cfg):
        del cfg["hydra"]
        if replay:
            replay_values(cfg, replay, skip=set(SPLIT_KEYS))
        cfg.mlflow.run_name = name
    out = Path(sweep_dir) / FINAL_DIRS[role]
    print(f"scoring the {name} configuration on every golden query: {out}", file=sys.stderr)
    OmegaConf.set_readonly(cfg, False)
    with _job_log_level():
        report = run_job(
            cfg, out, lines, choices, sweep_dir, quiet=True, tags={"rageval.study_role": role}
        )
    data = json.loads((out / "report.json").read_text())
    return data, report.mlflow_run_id


@contextlib.contextmanager
def _job_log_level():
    """The final runs run in the launching process, whose root logger Hydra set to INFO: hold it
    at WARNING as conf/config.yaml's job_logging does for every trial, so libraries' INFO lines
    (faiss's "Loading faiss with AVX512 support") stay out of the console."""
    import logging

    root = logging.getLogger()
    saved = root.level
    root.setLevel(max(saved, logging.WARNING))
    try:
        yield
    finally:
        root.setLevel(saved)


def _baseline_config(
    s: StudySettings, fixed: Sequence[str], best_report: Mapping[str, Any]
) -> tuple[list[str], dict[str, Any] | None, str]:
    """What rebuilds the baseline's configuration: overrides, the resolved values to lay over
    them, and where it came from. ``hydra.sweeper.baseline`` when that file was measured on the
    study's golden set (its group choices and values, as ``rageval check`` re-runs it), else the
    study's starting point (conf/ with the fixed overrides)."""
    from rageval.config_schema import measures
    from rageval.gate.baseline import config_summary, load_report

    path = Path(str(s.baseline)) if s.baseline else None
    why = "no baseline file configured (hydra.sweeper.baseline)"
    if path is not None and path.is_file():
        baseline = load_report(path)
        digest = (baseline.get("digests") or {}).get("golden")
        if digest and digest == (best_report.get("digests") or {}).get("golden"):
            lines = [f"{g}={c}" for g, c in (baseline.get("choices") or {}).items() if c]
            lines = [ln for ln in lines if not ln.endswith("=none")]  # rerank: null
            # where the run happens (cache, MLflow) stays this study's
            keep = [o for o in fixed if not measures(o)]
            source = f"{path} ({config_summary(baseline)})"
            return [*lines, *keep], dict(baseline.get("config") or {}), source
        why = f"{path} was measured on another golden set"
    elif path is not None:
        why = f"{path} does not exist"
    shown = " ".join(masked(fixed)) or "no overrides"  # study.md, study.json, MLflow
    return list(fixed), None, f"the study's starting configuration (conf/ with {shown}; {why})"
