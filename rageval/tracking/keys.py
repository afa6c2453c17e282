"""What a run looks like in MLflow: metric keys grouped into UI sections, the params worth a
column, and run names built from the values a user chose.

MLflow's run page and compare view group metric charts by the prefix before ``/``: rageval
logs ``headline/ndcg_at_5`` (the ranking metrics at the run's k, with ``_ci_low``/``_ci_high``
beside each), ``span/evidence_recall_at_5`` (span and token-budget metrics), ``cutoffs/ndcg_at_10``
(the other cutoffs of the metric@k curve: plain values, not a chart over steps),
``costs/latency_p95_ms`` and ``costs/index_s`` (rageval.report.costs; ``costs/tokens_at_5`` too:
one cost section), ``index/ann_recall_at_5`` (an approximate index's fidelity),
``stages/<stage>/...`` for
a hybrid or reranked run, and ``slice/source.ticket.recall_at_5`` (each slice's means,
:func:`slice_entries`). :func:`metric_key` gives the key of a metric name and
:func:`find_metric` reads one back from a run's metrics whatever its section.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from rageval.config_schema import measures, override_key
from rageval.errors import ConfigError
from rageval.formats.redact import redact_override
from rageval.scoring.spec import FAMILIES, MetricSpec

GROUPS = ("dataset", "embedding", "backend", "search", "rerank")
CUTOFFS = "cutoffs"
# Keys no params column needs at any depth (keys that change nothing measured are dropped by
# rageval.config_schema.measures)
DROP_ANY = {"_target_", "batch_size", "device", "enabled"}
# search.* keys that matter only to some modes
MODE_KEYS = {
    "fusion": {"hybrid", "semantic"},
    "rrf_k": {"hybrid", "semantic"},
    "weights": {"hybrid", "semantic"},
    "candidate_depth": {"hybrid", "semantic"},
    "bm25": {"bm25", "hybrid"},
}


def metric_key(name: str, k: int | None = None) -> str:
    """The MLflow key of a report's metric name: ``ndcg@5`` -> ``headline/ndcg_at_5`` when 5 is
    the run's ``k`` (or ``k`` is None), ``cutoffs/ndcg_at_10`` at another cutoff; budget metrics
    (``@1024t``) stay in their family's section; a name without a cutoff goes to its family's
    section (``span/evidence_precision_max``), else to ``other/``."""
    try:
        spec = MetricSpec.parse(name)
    except ConfigError:  # no cutoff (evidence_precision_max): its family's section, else other/
        key = name.replace("@", "_at_")
        family = max((f for f in FAMILIES if key.startswith(f + "_")), key=len, default=None)
        return f"{FAMILIES[family][0] if family else 'other'}/{key}"
    if k is not None and not spec.budget and spec.k != k:
        return f"{CUTOFFS}/{spec.mlflow_key}"
    return f"{spec.group}/{spec.mlflow_key}"


def metric_keys(name: str) -> list[str]:
    """Every key a metric may be logged under (its section, the cutoffs section, and the flat
    ``ndcg_at_5`` of runs logged before sections existed), for look-ups across runs."""
    spec = MetricSpec.parse(name)
    keys = [metric_key(name), f"{CUTOFFS}/{spec.mlflow_key}", spec.mlflow_key]
    return list(dict.fromkeys(keys))


def find_metric(metrics: Mapping[str, float], name: str) -> tuple[str, float] | None:
    """(key, value) of metric ``name`` (either spelling) in a run's metrics, or None."""
    for key in metric_keys(name):
        if key in metrics:
            return key, metrics[key]
    return None


def _finite(v: Any) -> bool:
    return v is not None and not (isinstance(v, float) and math.isnan(v))


def metric_entries(report) -> list[tuple[str, float]]:
    """(key, value) for every number a run measured: metrics in their sections, a 95% CI around
    each metric at the run's k, latency and stage timings."""
    out = []
    for name, value in report.metrics.items():
        if not _finite(value):
            continue
        key = metric_key(name, report.k)
        out.append((key, float(value)))
        lo, hi = (report.ci or {}).get(name) or (None, None)
        if not key.startswith(CUTOFFS) and _finite(lo) and _finite(hi):
            out += [(f"{key}_ci_low", float(lo)), (f"{key}_ci_high", float(hi))]
    out += cost_entries(report)
    out += stage_entries(report)
    return out


# A run logs at most this many MLflow metrics (the runs table and the compare view stay readable);
# the headline takes HEADLINE_LIMIT of them, a check's verdict (log_gate) the rest.
RUN_METRIC_LIMIT = 40
HEADLINE_LIMIT = 34
# The costs a person compares runs by, logged as MLflow metrics (the rest: the metrics table).
HEADLINE_COSTS = ("latency_p95_ms", "total_s", "embed_s", "index_disk_bytes", "index_memory_bytes")
# The logged table that holds every number of a run (its report.json holds them too); a run that
# logged one says so in this tag.
METRICS_TABLE = "metrics.json"
METRICS_TABLE_TAG = "rageval.metrics_table"


def _spelled(name: str) -> str | None:
    try:
        return str(MetricSpec.parse(str(name)))
    except ConfigError:
        return None


def headline_names(report, config: Mapping[str, Any] | None = None) -> list[str]:
    """The metrics a person reads first, in this order: the metric a sweep is decided by
    (``sweep.compare_metric``, else both candidates of the default rule: the budget metric and
    ``ndcg@k``), the gate's metrics, ``judged@k``, ``tokens@k`` and ``ann_recall@k``; only
    those the run measured."""
    from rageval.report.leaderboard import default_metric

    config = config or {}
    measured = {n for n, v in report.metrics.items() if _finite(v)}
    chosen = _spelled((config.get("sweep") or {}).get("compare_metric") or "")
    if chosen:
        decide = [chosen]
    else:  # a sweep that varies the chunking decides by a budget metric, else by ndcg@k
        decide = [default_metric(measured, report.k, ["chunk"])[0]]
        decide.append(default_metric(measured, report.k, [])[0])
    gate = [_spelled(m) for m in (config.get("gate") or {}).get("metrics") or []]
    k = report.k
    order = [*decide, *gate, f"judged@{k}", f"tokens@{k}", f"ann_recall@{k}"]
    return [n for n in dict.fromkeys(order) if n and n in measured]


# headline metrics logged without their CI (a share of the top k, not a result to compare)
_NO_CI = ("judged", "ann_recall")


def headline_entries(report, config: Mapping[str, Any] | None = None) -> list[tuple[str, float]]:
    """The (key, value) pairs a run logs as MLflow metrics, at most HEADLINE_LIMIT: each of
    :func:`headline_names` under the key :func:`metric_key` gives it (the same key runs logged
    before the headline existed), with ``_ci_low``/``_ci_high`` beside it, then the costs in
    HEADLINE_COSTS (``costs/latency_p95_ms``). Everything else: :func:`metric_table`."""
    out = []
    for name in headline_names(report, config):
        key = metric_key(name, report.k)
        out.append((key, float(report.metrics[name])))
        lo, hi = (report.ci or {}).get(name) or (None, None)
        if name.split("@")[0] not in _NO_CI and _finite(lo) and _finite(hi):
            out += [(f"{key}_ci_low", float(lo)), (f"{key}_ci_high", float(hi))]
    costs = dict(cost_entries(report))
    out += [(f"costs/{c}", costs[f"costs/{c}"]) for c in HEADLINE_COSTS if f"costs/{c}" in costs]
    return out[:HEADLINE_LIMIT]


def metric_table(report) -> dict[str, list]:
    """Every number of the run as the columns of one table (``mlflow.log_table``): ``key`` (the
    MLflow key it had when every number was a metric: ``cutoffs/ndcg_at_10``,
    ``judged/ndcg_cond_at_5``, ``costs/embed_s``, ``slice/source.ticket.recall_at_5``), ``metric``
    (the report's name, ``ndcg@10``), ``value``, ``ci_low``, ``ci_high`` (empty without a CI)."""
    rows: list[tuple[str, str, float, float | None, float | None]] = []
    for name, value in report.metrics.items():
        if _finite(value):
            lo, hi = (report.ci or {}).get(name) or (None, None)
            ci = (float(lo), float(hi)) if _finite(lo) and _finite(hi) else (None, None)
            rows.append((metric_key(name, report.k), name, float(value), *ci))
    seen = {r[0] for r in rows}
    for key, value in [*cost_entries(report), *stage_entries(report), *slice_entries(report)]:
        if key not in seen:
            rows.append((key, key.split("/", 1)[1], value, None, None))
    columns = ("key", "metric", "value", "ci_low", "ci_high")
    return {c: [r[i] for r in rows] for i, c in enumerate(columns)}


def cost_entries(report) -> list[tuple[str, float]]:
    """The run's costs block as ``costs/<name>`` (``costs/latency_p95_ms``, ``costs/embed_s``);
    a report written before the block existed logs its latency and timings there instead."""
    costs = dict(getattr(report, "costs", None) or {})
    if not costs:
        costs = {
            f"latency_{k}": v
            for k, v in (report.latency or {}).items()
            if k not in ("queries_sampled", "searches")
        }
        costs.update(report.timings or {})
    return [(f"costs/{k}", float(v)) for k, v in costs.items() if _finite(v)]


def stage_entries(report) -> list[tuple[str, float]]:
    """A staged run's stages as ``stages/<stage>/<number>`` (``stages/rerank/ndcg_at_5``,
    ``stages/retrieval/recall_at_depth``, ``stages/rerank/latency_p95_ms``) and each lift as
    ``stages/lift/<stage>_over_<input>/<metric>`` with ``..._p_value``."""
    block = getattr(report, "stages", None) or {}
    out: list[tuple[str, float]] = []
    for stage, row in (block.get("stages") or {}).items():
        for name, value in row.items():
            if isinstance(value, bool) or not isinstance(value, int | float) or not _finite(value):
                continue
            out.append((f"stages/{stage}/{name.replace('@', '_at_')}", float(value)))
    for x in block.get("lift") or []:
        if not _finite(x.get("delta")):
            continue
        key = f"stages/lift/{x['stage']}_over_{x['over']}/{x['metric'].replace('@', '_at_')}"
        out += [(key, float(x["delta"])), (f"{key}_p_value", float(x["p_value"]))]
    return out


def slice_entries(report) -> list[tuple[str, float]]:
    """(key, value) of each slice's means: ``slice/<field>.<value>.<metric>`` with the field and
    value made safe for MLflow by :func:`rageval.scoring.slices.key_part` (slices.csv maps each
    slice to its key prefix and holds the CIs)."""
    from rageval.scoring.slices import slice_key

    out = []
    for row in (getattr(report, "slices", None) or {}).get("rows") or []:
        for name, value in row["metrics"].items():
            if _finite(value):
                out.append((slice_key(row["field"], row["value"], name), float(value)))
    return out


def _flatten(d: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in d.items():
        if isinstance(v, Mapping):
            out.update(_flatten(v, f"{prefix}{k}."))
        else:
            out[f"{prefix}{k}"] = v
    return out


def run_params(config: Mapping[str, Any], choices: Mapping[str, str]) -> dict[str, str]:
    """The params worth a column: each group's chosen option, the top-level knobs, and the keys
    of each group that change what is measured. No ``_target_`` class paths, no cache or batch
    sizes, no gate/mlflow blocks, no ``backend.*`` key repeating a ``search.*`` one, no None.
    The resolved config stays whole in the run's config.yaml artifact."""
    from rageval.formats.redact import redact

    config = redact(dict(config))
    params: dict[str, Any] = {g: c for g, c in choices.items() if g in GROUPS and c}
    search = config.get("search") or {}
    mode = search.get("mode")
    for key, value in config.items():
        if not measures(key) or key in DROP_ANY:
            continue
        if isinstance(value, Mapping):
            if key == "rerank" and not value.get("enabled", True):
                continue
            flat = _flatten(value)
            for sub, v in flat.items():
                head, leaf = sub.split(".", 1)[0], sub.rsplit(".", 1)[-1]
                if leaf in DROP_ANY or head in DROP_ANY or not measures(f"{key}.{sub}"):
                    continue
                if key == "search" and head in MODE_KEYS and mode not in MODE_KEYS[head]:
                    continue
                if key == "backend" and (_repeats(search, sub, v) or _unused_index_key(value, sub)):
                    continue
                if key == "dataset" and sub == "name" and v == choices.get("dataset"):
                    continue
                params[f"{key}.{sub}"] = v
        elif key != "allow_model_mismatch" or value:
            params[key] = value
    if params.get("split", "all") == "all":  # no split drawn: its fraction and seed mean nothing
        params.pop("holdout_fraction", None)
        params.pop("split_seed", None)
    # a masked secret stays (as ***): the run needed one, and a rerun must supply it
    return {k: _param(v) for k, v in params.items() if v is not None and v != ""}


def _repeats(search: Mapping[str, Any], sub: str, value: Any) -> bool:
    """A backend key that interpolates the search group (``backend.mode: ${search.mode}``)."""
    node: Any = search
    for part in sub.split("."):
        if not isinstance(node, Mapping) or part not in node:
            return False
        node = node[part]
    return node == value


# FAISS settings that only some index types read: logged when the index type uses them.
INDEX_KEYS = {
    "hnsw_": ("hnsw", "auto"),
    "ivf_": ("ivf", "ivfpq", "auto"),
    "ivfpq_": ("ivfpq", "auto"),
    "auto_": ("auto",),
}


def _unused_index_key(backend: Mapping[str, Any], sub: str) -> bool:
    faiss = backend.get("faiss")
    if not sub.startswith("faiss.") or not isinstance(faiss, Mapping):
        return False
    leaf = sub.split(".", 1)[1]
    kind = faiss.get("index_type")
    return any(leaf.startswith(p) and kind not in kinds for p, kinds in INDEX_KEYS.items())


def _param(v: Any) -> str:
    if isinstance(v, list | tuple):
        return ",".join(map(str, v))[:6000]
    return str(v)[:6000]


def swept_keys(overrides_by_job: Sequence[Sequence[str]]) -> list[str]:
    """Override keys whose value differs between jobs, in first-seen order."""
    seen: dict[str, set[str]] = {}
    for overrides in overrides_by_job:
        for o in overrides:
            key, _, value = o.partition("=")
            seen.setdefault(key, set()).add(value)
    for key in seen:
        for overrides in overrides_by_job:
            if not any(o.partition("=")[0] == key for o in overrides):
                seen[key].add("")
    return [k for k, values in seen.items() if len(values) > 1]


def run_name(
    overrides: Sequence[str],
    job: int | None = None,
    keys: Sequence[str] | None = None,
    config: Mapping[str, Any] | None = None,
) -> str:
    """``chunk=512 search=bm25 #3``: the overrides (only ``keys`` when given, e.g. a sweep's swept
    keys), then the job number, secrets masked. A run without such overrides is named after its
    chunk and search mode."""
    # masked first: a name is shown everywhere (runs table, tags), a secret never is
    masked = [redact_override(o) for o in overrides if "=" in o]
    parts = [f"{override_key(o)}={o.split('=', 1)[1]}" for o in masked]
    if keys is not None:
        parts = [o for o in parts if o.split("=", 1)[0] in keys]
    else:  # paths and plumbing (cache_dir=..., hydra.run.dir=...) make no name
        parts = [o for o in parts if measures(o) and "/" not in o.split("=", 1)[1]]
    if not parts and config:
        mode = (config.get("search") or {}).get("mode", "?")
        parts = [f"chunk={config.get('chunk', '?')}", f"search={mode}"]
    name = " ".join(parts)[:200] or "run"
    return f"{name} #{job}" if job is not None else name
