"""The launching side of a multirun: a parent MLflow run before the jobs, a comparison after."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

from rageval.atomic import atomic_write_text
from rageval.redact import redact_override
from rageval.report import HEADLINE
from rageval.tracking import PARENT_ENV, PARENT_FILE, client_for, ensure_experiment, tracking_uri

# The exit code of the last sweep, read by rageval.app after Hydra returns.
LAST_SWEEP: dict[str, Any] = {"failed": 0, "exit_code": 0}


def _sweep_dir(config) -> Path:
    return Path(str(config.hydra.sweep.dir))


def start_sweep(config) -> None:
    """Create the experiment once and the parent run, before any job starts."""
    LAST_SWEEP.update(failed=0, exit_code=0)
    os.environ.pop(PARENT_ENV, None)
    sweep_dir = _sweep_dir(config)
    sweep_dir.mkdir(parents=True, exist_ok=True)
    if not config.mlflow.enabled:
        return
    client = client_for(tracking_uri(config.mlflow.tracking_uri))
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
    atomic_write_text(sweep_dir / PARENT_FILE, run.info.run_id)
    os.environ[PARENT_ENV] = run.info.run_id


def parent_run_id(sweep_dir: str | None) -> str | None:
    """The sweep's parent run, from the environment or the file in the sweep folder."""
    if os.environ.get(PARENT_ENV):
        return os.environ[PARENT_ENV]
    if sweep_dir:
        f = Path(sweep_dir) / PARENT_FILE
        if f.is_file():
            return f.read_text().strip() or None
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


def finish_sweep(config) -> None:
    """Print and log the comparison table; close the parent run; remember failures for the exit code."""
    sweep_dir = _sweep_dir(config)
    rows = collect(sweep_dir)
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
    LAST_SWEEP.update(failed=len(failed), exit_code=2 if failed else 0)
    parent = parent_run_id(str(sweep_dir))
    if config.mlflow.enabled and parent:
        client = client_for(tracking_uri(config.mlflow.tracking_uri))
        client.log_artifact(parent, str(sweep_dir / "comparison.md"))
        client.log_artifact(parent, str(sweep_dir / "comparison.csv"))
        client.set_tag(parent, "rageval.jobs", str(len(rows)))
        client.set_tag(parent, "rageval.jobs_failed", str(len(failed)))
        client.set_terminated(parent, "FAILED" if failed else "FINISHED")
    os.environ.pop(PARENT_ENV, None)
