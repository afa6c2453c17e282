"""Metric names as values: the one place that spells ``ndcg@5``, its MLflow key and its budget form.

A metric is a family name and a cutoff: ``ndcg@5`` (the top 5 results) or, for budget metrics,
``evidence_recall@1024t`` (the ranked context that fits in 1,024 tokens of the embedding model's
tokenizer). Reports use ``str(spec)``; MLflow keys cannot hold ``@``, so ``spec.mlflow_key`` is
``ndcg_at_5`` / ``evidence_recall_at_1024t``. :meth:`MetricSpec.parse` reads both spellings, so
a user can write either on the command line or in a tolerance key.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from rageval.errors import ConfigError

# family -> (group, one-line meaning). Groups order reports and MLflow sections: headline ranking
# metrics first, then span metrics on evidence characters, then anything else.
FAMILIES: dict[str, tuple[str, str]] = {
    "precision": ("headline", "relevant results in the top k / k"),
    "recall": ("headline", "relevant results in the top k / all relevant"),
    "hit_rate": ("headline", "1 if any relevant result is in the top k"),
    "mrr": ("headline", "1 / rank of the first relevant result within k"),
    "ndcg": ("headline", "normalised discounted cumulative gain, linear gain (trec_eval ndcg_cut)"),
    "map": ("headline", "average precision cut at k (trec_eval map_cut)"),
    "quote_recall": ("headline", "evidence quotes the top k chunks cover whole / all quotes"),
    "quote_ndcg": ("headline", "nDCG@k over quotes found (gain: grade at the completing rank)"),
    "evidence_recall": ("span", "evidence characters covered by the retrieved context"),
    "evidence_precision": ("span", "covered / retrieved characters, duplicates included"),
    "evidence_iou": ("span", "covered / (evidence + retrieved - covered) characters"),
    # in MLflow's costs/ section, beside the costs block (costs/latency_p95_ms, costs/embed_s)
    "tokens": ("costs", "tokens of the top k chunks (the embedding model's tokenizer)"),
    # index fidelity of an approximate vector index (HNSW, IVF): its top k against an exact
    # (flat) search over the same vectors; 1.0 for an exact index
    "ann_recall": ("index", "share of the exact top k (flat search, same vectors) returned"),
    # judged-ness (docs/metrics.md "Judgements"): how much of the top k carries any label, and the
    # headline metrics on the condensed list (unjudged results removed before the cut at k, as
    # trec_eval -J): ``ndcg_cond@5`` is nDCG@5 of the condensed list (MLflow: ``ndcg_cond_at_5``)
    "judged": ("judged", "results in the top k carrying any label or judgement / k"),
    **{
        f"{name}_cond": ("judged", f"{name}@k of the condensed list (trec_eval -J)")
        for name in ("precision", "recall", "hit_rate", "mrr", "ndcg", "map")
    },
}
# Metrics without a cutoff: reported and logged under their plain name.
PLAIN: dict[str, tuple[str, str]] = {
    "evidence_precision_max": (
        "span",
        "evidence_precision of retrieving every chunk that touches the evidence (the ceiling)",
    ),
}
# The chunk- and document-counting metrics, equal to trec_eval on run.trec and qrels.trec.
HEADLINE: tuple[str, ...] = ("precision", "recall", "hit_rate", "mrr", "ndcg", "map")
# their condensed-list variants, in the same order
CONDENSED: tuple[str, ...] = tuple(f"{m}_cond" for m in HEADLINE)

_PATTERN = re.compile(r"^\s*([a-z][a-z0-9_]*?)\s*(?:@|_at_)\s*(\d+)\s*(t?)\s*$")


def register(family: str, group: str, meaning: str) -> None:
    """Add a metric family (a plug-in or a new scorer), so MetricSpec accepts its names."""
    FAMILIES.setdefault(family, (group, meaning))


@dataclass(frozen=True, slots=True, order=True)
class MetricSpec:
    """A metric at a cutoff, e.g. ``ndcg@10`` or ``evidence_recall@1024t``: a value, a dict key."""

    name: str
    k: int
    budget: bool = False  # True: k is a token budget (``@1024t``), not a rank cutoff

    def __post_init__(self) -> None:
        if self.name not in FAMILIES:
            raise ConfigError(
                f"unknown metric {self.name!r}; valid metrics: {', '.join(FAMILIES)} "
                "(each with a cutoff, e.g. ndcg@5, or a token budget, e.g. evidence_recall@1024t)"
            )
        if isinstance(self.k, bool) or not isinstance(self.k, int) or self.k <= 0:
            raise ConfigError(f"cutoff of {self.name} must be a positive integer, got {self.k!r}")

    @classmethod
    def parse(cls, text: str) -> MetricSpec:
        """Parse ``"ndcg@10"``, ``"ndcg_at_10"`` or ``"evidence_recall@1024t"``
        (case-insensitive)."""
        m = _PATTERN.match(str(text).lower())
        if not m:
            name = str(text).strip().lower().split("@")[0]
            hint = f" (e.g. {name}@5)" if name in FAMILIES else ""
            raise ConfigError(
                f"metric {text!r} must name a cutoff: name@k{hint}, or name@Bt for a token budget; "
                f"valid names: {', '.join(FAMILIES)}"
            )
        return cls(m.group(1), int(m.group(2)), m.group(3) == "t")

    @classmethod
    def is_metric(cls, text: str) -> bool:
        """True when ``text`` parses as a metric name (either spelling)."""
        try:
            cls.parse(text)
        except ConfigError:
            return False
        return True

    def __str__(self) -> str:
        return f"{self.name}@{self.k}{'t' if self.budget else ''}"

    @property
    def mlflow_key(self) -> str:
        """MLflow metric keys cannot hold '@': ``ndcg_at_10``, ``evidence_recall_at_1024t``."""
        return f"{self.name}_at_{self.k}{'t' if self.budget else ''}"

    @property
    def higher_is_better(self) -> bool:
        """False for cost metrics (``tokens@5``): a gate or a leaderboard must not call more
        tokens an improvement."""
        return self.group != "costs"

    @property
    def group(self) -> str:
        """``headline``, ``span``, ... (what section a report or MLflow shows it in)."""
        return FAMILIES[self.name][0]


def mlflow_key(name: str) -> str:
    """``precision@5`` -> ``precision_at_5``; a name that is no metric spec keeps its form."""
    try:
        return MetricSpec.parse(name).mlflow_key
    except ConfigError:
        return name.replace("@", "_at_")


def canonical(name: str) -> str:
    """``ndcg_at_5`` or ``NDCG@5`` -> ``ndcg@5`` (the report spelling)."""
    return str(MetricSpec.parse(name))
