"""The config's contract: every top-level key, its type and default, and whether it changes what
a run measures. The one place a reader looks a key up.

``conf/rageval.yaml`` extends this schema (registered in Hydra's ConfigStore by
rageval.app.schema), so Hydra checks types at compose time (``chunk=abc`` is refused). The group
nodes (dataset, embedding, backend, search, rerank) are open mappings: each option names its own
``_target_`` and arguments, documented in its YAML file; the keys inside them that do not change
what is measured are listed in ``GROUP_EXECUTION_KEYS``.

**Measured or not.** A key whose field says ``measures=False`` (and every key below it) says where
or how a run executes, or how its report breaks the queries down, never which rankings come back
or how they score. One query, :func:`measures`, answers for every consumer: the gate's config
diff and its replay of a baseline (``rageval check`` keeps this machine's values of them), the
MLflow params, a run's title on its pages. A new key is added here (and in conf/rageval.yaml),
with the flag; nothing else lists keys.

This module is plain dataclasses (``"???"`` is OmegaConf's mark of a mandatory value), so the core
reads it without importing Hydra or OmegaConf.
"""

from __future__ import annotations

import re
from dataclasses import MISSING as NO_DEFAULT
from dataclasses import dataclass, field, fields, is_dataclass
from typing import Any

MISSING: Any = "???"  # omegaconf.MISSING


def place(default: Any = None, *, factory: Any = None) -> Any:
    """A field that does not change what a run measures (``measures=False``)."""
    if factory is not None:
        return field(default_factory=factory, metadata={"measures": False})
    return field(default=default, metadata={"measures": False})


@dataclass
class MlflowConfig:
    """Where and whether runs are logged."""

    enabled: bool = True
    # null: $MLFLOW_TRACKING_URI, else sqlite:///mlflow.db at the project root
    tracking_uri: str | None = None
    experiment: str = "rageval"
    run_name: str | None = None


# The metrics the gate checks by default, each at the headline cutoff k
GATE_METRICS = ("precision", "recall", "hit_rate", "mrr", "ndcg", "map")


def gate_metrics(k: int | str = "${k}") -> list[str]:
    """The default gated metrics at cutoff ``k`` (the config's ``${k}`` unless given)."""
    return [f"{m}@{k}" for m in GATE_METRICS]


@dataclass
class GateConfig:
    """The regression gate (``rageval check``, rageval.gate.compare; docs/gate.md): the one place
    its defaults are written. conf/rageval.yaml takes them from here (through the schema), and
    ``rageval.compare``, the check, sweeps and tuning studies read them from this class. Not
    frozen: OmegaConf makes a frozen dataclass a read-only node, and ``gate.tolerance=0.05`` must
    override it."""

    metrics: list[str] = field(default_factory=gate_metrics)
    # the drop (absolute) allowed on every metric, and per metric (recall_at_5 or recall@5)
    tolerance: float = 0.03
    tolerances: dict[str, float] = field(default_factory=dict)
    # per-slice gates (rageval.gate.slices): {source=adversarial: {recall@5: 0.05}}, ...
    slices: dict[str, Any] = field(default_factory=dict)
    # what an inconclusive check does (warn | fail | pass) and a moved embedding (warn | fail)
    on_inconclusive: str = "warn"
    on_embedding_drift: str = "warn"
    # also gate the metric the baseline was promoted by (`rageval promote --best M`)
    promoted_metric: bool = True
    # the paired tests' level and the randomization test's resamples
    alpha: float = 0.05
    resamples: int = 10_000


@dataclass
class SweepConfig:
    """How a sweep's leaderboard decides (rageval.report.leaderboard)."""

    # null: evidence_recall@1024t with evidence quotes or a sweep over the chunking, else ndcg@k
    compare_metric: str | None = None
    # jobs the paired randomization test cannot tell from the best at this level are "tied"
    alpha: float = GateConfig.alpha
    resamples: int = GateConfig.resamples
    # costs (rageval.report.costs): the cost the Pareto front weighs against the deciding metric
    # (latency_p95_ms, tokens_per_query, index_disk_bytes, embed_s, ...; docs/costs.md)
    pareto_cost: str = "latency_p95_ms"
    # what a sweep prints per job: one line (false) or the tables a single run prints (true)
    verbose: bool = False


@dataclass
class RagevalConfig:
    """The top-level keys of a run's config and their types."""

    dataset: dict[str, Any] = MISSING
    embedding: dict[str, Any] = MISSING
    backend: dict[str, Any] = MISSING
    search: dict[str, Any] = MISSING
    # null: no reranking; rerank=cross_encoder picks a reranker
    rerank: dict[str, Any] | None = None
    chunk: int = 256
    chunk_overlap: int = 0
    k: int = 5
    ks: list[int] = field(default_factory=lambda: [1, 3, 5, 10, 20])
    # token budgets of the ...@Bt metrics (docs/metrics.md); [] turns them off
    budgets: list[int] = field(default_factory=lambda: [256, 512, 1024, 2048])
    level: str = "auto"
    depth: int | None = None
    latency_sample: int = place(100)
    query_batch: int = place(10_000)
    allow_model_mismatch: bool = False
    # a larger document (MB of UTF-8 text) is refused, naming it
    max_document_mb: float = 50
    retries: int = place(2)
    retry_backoff: float = place(0.5)
    cache_dir: str = place(MISSING)
    # slices (rageval.scoring.slices): the fields the report slices by (source, tags, any key
    # of a golden line's meta) and the smallest slice reported on its own (smaller: <field>=other)
    slices: list[str] = place(factory=lambda: ["source"])
    min_slice_size: int = place(10)
    # judgements (docs/metrics.md "Judgements"): the judgements file (null: judgements.jsonl next
    # to the golden set), the label set (gold: golden labels + human judgements; all: adds the
    # accepted LLM judgements) and the judged@k below which a run warns
    judgements: str | None = None
    labels: str = "gold"
    # labels=ppi: the estimates' intervals (rageval.scoring.ppi): t = Student-t with
    # Welch-Satterthwaite degrees of freedom; z = the normal (CLT) interval of ppi_py. The
    # estimates and per-query values do not depend on it, only the intervals and the gate's
    ppi_interval: str = place("t")
    judged_warn_below: float = place(0.5)
    # Golden-set split (tuning studies, rageval.inputs.split): all | tune | holdout, the share of
    # queries held out, and the seed of the query-id hash that draws the split.
    split: str = "all"
    holdout_fraction: float = 0.3
    split_seed: int = 0
    mlflow: MlflowConfig = place(factory=MlflowConfig)
    sweep: SweepConfig = place(factory=SweepConfig)
    gate: GateConfig = place(factory=GateConfig)
    # settings a project declares secret beyond SECRET_NAMES (dotted keys: [extra.conninfo])
    secrets: list[str] = place(factory=list)


# Keys that turn a config node into code: Hydra's instantiation keys, and the adapters' import
# paths and their arguments. Code is named only by the project's conf/ and rageval.yaml: no file
# rageval reads (a baseline, a report, a study's baseline) ever sets one (docs/reliability.md).
CODE_KEYS = frozenset(
    {"_target_", "_args_", "_partial_", "_recursive_", "_convert_", "factory", "function", "kwargs"}
)


# Settings that hold secrets, declared here by name (not guessed from a word inside it): a key
# named so, ending in _<name> or starting secret_/password_ (backend.api_key,
# extra.db_password), at any depth, and every key a project lists in `secrets`
# (extra.conninfo). Their values are never written to a file, an MLflow field or a console
# line, and a replay takes them from the environment variable the project's config reads (never
# from a file): a baseline stores none of them. Every other value (backend.doc_id_key,
# backend.min_token_length) is stored verbatim so a replay is exact. Names of environment
# variables (*_env) are not secrets.
SECRET_NAMES = frozenset(
    {
        "api_key",
        "apikey",
        "access_key",
        "secret_key",
        "private_key",
        "subscription_key",
        "account_key",
        "master_key",
        "secret",
        "token",
        "password",
        "passwd",
        "dsn",
        "conninfo",
        "connection_string",
        "credential",
        "credentials",
        "authorization",
        "cookie",
    }
)


def is_secret_setting(name: str, declared: Any = ()) -> bool:
    """Whether the setting ``name`` (a key, or a dotted path checked against the ``declared``
    paths of a project's ``secrets`` list) holds a secret."""
    path = str(name)
    if path in {str(d) for d in declared or ()}:
        return True
    low = path.rsplit(".", 1)[-1].lower().replace("-", "_")
    if low.endswith("_env"):
        return False
    if low.startswith(("secret_", "password_")):  # secret_value, password_hash
        return True
    return low in SECRET_NAMES or any(low.endswith("_" + n) for n in SECRET_NAMES)


# Keys that were removed, and the key to write instead: a config or command line that still sets
# one stops with one line naming the replacement (rageval.app.removed_keys.refuse_removed_keys).
REMOVED_KEYS = {"mlflow.compare_metric": "sweep.compare_metric"}


def removed_key_message(key: str, value: Any, where: str) -> str:
    """The one line for a removed ``key`` set to ``value`` in ``where`` (an override, a file)."""
    instead = REMOVED_KEYS[key]
    shown = "" if value is None else f"={value}"
    return f"{where}: {key} was removed; write {instead}{shown} instead"


# Keys inside the open group nodes that do not change what is measured (where the embedding runs;
# a vector does not depend on it). A cache folder never does, at any depth (ANY_DEPTH). The
# quality guard only checks the vectors; a fallback it takes changes the encoder's numerics, which
# the cache key, the baseline's provenance and the embedding canary record. A flat FAISS index
# held in memory or scanned from the cache (flat_memory_mb) returns the same ranking.
GROUP_EXECUTION_KEYS = (
    "backend.faiss.flat_memory_mb",
    "embedding.executor",
    "embedding.ray_address",
    "embedding.ray_workers",
    "embedding.ray_cpus_per_worker",
    "embedding.threads",
    "embedding.quality_guard",
    "embedding.quality_min_cosine",
)
ANY_DEPTH = ("cache_dir",)
# Hydra's own node (run folders, launcher, sweeper): never part of what is measured.
HYDRA = "hydra"


def execution_keys() -> tuple[str, ...]:
    """Every key path that does not change what is measured (a path covers its subtree)."""
    top = [f.name for f in fields(RagevalConfig) if f.metadata.get("measures") is False]
    return (HYDRA, *top, *GROUP_EXECUTION_KEYS)


_EXECUTION = execution_keys()
# an override line's prefix: + (add), ++ (add or change), ~ (delete)
_PREFIX = re.compile(r"^[+~]+")


def override_key(line: str) -> str:
    """The config key of a stored override line (``+search.bm25.k1=1.2`` -> ``search.bm25.k1``):
    its text before the first ``=``, without the ``+``/``++``/``~`` prefix. The core's one way to
    read a key back from a file; the command line is parsed in rageval/app/override.py."""
    return _PREFIX.sub("", line.split("=", 1)[0], count=1)


def measures(key: str) -> bool:
    """Whether the config key ``key`` (a dotted path, an override's ``+``/``~`` allowed) changes
    what a run measures."""
    path = override_key(key).strip()
    if path.rsplit(".", 1)[-1] in ANY_DEPTH:
        return False
    return not any(path == p or path.startswith(p + ".") for p in _EXECUTION)


def defaults() -> dict[str, Any]:
    """The schema's defaults of the plain top-level keys (what a RunSpec starts from)."""
    out = {}
    for f in fields(RagevalConfig):
        value = f.default_factory() if f.default_factory is not NO_DEFAULT else f.default
        if value is MISSING or is_dataclass(value) or isinstance(value, dict):
            continue
        out[f.name] = value
    return out
