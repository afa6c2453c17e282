"""Finding runs again: the best run of an experiment or sweep by a metric, whatever section
(``headline/``, ``cutoffs/``, or the flat key of older runs) it was logged under."""

from __future__ import annotations

from rageval.errors import InputError
from rageval.tracking.keys import find_metric


def best_run_id(client, experiment: str, metric: str, sweep: str | None = None) -> str:
    """The finished run with the highest ``metric`` (``ndcg@5`` or ``ndcg_at_5``) in
    ``experiment``, or among the children of the sweep's parent run ``sweep``."""
    exp = client.get_experiment_by_name(experiment)
    if exp is None:
        raise InputError(f"no MLflow experiment named {experiment!r}; pass --experiment")
    filt = "attributes.status = 'FINISHED'"
    if sweep:
        filt += f" and tags.`mlflow.parentRunId` = '{sweep}'"
    best: tuple[float, str] | None = None
    token = None
    while True:
        page = client.search_runs([exp.experiment_id], filter_string=filt, max_results=1000,
                                  page_token=token)  # fmt: skip
        for r in page:
            if r.data.tags.get("rageval.sweep") == "parent":  # holds a copy of its best child's
                continue
            found = find_metric(r.data.metrics, metric)
            if found and (best is None or found[1] > best[0]):
                best = (found[1], r.info.run_id)
        token = page.token
        if not token:
            break
    if best is None:
        where = f" sweep {sweep}" if sweep else ""
        raise InputError(
            f"no finished run in {experiment!r}{where} has metric {metric!r}; check the name "
            "(e.g. ndcg@5) and --experiment"
        )
    return best[1]
