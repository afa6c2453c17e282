"""``rageval log RUN_DIR``: log a finished run folder to MLflow, e.g. after the server was down
(see rageval.tracking.later)."""

from __future__ import annotations

import argparse


def add_arguments(p: argparse.ArgumentParser) -> None:
    """Add the options of ``log`` to ``p``."""
    p.add_argument("run_dir", metavar="RUN_DIR", help="a run's output folder (holds report.json)")
    p.add_argument(
        "--tracking-uri",
        help="MLflow tracking URI (default: the run's mlflow.tracking_uri, else "
        "$MLFLOW_TRACKING_URI, else sqlite:///mlflow.db)",
    )
    p.add_argument("--experiment", help="experiment name (default: the run's mlflow.experiment)")
    p.add_argument("--force", action="store_true", help="log again a folder already logged")


def handle(args: argparse.Namespace) -> int:
    """Log the folder and print the run id."""
    from rageval.tracking.later import log_folder

    run_id, uri = log_folder(args.run_dir, args.tracking_uri, args.experiment, args.force)
    print(f"logged {args.run_dir} to {uri} as run {run_id}")
    return 0
