"""The Hydra app: compose conf/, build every component, evaluate, write report.json, log to MLflow.

- ``run_job(cfg, output_dir)``: one run from a composed config, a plain function tests call.
- ``guarded_job(cfg, job)``: the one place that handles a job's failures (secrets masked in logs
  and errors, the launch folder, error.json, exit codes).
- ``hydra_task(cfg)``: what ``@hydra.main`` wraps: the job's Hydra context, then ``guarded_job``.
- ``run_app(argv)``: the command line: checks overrides, runs Hydra, returns the exit code (a
  sweep's comes back from ``rageval.app.callbacks.SweepCallback``).
"""

from __future__ import annotations

import os
import shlex
import sys
import warnings
from dataclasses import dataclass, field
from pathlib import Path

from rageval.app.build import Components, build, resolve
from rageval.app.config import CONF_DIR, GROUPS, default_cache_dir, register_resolvers
from rageval.errors import ConfigError, RagevalError
from rageval.formats.redact import (
    ScrubbingStream,
    command_line_secrets,
    declared_secrets,
    redact,
    redact_override,
    redact_yaml_file,
    scrub,
    scrub_logging,
    secret_values,
)
from rageval.run import folder as rundir

__all__ = [
    "CONF_DIR",
    "Components",
    "JobContext",
    "build",
    "default_cache_dir",
    "guarded_job",
    "hydra_task",
    "register_resolvers",
    "run_app",
    "run_job",
]


def check_gate_slices(cfg, spec):
    """Refuse a mistyped ``gate.slices`` in a run too, before the index is built: a promoted run's
    config is what ``rageval check`` re-runs, so a slice no query is in would stop every check.
    Returns ``spec``, with its golden set loaded when the check read it (read once per run)."""
    from omegaconf import OmegaConf

    node = (cfg.get("gate") or {}).get("slices")
    if not node:
        return spec
    from dataclasses import replace

    from rageval.gate.slices import check_spec
    from rageval.inputs.golden import load_golden
    from rageval.types import GoldenSet

    golden = spec.golden if isinstance(spec.golden, GoldenSet) else load_golden(spec.golden)
    rows = [{"source": q.source, "tags": q.tags, "meta": q.meta} for q in golden.queries]
    metrics = [str(m) for m in cfg.gate.metrics]
    plain = OmegaConf.to_container(node, resolve=True) if OmegaConf.is_config(node) else node
    check_spec(plain, metrics, rows, int(cfg.get("min_slice_size", 10)), measured=False)
    return replace(spec, golden=golden)


def run_job(
    cfg,
    output_dir: str | Path,
    overrides: list[str] | None = None,
    choices: dict[str, str] | None = None,
    sweep_dir: str | None = None,
    quiet: bool = False,
    job: int | None = None,
    tags: dict[str, str] | None = None,
    slices_checked: bool = False,
):
    """Evaluate one composed config; writes report.json (+ TREC files) and logs to MLflow
    (``tags`` added to the run's). ``slices_checked``: ``gate.slices`` was checked already (by
    ``rageval check``, against the baseline's rows), so the run does not check it again."""
    out = Path(output_dir)
    report, config = _evaluate(cfg, out, slices_checked)
    _write_run(report, out, config, overrides, choices)
    # a sweep prints one line per finished job (the leaderboard follows); sweep.verbose=true
    # prints each job's tables as a single run does
    compact = bool(sweep_dir) and not bool((cfg.get("sweep") or {}).get("verbose", False))
    if not quiet and not compact:  # the results first: logging can take a while, or fail
        _print_results(report, out, sweep_dir)
    if cfg.mlflow.enabled:
        _log_to_mlflow(cfg, report, config, out, choices, sweep_dir, job, tags, quiet or compact)
    if not quiet and compact:  # after logging, so the line names the job's MLflow run
        print(job_line(out.name, report))
    elif not quiet:
        print(f"report: {out / 'report.json'}")
    return report


def _evaluate(cfg, out: Path, slices_checked: bool = False):
    """Build the run's components from ``cfg`` and evaluate them: (the report, the resolved
    config). The run folder is marked incomplete until report.json is written."""
    from rageval.app.config import absolute_paths
    from rageval.run.evaluation import LowJudgedWarning, evaluate

    rundir.begin(out)  # marked incomplete until report.json, written last, is there
    absolute_paths(cfg)  # a project's relative paths are the project root's
    config = resolve(cfg)  # once per job: the components and the report read the same values
    parts = build(cfg, resolved=config)
    try:
        spec = parts.spec if slices_checked else check_gate_slices(cfg, parts.spec)
    except BaseException:
        parts.close()
        raise
    try:
        with warnings.catch_warnings():
            # printed with the metrics it is about (report.table()), and kept in report.json
            warnings.simplefilter("ignore", LowJudgedWarning)
            report = evaluate(
                spec,
                parts.retriever,
                parts.encoder,
                parts.query_encoder,
                config=redact(config),
            )
    finally:
        parts.close()
    return report, config


def _write_run(report, out: Path, config, overrides, choices) -> None:
    """config.yaml and the run's files, report.json last; the folder is then complete."""
    import yaml

    from rageval.formats.atomic import atomic_write_text
    from rageval.report.run_files import save_run_folder

    # every file and MLflow field a run writes holds the overrides masked (sweeps, studies' final
    # runs, checks): the one masking path of override lines
    declared = declared_secrets(config)  # the project's `secrets` list
    report.overrides = [redact_override(o, declared) for o in overrides or []]
    report.choices = dict(choices or {})
    atomic_write_text(out / "config.yaml", yaml.safe_dump(redact(config), sort_keys=False))
    save_run_folder(report, out)  # report.json last, as rageval.evaluate(...).save(dir) does
    rundir.finish(out)


def _print_results(report, out: Path, sweep_dir: str | None) -> None:
    """The tables a single run prints: metrics, slices, costs and stages, the page's path."""
    from rageval.report.eval_report import slice_console

    if sweep_dir:  # parallel jobs (joblib) print in any order: say whose table this is
        print(f"job {out.name} ({' '.join(_shown_overrides(report))}):")
    split = report.split or {}
    if split.get("name", "all") != "all":  # the numbers are one side's: say so first
        print(
            f"split={split['name']}: {split['queries']} of {split['of']} golden queries "
            f"(holdout_fraction={split['holdout_fraction']}, split_seed={split['seed']})"
        )
    print(report.table())
    slices = slice_console(report)
    if slices:
        print()
        print(slices)
    _print_costs_and_stages(report)
    print(f"per-query page: {out / 'report.html'}")


def _log_to_mlflow(cfg, report, config, out: Path, choices, sweep_dir, job, tags, quiet) -> None:
    """Log the run (under the sweep's parent run, if any) and record its id in report.json; a
    failure warns with the command that logs the folder later: the report is safe on disk."""
    from rageval.app.sweep import parent_run_id
    from rageval.tracking.client import tracking_uri
    from rageval.tracking.log import log_run, ui_command

    uri = tracking_uri(cfg.mlflow.tracking_uri)
    try:
        report.mlflow_run_id = log_run(
            report,
            config=config,
            choices=choices or {},
            output_dir=out,
            uri=uri,
            experiment=cfg.mlflow.experiment,
            run_name=cfg.mlflow.run_name,
            parent_run_id=parent_run_id(sweep_dir, uri, cfg.mlflow.experiment),
            sweep_id=sweep_dir,
            job=job,
            tags=tags,
        )
    except Exception as err:  # the report is safe on disk; say how to log it later
        secrets = secret_values(config)
        shown, q = scrub(uri, secrets), shlex.quote
        warnings.warn(
            f"MLflow logging to {shown} failed ({err.__class__.__name__}: "
            f"{scrub(str(err), secrets)[:300]}); the report is at {out / 'report.json'}; "
            f"log it later with: rageval log {q(str(out))} --tracking-uri {q(shown)} "
            f"--experiment {q(str(cfg.mlflow.experiment))}",
            stacklevel=1,
        )
        return
    if not quiet:
        secrets = secret_values(config)
        print(
            f"MLflow run {report.mlflow_run_id} in experiment "
            f"{cfg.mlflow.experiment!r}; see it with: {scrub(ui_command(uri), secrets)}"
        )
    # report.json is complete already; it now also names its MLflow run
    report.write_json(out / "report.json")


def _shown_overrides(report) -> list[str]:
    return [o for o in report.overrides if not o.startswith(("hydra.", "hydra/"))]


def job_line(name: str, report) -> str:
    """A finished sweep job in one line: ``job 3 (chunk=64 search=bm25): ndcg@5 0.5421,
    quote_recall@5 0.6071, evidence_recall@1024t 0.6142, tokens@5 1268.2; 2.1 s; MLflow run ...``
    (n/a for what the run could not measure; the split side, the warnings' count and the MLflow
    run when there are any)."""
    k = report.k
    parts = []
    for m in (f"ndcg@{k}", f"quote_recall@{k}", "evidence_recall@1024t", f"tokens@{k}"):
        if m in report.metrics:
            v = report.metrics[m]
            shown = (
                "n/a"
                if v is None or v != v
                else f"{v:.1f}"
                if m.startswith("tokens")
                else f"{v:.4f}"
            )
            parts.append(f"{m} {shown}")
    split = report.split or {}
    side = ""
    if split.get("name", "all") != "all":  # the numbers are one side's: say so
        side = f" [split={split['name']}: {split['queries']} of {split['of']} golden queries]"
    total = (report.timings or {}).get("total_s")
    line = f"job {name} ({' '.join(_shown_overrides(report))}){side}: {', '.join(parts)}"
    line += f"; {total:.1f} s" if total is not None else ""
    n = len(report.warnings or [])
    line += f"; {n} warning{'s' * (n > 1)} in report.json" if n else ""
    run = getattr(report, "mlflow_run_id", None)
    return line + (f"; MLflow run {run}" if run else "")


def _print_costs_and_stages(report) -> None:
    """What the run cost, and for a hybrid or reranked run its stages (rageval.report.costs,
    rageval.report.stages)."""
    from rageval.report.costs import costs_summary
    from rageval.report.stages import stages_table

    for text in (costs_summary(report.costs), stages_table(report.stages)):
        if text:
            print(text)


@dataclass(frozen=True)
class JobContext:
    """Where a job runs and how it was asked for: what Hydra knows and ``run_job`` records."""

    output_dir: Path
    overrides: list[str] = field(default_factory=list)
    choices: dict[str, str] = field(default_factory=dict)
    # set for a job of a sweep: a failure then ends this job only, never the sweep
    sweep_dir: str | None = None
    # the folder the sweep was launched from (a Ray worker starts elsewhere)
    launch_dir: str | None = None
    # secret values passed as overrides, masked in every line the job prints or logs
    override_secrets: frozenset[str] = frozenset()
    # the overrides as given (secrets included): only to find and mask them in Hydra's files
    raw_overrides: tuple[str, ...] = ()
    # the job's number in its sweep (names its MLflow run); None for a single run
    job: int | None = None


def job_context() -> JobContext:
    """The running Hydra job's context (inside ``@hydra.main`` only)."""
    from hydra.core.hydra_config import HydraConfig
    from hydra.types import RunMode

    hc = HydraConfig.get()
    multirun = hc.mode == RunMode.MULTIRUN
    return JobContext(
        output_dir=Path(hc.runtime.output_dir),
        overrides=[redact_override(o) for o in hc.overrides.task],
        # `rerank: null` (the default) is recorded as the option "none", as before
        choices={g: str(hc.runtime.choices.get(g) or "none") for g in GROUPS},
        sweep_dir=str(hc.sweep.dir) if multirun else None,
        launch_dir=str(hc.runtime.cwd) if multirun else None,
        override_secrets=frozenset(command_line_secrets(hc.overrides.task)),
        raw_overrides=tuple(hc.overrides.task),
        job=int(hc.job.num) if multirun else None,
    )


def guarded_job(cfg, job: JobContext) -> int:
    """Run one job and return its exit code; the one place that handles a job's failures.

    Secrets of the config are masked in the console and the job's log file; a sweep's job runs in
    the launch folder; a RagevalError prints one line, writes error.json and returns its exit code;
    any other error in a sweep's job is written to error.json (with the traceback on stderr) so the
    other jobs run on, and raised in a single run.
    """
    from omegaconf import OmegaConf

    secrets = secret_values(OmegaConf.to_container(cfg, resolve=False)) | set(job.override_secrets)
    scrub_logging(secrets)
    cwd = os.getcwd()
    try:
        if job.launch_dir:
            _enter_launch_dir(job.launch_dir)
        if job.sweep_dir:  # Hydra's own dump of the sweep's config and overrides
            redact_yaml_file(Path(job.sweep_dir) / "multirun.yaml", job.raw_overrides)
        with rundir.os_errors():  # a full disk or read-only folder: one line, not a traceback
            run_job(cfg, job.output_dir, job.overrides, job.choices, job.sweep_dir, job=job.job)
        return 0
    except RagevalError as err:
        msg = scrub(str(err), secrets)
        print(f"rageval: error: {msg}", file=sys.stderr)
        _write_error(job.output_dir, msg, job.overrides)
        return err.exit_code
    except Exception as err:
        if not job.sweep_dir:
            raise
        import traceback

        print(scrub(traceback.format_exc(), secrets), file=sys.stderr)
        _write_error(job.output_dir, scrub(f"{type(err).__name__}: {err}", secrets), job.overrides)
        return 2
    finally:
        if os.path.isdir(cwd):
            os.chdir(cwd)


def show_warnings_plainly() -> None:
    """rageval's own warnings print as ``warning: <message>`` on stderr, as its console speaks,
    not as Python's ``path:line: UserWarning: ...`` with a source line; others as before. The
    format is replaced, not ``showwarning``: code that records warnings (pytest.warns,
    ``catch_warnings(record=True)``) still gets every one."""
    import warnings

    formatted = warnings.formatwarning
    if getattr(formatted, "rageval", False):
        return
    package = str(Path(__file__).resolve().parents[1])

    def plain(message, category, filename, lineno, line=None):
        if str(filename).startswith(package):
            return f"warning: {message}\n"
        return formatted(message, category, filename, lineno, line)

    plain.rageval = True  # type: ignore[attr-defined]
    warnings.formatwarning = plain


def hydra_task(cfg) -> None:
    """The function ``@hydra.main`` wraps: one job; a single run exits with its error's code."""
    register_resolvers()  # a Ray or joblib worker process has not run run_app
    show_warnings_plainly()
    job = job_context()
    code = guarded_job(cfg, job)
    if code and not job.sweep_dir:
        sys.exit(code)


def _write_error(out: Path, msg: str, overrides: list[str]) -> None:
    import socket

    rundir.fail(out, {"error": msg, "overrides": overrides, "host": socket.gethostname()})


def _enter_launch_dir(cwd: str) -> None:
    """Run a sweep job in the folder the sweep was launched from, as a local job does: a worker of
    a Ray cluster starts where the cluster was started, and relative paths (corpus, golden set,
    ./mlflow.db) would point elsewhere. Skipped on a node that does not have that folder."""
    if cwd and os.path.isdir(cwd) and os.path.abspath(os.getcwd()) != os.path.abspath(cwd):
        os.chdir(cwd)


def run_app(argv: list[str]) -> int:
    """Run the Hydra app with ``argv`` as its command line; returns the exit code."""
    import tempfile

    import hydra
    from omegaconf import OmegaConf

    from rageval.app.callbacks import OUTCOME_ENV, read_outcome
    from rageval.app.preflight import preflight

    register_resolvers()
    from rageval.app.help import run_help, wants_help

    if wants_help(argv):
        print(run_help())
        return 0
    rundir.check_output_dirs(argv)  # Hydra would make them with a traceback on failure
    # Hydra echoes overrides in its own errors (and --cfg prints the config): mask secrets there
    secrets = command_line_secrets(argv)
    try:
        from rageval.app.removed_keys import refuse_removed_keys

        refuse_removed_keys(argv)  # one line naming the key to write instead
        # a bad override, sweep value or study setting: one line with a "did you mean", exit 2,
        # before any job starts
        argv = preflight(argv, CONF_DIR, GROUPS)
    except ConfigError as err:
        raise ConfigError(scrub(str(err), secrets)) from None
    main = hydra.main(version_base="1.3", config_path=str(CONF_DIR), config_name="config")(
        hydra_task
    )
    saved = sys.argv, sys.stdout, sys.stderr, os.environ.get(OUTCOME_ENV)
    sys.argv = ["rageval", *argv]
    sys.stdout, sys.stderr = (
        ScrubbingStream(sys.stdout, secrets),
        ScrubbingStream(sys.stderr, secrets),
    )
    with tempfile.TemporaryDirectory(prefix="rageval-sweep-") as tmp:
        outcome_file = Path(tmp) / "outcome.json"
        os.environ[OUTCOME_ENV] = str(outcome_file)  # where SweepCallback reports the sweep
        try:
            main()
        except BaseException as exc:
            # The launcher itself failed mid-sweep (a worker died, the cluster went away): summarise
            # what finished and close the parent run, then exit 2 (or let Ctrl-C through).
            outcome = read_outcome(outcome_file)
            if outcome is None or outcome["state"] != "started":
                raise
            from rageval.app.sweep import abort_sweep

            code = abort_sweep(OmegaConf.create(outcome["config"]), exc)
            if not isinstance(exc, SystemExit):
                raise
            return code
        finally:
            sys.argv, sys.stdout, sys.stderr = saved[:3]
            if saved[3] is None:
                os.environ.pop(OUTCOME_ENV, None)
            else:
                os.environ[OUTCOME_ENV] = saved[3]
        outcome = read_outcome(outcome_file)
    return int(outcome.get("exit_code", 0)) if outcome else 0
