"""The launching side of a multirun: a parent MLflow run before the jobs, a comparison after."""

from __future__ import annotations

import json
import os
import sys
import warnings
from pathlib import Path
from typing import Any

from rageval.formats.atomic import atomic_write_text
from rageval.redact import redact_override, scrub
from rageval.report.eval_report import HEADLINE
from rageval.tracking.runs import client_for, ensure_experiment, tracking_uri

# The hand-off from the launching process to its jobs: the parent run's id in the environment
# (inherited by joblib workers and a local Ray cluster) and in a file in the sweep folder (read by
# the workers of a Ray cluster that was already running).
PARENT_ENV = "RAGEVAL_PARENT_RUN_ID"
# The sweep that PARENT_ENV belongs to: a reused worker process (Ray, joblib) may still hold the
# variables of an earlier sweep launched from the same process.
SWEEP_ENV = "RAGEVAL_SWEEP_DIR"
PARENT_FILE = ".rageval_parent_run"


def _sweep_dir(config) -> Path:
    return Path(str(config.hydra.sweep.dir))


def start_sweep(config) -> dict[str, Any]:
    """Create the experiment once and the parent run, before any job starts.

    Returns what ``finish_sweep`` needs to close the sweep if the launcher fails: the resolved
    config without Hydra's own node, plus the sweep folder.
    """
    settings = sweep_settings(config)
    os.environ.pop(PARENT_ENV, None)
    os.environ.pop(SWEEP_ENV, None)
    sweep_dir = _sweep_dir(config)
    sweep_dir.mkdir(parents=True, exist_ok=True)
    if not config.mlflow.enabled:
        return settings
    uri = tracking_uri(config.mlflow.tracking_uri)
    try:
        client = client_for(uri)
        exp_id = ensure_experiment(client, config.mlflow.experiment)
        overrides = " ".join(redact_override(o) for o in config.hydra.overrides.task)
        run = client.create_run(
            exp_id,
            run_name=f"sweep {sweep_dir.name}",
            tags={
                "rageval.sweep": "parent",
                "rageval.sweep_id": str(sweep_dir),
                "rageval.sweep_overrides": overrides,
            },
        )
    except Exception as err:  # the jobs still run and write their reports
        _mlflow_warning("starting the sweep's parent run", uri, err)
        return settings
    atomic_write_text(sweep_dir / PARENT_FILE, run.info.run_id)
    # Inherited by workers started from here on (joblib, a local Ray cluster), not by the workers
    # of a Ray cluster that was already running: those read the file, or ask MLflow.
    os.environ[PARENT_ENV] = run.info.run_id
    os.environ[SWEEP_ENV] = str(sweep_dir)
    return settings


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
        client = client_for(uri)
        exp = client.get_experiment_by_name(experiment)
        if exp is not None:
            runs = client.search_runs(
                [exp.experiment_id],
                f"tags.`rageval.sweep` = 'parent' and tags.`rageval.sweep_id` = '{sweep_dir}'",
                max_results=1,
                order_by=["attributes.start_time DESC"],
            )
            return runs[0].info.run_id if runs else None
    return None


def collect(sweep_dir: Path) -> list[dict[str, Any]]:
    """One row per job folder: its overrides, status and headline metrics (or error)."""
    rows = []
    for d in sorted(
        (p for p in sweep_dir.iterdir() if p.is_dir() and p.name.isdigit()),
        key=lambda p: int(p.name),
    ):
        row: dict[str, Any] = {"job": int(d.name)}
        if (d / "report.json").is_file():
            rep = json.loads((d / "report.json").read_text())
            row.update(status="ok", overrides=rep.get("overrides", []), metrics=rep["metrics"], ci=rep.get("ci", {}),
                       run_id=rep.get("mlflow_run_id"), k=rep.get("k"))  # fmt: skip
        elif (d / "error.json").is_file():
            err = json.loads((d / "error.json").read_text())
            row.update(
                status="failed", overrides=err.get("overrides", []), error=err.get("error", "")
            )
        else:
            row.update(status="failed", overrides=[], error="the job left no report (killed?)")
        rows.append(row)
    return rows


def comparison(rows: list[dict[str, Any]], compare_metric: str) -> tuple[str, str, int | None]:
    """Markdown and CSV tables of the jobs (means with 95% CIs); the best by ``compare_metric`` is marked."""
    ok = [r for r in rows if r["status"] == "ok"]
    k = ok[0]["k"] if ok else 5
    metrics = [f"{m}@{k}" for m in HEADLINE]
    keys: list[str] = []
    for r in rows:
        for o in r["overrides"]:
            key = o.split("=", 1)[0]
            if key not in keys:
                keys.append(key)
    values = {
        k_: {dict(o.split("=", 1) for o in r["overrides"] if "=" in o).get(k_) for r in rows}
        for k_ in keys
    }
    swept = [k_ for k_ in keys if len(values[k_]) > 1]
    keys = swept or keys
    best = max(ok, key=lambda r: r["metrics"].get(compare_metric, float("-inf")), default=None)
    header = ["job", *keys, *metrics, "status"]
    table = []
    for r in rows:
        vals = dict(o.split("=", 1) for o in r["overrides"] if "=" in o)
        cells = [str(r["job"]), *[vals.get(k_, "") for k_ in keys]]
        if r["status"] == "ok":
            cells += [_cell(r, m) for m in metrics]
            cells.append("best" if r is best else "ok")
        else:
            cells += ["" for _ in metrics] + [f"FAILED: {r['error']}"]
        table.append(cells)
    md = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    md += ["| " + " | ".join(c.replace("|", "\\|") for c in row) + " |" for row in table]
    csv_lines = [",".join(header)] + [",".join(_csv(c) for c in row) for row in table]
    return "\n".join(md) + "\n", "\n".join(csv_lines) + "\n", (best["job"] if best else None)


def _cell(row: dict[str, Any], metric: str) -> str:
    """``0.618 [0.558, 0.682]``: the mean and its 95% bootstrap CI."""
    mean = row["metrics"].get(metric, float("nan"))
    lo, hi = (row.get("ci") or {}).get(metric, (None, None))
    return f"{mean:.3f} [{lo:.3f}, {hi:.3f}]" if lo is not None else f"{mean:.3f}"


def _csv(cell: str) -> str:
    return f'"{cell.replace(chr(34), chr(34) * 2)}"' if any(c in cell for c in ',"\n') else cell


def finish_sweep(config, stopped: str | None = None) -> int:
    """Print and log the comparison table, close the parent run; returns the sweep's exit code
    (2 if a job failed). ``stopped``: why the launcher gave up, told for every job that left no
    report."""
    sweep_dir = _sweep_dir(config)
    rows = collect(sweep_dir)
    for r in rows:
        if stopped and r["status"] == "failed" and "left no report" in r["error"]:
            r["error"] = f"the job left no report; the sweep stopped: {stopped}"
    failed = [r for r in rows if r["status"] != "ok"]
    md, csv_text, _ = comparison(rows, str(config.mlflow.compare_metric))
    atomic_write_text(sweep_dir / "comparison.md", md)
    atomic_write_text(sweep_dir / "comparison.csv", csv_text)
    print(
        f"\nSweep of {len(rows)} jobs ({len(failed)} failed), best by {config.mlflow.compare_metric}:\n"
    )
    print(md)
    print(f"comparison: {sweep_dir / 'comparison.md'}")
    for r in failed:
        print(f"job {r['job']} ({' '.join(r['overrides'])}) failed: {r['error']}", file=sys.stderr)
    parent = parent_run_id(str(sweep_dir))
    if config.mlflow.enabled and parent:
        uri = tracking_uri(config.mlflow.tracking_uri)
        try:
            client = client_for(uri)
            client.log_artifact(parent, str(sweep_dir / "comparison.md"))
            client.log_artifact(parent, str(sweep_dir / "comparison.csv"))
            client.set_tag(parent, "rageval.jobs", str(len(rows)))
            client.set_tag(parent, "rageval.jobs_failed", str(len(failed)))
            client.set_terminated(parent, "FAILED" if failed or stopped else "FINISHED")
        except Exception as err:  # the comparison is on disk already
            _mlflow_warning("closing the sweep's parent run", uri, err)
    os.environ.pop(PARENT_ENV, None)
    os.environ.pop(SWEEP_ENV, None)
    return 2 if failed else 0


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
