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
from rageval.formats.redact import redact_override
from rageval.scoring.spec import MetricSpec
from rageval.tracking.client import client_for, ensure_experiment, git_info, source_tags
from rageval.tracking.keys import find_metric, metric_key, run_name, swept_keys
from rageval.tracking.log import (
    DESCRIPTION_TAG,
    fit_description,
    log_batched,
    log_table,
    run_url,
)

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
    headline: Sequence[str] = (),
) -> str:
    """The sweep's verdict on its parent run (:func:`summarise_sweep`, the Pareto front, the
    leaderboard and slice tables, a study's outcome from ``study_file``) and on its jobs (the
    ``rageval.verdict`` tag), then the run closed: FAILED when ``failed``. Returns the path of
    the sweep's view of the runs table (:func:`share_sweep_view`), whose columns are the swept
    params, the deciding metric and ``headline`` (the gate's metrics)."""
    from rageval.tracking.study import log_outcome

    client = client_for(uri)
    tag_verdicts(client, rows, board)
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
    log_board_tables(client, parent, board)
    if study is not None:
        log_outcome(client, parent, study_file, study, uri=uri)
    client.set_terminated(parent, "FAILED" if failed else "FINISHED")
    logged = None
    for r in rows:  # the keys the jobs logged their metrics and params under
        if r.get("run_id") and r.get("status", "ok") == "ok":
            logged = client.get_run(r["run_id"]).data
            break
    experiment = client.get_run(parent).info.experiment_id
    keys = swept_keys([r.get("overrides") or [] for r in rows])
    names = [run_name(r.get("overrides") or [], r["job"], keys=keys) for r in rows]
    return share_sweep_view(client, experiment, parent, board, logged, keys, headline, names)


# The experiment tag MLflow's UI keeps a shared view of the runs table in (its Share button);
# opened with ``?viewStateShareKey=<key>`` on the experiment's page.
SHARED_VIEW_TAG = "mlflow.sharedViewState."


def sweep_view_state(
    parent: str,
    metric: str,
    logged=None,
    swept: Sequence[str] = (),
    headline: Sequence[str] = (),
    names: Sequence[str] = (),
) -> dict[str, Any]:
    """The runs table a sweep is read in: only the jobs of the sweep whose parent run is
    ``parent`` (``tags.mlflow.parentRunId``), best first by its deciding ``metric``, with the
    swept params, the deciding metric, the ``headline`` metrics (the gate's), tokens, p95
    latency and the jobs' verdict (best, tied) as its columns, in that order, each wide enough
    for its name. ``logged``: a job's run data (``metrics``, ``params``), to use the keys the
    jobs logged; ``names``: the jobs' run names, to fit their column. The chart view
    (:func:`_charts`) opens on the deciding metric. Only keys MLflow's shared view reads (search
    facets and the UI state)."""
    metrics = dict(getattr(logged, "metrics", None) or {})
    params = getattr(logged, "params", None)
    found = find_metric(metrics, metric)
    decided = found[0] if found else metric_key(metric)
    keys = [decided]
    for name in headline:
        hit = find_metric(metrics, name) if MetricSpec.is_metric(name) else None
        keys += [hit[0]] if hit else []
    keys += sorted(k for k in metrics if k.startswith("costs/tokens_at_") and "_ci_" not in k)
    keys += [k for k in ("costs/latency_p95_ms",) if k in metrics]
    shown = [p for p in swept if params is None or p in params]
    columns = [f"tags.`{VERDICT_TAG}`", *(f"params.`{p}`" for p in shown)]
    columns += [f"metrics.`{k}`" for k in dict.fromkeys(keys)]
    return {
        **_charts(decided, shown, [k for k in keys[1:] if k.startswith("costs/")]),
        "searchFilter": f"tags.`mlflow.parentRunId` = '{parent}'",
        "orderByKey": f"metrics.`{decided}`",
        "orderByAsc": False,
        "selectedColumns": columns,
        # MLflow applies widths with the order (ag-grid's column state): our columns come first,
        # in this order, left of the ones MLflow adds (created, duration, ...)
        "columnOrder": [RUN_NAME_COLUMN, *columns],
        "columnWidths": {
            RUN_NAME_COLUMN: max(160, 7 * max(map(len, names), default=0) + 50),
            **{c: _width(c) for c in columns},
        },
    }


# the runs table's run name column (MLflow's column id)
RUN_NAME_COLUMN = "attributes.`Run Name`"


def _charts(decided: str, params: Sequence[str], costs: Sequence[str]) -> dict[str, Any]:
    """The chart view's first section (``compareRunsMode=CHART``): the deciding metric per job
    (bars, best first), the swept params against it (parallel coordinates) and the deciding
    metric against each headline cost (scatter); MLflow adds its own charts of every metric
    in sections below."""
    section = "rageval-sweep"

    def card(n: int, kind: str, **fields: Any) -> dict[str, Any]:
        return {
            "uuid": f"{section}-{n}",
            "type": kind,
            "runsCountToCompare": 100,
            "metricSectionId": section,
            "deleted": False,
            "isGenerated": False,
            **fields,
        }

    cards = [card(0, "BAR", metricKey=decided)]
    if params:
        cards.append(card(1, "PARALLEL", selectedParams=list(params), selectedMetrics=[decided]))
    for i, cost in enumerate(costs):
        axis = {
            "xaxis": {"key": cost, "type": "METRIC"},
            "yaxis": {"key": decided, "type": "METRIC"},
        }
        cards.append(card(2 + i, "SCATTER", **axis))
    sections = [
        {
            "uuid": section,
            "name": f"The sweep, decided by {decided}",
            "display": True,
            "isReordered": False,
            "deleted": False,
            "isGenerated": False,
        }
    ]
    # isAccordionReordered: MLflow keeps these sections as given (else it regenerates its own)
    return {
        "compareRunCharts": cards,
        "compareRunSections": sections,
        "isAccordionReordered": True,
    }


def _width(column: str) -> int:
    """Pixels for a column whose header reads its whole key (MLflow cuts a header at ~120 px)."""
    name = column.split("`")[1]
    return max(110, 7 * len(name) + 40)


def share_sweep_view(
    client,
    experiment_id: str,
    parent: str,
    board,
    logged=None,
    swept: Sequence[str] = (),
    headline: Sequence[str] = (),
    names: Sequence[str] = (),
) -> str:
    """Store the sweep's view of the runs table (:func:`sweep_view_state`) on its experiment,
    one key per sweep; the path that opens it under the MLflow UI (add
    ``&compareRunsMode=CHART`` for its charts)."""
    import json

    key = f"rageval-{parent[:16]}"
    state = sweep_view_state(parent, board.metric, logged, swept, headline, names)
    client.set_experiment_tag(experiment_id, SHARED_VIEW_TAG + key, json.dumps(state))
    # the runs tab in MLflow 3's "model training" view, which the shared view's columns belong to
    return (
        f"#/experiments/{experiment_id}/runs?workflowType=machine_learning&viewStateShareKey={key}"
    )


# A job's verdict in its sweep, as the leaderboard's verdict column: best, tied (the paired test
# cannot tell it from the best); no tag on the others.
VERDICT_TAG = "rageval.verdict"


def tag_verdicts(client, rows: Sequence[dict[str, Any]], board) -> None:
    """Tag each job the leaderboard marks best or tied with ``rageval.verdict``."""
    for r in rows:
        verdict = board.verdict.get(r["job"], "")
        if r.get("run_id") and verdict in ("best", "tied"):
            client.set_tag(r["run_id"], VERDICT_TAG, verdict)


def log_board_tables(client, parent: str, board) -> None:
    """The leaderboard (every column of leaderboard.csv) and the deciding metric by slice as
    tables on the parent run (``leaderboard.json``, ``slices.json``), which MLflow's artifact
    view renders and ``mlflow.load_table`` reads."""
    import csv
    import io

    lines = list(csv.reader(io.StringIO(board.csv())))
    if len(lines) > 1:
        head, body = lines[0], lines[1:]
        table = {h: [_number(row[i]) for row in body] for i, h in enumerate(head)}
        log_table(client, parent, table, "leaderboard.json")
    slices = getattr(board, "slices", None)
    if slices is None or not slices.names:
        return
    rows = [
        (job, name, *cells[name])
        for job, cells in sorted(slices.cells.items())
        for name in slices.names
        if name in cells
    ]
    columns = ("job", "slice", "n", slices.metric, "ci_low", "ci_high")
    table = {c: [r[i] for r in rows] for i, c in enumerate(columns)}
    log_table(client, parent, table, "slices.json")


def _number(text: str) -> Any:
    try:
        return float(text) if text.strip() else None
    except ValueError:
        return text


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
