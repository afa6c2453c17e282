"""The schema of the top-level config: Hydra checks types at compose time (``chunk=abc`` is
refused).

``conf/config.yaml`` extends ``rageval_schema`` (registered here in Hydra's ConfigStore). The group
nodes (dataset, embedding, backend, search, rerank) are open mappings: each option names its own
``_target_`` and arguments. A new top-level key is added here and in conf/config.yaml.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from omegaconf import MISSING

SCHEMA_NAME = "rageval_schema"


@dataclass
class MlflowConfig:
    """Where and whether runs are logged."""

    enabled: bool = True
    # null: $MLFLOW_TRACKING_URI, else sqlite:///mlflow.db in the working directory
    tracking_uri: str | None = None
    experiment: str = "rageval"
    run_name: str | None = None
    # deprecated: use sweep.compare_metric (still read when set)
    compare_metric: str | None = None


@dataclass
class SweepConfig:
    """How a sweep's leaderboard decides (rageval.report.leaderboard)."""

    # null: evidence_recall@1024t with evidence quotes or a sweep over the chunking, else ndcg@k
    compare_metric: str | None = None
    # jobs the paired randomization test cannot tell from the best at this level are "tied"
    alpha: float = 0.05
    resamples: int = 10_000
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
    latency_sample: int = 100
    query_batch: int = 10_000
    allow_model_mismatch: bool = False
    # a larger document (MB of UTF-8 text) is refused, naming it
    max_document_mb: float = 50
    retries: int = 2
    retry_backoff: float = 0.5
    cache_dir: str = MISSING
    # slices (rageval.scoring.slices): the fields the report slices by (source, tags, any key
    # of a golden line's meta) and the smallest slice reported on its own (smaller: <field>=other)
    slices: list[str] = field(default_factory=lambda: ["source"])
    min_slice_size: int = 10
    # judgements (issue #20, docs/metrics.md "Judgements"): the judgements file (null:
    # judgements.jsonl next to the golden set), the label set (gold: golden labels + human
    # judgements; all: adds the accepted LLM judgements) and the judged@k below which a run warns
    judgements: str | None = None
    labels: str = "gold"
    judged_warn_below: float = 0.5
    # Golden-set split (tuning studies, rageval.inputs.split): all | tune | holdout, the share of
    # queries held out, and the seed of the query-id hash that draws the split.
    split: str = "all"
    holdout_fraction: float = 0.3
    split_seed: int = 0
    mlflow: MlflowConfig = field(default_factory=MlflowConfig)
    sweep: SweepConfig = field(default_factory=SweepConfig)
    gate: dict[str, Any] = field(default_factory=dict)


def register_schema() -> None:
    """Store the schema in Hydra's ConfigStore (idempotent), for conf/config.yaml to extend."""
    from hydra.core.config_store import ConfigStore

    ConfigStore.instance().store(name=SCHEMA_NAME, node=RagevalConfig)
