"""``rageval promote``: make a run the committed baseline.

``rageval promote RUN_ID`` fetches the run's report.json from MLflow; ``rageval promote
path/to/report.json`` takes a report from disk; ``--best METRIC@K`` picks the best run measured on
the project's golden set (of one sweep with ``--sweep PARENT_RUN_ID``). See
:mod:`rageval.app.promote` for the guards.
"""

from __future__ import annotations

import argparse


def add_arguments(p: argparse.ArgumentParser) -> None:
    """Add the ``promote`` options to ``p``."""
    p.add_argument("run", nargs="?", help="MLflow run id, a report.json path, or a run folder")
    p.add_argument(
        "--baseline",
        help="baseline file to write, its per-query CSV beside it (default: the project's "
        "baseline, set in rageval.yaml, else golden/baseline.json)",
    )
    p.add_argument(
        "--best",
        metavar="METRIC@K",
        help="promote the run with the highest METRIC@K (e.g. ndcg@5) on the project's golden set",
    )
    p.add_argument(
        "--experiment",
        help="experiment searched by --best (default: the configured mlflow.experiment, "
        "rageval unless your project sets it)",
    )
    p.add_argument(
        "--sweep",
        metavar="PARENT_RUN_ID",
        help="with --best: only the jobs of this sweep; of a tuning study (hydra/sweeper=optuna): "
        "its best configuration, when the holdout confirms it (exit 1 otherwise)",
    )
    p.add_argument(
        "--golden",
        help="golden set the project gates on: a JSONL file or a BEIR folder (DIR or DIR:SPLIT) "
        "(default: the current baseline's dataset, else the "
        "configured dataset.golden)",
    )
    p.add_argument(
        "--force",
        action="store_true",
        help="promote even if the run used another golden set, or a tuning study's holdout does "
        "not confirm its best configuration",
    )
    p.add_argument(
        "--tracking-uri",
        help="MLflow tracking URI (default $MLFLOW_TRACKING_URI, else sqlite:///mlflow.db)",
    )


def handle(args: argparse.Namespace) -> int:
    """Promote and say what was promoted."""
    from rageval.app.promote import promote
    from rageval.cli.paths import default_baseline

    done = promote(
        args.run,
        args.baseline or str(default_baseline(write=True)),
        best=args.best,
        experiment=args.experiment,
        sweep=args.sweep,
        golden=args.golden,
        force=args.force,
        uri=args.tracking_uri,
    )
    print(done.summary())
    return 0
