"""A tuning study on its sweep's parent run: the tags resume and ``rageval promote`` read, and the
study's outcome (figures, ids, verdict) logged when the sweep closes (rageval.app.study holds the
study's settings and outcome file)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rageval.tracking.keys import RUN_METRIC_LIMIT, metric_keys
from rageval.tracking.log import DESCRIPTION_TAG, fit_description, log_batched, run_url

# Tags the study puts on the sweep's parent run (read by resume and promote).
TAG_STUDY = "rageval.study"
TAG_STORAGE = "rageval.study_storage"
TAG_OBJECTIVE = "rageval.study_objective"
TAG_BEST_RUN = "rageval.study_best_run_id"
TAG_BASELINE_RUN = "rageval.study_baseline_run_id"
TAG_ALPHA = "rageval.study_alpha"
TAG_FRACTION = "rageval.study_holdout_fraction"
TAG_SEED = "rageval.study_split_seed"
TAG_BEST_TRIAL = "rageval.study_best_trial"
TAG_BEST_CONFIG = "rageval.study_best_config"


def reopen_run(client, run_id: str | None) -> str | None:
    """``run_id`` set RUNNING again (a resumed study carries on under its first parent run);
    None when there is no such run."""
    if not run_id:
        return None
    try:
        client.get_run(run_id)
    except Exception:
        return None
    client.update_run(run_id, status="RUNNING")
    return str(run_id)


def log_outcome(
    client, parent: str, study_file: Path, outcome: Mapping[str, Any], uri: str = ""
) -> None:
    """The study's figures, ids and verdict on the sweep's parent run, with its outcome file
    (``study_file``) as an artifact (``uri``: the tracking URI, for the best run's link)."""
    from rageval.report.study import StudySummary

    tags = {
        TAG_STUDY: str(outcome.get("study") or "(did not start)"),
        TAG_STORAGE: str(outcome.get("storage") or ""),
    }
    metrics: dict[str, float] = {}
    if outcome.get("objective"):
        tags[TAG_OBJECTIVE] = str(outcome["objective"])
    if not outcome.get("error"):
        summary = StudySummary.from_dict(outcome["summary"])
        metrics = summary.mlflow_metrics()
        tags.update(
            {
                TAG_BEST_TRIAL: str(outcome["best_trial"]),
                TAG_ALPHA: str(summary.alpha),
                TAG_FRACTION: str(summary.split["holdout_fraction"]),
                TAG_SEED: str(summary.split["seed"]),
                "rageval.study_confirmed": str(summary.confirmed).lower(),
                # a tag, not params: a resumed study's best may change, MLflow params cannot
                TAG_BEST_CONFIG: " ".join(summary.best_overrides)[:5000],
            }
        )
        for tag, key in ((TAG_BEST_RUN, "best_run_id"), (TAG_BASELINE_RUN, "baseline_run_id")):
            if outcome.get(key):
                tags[tag] = str(outcome[key])
        trial_run = outcome.get("best_trial_run_id")
        if trial_run:  # the study's best, which a resumed study may have found in an earlier part
            tags["rageval.best_run_id"] = str(trial_run)
            best_run = client.get_run(trial_run)
            tags["rageval.best_run_url"] = run_url(uri, best_run.info.experiment_id, trial_run)
            metrics = {
                **_first(best_run.data.metrics, outcome, RUN_METRIC_LIMIT - len(metrics)),
                **metrics,
            }
        note = client.get_run(parent).data.tags.get(DESCRIPTION_TAG, "")
        tags[DESCRIPTION_TAG] = fit_description(summary.markdown() + "\n\n" + note)
    if outcome.get("error"):
        tags["rageval.study_error"] = str(outcome["error"])[:5000]
    if outcome.get("study"):  # the runs table shows a study and its trials by number
        tags["mlflow.runName"] = f"study {outcome['study']}"
    for run_id, name in (outcome.get("trial_run_names") or {}).items():
        client.set_tag(run_id, "mlflow.runName", name)
    log_batched(client, parent, metrics=metrics, tags=tags)
    client.log_artifact(parent, str(study_file))


def study_parent_tags(client, run_id: str) -> dict[str, str] | None:
    """The tags of MLflow run ``run_id`` when it is a tuning study's parent run, else None (also
    when ``run_id`` names no run)."""
    try:
        run = client.get_run(run_id)
    except Exception:
        return None  # not a run id: best_run's filter says so
    return dict(run.data.tags) if run.data.tags.get(TAG_STUDY) else None


def _first(metrics: Mapping[str, float], outcome: Mapping[str, Any], n: int) -> dict[str, float]:
    """At most ``n`` of a run's ``metrics``: the study's objective (and its CI) first, then the
    rest in the order the run logged them (its headline order)."""
    objective = str(outcome.get("objective") or "")
    try:
        keys = metric_keys(objective) if objective else []
    except Exception:  # not a metric name: no objective first
        keys = []
    first = [k for k in metrics if any(k == c or k.startswith(c + "_ci_") for c in keys)]
    ordered = [*first, *(k for k in metrics if k not in first)]
    return {k: metrics[k] for k in ordered[: max(n, 0)]}
