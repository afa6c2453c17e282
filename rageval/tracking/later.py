"""Logging a finished run folder to MLflow later, e.g. after the server was down (``rageval log``).

A run whose MLflow logging failed still wrote its report.json, TREC files and config.yaml; this
sends them as one MLflow run with the same params, metrics, tags and artifacts a live run gets
(:func:`rageval.tracking.log.log_run`). The commit tags are left out (the checkout may have moved
since the run was measured) and ``rageval.logged_later`` is set. A folder already logged is
refused unless ``force``.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from rageval.errors import InputError, RagevalError
from rageval.formats.redact import MASK, scrub, secret_values


def load_run(run_dir: str | Path):
    """The EvalReport in ``run_dir``/report.json (its rankings and qrels stay in the TREC files)."""
    from rageval.gate.baseline import load_report
    from rageval.report.eval_report import EvalReport
    from rageval.run.folder import check_complete

    path = Path(run_dir) / "report.json"
    if not path.is_file():
        raise InputError(
            "no report.json: not the folder of a finished run; pass a run's output folder "
            "(hydra.run.dir, or a job folder of a sweep)",
            path=str(path),
        )
    check_complete(path)  # a failed or unfinished run is not logged as a result
    data = load_report(path)
    names = {f.name for f in dataclasses.fields(EvalReport)} - {"rankings", "qrels", "chunks"}
    try:
        return EvalReport(**{k: v for k, v in data.items() if k in names})
    except TypeError as err:
        raise InputError(f"not a complete rageval report ({err})", path=str(path)) from None


def log_folder(
    run_dir: str | Path, uri: str | None = None, experiment: str | None = None, force: bool = False
) -> tuple[str, str]:
    """Log ``run_dir`` to MLflow; returns (run id, tracking URI with credentials masked)."""
    from rageval.tracking.client import tracking_uri
    from rageval.tracking.log import log_run

    run_dir = Path(run_dir)
    report = load_run(run_dir)
    if report.mlflow_run_id and not force:
        raise InputError(
            f"already logged to MLflow as run {report.mlflow_run_id}; pass --force to log it again",
            path=str(run_dir / "report.json"),
        )
    mlflow_cfg = report.config.get("mlflow") or {}
    configured = mlflow_cfg.get("tracking_uri")
    if not uri and configured and MASK in str(configured):
        raise InputError(
            f"the run's tracking URI {configured} held credentials, masked in report.json; "
            "pass --tracking-uri with them",
            path=str(run_dir / "report.json"),
        )
    uri = tracking_uri(uri or configured)
    try:
        run_id = log_run(
            report,
            config=report.config,
            choices=report.choices,
            output_dir=run_dir,
            uri=uri,
            experiment=experiment or mlflow_cfg.get("experiment") or "rageval",
            run_name=mlflow_cfg.get("run_name"),
            tags={"rageval.logged_later": "true"},
            git=False,
        )
        report.mlflow_run_id = run_id  # log_run writes nothing in the folder: record the id here
        report.write_json(run_dir / "report.json")
    except Exception as err:
        why = scrub(f"{type(err).__name__}: {err}", secret_values())[:300]
        raise RagevalError(
            f"MLflow logging to {scrub(uri, ())} failed ({why}); the folder is unchanged, "
            "try again once the server is up"
        ) from None
    return run_id, scrub(uri, ())
