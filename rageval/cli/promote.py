"""``rageval promote``: make a run the committed baseline.

``rageval promote RUN_ID`` fetches the run's report.json from MLflow; ``rageval promote
path/to/report.json`` takes a report from disk; ``--best METRIC`` picks the best run of an
experiment (or of one sweep with ``--sweep PARENT_RUN_ID``). The baseline is written atomically;
in MLflow the run is tagged ``rageval.baseline=true`` and the experiment's previous baseline is
untagged. A run whose golden digest differs from the current golden set is refused unless --force.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path
from typing import Any

from rageval.errors import InputError
from rageval.gate.baseline import load_report, write_baseline
from rageval.tracking.client import client_for, tracking_uri

BASELINE_TAG = "rageval.baseline"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("run", nargs="?", help="MLflow run id, or a report.json path")
    p.add_argument(
        "--baseline",
        default="golden/baseline.json",
        help="baseline file to write (default golden/baseline.json)",
    )
    p.add_argument(
        "--best", metavar="METRIC", help="promote the run with the highest METRIC (e.g. ndcg@5)"
    )
    p.add_argument(
        "--experiment", default="rageval", help="experiment searched by --best (default rageval)"
    )
    p.add_argument(
        "--sweep", metavar="PARENT_RUN_ID", help="with --best: only the jobs of this sweep"
    )
    p.add_argument(
        "--golden",
        help="current golden set to check the digest against (default: the run's own path)",
    )
    p.add_argument(
        "--force", action="store_true", help="promote even if the golden set changed since the run"
    )
    p.add_argument(
        "--tracking-uri",
        help="MLflow tracking URI (default $MLFLOW_TRACKING_URI, else sqlite:///mlflow.db)",
    )


def best_run(client, experiment: str, metric: str, sweep: str | None) -> str:
    from rageval.tracking.lookup import best_run_id

    return best_run_id(client, experiment, metric, sweep)


def fetch_report(client, run_id: str) -> dict[str, Any]:
    try:
        run = client.get_run(run_id)
    except Exception:
        raise InputError(
            f"no MLflow run {run_id!r} in this tracking store; check --tracking-uri"
        ) from None
    with tempfile.TemporaryDirectory() as tmp:
        try:
            path = client.download_artifacts(run.info.run_id, "report.json", tmp)
        except Exception:
            raise InputError(
                f"run {run_id} has no report.json artifact (was it logged by rageval?)"
            ) from None
        return load_report(path)


def promote(run: str | None, baseline: str, *, best: str | None = None, experiment: str = "rageval",
            sweep: str | None = None, golden: str | None = None, force: bool = False,
            uri: str | None = None) -> tuple[Path, str | None]:  # fmt: skip
    """Write the baseline; returns its path and the promoted MLflow run id (None for a file)."""
    from rageval.inputs.golden import load_golden

    client, run_id = None, None
    if run and Path(run).is_file():
        report = load_report(run)
    else:
        client = client_for(tracking_uri(uri))
        if best:
            run_id = best_run(client, experiment, best, sweep)
        elif run:
            run_id = run
        else:
            raise InputError(
                "name a run: rageval promote RUN_ID, a report.json path, or --best METRIC"
            )
        report = fetch_report(client, run_id)
    golden_path = golden or ((report.get("config") or {}).get("dataset") or {}).get("golden")
    if golden_path and Path(golden_path).is_file():
        now = load_golden(golden_path).digest
        then = report["digests"].get("golden", "")
        if now != then and not force:
            raise InputError(
                f"the run was measured on another golden set (digest {then[:12]}, now {now[:12]} at {golden_path}); "
                "re-run it on the current golden set, or pass --force"
            )
    source = {"run_id": run_id or report.get("mlflow_run_id"), "file": run if client is None else None,
              "promoted_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}  # fmt: skip
    path = write_baseline(report, baseline, source)
    if client is not None and run_id:
        exp_id = client.get_run(run_id).info.experiment_id
        for old in client.search_runs([exp_id], filter_string=f"tags.`{BASELINE_TAG}` = 'true'"):
            if old.info.run_id != run_id:
                client.delete_tag(old.info.run_id, BASELINE_TAG)
        client.set_tag(run_id, BASELINE_TAG, "true")
    return path, run_id


def run(args) -> int:
    path, run_id = promote(args.run, args.baseline, best=args.best, experiment=args.experiment, sweep=args.sweep,
                           golden=args.golden, force=args.force, uri=args.tracking_uri)  # fmt: skip
    print(f"baseline written: {path}" + (f" (from run {run_id})" if run_id else ""))
    return 0
