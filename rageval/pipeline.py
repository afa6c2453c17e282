"""``evaluate``: the one place that sequences the stages of a run.

golden + corpus -> chunks -> qrels for this chunking -> index (embeddings via the cache) ->
search all queries at once -> metrics per query -> means, CIs, slices -> EvalReport.
Takes plain objects (no Hydra, no MLflow), so tests and users' scripts can call it directly.
"""

from __future__ import annotations

import logging
import math
import os
import time
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any

import numpy as np

from rageval.config_schema import defaults as config_defaults
from rageval.embedding.canary import choose as choose_canary
from rageval.embedding.canary import measure as measure_canary
from rageval.embedding.guard import check_query_model
from rageval.errors import BackendError, ConfigError
from rageval.inputs.chunking import (
    ChunkingSpec,
    chunk_documents,
    chunk_rows,
    chunk_workers,
    load_tokenizer,
)
from rageval.inputs.corpus import corpus_digest, load_corpus
from rageval.inputs.golden import load_golden
from rageval.inputs.judgements import (
    PPI,
    Judgements,
    default_path,
    judgement_qrels,
    label_kinds,
    load_judgements,
    merge_qrels,
)
from rageval.inputs.split import SplitSpec, split_golden
from rageval.memory import StagePeak
from rageval.report.costs import costs_block
from rageval.report.eval_report import EvalReport, RunFacts, Scored, summarise
from rageval.report.per_query import add_readable_ids
from rageval.report.ppi_report import apply_ppi, sample_for
from rageval.report.provenance import corpus_block
from rageval.report.provenance import record as record_provenance
from rageval.report.stages import StageScores, summarise_stages
from rageval.retrieval.base import Encoder, Retriever
from rageval.retrieval.passages import PassageStore, passage_chunks
from rageval.retrieval.results import ACCEPTED, as_ranked, check_known
from rageval.retrieval.trace import StageTrace, parts, tracing
from rageval.scoring.budget import (
    budget_metrics,
    depth_for,
    proportional_truncate,
    token_counts,
    tokenizer_truncate,
)
from rageval.scoring.judged import judged_metrics
from rageval.scoring.level import auto_level, refuse_zeros
from rageval.scoring.metrics import score_rankings
from rageval.scoring.ppi import check_interval
from rageval.scoring.ranking import break_ties
from rageval.scoring.relevance import Resolution, resolve, resolve_passages
from rageval.scoring.slices import check_fields
from rageval.scoring.spans import chunk_extents, span_metrics
from rageval.types import Chunk, Document, GoldenSet, RankedList

log = logging.getLogger("rageval")


class LowJudgedWarning(UserWarning):
    """judged@k of a run is below ``judged_warn_below``: its metrics understate it. Also in
    ``EvalReport.warnings`` (report.json, the console table)."""


_D = config_defaults()  # rageval.config_schema: the one definition of every key's default


@dataclass(frozen=True)
class RunSpec:
    """What to evaluate: data, chunking, cutoffs and evaluation level. Its fields are the
    config's keys of the same name (rageval.config_schema has their meaning and defaults);
    :meth:`from_config` builds it from a run's config."""

    corpus: str | tuple[Document, ...]  # a path, or documents already read (BEIR)
    golden: str | GoldenSet
    tokenizer_dir: str
    chunking: ChunkingSpec = field(
        default_factory=lambda: ChunkingSpec(_D["chunk"], _D["chunk_overlap"])
    )
    k: int = _D["k"]
    ks: tuple[int, ...] = tuple(_D["ks"])
    level: str = _D["level"]
    depth: int | None = _D["depth"]
    latency_sample: int = _D["latency_sample"]
    allow_model_mismatch: bool = _D["allow_model_mismatch"]
    query_batch: int = _D["query_batch"]
    max_document_mb: float = _D["max_document_mb"]
    budgets: tuple[int, ...] = tuple(_D["budgets"])
    slices: tuple[str, ...] = tuple(_D["slices"])
    min_slice_size: int = _D["min_slice_size"]
    # a path, or None for judgements.jsonl next to the golden set (a missing file holds none)
    judgements: str | None = _D["judgements"]
    labels: str = _D["labels"]
    ppi_interval: str = _D["ppi_interval"]
    judged_warn_below: float = _D["judged_warn_below"]
    split: SplitSpec = field(
        default_factory=lambda: SplitSpec(_D["split"], _D["holdout_fraction"], _D["split_seed"])
    )

    @classmethod
    def from_config(
        cls,
        config: Mapping[str, Any],
        *,
        corpus: str | tuple[Document, ...],
        golden: str | GoldenSet,
        tokenizer_dir: str,
    ) -> RunSpec:
        """The spec of a run whose resolved config is ``config``: each field from the key of
        its name (its schema default when absent), the chunking from ``chunk`` and
        ``chunk_overlap``, the split from ``split``, ``holdout_fraction`` and ``split_seed``."""
        given = {**_D, **{k: v for k, v in config.items() if k in _D}}
        plain = {f.name for f in fields(cls)} - {
            "corpus",
            "golden",
            "tokenizer_dir",
            "chunking",
            "split",
        }
        kw: dict[str, Any] = {n: given[n] for n in plain}
        for n in ("ks", "budgets", "slices"):
            kw[n] = tuple(kw[n])
        kw["slices"] = tuple(str(f) for f in kw["slices"])
        kw["max_document_mb"] = float(kw["max_document_mb"])
        kw["judged_warn_below"] = float(kw["judged_warn_below"])
        return cls(
            corpus=corpus,
            golden=golden,
            tokenizer_dir=tokenizer_dir,
            chunking=ChunkingSpec(given["chunk"], given["chunk_overlap"]),
            split=SplitSpec(
                given["split"], float(given["holdout_fraction"]), int(given["split_seed"])
            ),
            **kw,
        )

    def __post_init__(self) -> None:
        if self.k <= 0 or any(int(x) <= 0 for x in self.ks):
            raise ConfigError(
                f"k and every value in ks must be > 0 (k={self.k}, ks={list(self.ks)})"
            )
        object.__setattr__(self, "ks", tuple(sorted({int(x) for x in (*self.ks, self.k)})))
        bad = [b for b in self.budgets if isinstance(b, bool) or not isinstance(b, int) or b <= 0]
        if bad:
            raise ConfigError(
                f"budgets must be positive token counts like [256, 512, 1024, 2048], got {bad[0]!r}"
            )
        object.__setattr__(self, "budgets", tuple(sorted(set(self.budgets))))
        check_fields(self.slices)  # names, not a string
        object.__setattr__(self, "slices", tuple(self.slices))
        size = self.min_slice_size
        if isinstance(size, bool) or not isinstance(size, int) or size < 1:
            raise ConfigError(f"min_slice_size must be a whole number >= 1, got {size!r}")
        label_kinds(self.labels)  # ConfigError naming the label sets
        check_interval(self.ppi_interval)  # t or z
        warn = self.judged_warn_below
        if isinstance(warn, bool) or not isinstance(warn, int | float) or not 0 <= warn <= 1:
            raise ConfigError(
                f"judged_warn_below must be a share between 0 and 1 (0 turns the warning off), "
                f"got {warn!r}"
            )


def collapse_to_documents(rl: RankedList, doc_of: dict[str, str]) -> RankedList:
    """A chunk ranking as a document ranking: first occurrence of each document wins, score kept.

    Documents that tie on score are then ordered by id descending, as trec_eval orders them, so the
    exported run file scores the same as this ranking.
    """
    seen: set[str] = set()
    ids, scores = [], []
    for cid, s in zip(rl.ids, rl.scores, strict=True):
        d = doc_of.get(cid, cid)
        if d not in seen:
            seen.add(d)
            ids.append(d)
            scores.append(s)
    return break_ties(RankedList(tuple(ids), tuple(scores)))


def evaluate(
    spec: RunSpec,
    retriever: Retriever,
    encoder: Encoder | None,
    query_encoder: Encoder | None = None,
    config: dict | None = None,
) -> EvalReport:
    """Run one evaluation and return its report (metrics, per-query rows, timings, digests).

    The phases in order, each timed as a lap: load, chunk, resolve, index, search (its
    latency sampled after the lap), score; then the report is assembled."""
    clock = _Clock()
    golden, docs, by_id, judgements, split = _load(spec)
    clock.lap("load_s")
    _warn_if_invisible(spec, retriever, encoder)
    tokenizer = load_tokenizer(spec.tokenizer_dir)
    workers = chunk_workers(docs)
    chunks = chunk_documents(docs, spec.chunking, tokenizer, workers=workers, progress=True)
    clock.lap("chunk_s")
    units = _resolve(spec, golden, docs, by_id, chunks, judgements)
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
    indexed = _index(retriever, encoder, units.chunks, golden)
    clock.lap("index_s")
    searched, units = _search_phase(
        spec, retriever, golden, units, docs_by_id, tokenizer, judgements
    )
    clock.lap("search_s")
    measured = _measure_search(spec, retriever, indexed, searched)

    clock.restart()
    scored, stages = _score(spec, retriever, encoder, golden, units, searched, tokenizer, measured)
    clock.lap("score_s")
    clock.total()
    facts = RunFacts(
        k=spec.k,
        ks=spec.ks,
        timings=clock.timings,
        latency=measured.latency,
        digests=_digests(golden, digest, encoder, judgements, spec.labels),
        counts={
            "documents": n_docs,
            "chunks": len(units.chunks),
            "queries": len(golden.queries),
            # texts that went through the embedding model in this run (cache misses)
            "texts_embedded": _texts_encoded(encoder) - indexed.texts_before,
            **chunk_token_stats(units.chunks),
        },
        config=config or {},
        slices=spec.slices,
        min_slice_size=spec.min_slice_size,
    )
    report = summarise(golden, scored, facts)
    if spec.labels == PPI:
        apply_ppi(report, scored, units.human, sample_for(judgements), spec.ks, spec.ppi_interval)
    _record_beneath(report, golden, beneath, encoder if embeds(retriever) else None, facts)
    report.costs = _costs(spec, retriever, clock, indexed, searched, measured, facts, report)
    report.stages = stages
    _finish_report(report, spec, golden, judgements, split, units, searched)
    for message in report.warnings:
        warnings.warn(message, LowJudgedWarning, stacklevel=2)
    return report


@dataclass
class _Units:
    """What a run is scored on: its units (rageval's chunks, or the passages a deployed index
    returned), where they lie in their documents, the qrels over them, and the characters
    evidence may lie in (None: the units tile their documents)."""

    chunks: list[Chunk]
    extents: dict
    res: Resolution
    cover: dict[str, list[tuple[int, int]]] | None = None
    # labels=ppi: the qrels under the people's labels (golden set + human judgements)
    human: Resolution | None = None


@dataclass(frozen=True)
class _Indexed:
    """What the index phase measured: the timed encoder (None without one), the texts the
    encoder had embedded before the run, its seconds while indexing, the peak resident memory
    while indexing, and the backend calls counted up to the search."""

    timed: TimedEncoder | None
    texts_before: int
    embed_seconds: float
    peak_rss: int | None
    requests: dict[str, int] | None


@dataclass(frozen=True)
class _Searched:
    """The search phase's outcome: the queries and the depth searched, the rankings, the
    passages that came back with their own ids and text, the stages' trace, and the note for
    results none of whose ids is known (None: some are)."""

    queries: list[str]
    depth: int
    results: list[RankedList]
    store: PassageStore
    trace: StageTrace
    unknown_note: str | None


@dataclass(frozen=True)
class _SearchCosts:
    """Measured after the search lap: the encoder's seconds on the queries, the texts asked of
    it, the search's backend calls, and the latency sample (overall and per stage)."""

    embed_queries: float
    asked: int
    requests: dict[str, int] | None
    latency: dict
    stage_ms: dict[str, list[float]]


def _load(
    spec: RunSpec,
) -> tuple[GoldenSet, list[Document], dict[str, Document], Judgements, dict[str, Any]]:
    """The load phase: the golden set and the corpus (and its documents by id), the judgements,
    and the golden set cut to the run's side of the split with the split's record. A slice
    field no query has or a missing judgements file fails here, before the index is built."""
    golden, docs = load_inputs(spec)
    slice_rows = [{"source": q.source, "tags": q.tags, "meta": q.meta} for q in golden.queries]
    check_fields(spec.slices, slice_rows, golden.path)  # a typo fails before the index is built
    by_id = {d.id: d for d in docs}
    if spec.judgements and not os.path.exists(spec.judgements):
        raise ConfigError(
            f"judgements file {spec.judgements!r} not found; fix the judgements key, or set it "
            "to null for judgements.jsonl next to the golden set (none when that is missing)"
        )
    judgements = load_judgements(spec.judgements or default_path(golden.path), by_id, golden)
    if spec.labels == PPI:  # a missing or bad human sample fails before the index is built
        sample_for(judgements, [q.id for q in golden.queries])
    golden, split = split_golden(golden, spec.split)
    return golden, docs, by_id, judgements, split


def _resolve(
    spec: RunSpec,
    golden: GoldenSet,
    docs: list[Document],
    by_id: dict[str, Document],
    chunks: list[Chunk],
    judgements: Judgements,
) -> _Units:
    """The resolve phase: the qrels over ``chunks`` (the golden set's labels with the
    judgements laid over them, only the run's side of a split) and the chunks' extents."""
    gold = resolve(golden, by_id, chunks, spec.level)
    res = with_judgements(gold, judgements, spec.labels, chunks)
    # labels=ppi: res is the LLM side (every query), human the people's (the sampled queries)
    human = with_judgements(gold, judgements, "gold", chunks) if spec.labels == PPI else None
    if spec.split.name != "all":  # judgements of the other side's queries stay out of qrels.trec
        kept = {q.id for q in golden.queries}
        res = Resolution({q: r for q, r in res.qrels.items() if q in kept}, res.spans, res.level)
    extents = chunk_extents(chunks, {d.id: len(d.text) for d in docs})
    return _Units(chunks, extents, res, human=human)


def _index(
    retriever: Retriever, encoder: Encoder | None, chunks: list[Chunk], golden: GoldenSet
) -> _Indexed:
    """The index phase: the retriever indexes the chunks through the timed encoder (whose
    cache a cluster fills first, in one pass, when the encoder runs elsewhere)."""
    timed = TimedEncoder(encoder) if encoder is not None else None
    embedded_before = _texts_encoded(encoder)  # an encoder reused across runs keeps counting
    with StagePeak() as index_peak:
        ahead = getattr(encoder, "executor", "local") != "local"  # a cluster fills the cache
        if timed is not None and ahead and embeds(retriever):  # in one pass, before the index
            timed.prefill([c.text for c in chunks], [q.query for q in golden.queries])
        retriever.index(chunks, timed)
    embed_docs = timed.seconds if timed else 0.0
    return _Indexed(timed, embedded_before, embed_docs, index_peak.bytes, request_counts(retriever))


def _search_phase(
    spec: RunSpec,
    retriever: Retriever,
    golden: GoldenSet,
    units: _Units,
    docs_by_id: dict[str, Document] | None,
    tokenizer,
    judgements: Judgements,
) -> tuple[_Searched, _Units]:
    """The search phase: all queries searched at once (stages traced), the run's units (the
    passages that came back, when they have ids and text of their own), and the note for
    results of unknown ids."""
    queries = [q.query for q in golden.queries]
    depth = search_depth(spec, units.res.level, [c.n_tokens for c in units.chunks])
    store = PassageStore()
    with tracing(retriever, StageTrace()) as trace:
        results = _search(retriever, queries, depth, spec.query_batch, store)
    if len(store):  # passages with their own ids and text: the run's units are those
        units = _Units(
            *_passage_units(
                spec, golden, docs_by_id, store, units.res, results, tokenizer, judgements
            )
        )
    else:  # ids: level=auto decides from what came back (document ids: document level)
        units.res = auto_level(spec.level, units.res, units.chunks, results)
        qids = [q.id for q in golden.queries]
        refuse_zeros(units.res, units.chunks, qids, results, max(spec.ks))
    known = {c.id for c in units.chunks} | {c.doc_id for c in units.chunks}
    known |= {u for rel in units.res.qrels.values() for u in rel}
    unknown_note = check_known(results, known)  # none known: one line, not a run of zeros
    return _Searched(queries, depth, results, store, trace, unknown_note), units


def _measure_search(
    spec: RunSpec, retriever: Retriever, indexed: _Indexed, searched: _Searched
) -> _SearchCosts:
    """What the search cost (encoder seconds and texts, backend calls), then its latency
    sampled over single-query searches."""
    timed = indexed.timed
    embed_queries = (timed.seconds - indexed.embed_seconds) if timed else 0.0
    asked = timed.texts if timed else 0
    requests = _requests_of_search(indexed.requests, request_counts(retriever))
    latency, stage_ms = _latency(retriever, searched.queries, searched.depth, spec.latency_sample)
    return _SearchCosts(embed_queries, asked, requests, latency, stage_ms)


def _score(
    spec: RunSpec,
    retriever: Retriever,
    encoder: Encoder | None,
    golden: GoldenSet,
    units: _Units,
    searched: _Searched,
    tokenizer,
    measured: _SearchCosts,
) -> tuple[Scored, dict]:
    """The score phase: the metrics per query (ANN recall included), and every recorded
    stage scored like the final rankings."""
    chunks, extents, res = units.chunks, units.extents, units.res
    scored = score_run(spec, golden, chunks, extents, res, searched.results, tokenizer, units.cover)
    # a deployed index's passages have no vectors of rageval's: only its own exact scan counts
    own_only = bool(len(searched.store))
    queries, results = searched.queries, searched.results
    scored.values.update(
        ann_recall(retriever, chunks, queries, results, encoder, spec.ks, own_only)
    )
    stages = _stages(
        spec,
        golden,
        chunks,
        extents,
        res,
        tokenizer,
        searched.trace,
        scored,
        searched.depth,
        measured.stage_ms,
    )
    return scored, stages


def _digests(
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


def _record_beneath(
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


def _costs(
    spec: RunSpec,
    retriever: Retriever,
    clock: _Clock,
    indexed: _Indexed,
    searched: _Searched,
    measured: _SearchCosts,
    facts: RunFacts,
    report: EvalReport,
) -> dict[str, float]:
    """The report's costs block from the phases' measurements (index sizes read now)."""
    sizes = getattr(retriever, "index_bytes", None)
    return costs_block(
        timings=clock.timings,
        latency=measured.latency,
        embed_seconds=(indexed.embed_seconds, measured.embed_queries),
        rerank_seconds=searched.trace.seconds.get("rerank", 0.0),
        texts=(measured.asked, facts.counts["texts_embedded"]) if indexed.timed else None,
        index_bytes={**(sizes() if callable(sizes) else {}), "peak_rss": indexed.peak_rss},
        tokens_per_query=report.metrics.get(f"tokens@{spec.k}"),
        requests=measured.requests,
    )


def _finish_report(
    report: EvalReport,
    spec: RunSpec,
    golden: GoldenSet,
    judgements: Judgements,
    split: dict[str, Any],
    units: _Units,
    searched: _Searched,
) -> None:
    """The rest of the report: label set, judgements, warnings, split, chunks, readable ids,
    and the passages' counts and labels when the units are passages."""
    report.label_set = spec.labels
    report.judgements = judgements_summary(judgements, spec.labels)
    report.warnings += judged_warnings(report, spec.judged_warn_below)
    if searched.unknown_note:
        report.warnings.append(searched.unknown_note)
    report.split = split
    report.chunks = chunk_rows(units.chunks, units.extents)
    add_readable_ids(report, golden, units.chunks, units.res.spans)
    if len(searched.store):
        report.counts["passages"] = len(searched.store)
        report.counts["passages_located"] = len(units.extents)
        _passage_labels(report)


def _passage_units(
    spec: RunSpec,
    golden: GoldenSet,
    docs: dict[str, Document] | None,
    store: PassageStore,
    res: Resolution,
    results: Sequence[RankedList],
    tokenizer,
    judgements: Judgements,
) -> tuple[list[Chunk], dict, Resolution, dict[str, list[tuple[int, int]]]]:
    """The returned passages as the run's units: chunks of their own (located in the corpus
    where their text is found), qrels by rageval.scoring.relevance.resolve_passages with the
    judgements (labelled by id) laid over them, and the evidence cover: whole documents, since
    the passages cover only what came back and evidence none of them holds is missed."""
    if docs is None:  # a plug-in class that returned passages: read the corpus again
        docs = {d.id: d for d in load_inputs(spec)[1]}
    chunks, extents = passage_chunks(store, docs, tokenizer)
    rankings = {q.id: r.ids for q, r in zip(golden.queries, results, strict=True)}
    res = resolve_passages(golden, docs, chunks, extents, res, rankings)
    res = with_judgements(res, judgements, spec.labels, chunks)
    missing = len(chunks) - len(extents)
    if missing:
        log.warning(
            "%d of %d returned passages could not be located in their documents (no document "
            "id, a document outside the corpus, or text that differs from it): span and budget "
            "metrics are not measured for the queries that retrieved them",
            missing,
            len(chunks),
        )
    cover = {d.id: [(0, len(d.text))] for d in docs.values()}
    return chunks, extents, res, cover


def ann_recall(
    retriever: Retriever,
    chunks: Sequence[Chunk],
    queries: Sequence[str],
    results: Sequence[RankedList],
    encoder: Encoder | None,
    ks: Sequence[int],
    own_only: bool = False,
) -> dict[str, np.ndarray]:
    """``ann_recall@k`` of a vector-mode run on a backend that says whether its index is
    approximate (``approximate()``): per query, the share of the exact top k (a flat FAISS pass
    over the same, cached, vectors; a team's table: the backend's own ``exact_search``) that the
    index returned; 1.0 without the pass for an exact index. Nothing for other modes, backends
    that do not say, or returned passages without an exact search of their own
    (``own_only``)."""
    part = retriever  # through pass-through wrappers only (retries): not fusion, not reranking
    while part is not None and not callable(type(part).__dict__.get("approximate")):
        part = part.__dict__.get("inner") if hasattr(part, "__dict__") else None
    if part is None or getattr(part, "mode", None) != "vector" or encoder is None:
        return {}
    n = len(results)
    if not part.approximate():
        return {f"ann_recall@{k}": np.ones(n) for k in ks}
    own = getattr(part, "exact_search", None)  # a team's table: its own exact scan
    reference = own(list(queries), max(ks)) if callable(own) else None
    if reference is not None:
        exact_ids = [list(r.ids) for r in reference]
    elif own_only:
        return {}
    else:
        import faiss

        docs = encoder.encode_documents([c.text for c in chunks])
        vectors = np.ascontiguousarray(docs, np.float32)
        qv = np.ascontiguousarray(encoder.encode_queries(list(queries)), np.float32)
        flat = faiss.IndexFlatIP(vectors.shape[1])
        flat.add(vectors)
        _, rows = flat.search(qv, min(max(ks), len(chunks)))
        ids = [c.id for c in chunks]
        exact_ids = [[ids[j] for j in row if j >= 0] for row in rows]
    out = {f"ann_recall@{k}": np.full(n, np.nan) for k in ks}
    for qi, r in enumerate(results):
        exact = exact_ids[qi]
        for k in ks:
            if exact[:k]:
                out[f"ann_recall@{k}"][qi] = len(set(r.ids[:k]) & set(exact[:k])) / len(exact[:k])
    return out


def _passage_labels(report: EvalReport) -> None:
    """Passages are named by their own ids (a ``doc:ordinal`` label means rageval's chunking)."""
    for row in report.per_query:
        row["retrieved_labels"] = list(row.get("retrieved", []))
        row["relevant_labels"] = sorted(
            u for u, g in report.qrels.get(row["id"], {}).items() if g > 0
        )
    for r in report.chunks:
        r["label"] = r["id"]


def with_judgements(
    res: Resolution, judgements: Judgements, labels: str, chunks: Sequence[Chunk]
) -> Resolution:
    """``res`` with the judgements label set ``labels`` counts laid over its qrels (grade = max;
    a chunk judged 0 is judged). Evidence spans stay the golden set's own."""
    counted = judgements.counted(labels)
    if not counted:
        return res
    extra = judgement_qrels(counted, chunks, res.level)
    return Resolution(qrels=merge_qrels(res.qrels, extra), spans=res.spans, level=res.level)


def judgements_summary(judgements: Judgements, labels: str) -> dict:
    """What report.json says about the judgements: file, how many counted (by kind), how many the
    label set left out, and the digest of those counted."""
    counted = judgements.counted(labels)
    if labels == PPI:  # both sides: the LLM judge's and the people's
        counted += judgements.counted()
    return {
        "file": judgements.path,
        "counted": len(counted),
        "human": sum(j.kind == "human" for j in counted),
        "llm": sum(j.kind == "llm" for j in counted),
        # left out by the label set, or LLM ones without an accepted calibration
        "not_counted": len(judgements) - len(counted),
        "digest": judgements.digest(labels),
    }


def judged_warnings(report: EvalReport, below: float) -> list[str]:
    """A warning when judged@k of the run is below ``below``: its metrics then understate it."""
    name = f"judged@{report.k}"
    share = report.metrics.get(name)
    if share is None or math.isnan(share) or share >= below:
        return []
    where = (report.judgements or {}).get("file") or "the judgements file"
    # judged@k divides by k: a query that retrieved fewer than k results has empty places too
    short = sum(len(r.get("retrieved") or ()) < report.k for r in report.per_query or ())
    what = (
        "results carry no label and count as misses"
        if not short
        else f"places hold a result without a label (a miss) or nothing ({short} "
        f"quer{'y' if short == 1 else 'ies'} retrieved fewer than {report.k})"
    )
    return [
        f"{name} = {share:.2f} is below judged_warn_below={below:g}: {1 - share:.0%} of the top "
        f"{report.k} {what}, so the metrics understate this run (the condensed ones set them "
        f"aside); judge those results into {where}, or set judged_warn_below=0 to silence this"
    ]


class _Clock:
    """Stage timings: ``lap(name)`` records the time since the previous lap."""

    def __init__(self) -> None:
        self.timings: dict[str, float] = {}
        self.t0 = self.last = time.perf_counter()

    def restart(self) -> None:
        self.last = time.perf_counter()

    def lap(self, name: str) -> None:
        now = time.perf_counter()
        self.timings[name] = now - self.last
        self.last = now

    def total(self) -> None:
        self.timings["total_s"] = time.perf_counter() - self.t0


def load_inputs(spec: RunSpec) -> tuple[GoldenSet, list[Document]]:
    """The golden set and the corpus of ``spec`` (loaded, or as given)."""
    golden = spec.golden if isinstance(spec.golden, GoldenSet) else load_golden(spec.golden)
    docs = (
        load_corpus(spec.corpus, spec.max_document_mb)
        if isinstance(spec.corpus, str)
        else list(spec.corpus)
    )
    return golden, docs


def _warn_if_invisible(spec: RunSpec, retriever: Retriever, encoder: Encoder | None) -> None:
    """Chunks longer than the model reads lose their tail in the vector index (BM25 reads all)."""
    max_len = getattr(encoder, "max_seq_length", None)
    if max_len and spec.chunking.size > max_len and embeds(retriever):
        warnings.warn(
            f"chunk={spec.chunking.size} exceeds the embedding model's max_seq_length={max_len}: "
            "the tail of every chunk is invisible to the vector index",
            stacklevel=3,
        )


def embeds(retriever: Retriever) -> bool:
    """False for a retriever that declares ``embeds = False`` (BM25), also behind wrappers (retry,
    rerank) that hold the retriever they wrap as ``inner`` or ``base``."""
    for _ in range(8):
        if getattr(type(retriever), "embeds", True) is False:
            return False
        held = getattr(retriever, "__dict__", {})
        inner = next(
            (
                v
                for v in (held.get("inner"), held.get("base"))
                if v is not None and callable(getattr(v, "search", None))
            ),
            None,
        )
        if inner is None:
            return True
        retriever = inner
    return True


def search_depth(spec: RunSpec, level: str, chunk_tokens: Sequence[int]) -> int:
    """``spec.depth``, else deep enough for the largest cutoff (x10 at document level, before
    collapsing to documents) and to fill the largest token budget with the smallest chunks."""
    if spec.depth:
        return spec.depth
    by_rank = max(spec.ks) * (10 if level == "doc" else 1)
    return max(by_rank, depth_for(spec.budgets, chunk_tokens))


def score_run(
    spec: RunSpec,
    golden: GoldenSet,
    chunks: Sequence[Chunk],
    extents: dict,
    res: Resolution,
    results: list[RankedList],
    tokenizer=None,
    cover: dict[str, list[tuple[int, int]]] | None = None,
) -> Scored:
    """Every metric per query: ranking metrics (chunk or document level, as trec_eval), span and
    quote metrics for evidence labels, token-budget metrics and tokens@k."""
    # The one tie rule (rageval.scoring.ranking), also for plug-in retrievers: the run file
    # written from these rankings then re-ranks the same under trec_eval.
    results = chunk_rankings = [break_ties(r) for r in results]
    doc_of = {c.id: c.doc_id or c.id for c in chunks}  # a passage with no document is its own
    if res.level == "doc":
        results = [collapse_to_documents(r, doc_of) for r in results]
    qids = [q.id for q in golden.queries]
    scores = score_rankings(qids, [r.ids for r in results], res.qrels, spec.ks)
    values = dict(scores.values)
    values.update(judged_metrics(qids, [r.ids for r in results], res.qrels, spec.ks))
    ranked = [r.ids for r in chunk_rankings]
    if any(res.spans.values()):
        values.update(span_metrics(qids, ranked, res.spans, extents, spec.ks, cover))
    by_id = {c.id: c for c in chunks}
    values.update(token_counts(ranked, {c.id: c.n_tokens for c in chunks}, spec.ks))
    if spec.budgets:
        values.update(
            budget_metrics(
                qids,
                ranked,
                chunks_by_id=by_id,
                extents=extents,
                spans=res.spans,
                qrels=res.qrels,
                unit_of=(doc_of.__getitem__ if res.level == "doc" else str),
                budgets=spec.budgets,
                truncate=tokenizer_truncate(tokenizer) if tokenizer else proportional_truncate,
                cover=cover,
            )
        )
    return Scored(
        query_ids=tuple(qids),
        rankings=results,
        values=values,
        first_relevant_rank=scores.first_relevant_rank,
        qrels=res.qrels,
        level=res.level,
    )


def chunk_token_stats(chunks: Sequence[Chunk]) -> dict[str, float]:
    """Mean and max tokens per chunk (``chunk_tokens_mean``/``_max``); 0 for no chunks."""
    n_tok = np.array([c.n_tokens for c in chunks] or [0])
    return {"chunk_tokens_mean": float(n_tok.mean()), "chunk_tokens_max": int(n_tok.max())}


def _search(
    retriever: Retriever,
    queries: list[str],
    depth: int,
    batch: int,
    store: PassageStore | None = None,
) -> list[RankedList]:
    """All queries, ``batch`` per retriever call (one call for a golden set up to that size);
    passages that come back with text go into ``store``."""
    from tqdm.auto import tqdm

    if batch <= 0:
        raise ConfigError(f"query_batch must be > 0, got {batch}")
    results: list[RankedList] = []
    starts = range(0, len(queries), batch)
    for lo in tqdm(starts, desc="searching", unit="batch", disable=len(starts) < 2):
        part = queries[lo : lo + batch]
        got = retriever.search(part, depth)
        if not isinstance(got, list | tuple):
            raise ConfigError(
                f"search() returned a {type(got).__name__}; it must return a list with one "
                f"result per query ({ACCEPTED})"
            )
        if len(got) != len(part):
            raise ConfigError(
                f"the retriever returned {len(got)} rankings for {len(part)} queries; "
                "search() must return one RankedList per query, in order"
            )
        got = [as_ranked(r, q, store) for q, r in zip(part, got, strict=True)]
        bad = [q for q, r in zip(part, got, strict=True) if not _finite(r.scores)]
        if bad:  # NaN or inf: no defined order, and no TREC file can hold it
            raise BackendError(
                f"the retriever returned scores that are not finite numbers for {len(bad)} "
                f"queries, e.g. {bad[0]!r}; search() must return real scores",
                failed_queries=bad,
            )
        results.extend(got)
    return results


def _finite(scores: Sequence[float]) -> bool:
    try:
        return all(map(math.isfinite, scores))
    except TypeError:  # None or a string where a score belongs
        return False


# Each sampled query is searched this often and its fastest time counts: a busy machine's hiccup
# (another process, a page fault) is not the retriever's latency; the spread between queries stays.
LATENCY_REPEATS = 3
# a search slower than this is timed once: scheduler noise is small against it, and repeating a
# remote or reranked search costs real requests and seconds
REPEAT_BELOW_MS = 20.0


def _latency(
    retriever: Retriever, queries: Sequence[str], depth: int, n: int
) -> tuple[dict, dict[str, list[float]]]:
    """Per-query search latency over a sample of single-query calls (query vectors are cached),
    and the milliseconds of each stage of a staged retriever in those calls; each query's
    fastest of up to ``LATENCY_REPEATS`` searches (one when a search takes ``REPEAT_BELOW_MS`` or
    more), after one untimed warm-up search."""
    own = getattr(retriever, "latency_ms", None)
    if callable(own) and own():  # a deployed service: its calls were timed during the run
        from rageval.retrieval.adapters import latency_of

        return latency_of(own()), {}
    sample = list(queries[: max(0, n)])
    ms = []
    searches = 0
    by_stage: dict[str, list[float]] = {}
    if sample:  # lazy set-up (tokenizers, threads) is not latency
        retriever.search(sample[:1], depth)
    for q in sample:
        best, stages = math.inf, {}
        for _ in range(LATENCY_REPEATS):
            with tracing(retriever, StageTrace()) as trace:
                t = time.perf_counter()
                retriever.search([q], depth)
                took = (time.perf_counter() - t) * 1000
            searches += 1
            if took < best:
                best, stages = took, dict(trace.seconds)
            if took >= REPEAT_BELOW_MS:
                break
        ms.append(best)
        for stage, seconds in stages.items():
            by_stage.setdefault(stage, []).append(seconds * 1000)
    if not ms:
        return {}, by_stage
    return {
        "p50_ms": float(np.percentile(ms, 50)),
        "p95_ms": float(np.percentile(ms, 95)),
        "queries_sampled": len(ms),
        "searches": searches,
    }, by_stage


def _texts_encoded(encoder: Encoder | None) -> int:
    return int(getattr(encoder, "texts_encoded", 0) or 0)


class TimedEncoder:
    """The run's encoder, timing and counting the texts asked of it (documents and queries, cache
    reads included); every other member is the wrapped encoder's."""

    def __init__(self, encoder: Encoder):
        self.__dict__.update(wrapped=encoder, seconds=0.0, texts=0)

    def __getattr__(self, name: str):
        wrapped = self.__dict__.get("wrapped")
        if wrapped is None:  # not set up (a copy being built): no member to lend
            raise AttributeError(name)
        return getattr(wrapped, name)

    def _timed(self, fn, texts):
        t = time.perf_counter()
        try:
            return fn(texts)
        finally:
            self.__dict__["seconds"] += time.perf_counter() - t
            self.__dict__["texts"] += len(texts)

    def prefill(self, documents, queries):
        """The wrapped encoder's ``prefill`` (timed as embedding, no texts counted as asked)."""
        t = time.perf_counter()
        try:
            return self.wrapped.prefill(documents, queries)
        finally:
            self.__dict__["seconds"] += time.perf_counter() - t

    def encode_documents(self, texts):
        """The wrapped encoder's document vectors, timed."""
        return self._timed(self.wrapped.encode_documents, texts)

    def encode_queries(self, texts):
        """The wrapped encoder's query vectors, timed."""
        return self._timed(self.wrapped.encode_queries, texts)


def request_counts(retriever: Retriever) -> dict[str, int] | None:
    """Backend calls so far (``index``, ``search``) summed over the parts that count them (Azure,
    Qdrant); None when no part does."""
    found = [p.requests for p in parts(retriever) if isinstance(p.__dict__.get("requests"), dict)]
    if not found:
        return None
    return {k: sum(int(r.get(k, 0)) for r in found) for k in ("index", "search")}


def _requests_of_search(before: dict | None, after: dict | None) -> dict[str, int] | None:
    """Index calls up to the search, and the search calls of the batch search alone."""
    if before is None or after is None:
        return None
    return {"index": before["index"], "search": after["search"] - before["search"]}


def stage_metrics(k: int, names: Sequence[str], budgets: Sequence[int]) -> list[str]:
    """The metrics a stage table compares: nDCG@k and recall@k, and the budget metric a sweep
    decides by (``evidence_recall@1024t``, else the middle budget) when the run has it."""
    wanted = [f"ndcg@{k}", f"recall@{k}"]
    if budgets:
        b = 1024 if 1024 in budgets else sorted(budgets)[len(budgets) // 2]
        wanted.append(f"evidence_recall@{b}t")
    return [m for m in wanted if m in names]


def _stages(
    spec: RunSpec,
    golden: GoldenSet,
    chunks: Sequence[Chunk],
    extents: dict,
    res: Resolution,
    tokenizer,
    trace: StageTrace,
    final: Scored,
    depth: int,
    stage_ms: dict[str, list[float]],
) -> dict:
    """Score every recorded stage like the final rankings (the last stage is the run's result)
    and summarise them; {} for a run without stages."""
    n = len(golden.queries)
    order = [s for s in trace.order if len(trace.lists[s]) == n]
    if len(order) < 2 or order[-1] != trace.order[-1]:
        return {}
    # how deep the stage that reads a ranking reads it: a reranker its candidates
    read_to = {src: trace.reach[s] for s in order for src in trace.inputs[s] if s in trace.reach}
    qids = [q.id for q in golden.queries]
    doc_of = {c.id: c.doc_id for c in chunks}
    out = []
    for name in order:
        scored = (
            final
            if name == order[-1]
            else score_run(spec, golden, chunks, extents, res, trace.lists[name], tokenizer)
        )
        d = depth if name == order[-1] else min(trace.depths[name], read_to.get(name, 10**9))
        cut = [RankedList(r.ids[:d], r.scores[:d]) for r in trace.lists[name]]
        if res.level == "doc":
            cut = [collapse_to_documents(r, doc_of) for r in cut]
        lists = [r.ids for r in cut]
        ceiling = score_rankings(qids, lists, res.qrels, (max(d, 1),)).values[f"recall@{max(d, 1)}"]
        out.append(
            StageScores(
                name=name,
                inputs=tuple(i for i in trace.inputs[name] if i in order),
                depth=d,
                recall_at_depth=np.asarray(ceiling, dtype=float),
                values=scored.values,
                seconds=trace.seconds[name],
                latency_ms=stage_ms.get(name, ()),
            )
        )
    metrics = stage_metrics(spec.k, list(final.values), spec.budgets)
    return summarise_stages(out, metrics)
