"""``evaluate``: the one place that sequences the stages of a run.

golden + corpus -> chunks -> qrels for this chunking -> index (embeddings via the cache) ->
search all queries at once -> metrics per query -> means, CIs, slices -> EvalReport.
Takes plain objects (no Hydra, no MLflow), so tests and users' scripts can call it directly.
Each stage has its module in this package: load, chunk, resolve, embed, index, search, score,
measure (timings, latency, ANN recall, costs), labels (judgements) and assemble (the report's
last steps).
"""

from __future__ import annotations

import warnings

from rageval.embedding.canary import choose as choose_canary
from rageval.embedding.guard import check_query_model
from rageval.inputs.corpus import corpus_digest
from rageval.inputs.judgements import PPI
from rageval.report.eval_report import EvalReport, RunFacts, summarise
from rageval.report.ppi_report import apply_ppi, sample_for
from rageval.report.provenance import corpus_block
from rageval.retrieval.base import Encoder, Retriever
from rageval.run.assemble import digests, finish_report, record_beneath
from rageval.run.chunk import chunk, chunk_token_stats
from rageval.run.embed import embeds, texts_encoded, warn_if_invisible
from rageval.run.index import index
from rageval.run.labels import LowJudgedWarning
from rageval.run.load import load
from rageval.run.measure import Clock, costs, measure_search
from rageval.run.resolve import resolve_units
from rageval.run.score import score
from rageval.run.search import search
from rageval.run.spec import RunSpec

__all__ = ["LowJudgedWarning", "RunSpec", "evaluate"]


def evaluate(
    spec: RunSpec,
    retriever: Retriever,
    encoder: Encoder | None,
    query_encoder: Encoder | None = None,
    config: dict | None = None,
) -> EvalReport:
    """Run one evaluation and return its report (metrics, per-query rows, timings, digests).

    The stages in order, each timed as a lap: load, chunk, resolve, index, search (its
    latency sampled after the lap), score; then the report is assembled."""
    clock = Clock()
    golden, docs, by_id, judgements, split = load(spec)
    clock.lap("load_s")
    warn_if_invisible(spec, retriever, encoder)
    tokenizer, chunks = chunk(spec, docs)
    clock.lap("chunk_s")
    units = resolve_units(spec, golden, docs, by_id, chunks, judgements)
    # The documents' text is not needed past this point: drop it before the index is built, so
    # the corpus text is not held twice (documents and chunks) while embeddings fill memory.
    n_docs, digest = len(docs), corpus_digest(docs)
    beneath = (corpus_block(docs, digest), choose_canary(golden.queries, docs))
    # a deployed index returning passages with text is scored on them: their documents are
    # needed to locate them (other runs drop the text before the index is built)
    docs_by_id = by_id if getattr(retriever, "external", False) else None
    del docs, by_id, chunks  # the chunks live on in units (until passages replace them)
    clock.lap("resolve_s")

    if encoder is not None and query_encoder is not None:
        encoder = check_query_model(encoder, query_encoder, spec.allow_model_mismatch)
    indexed = index(retriever, encoder, units.chunks, golden)
    clock.lap("index_s")
    searched, units = search(spec, retriever, golden, units, docs_by_id, tokenizer, judgements)
    clock.lap("search_s")
    measured = measure_search(spec, retriever, indexed, searched)

    clock.restart()
    scored, stages = score(spec, retriever, encoder, golden, units, searched, tokenizer, measured)
    clock.lap("score_s")
    clock.total()
    facts = RunFacts(
        k=spec.k,
        ks=spec.ks,
        timings=clock.timings,
        latency=measured.latency,
        digests=digests(golden, digest, encoder, judgements, spec.labels),
        counts={
            "documents": n_docs,
            "chunks": len(units.chunks),
            "queries": len(golden.queries),
            # texts that went through the embedding model in this run (cache misses)
            "texts_embedded": texts_encoded(encoder) - indexed.texts_before,
            **chunk_token_stats(units.chunks),
        },
        config=config or {},
        slices=spec.slices,
        min_slice_size=spec.min_slice_size,
    )
    report = summarise(golden, scored, facts)
    if spec.labels == PPI:
        apply_ppi(report, scored, units.human, sample_for(judgements), spec.ks, spec.ppi_interval)
    record_beneath(report, golden, beneath, encoder if embeds(retriever) else None, facts)
    report.costs = costs(spec, retriever, clock, indexed, searched, measured, facts, report)
    report.stages = stages
    finish_report(report, spec, golden, judgements, split, units, searched)
    if measured.latency_note:
        report.warnings.append(measured.latency_note)
    for message in report.warnings:
        warnings.warn(message, LowJudgedWarning, stacklevel=2)
    return report
