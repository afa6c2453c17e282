"""A sweep's parent run: what the MLflow UI shows of the sweep as a whole.

The parent carries the verdict: the best job's run id (tag and link in its description), that
job's metrics and swept values (so the runs table and charts show the sweep's result on the
parent's row), the comparison files the sweep wrote, and a description saying what was swept.
Children are renamed after their swept values only (``chunk=512 search=bm25 #3``).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rageval.config_schema import override_key
from rageval.tracking.keys import run_name, swept_keys
from rageval.tracking.log import DESCRIPTION_TAG, fit_description, log_batched, run_url

# Files of the sweep folder logged on the parent run.
SWEEP_ARTIFACT_SUFFIXES = (".md", ".csv", ".png", ".html", ".svg")


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
