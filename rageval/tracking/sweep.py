"""A sweep's parent run: what the MLflow UI shows of the sweep as a whole.

The parent carries the verdict: the best job's run id (tag and link in its description), that
job's metrics and swept values (so the runs table and charts show the sweep's result on the
parent's row), the comparison files the sweep wrote, and a description saying what was swept.
Children are renamed after their swept values only (``chunk=512 search=bm25 #3``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from rageval.config_schema import override_key
from rageval.redact import redact_override
from rageval.tracking.client import client_for, ensure_experiment, git_info, source_tags
from rageval.tracking.keys import find_metric, metric_key, run_name, swept_keys
from rageval.tracking.log import DESCRIPTION_TAG, fit_description, log_batched, run_url

# Files of the sweep folder logged on the parent run.
SWEEP_ARTIFACT_SUFFIXES = (".md", ".csv", ".png", ".html", ".svg")


def start_parent_run(
    uri: str,
    experiment: str,
    sweep_dir: Path,
    task: Sequence[str],
    resume: Any = None,
) -> str:
    """The sweep's parent run, before any job starts: a new run tagged with the sweep folder and
    its overrides, or (``resume()`` naming one) a resumed study's earlier parent run, reopened.
    Returns its id; raises what MLflow raises."""
    from rageval.tracking.study import reopen_run

    client = client_for(uri)
    exp_id = ensure_experiment(client, experiment)
    overrides = " ".join(redact_override(o) for o in task)
    resumed = reopen_run(client, resume() if resume is not None else None)
    if resumed:  # a tuning study that is resumed carries on under its first parent run
        client.set_tag(resumed, "rageval.sweep_id", str(sweep_dir))
        return client.get_run(resumed).info.run_id
    name = f"sweep {Path(sweep_dir).name}: {run_name(list(task))}"
    run = client.create_run(
        exp_id,
        run_name=name[:250],
        tags={
            **source_tags(git_info()),
            "rageval.sweep": "parent",
            "rageval.sweep_id": str(sweep_dir),
            "rageval.sweep_overrides": overrides,
        },
    )
    return run.info.run_id


def find_parent_run(uri: str, experiment: str, sweep_dir: str) -> str | None:
    """The newest parent run MLflow holds for the sweep folder ``sweep_dir`` (None: none)."""
    client = client_for(uri)
    exp = client.get_experiment_by_name(experiment)
    if exp is None:
        return None
    runs = client.search_runs(
        [exp.experiment_id],
        f"tags.`rageval.sweep` = 'parent' and tags.`rageval.sweep_id` = '{sweep_dir}'",
        max_results=1,
        order_by=["attributes.start_time DESC"],
    )
    return runs[0].info.run_id if runs else None


def close_parent_run(
    uri: str,
    parent: str,
    rows: Sequence[dict[str, Any]],
    board,
    *,
    sweep_dir: Path,
    command: str,
    study: Mapping[str, Any] | None,
    study_file: Path,
    failed: bool,
) -> str:
    """The sweep's verdict on its parent run (:func:`summarise_sweep`, the Pareto front, a
    study's outcome from ``study_file``), then the run closed: FAILED when ``failed``. Returns
    the path of the sweep's view of the runs table (:func:`share_sweep_view`)."""
    from rageval.tracking.study import log_outcome

    client = client_for(uri)
    summarise_sweep(
        client,
        parent,
        rows,
        compare_metric=board.metric,
        sweep_dir=sweep_dir,
        uri=uri,
        command=command,
        best_job=board.best,
        swept_params=study is None,
    )
    tag_pareto_front(client, parent, rows, board)
    if study is not None:
        log_outcome(client, parent, study_file, study, uri=uri)
    client.set_terminated(parent, "FAILED" if failed else "FINISHED")
    logged: dict[str, float] = {}
    for r in rows:  # the key the jobs logged the deciding metric under (headline or cutoffs)
        if r.get("run_id") and r.get("status", "ok") == "ok":
            logged = client.get_run(r["run_id"]).data.metrics
            break
    experiment = client.get_run(parent).info.experiment_id
    return share_sweep_view(client, experiment, parent, board, logged)


# The experiment tag MLflow's UI keeps a shared view of the runs table in (its Share button);
# opened with ``?viewStateShareKey=<key>`` on the experiment's page.
SHARED_VIEW_TAG = "mlflow.sharedViewState."


def sweep_view_state(
    metric: str, pareto_cost: str | None, logged: Mapping[str, float] | None = None
) -> dict[str, Any]:
    """The runs table a sweep is read in: sorted by its deciding metric, best first, with that
    metric (and the Pareto front's cost) among the columns. Only keys MLflow's shared view
    reads (search facets and the table's columns). ``logged``: a job's metrics, to use the key
    the jobs logged the metric under."""
    found = find_metric(logged or {}, metric)
    decided = f"metrics.`{found[0] if found else metric_key(metric)}`"
    columns = [decided]
    if pareto_cost:
        columns.append(f"metrics.`costs/{pareto_cost}`")
    return {"orderByKey": decided, "orderByAsc": False, "selectedColumns": columns}


def share_sweep_view(
    client, experiment_id: str, parent: str, board, logged: Mapping[str, float] | None = None
) -> str:
    """Store the sweep's view of the runs table on its experiment (one key per sweep); the path
    that opens it under the MLflow UI."""
    import json

    key = f"rageval-{parent[:16]}"
    state = sweep_view_state(board.metric, getattr(board, "pareto_cost", None), logged)
    client.set_experiment_tag(experiment_id, SHARED_VIEW_TAG + key, json.dumps(state))
    # the runs tab in MLflow 3's "model training" view, which the shared view's columns belong to
    return (
        f"#/experiments/{experiment_id}/runs?workflowType=machine_learning&viewStateShareKey={key}"
    )


def tag_pareto_front(client, parent: str, rows: Sequence[dict[str, Any]], board) -> None:
    """The front in MLflow: the parent run names the cost and the jobs on it, and each job on it
    is tagged ``rageval.pareto_front=true`` (filter the runs table with
    ``tags.rageval.pareto_front = 'true'``)."""
    front = " ".join(str(j) for j in board.front)
    client.set_tag(parent, "rageval.pareto_cost", board.pareto_cost)
    client.set_tag(parent, "rageval.pareto_front", front)
    for r in rows:
        if r.get("run_id") and r["job"] in board.front:
            client.set_tag(r["run_id"], "rageval.pareto_front", "true")


def _best(rows: Sequence[dict[str, Any]], metric: str) -> dict[str, Any] | None:
    ok = [r for r in rows if r.get("status") == "ok" and r.get("metrics")]
    scored = [(r["metrics"].get(metric), r) for r in ok]
    scored = [(v, r) for v, r in scored if isinstance(v, int | float) and v == v]
    return max(scored, key=lambda x: x[0])[1] if scored else None


def summarise_sweep(
    client,
    parent_id: str,
    rows: Sequence[dict[str, Any]],
    *,
    compare_metric: str,
    sweep_dir: Path,
    uri: str,
    command: str = "",
    best_job: int | None = None,
    swept_params: bool = True,
) -> dict[str, Any] | None:
    """Rename the children, and give the parent the best job's id, metrics and swept values, the
    sweep's files and a description. ``rows`` are the sweep's jobs (``job``, ``status``,
    ``overrides``, ``metrics``, ``run_id``); ``best_job`` overrides the pick by ``compare_metric``.
    ``swept_params=False`` leaves the swept values out of the parent's params: a tuning study's
    parent outlives one command (a resumed study's best may change, and MLflow params cannot),
    so its best configuration goes in a tag instead. Returns the best row (None when no job
    finished)."""
    keys = swept_keys([r.get("overrides") or [] for r in rows])
    for r in rows:
        if r.get("run_id"):
            name = run_name(r.get("overrides") or [], r["job"], keys=keys)
            client.set_tag(r["run_id"], "mlflow.runName", name)
    best = next((r for r in rows if r.get("job") == best_job and r.get("status") == "ok"), None)
    best = best or _best(rows, compare_metric)
    failed = [r for r in rows if r.get("status") != "ok"]
    tags = {
        "rageval.jobs": str(len(rows)),
        "rageval.jobs_failed": str(len(failed)),
        "rageval.compare_metric": compare_metric,
        "rageval.swept": " ".join(keys),
    }
    metrics: dict[str, float] = {}
    params: dict[str, str] = {}
    link = ""
    if best is not None:
        tags["rageval.best_job"] = str(best["job"])
        lines = [o for o in best.get("overrides") or [] if "=" in o]
        chosen = {override_key(o): o.split("=", 1)[1] for o in lines}
        params = {k: chosen[k] for k in keys if k in chosen}
        if best.get("run_id"):
            child = client.get_run(best["run_id"])
            tags["rageval.best_run_id"] = best["run_id"]
            link = run_url(uri, child.info.experiment_id, best["run_id"])
            tags["rageval.best_run_url"] = link
            metrics = dict(child.data.metrics)
            # the swept params as the child logged them (search -> search.mode too)
            params.update({k: v for k, v in child.data.params.items() if k in keys})
    tags[DESCRIPTION_TAG] = _description(rows, keys, best, compare_metric, command, link, sweep_dir)
    params = params if swept_params else {}
    log_batched(client, parent_id, metrics=metrics, params=params, tags=tags)
    for f in sorted(Path(sweep_dir).iterdir()):
        if f.is_file() and f.suffix in SWEEP_ARTIFACT_SUFFIXES and not f.name.startswith("."):
            client.log_artifact(parent_id, str(f))
    return best


def _description(rows, keys, best, metric, command, link, sweep_dir) -> str:
    ok = sum(r.get("status") == "ok" for r in rows)
    lines = [
        f"**Sweep** of {len(rows)} jobs ({ok} finished) over {', '.join(keys) or 'no swept key'}."
    ]
    if command:
        lines.append(f"\n`{command}`")
    if best is not None:
        value = best["metrics"].get(metric)
        shown = f" = {value:.4f}" if isinstance(value, int | float) else ""
        name = run_name(best.get("overrides") or [], best["job"], keys=keys)
        target = f"[{name}]({link})" if link else name
        lines.append(
            f"\n**Best by {metric}**{shown}: {target}; its metrics and swept values are "
            "logged on this run."
        )
    md = Path(sweep_dir) / "leaderboard.md"
    md = md if md.is_file() else Path(sweep_dir) / "comparison.md"
    lines.append("\nFiles: the artifacts of this run; each job is a child run below it.")
    if md.is_file():  # last: what a cut to MLflow's length drops
        lines.append("\n" + md.read_text(encoding="utf-8"))
    return fit_description("\n".join(lines))
