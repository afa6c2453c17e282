"""Deprecated: the run moved to :mod:`rageval.run` (``from rageval.run.evaluation import RunSpec,
evaluate``). This module re-exports the names it had for one release and warns on import."""

from __future__ import annotations

import warnings

from rageval.run.chunk import chunk_token_stats
from rageval.run.embed import TimedEncoder, embeds
from rageval.run.evaluation import evaluate
from rageval.run.index import request_counts
from rageval.run.labels import (
    LowJudgedWarning,
    judged_warnings,
    judgements_summary,
    with_judgements,
)
from rageval.run.load import load_inputs
from rageval.run.measure import LATENCY_REPEATS, REPEAT_BELOW_MS, ann_recall
from rageval.run.score import collapse_to_documents, score_run, stage_metrics
from rageval.run.search import search_depth
from rageval.run.spec import RunSpec

__all__ = [
    "LATENCY_REPEATS",
    "REPEAT_BELOW_MS",
    "LowJudgedWarning",
    "RunSpec",
    "TimedEncoder",
    "ann_recall",
    "chunk_token_stats",
    "collapse_to_documents",
    "embeds",
    "evaluate",
    "judged_warnings",
    "judgements_summary",
    "load_inputs",
    "request_counts",
    "score_run",
    "search_depth",
    "stage_metrics",
    "with_judgements",
]

warnings.warn(
    "rageval.pipeline is deprecated and will be removed in the next release: import from "
    "rageval.run.evaluation (RunSpec, evaluate, LowJudgedWarning) and the other rageval.run "
    "modules instead",
    DeprecationWarning,
    stacklevel=2,
)
