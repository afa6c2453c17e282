"""MLflow look-ups for ``rageval promote``: the best run on a golden set, the current baseline tag.

Every value put into a search filter goes through :func:`quote`, so a run id, sweep id or digest
holding a quote cannot change the filter's meaning.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from typing import Any

from rageval.errors import InputError
from rageval.tracking.keys import METRICS_TABLE, METRICS_TABLE_TAG, find_metric, metric_keys

BASELINE_TAG = "rageval.baseline"
GOLDEN_TAG = "rageval.golden_digest"
CORPUS_TAG = "rageval.corpus_digest"
LABELS_TAG = "rageval.label_set"
# The part of the golden set a run scored (rageval.inputs.split); absent or "all": every query.
SPLIT_TAG = "rageval.split"


def quote(value: str) -> str:
    """A string literal for an MLflow filter. Run ids, sweep ids and digests are plain tokens;
    anything holding a quote, backslash or control character is refused, never pasted in."""
    text = str(value)
    if not text or any(c in text for c in "'\"\\`") or not text.isprintable():
        raise InputError(
            f"{text[:40]!r} is not a valid MLflow id or digest (quotes, backslashes and control "
            "characters are refused); pass the run id as MLflow shows it"
        )
    return f"'{text}'"


def best_run(
    client,
    experiment: str,
    metric_key: str,
    *,
    golden_digest: str | None,
    corpus_digest: str | None = None,
    label_set: str | None = None,
    sweep: str | None = None,
) -> Any:
    """The finished run with the highest ``metric_key`` (``ndcg_at_5`` or ``ndcg@5``, found in
    whatever section the run logged it: :func:`rageval.tracking.keys.find_metric`) measured on
    the given golden set and corpus (and label set, when runs record one); None when no run
    qualifies. Sweep parents, which copy their best child's metrics, are skipped, and so are runs
    that scored only one side of a golden-set split (a study's trials on split=tune)."""
    exp = client.get_experiment_by_name(experiment)
    if exp is None:
        raise InputError(f"no MLflow experiment named {experiment!r}; pass --experiment")
    parts = ["attributes.status = 'FINISHED'"]
    if sweep:
        parts.append(f"tags.`mlflow.parentRunId` = {quote(sweep)}")
    if golden_digest:
        parts.append(f"tags.`{GOLDEN_TAG}` = {quote(golden_digest)}")
    if corpus_digest:
        parts.append(f"tags.`{CORPUS_TAG}` = {quote(corpus_digest)}")
    best, best_value, token = None, None, None
    tabled = {}  # runs that logged the metric only in their metrics table
    while True:  # every qualifying run: the metric may sit in any section (headline/, cutoffs/)
        page = client.search_runs(
            [exp.experiment_id],
            filter_string=" and ".join(parts),
            max_results=1000,
            page_token=token,
        )
        for r in page:
            if r.data.tags.get("rageval.sweep") == "parent":  # a copy of its best child's metrics
                continue
            if label_set and r.data.tags.get(LABELS_TAG, "gold") != label_set:
                continue
            if r.data.tags.get(SPLIT_TAG, "all") != "all":  # not every golden query
                continue
            found = find_metric(r.data.metrics, metric_key)
            if found and (best_value is None or found[1] > best_value):
                best, best_value = r, found[1]
            elif not found and r.data.tags.get(METRICS_TABLE_TAG):
                tabled[r.info.run_id] = r
        token = page.token
        if not token:
            break
    for run_id, value in table_values(client, list(tabled), metric_key).items():
        if best_value is None or value > best_value:
            best, best_value = tabled[run_id], value
    return best


def table_values(client, run_ids: list[str], metric: str) -> dict[str, float]:
    """Run id -> value of ``metric`` (either spelling) read from the runs' metrics tables (the
    numbers a run logs beside its headline metrics), for runs whose table holds it."""
    from rageval.tracking.log import read_table

    keys = set(metric_keys(metric))
    out = {}
    for run_id in run_ids:
        table = read_table(client, run_id, METRICS_TABLE)
        for key, value in zip(table.get("key", []), table.get("value", []), strict=True):
            if key in keys and isinstance(value, int | float) and value == value:
                out[run_id] = float(value)
    return out


def count_runs(client, experiment: str, sweep: str | None = None) -> int:
    """Finished runs in ``experiment`` (one sweep's with ``sweep``), for error messages."""
    exp = client.get_experiment_by_name(experiment)
    if exp is None:
        return 0
    filt = "attributes.status = 'FINISHED'"
    if sweep:
        filt += f" and tags.`mlflow.parentRunId` = {quote(sweep)}"
    return len(client.search_runs([exp.experiment_id], filter_string=filt, max_results=1000))


def measured_on(client, experiment: str, sweep: str | None = None) -> dict[str, list[str]]:
    """The finished runs of ``experiment`` (one sweep's with ``sweep``) by what they were
    measured on: ``"golden|corpus|label set"`` (their digest tags) -> run ids; for the error that
    names the digest that actually differs."""
    exp = client.get_experiment_by_name(experiment)
    if exp is None:
        return {}
    filt = "attributes.status = 'FINISHED'"
    if sweep:
        filt += f" and tags.`mlflow.parentRunId` = {quote(sweep)}"
    out: dict[str, list[str]] = {}
    for r in client.search_runs([exp.experiment_id], filter_string=filt, max_results=1000):
        if r.data.tags.get("rageval.sweep") == "parent":
            continue
        tags = r.data.tags
        key = " ".join(
            (tags.get(GOLDEN_TAG, ""), tags.get(CORPUS_TAG, ""), tags.get(LABELS_TAG, "gold"))
        )
        out.setdefault(key, []).append(r.info.run_id)
    return out


def move_baseline_tag(client, run_id: str) -> None:
    """Tag ``run_id`` as its experiment's baseline and untag the previous one."""
    exp_id = client.get_run(run_id).info.experiment_id
    for old in client.search_runs([exp_id], filter_string=f"tags.`{BASELINE_TAG}` = 'true'"):
        if old.info.run_id != run_id:
            client.delete_tag(old.info.run_id, BASELINE_TAG)
    client.set_tag(run_id, BASELINE_TAG, "true")


def fetch_report(client, run_id: str, read: Callable[[str], dict[str, Any]]) -> dict[str, Any]:
    """The report.json artifact of MLflow run ``run_id``, read by ``read`` (a path -> the
    report); InputError when there is no such run or artifact."""
    try:
        run = client.get_run(run_id)
    except Exception:
        raise InputError(
            f"no MLflow run {run_id!r} in this tracking store; check --tracking-uri"
        ) from None
    bar = "MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR"  # three bars for one small file: noise
    saved = os.environ.get(bar)
    os.environ[bar] = "false"
    with tempfile.TemporaryDirectory() as tmp:
        try:
            path = client.download_artifacts(run.info.run_id, "report.json", tmp)
        except Exception:
            raise InputError(
                f"run {run_id} has no report.json artifact (was it logged by rageval?)"
            ) from None
        finally:
            if saved is None:
                os.environ.pop(bar, None)
            else:
                os.environ[bar] = saved
        return read(path)
