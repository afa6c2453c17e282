"""MLflow logging for runs and sweeps (the only module that imports MLflow).

One run per job: params (the resolved config flattened and redacted, plus each group's chosen
option), metrics under MLflow-legal names (``precision_at_5``; the curve over ``ks`` as steps of
``precision``), the per-query table, the resolved config, report.json, TREC run and qrels files,
a metric@k plot, timings and latency; tags for git commit and dirty flag, digests and sweep id.
A sweep gets a parent run, created once in the launching process before any job starts; every
job is nested under it and the parent receives the comparison table at the end.
"""

from __future__ import annotations

import contextlib
import csv
import io
import os
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rageval.redact import redact
from rageval.scoring.spec import mlflow_key


def tracking_uri(configured: str | None) -> str:
    """Config, else $MLFLOW_TRACKING_URI, else sqlite:///mlflow.db in the working directory."""
    if configured:
        return str(configured)
    env = os.environ.get("MLFLOW_TRACKING_URI")
    if env:
        return env
    return f"sqlite:///{Path.cwd() / 'mlflow.db'}"


# MLflow retries a request 7 times with a backoff factor of 2 by default: four minutes before an
# unreachable server counts as down. rageval keeps the report on disk and says how to log it
# later, so it gives up sooner; the user's own settings of these variables win.
HTTP_DEFAULTS = {"MLFLOW_HTTP_REQUEST_MAX_RETRIES": "2", "MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR": "1"}


def client_for(uri: str):
    # rageval is offline by default: no usage telemetry unless the user turns it back on
    os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
    from mlflow.tracking import MlflowClient

    for name, value in HTTP_DEFAULTS.items():
        os.environ.setdefault(name, value)
    return MlflowClient(tracking_uri=uri)


def ensure_experiment(client, name: str) -> str:
    """The experiment's id, creating it if needed (tolerates a concurrent creator)."""
    exp = client.get_experiment_by_name(name)
    if exp is not None:
        return exp.experiment_id
    try:
        return client.create_experiment(name)
    except Exception:
        exp = client.get_experiment_by_name(name)
        if exp is None:
            raise
        return exp.experiment_id


def flatten(d: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in d.items():
        key = f"{prefix}{k}"
        if isinstance(v, Mapping):
            out.update(flatten(v, key + "."))
        else:
            out[key] = v
    return out


def git_info(cwd: str | Path | None = None) -> dict[str, str]:
    """The commit and dirty flag of the repository holding ``cwd`` (empty outside a git repo)."""
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=cwd, capture_output=True, text=True, timeout=10
        ).stdout.strip()
        if not commit:
            return {}
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=cwd, capture_output=True, text=True, timeout=10,
        ).stdout.strip()  # fmt: skip
        return {"git_commit": commit, "git_dirty": "true" if dirty else "false"}
    except (OSError, subprocess.SubprocessError):
        return {}


def metric_entries(report) -> list[tuple[str, float, int]]:
    """(key, value, step) for every metric: ``name_at_k`` at step 0, and the curve ``name`` at step k."""
    import math

    out = []
    for name, value in report.metrics.items():
        if value is None or (isinstance(value, float) and math.isnan(value)):
            continue
        out.append((mlflow_key(name), float(value), 0))
        base, _, k = name.partition("@")
        if k.isdigit():
            out.append((base, float(value), int(k)))
    for key, value in report.timings.items():
        out.append((f"time_{key}", float(value), 0))
    for key, value in report.latency.items():
        out.append((f"latency_{key}", float(value), 0))
    return out


def log_run(
    report,
    *,
    config: Mapping[str, Any],
    choices: Mapping[str, str],
    output_dir: Path,
    uri: str,
    experiment: str,
    run_name: str | None = None,
    parent_run_id: str | None = None,
    sweep_id: str | None = None,
    tags: Mapping[str, str] | None = None,
    git: bool = True,
) -> str:
    """Log one job's report as an MLflow run; returns the run id.

    ``tags`` are added to the run's; ``git=False`` leaves out the commit tags (a run logged later,
    from a checkout that may not be the one it was measured at). A run that fails half-way is
    marked FAILED, never left RUNNING, and report.json keeps no id of it.
    """
    client = client_for(uri)
    import mlflow
    from mlflow.entities import Metric, Param

    exp_id = ensure_experiment(client, experiment)
    run_tags = {
        "rageval.golden_digest": report.digests.get("golden", ""),
        "rageval.corpus_digest": report.digests.get("corpus", ""),
        "rageval.model_fingerprint": report.digests.get("model", ""),
        "rageval.embedding": report.digests.get("embedding", ""),
        "rageval.level": report.level,
        **{f"rageval.{k}": v for k, v in (git_info() if git else {}).items()},
        **(tags or {}),
    }
    if sweep_id:
        run_tags["rageval.sweep_id"] = sweep_id
    if parent_run_id:
        run_tags["mlflow.parentRunId"] = parent_run_id
    run = client.create_run(exp_id, tags=run_tags, run_name=run_name)
    run_id = run.info.run_id
    logged_before = report.mlflow_run_id
    try:
        params = {
            k: ("" if v is None else str(v))[:6000] for k, v in flatten(redact(config)).items()
        }
        params.update(
            {
                g: str(c)
                for g, c in choices.items()
                if g in ("dataset", "embedding", "backend", "search", "rerank")
            }
        )
        items = list(params.items())
        for i in range(0, len(items), 100):
            client.log_batch(run_id, params=[Param(k, v) for k, v in items[i : i + 100]])
        import time

        now = int(time.time() * 1000)
        metrics = [Metric(k, v, now, s) for k, v, s in metric_entries(report)]
        for i in range(0, len(metrics), 500):
            client.log_batch(run_id, metrics=metrics[i : i + 500])
        report.mlflow_run_id = run_id
        report.write_json(output_dir / "report.json")
        _log_artifacts(client, run_id, report, config, output_dir)
        previous = mlflow.get_tracking_uri()
        mlflow.set_tracking_uri(uri)  # log_table is fluent-only: point it at this store
        try:
            mlflow.log_table(
                _table(report.per_query), artifact_file="per_query.json", run_id=run_id
            )
        finally:
            mlflow.set_tracking_uri(previous)
        client.set_terminated(run_id, "FINISHED")
    except BaseException as err:
        if report.mlflow_run_id == run_id:  # report.json must not point at a half-logged run
            report.mlflow_run_id = logged_before
            report.write_json(output_dir / "report.json")
        with contextlib.suppress(Exception):  # the server may be the thing that failed
            client.set_terminated(
                run_id, "KILLED" if isinstance(err, KeyboardInterrupt) else "FAILED"
            )
        raise
    return run_id


def _table(rows: list[dict]) -> dict[str, list]:
    cols: dict[str, list] = {}
    for r in rows:
        for k in r:
            cols.setdefault(k, [])
    for r in rows:
        for k in cols:
            v = r.get(k)
            cols[k].append(", ".join(map(str, v)) if isinstance(v, list) else v)
    return cols


def per_query_csv(rows: list[dict]) -> str:
    buf = io.StringIO()
    cols = _table(rows)
    w = csv.writer(buf)
    w.writerow(cols)
    w.writerows(zip(*cols.values(), strict=True))
    return buf.getvalue()


def _log_artifacts(client, run_id: str, report, config, output_dir: Path) -> None:
    from rageval.formats.atomic import atomic_write_text
    from rageval.report.plots import curve_png

    atomic_write_text(output_dir / "per_query.csv", per_query_csv(report.per_query))
    curve_png(report, output_dir / "metrics_at_k.png")
    for name in (
        "report.json",
        "per_query.csv",
        "config.yaml",
        "metrics_at_k.png",
        "run.trec",
        "qrels.trec",
        "chunks.jsonl",
    ):
        if (output_dir / name).is_file():
            client.log_artifact(run_id, str(output_dir / name))
