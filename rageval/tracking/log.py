"""Log one run to MLflow: params, metrics and tags in batched calls, the golden set and corpus as
dataset inputs, the run folder's files as artifacts. Writes nothing into the run folder."""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rageval.tracking.client import client_for, ensure_experiment, git_info, source_tags
from rageval.tracking.keys import (
    METRICS_TABLE,
    METRICS_TABLE_TAG,
    RUN_METRIC_LIMIT,
    headline_entries,
    metric_table,
    run_params,
)
from rageval.tracking.keys import run_name as default_run_name

# Files of a run folder logged as artifacts, when present (report.json is logged from memory,
# with the new run's id in it).
ARTIFACTS = (
    "per_query.csv",
    "slices.csv",
    "config.yaml",
    "metrics_at_k.png",
    "run.trec",
    "qrels.trec",
    "chunk_labels.tsv",
    "chunks.jsonl",
    "report.html",
)
DESCRIPTION_TAG = "mlflow.note.content"
DESCRIPTION_LIMIT = 8000  # MLflow's longest tag value; it cuts a longer one with a warning
BATCH_PARAMS_TAGS = 100  # MLflow's limits per log_batch call
BATCH_METRICS = 1000


def fit_description(text: str, limit: int = DESCRIPTION_LIMIT) -> str:
    """``text`` as a run description MLflow keeps whole: a longer one is cut at the last line
    that fits (never inside a table row), and says where the rest is."""
    if len(text) <= limit:
        return text
    tail = (
        "\n\n*Cut here to fit MLflow's description; the whole tables are among this run's "
        "artifacts (leaderboard.md; study.md for a tuning study).*"
    )
    cut = text.rfind("\n", 0, limit - len(tail))
    return text[: cut if cut > 0 else limit - len(tail)].rstrip() + tail


def _chunks(items: list, n: int):
    for i in range(0, len(items), n):
        yield items[i : i + n]


def log_batched(
    client,
    run_id: str,
    *,
    metrics: Mapping[str, float] = {},
    params: Mapping[str, str] = {},
    tags: Mapping[str, str] = {},
) -> None:
    """Metrics, params and tags in as few log_batch calls as MLflow's limits allow."""
    from mlflow.entities import Metric, Param, RunTag

    now = int(time.time() * 1000)
    ms = [Metric(k, float(v), now, 0) for k, v in metrics.items()]
    ps = [Param(k, str(v)) for k, v in params.items()]
    ts = [RunTag(k, str(v)) for k, v in tags.items()]
    while ms or ps or ts:
        client.log_batch(
            run_id,
            metrics=ms[:BATCH_METRICS],
            params=ps[:BATCH_PARAMS_TAGS],
            tags=ts[:BATCH_PARAMS_TAGS],
        )
        ms, ps, ts = ms[BATCH_METRICS:], ps[BATCH_PARAMS_TAGS:], ts[BATCH_PARAMS_TAGS:]


# what a tracking store says when another run created the same dataset between its look-up and
# its insert (SQLite, PostgreSQL, MySQL; through a server, inside a BAD_REQUEST)
_DATASET_RACE = ("UNIQUE constraint failed", "IntegrityError", "duplicate key", "Duplicate entry")


def log_inputs(client, run_id: str, inputs: list, attempts: int = 4) -> None:
    """Link the run to its dataset inputs, creating the datasets the experiment lacks.

    MLflow looks a dataset up and inserts it when missing in two steps, so two sweep jobs that log
    the same golden set at the same moment can both miss it, and the second insert fails on the
    store's unique key. The dataset exists by then: the call is made again, and the second try
    links the run to it. Any other error is raised at once."""
    for attempt in range(attempts):
        try:
            client.log_inputs(run_id, datasets=inputs)
            return
        except Exception as err:
            if attempt + 1 == attempts or not any(m in str(err) for m in _DATASET_RACE):
                raise
            time.sleep(0.1 * (attempt + 1))


# the run tag through which MLflow's UI knows an artifact is a table (what mlflow.log_table sets)
LOGGED_ARTIFACTS_TAG = "mlflow.loggedArtifacts"


def log_table(client, run_id: str, data: Mapping[str, list], artifact_file: str) -> None:
    """``data`` (column -> values of equal length) as a table artifact the way
    ``mlflow.log_table`` writes one (pandas' ``split`` JSON: ``columns`` and ``data`` rows, the
    run tagged so the UI's artifact view shows a table), except that a table already there is
    replaced, not appended to (a resumed study's parent run logs its leaderboard again)."""
    import tempfile

    columns = list(data)
    rows = [list(row) for row in zip(*(data[c] for c in columns), strict=True)]
    table = {"columns": columns, "data": [[_json_value(v) for v in row] for row in rows]}
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / Path(artifact_file).name
        path.write_text(json.dumps(table), encoding="utf-8")
        folder = str(Path(artifact_file).parent)
        client.log_artifact(run_id, str(path), None if folder == "." else folder)
    logged = json.loads(client.get_run(run_id).data.tags.get(LOGGED_ARTIFACTS_TAG) or "[]")
    entry = {"path": artifact_file, "type": "table"}
    if entry not in logged:
        client.set_tag(run_id, LOGGED_ARTIFACTS_TAG, json.dumps([*logged, entry]))


def _json_value(v: Any) -> Any:
    """A table cell as JSON holds it: NaN and infinities (which JSON lacks) as null."""
    if isinstance(v, float) and (v != v or v in (float("inf"), float("-inf"))):
        return None
    return v


def read_table(client, run_id: str, artifact_file: str) -> dict[str, list]:
    """A table :func:`log_table` (or ``mlflow.log_table``) logged on ``run_id``, as column ->
    values; empty when the run has no such table."""
    import os
    import tempfile

    bar = "MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR"  # three bars for one small file: noise
    saved = os.environ.get(bar)
    os.environ[bar] = "false"
    with tempfile.TemporaryDirectory() as tmp:
        try:
            path = client.download_artifacts(run_id, artifact_file, tmp)
        except Exception:
            return {}
        finally:
            if saved is None:
                os.environ.pop(bar, None)
            else:
                os.environ[bar] = saved
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    columns = data.get("columns") or []
    return {c: [row[i] for row in data.get("data") or []] for i, c in enumerate(columns)}


def log_artifacts(client, run_id: str, output_dir: Path) -> None:
    """The run folder's files named in ARTIFACTS (those present) as the run's artifacts."""
    for name in ARTIFACTS:
        if (output_dir / name).is_file():
            client.log_artifact(run_id, str(output_dir / name))


def dataset_inputs(report, config: Mapping[str, Any]) -> list:
    """The golden set and the corpus as MLflow dataset inputs (name, digest, source, size)."""
    from mlflow.entities import Dataset, DatasetInput, InputTag

    ds = config.get("dataset") or {}
    name = ds.get("name") or "dataset"
    counts = report.counts or {}
    entries = [
        ("golden", ds.get("golden") or ds.get("path"), {"queries": counts.get("queries")}),
        (
            "corpus",
            ds.get("corpus") or ds.get("path"),
            {"documents": counts.get("documents"), "chunks": counts.get("chunks")},
        ),
    ]
    out = []
    for role, source, profile in entries:
        digest = (report.digests or {}).get(role) or ""
        if not digest:
            continue
        dataset = Dataset(
            name=f"{name}/{role}",
            digest=digest[:36],  # MLflow stores at most 36 characters; the tag holds all of it
            source_type="local",
            source=json.dumps({"uri": str(source or "")}),
            profile=json.dumps({k: v for k, v in profile.items() if v is not None}),
        )
        context = "evaluation" if role == "golden" else "corpus"
        out.append(DatasetInput(dataset, tags=[InputTag("mlflow.data.context", context)]))
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
    job: int | None = None,
) -> str:
    """Log one job's report as an MLflow run; returns the run id.

    ``run_name`` defaults to the overrides and the job number (``chunk=512 search=bm25 #3``);
    ``tags`` are added to the run's; ``git=False`` leaves out the commit tags (a run logged later,
    from a checkout that may not be the one it was measured at). Nothing in ``output_dir`` is
    written: the caller records the returned id (report.json). A run that fails half-way is
    marked FAILED, never left RUNNING.
    """
    from rageval.formats.redact import redact
    from rageval.report.per_query import table

    client = client_for(uri)
    exp_id = ensure_experiment(client, experiment)
    info = git_info() if git else {}
    run_tags = {
        "rageval.golden_digest": report.digests.get("golden", ""),
        "rageval.corpus_digest": report.digests.get("corpus", ""),
        "rageval.model_fingerprint": report.digests.get("model", ""),
        "rageval.embedding": report.digests.get("embedding", ""),
        "rageval.level": report.level,
        # which labels the metrics counted (gold | all) and the judgements behind them: promote
        # --best and the gate never mix label sets
        "rageval.label_set": getattr(report, "label_set", "gold"),
        "rageval.judgements_digest": report.digests.get("judgements", ""),
        "rageval.k": str(report.k),
        "rageval.split": str((getattr(report, "split", None) or {}).get("name", "all")),
        # the headline is logged as metrics, every number in this table (and report.json)
        METRICS_TABLE_TAG: METRICS_TABLE,
        **({"rageval.git_dirty": info["git_dirty"]} if "git_dirty" in info else {}),
        **(source_tags(info) if git else {}),
        **(tags or {}),
    }
    if job is not None:
        run_tags["rageval.job"] = str(job)
    if sweep_id:
        run_tags["rageval.sweep_id"] = sweep_id
    if parent_run_id:
        run_tags["mlflow.parentRunId"] = parent_run_id
    name = run_name or default_run_name(report.overrides, job, config=config)
    run = client.create_run(exp_id, tags=run_tags, run_name=name)
    run_id = run.info.run_id
    try:
        log_batched(
            client,
            run_id,
            params=run_params(redact(dict(config)), choices),
            metrics=dict(headline_entries(report, config)),
        )
        inputs = dataset_inputs(report, config)
        if inputs:
            log_inputs(client, run_id, inputs)
        data = report.to_dict()
        data["mlflow_run_id"] = run_id
        client.log_text(run_id, json.dumps(data, indent=2, default=str), "report.json")
        log_artifacts(client, run_id, Path(output_dir))
        client.log_table(run_id, data=table(report.per_query), artifact_file="per_query.json")
        log_table(client, run_id, metric_table(report), METRICS_TABLE)
        client.set_terminated(run_id, "FINISHED")
    except BaseException as err:
        with contextlib.suppress(Exception):  # the server may be the thing that failed
            client.set_terminated(
                run_id, "KILLED" if isinstance(err, KeyboardInterrupt) else "FAILED"
            )
        raise
    return run_id


def run_url(uri: str, experiment_id: str, run_id: str) -> str:
    """The run's page in the MLflow UI: absolute for an http(s) tracking server, else the
    path to open under ``mlflow ui``."""
    path = f"#/experiments/{experiment_id}/runs/{run_id}"
    if uri.startswith(("http://", "https://")):
        return f"{uri.rstrip('/')}/{path}"
    return path


def view_url(uri: str, path: str) -> str:
    """``path`` (``#/experiments/...``) under the MLflow UI of ``uri``: absolute for an http(s)
    tracking server, else the path to open under ``mlflow ui`` (http://127.0.0.1:5000/ by
    default)."""
    if uri.startswith(("http://", "https://")):
        return f"{uri.rstrip('/')}/{path}"
    return f"http://127.0.0.1:5000/{path}"


def ui_command(uri: str) -> str:
    """How to look at ``uri``: ``mlflow ui --backend-store-uri sqlite:///...`` (a server: its
    URL)."""
    if uri.startswith(("http://", "https://")):
        return f"open {uri}"
    return f"mlflow ui --backend-store-uri {uri}"


def log_gate(uri: str, run_id: str, comparison) -> None:
    """A check's verdict on its re-run's MLflow run: the status as a tag, per gated metric its
    verdict as a tag and its change as a metric (``gate/<metric>/delta``, as many as the run's
    RUN_METRIC_LIMIT leaves room for), and the whole verdict (change, interval, the drop it
    detects) as the table ``gate.json``."""
    from rageval.scoring.spec import MetricSpec
    from rageval.tracking.client import client_for

    client = client_for(uri)
    room = RUN_METRIC_LIMIT - len(client.get_run(run_id).data.metrics)
    metrics: dict[str, float] = {}
    tags = {"rageval.gate.status": comparison.status}
    table: dict[str, list] = {c: [] for c in ("metric", "verdict", "delta", "low", "high")}
    table["detects"] = []
    for r in comparison.rows:
        key = MetricSpec.parse(r.metric).mlflow_key
        if r.delta == r.delta and len(metrics) < room:  # not nan
            metrics[f"gate/{key}/delta"] = r.delta
        tags[f"rageval.gate.{key}"] = r.verdict
        values = (r.metric, r.verdict, r.delta, r.low, r.high, r.detects)
        for column, value in zip(table, values, strict=True):
            table[column].append(value if value == value else None)
    log_batched(client, run_id, metrics=metrics, tags=tags)
    log_table(client, run_id, table, "gate.json")
