"""The report's last steps: the digests of what the run read, what the numbers stand on, and
the label set, judgements, warnings, split, chunks and passages."""

from __future__ import annotations

from typing import Any

from rageval.embedding.canary import measure as measure_canary
from rageval.inputs.chunking import ChunkRows
from rageval.inputs.judgements import Judgements
from rageval.report.eval_report import EvalReport, RunFacts
from rageval.report.per_query import add_readable_ids
from rageval.report.provenance import record as record_provenance
from rageval.retrieval.base import Encoder
from rageval.run.labels import judged_warnings, judgements_summary
from rageval.run.resolve import Units
from rageval.run.search import Searched
from rageval.run.spec import RunSpec
from rageval.types import GoldenSet


def digests(
    golden: GoldenSet, corpus: str, encoder: Encoder | None, judgements: Judgements, labels: str
) -> dict[str, str]:
    """The digests of what the run read: golden set, corpus, model, embedding, judgements."""
    return {
        "golden": golden.digest,
        "corpus": corpus,
        "model": getattr(encoder, "fingerprint", "") or "",
        # which model and how it ran (backend, quantization): the fingerprint says it is another
        "embedding": str(getattr(encoder, "description", "") or ""),
        # the judgements the label set counted (the digest of none when there are none)
        "judgements": judgements.digest(labels),
    }


def record_beneath(
    report: EvalReport,
    golden: GoldenSet,
    beneath: tuple[dict, list],
    encoder: Encoder | None,
    facts: RunFacts,
) -> None:
    """What the numbers stand on (rageval.report.provenance) and, for a run that embeds, the
    embedding canary's vectors (rageval.embedding.canary; cached after the first run)."""
    corpus, canary_texts = beneath
    report.provenance = record_provenance(
        corpus, golden, facts.digests.get("judgements", ""), encoder
    )
    usable = callable(getattr(encoder, "encode_queries", None))  # not a stand-in without it
    report.canary = measure_canary(encoder, canary_texts) if usable else None


def finish_report(
    report: EvalReport,
    spec: RunSpec,
    golden: GoldenSet,
    judgements: Judgements,
    split: dict[str, Any],
    units: Units,
    searched: Searched,
) -> None:
    """The rest of the report: label set, judgements, warnings, split, chunks, readable ids,
    and the passages' counts and labels when the units are passages."""
    report.label_set = spec.labels
    report.judgements = judgements_summary(judgements, spec.labels)
    report.warnings += judged_warnings(report, spec.judged_warn_below)
    if searched.unknown_note:
        report.warnings.append(searched.unknown_note)
    report.split = split
    # made a row at a time when written: the chunks and extents are held anyway
    report.chunks = ChunkRows(units.chunks, units.extents)
    add_readable_ids(report, golden, units.chunks, units.res.spans)
    if len(searched.store):
        report.counts["passages"] = len(searched.store)
        report.counts["passages_located"] = len(units.extents)
        passage_labels(report)


def passage_labels(report: EvalReport) -> None:
    """Passages are named by their own ids (a ``doc:ordinal`` label means rageval's chunking)."""
    for row in report.per_query:
        row["retrieved_labels"] = list(row.get("retrieved", []))
        row["relevant_labels"] = sorted(
            u for u, g in report.qrels.get(row["id"], {}).items() if g > 0
        )
    report.chunks.label = "id"  # a ChunkRows (finish_report): each row's label is its id
