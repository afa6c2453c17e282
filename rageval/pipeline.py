"""``evaluate``: the one place that sequences the stages of a run.

golden + corpus -> chunks -> qrels for this chunking -> index (embeddings via the cache) ->
search all queries at once -> metrics per query -> means, CIs, slices -> EvalReport.
Takes plain objects (no Hydra, no MLflow), so tests and users' scripts can call it directly.
"""

from __future__ import annotations

import logging
import math
import time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from rageval.chunking import ChunkingSpec, chunk_documents, load_tokenizer
from rageval.embedding.guard import check_query_model
from rageval.errors import BackendError, ConfigError
from rageval.inputs.corpus import corpus_digest, load_corpus
from rageval.inputs.golden import load_golden
from rageval.ranking import break_ties
from rageval.relevance import resolve
from rageval.report.eval_report import EvalReport, summarise
from rageval.retrieval.base import Encoder, Retriever
from rageval.scoring.metrics import score_rankings
from rageval.scoring.spans import span_metrics
from rageval.types import Document, GoldenSet, RankedList

log = logging.getLogger("rageval")


@dataclass(frozen=True)
class RunSpec:
    """What to evaluate: data, chunking, cutoffs and evaluation level."""

    corpus: str | tuple[Document, ...]  # a path, or documents already read (BEIR)
    golden: str | GoldenSet
    tokenizer_dir: str
    chunking: ChunkingSpec = field(default_factory=ChunkingSpec)
    k: int = 5
    ks: tuple[int, ...] = (1, 3, 5, 10)
    level: str = "auto"
    depth: int | None = None
    latency_sample: int = 20
    allow_model_mismatch: bool = False
    # queries searched per retriever call: a golden set of 100,000 queries runs in batches
    query_batch: int = 10_000

    def __post_init__(self) -> None:
        if self.k <= 0 or any(int(x) <= 0 for x in self.ks):
            raise ConfigError(
                f"k and every value in ks must be > 0 (k={self.k}, ks={list(self.ks)})"
            )
        object.__setattr__(self, "ks", tuple(sorted({int(x) for x in (*self.ks, self.k)})))


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
    """Run one evaluation and return its report (metrics, per-query rows, timings, digests)."""
    timings: dict[str, float] = {}
    t0 = time.perf_counter()
    golden = spec.golden if isinstance(spec.golden, GoldenSet) else load_golden(spec.golden)
    docs = load_corpus(spec.corpus) if isinstance(spec.corpus, str) else list(spec.corpus)
    timings["load_s"] = time.perf_counter() - t0

    t = time.perf_counter()
    max_len = getattr(encoder, "max_seq_length", None)
    if max_len and spec.chunking.size > max_len:
        warnings.warn(
            f"chunk={spec.chunking.size} exceeds the embedding model's max_seq_length={max_len}: "
            "the tail of every chunk is invisible to the vector index",
            stacklevel=2,
        )
    chunks = chunk_documents(docs, spec.chunking, load_tokenizer(spec.tokenizer_dir))
    timings["chunk_s"] = time.perf_counter() - t

    t = time.perf_counter()
    res = resolve(golden, {d.id: d for d in docs}, chunks, spec.level)
    # The documents' text is not needed past this point: drop it before the index is built, so
    # the corpus text is not held twice (documents and chunks) while embeddings fill memory.
    n_docs, digest = len(docs), corpus_digest(docs)
    del docs
    timings["resolve_s"] = time.perf_counter() - t

    if encoder is not None and query_encoder is not None:
        encoder = check_query_model(encoder, query_encoder, spec.allow_model_mismatch)

    t = time.perf_counter()
    retriever.index(chunks, encoder)
    timings["index_s"] = time.perf_counter() - t

    queries = [q.query for q in golden.queries]
    depth = spec.depth or (max(spec.ks) * (10 if res.level == "doc" else 1))
    t = time.perf_counter()
    results = _search(retriever, queries, depth, spec.query_batch)
    timings["search_s"] = time.perf_counter() - t
    latency = _latency(retriever, queries, depth, spec.latency_sample)

    t = time.perf_counter()
    # The one tie rule (rageval.ranking), also for plug-in retrievers: the run file
    # written from these rankings then re-ranks the same under trec_eval.
    results = chunk_rankings = [break_ties(r) for r in results]
    if res.level == "doc":
        doc_of = {c.id: c.doc_id for c in chunks}
        results = [collapse_to_documents(r, doc_of) for r in results]
    qids = [q.id for q in golden.queries]
    scores = score_rankings(qids, [r.ids for r in results], res.qrels, spec.ks)
    values = dict(scores.values)
    if any(res.spans.values()):
        by_id = {c.id: c for c in chunks}
        values.update(
            span_metrics(qids, [r.ids for r in chunk_rankings], res.spans, by_id, spec.ks)
        )
    timings["score_s"] = time.perf_counter() - t
    timings["total_s"] = time.perf_counter() - t0

    return summarise(
        golden=golden,
        chunks=chunks,
        qrels=res.qrels,
        level=res.level,
        rankings=results,
        values=values,
        first_relevant_rank=scores.first_relevant_rank,
        spec=spec,
        timings=timings,
        latency=latency,
        digests={
            "golden": golden.digest,
            "corpus": digest,
            "model": getattr(encoder, "fingerprint", "") or "",
            # which model and how it ran (backend, quantization): the fingerprint says it is another
            "embedding": str(getattr(encoder, "description", "") or ""),
        },
        counts={
            "documents": n_docs,
            "chunks": len(chunks),
            "queries": len(qids),
            # texts that went through the embedding model in this run (cache misses)
            "texts_embedded": int(getattr(encoder, "texts_encoded", 0) or 0),
        },
        config=config or {},
    )


def _search(retriever: Retriever, queries: list[str], depth: int, batch: int) -> list[RankedList]:
    """All queries, ``batch`` per retriever call (one call for a golden set up to that size)."""
    from tqdm.auto import tqdm

    if batch <= 0:
        raise ConfigError(f"query_batch must be > 0, got {batch}")
    results: list[RankedList] = []
    starts = range(0, len(queries), batch)
    for lo in tqdm(starts, desc="searching", unit="batch", disable=len(starts) < 2):
        part = queries[lo : lo + batch]
        got = retriever.search(part, depth)
        if len(got) != len(part):
            raise ConfigError(
                f"the retriever returned {len(got)} rankings for {len(part)} queries; "
                "search() must return one RankedList per query, in order"
            )
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


def _latency(retriever: Retriever, queries: Sequence[str], depth: int, n: int) -> dict:
    """Per-query search latency over a sample of single-query calls (query vectors are cached)."""
    sample = list(queries[: max(0, n)])
    ms = []
    for q in sample:
        t = time.perf_counter()
        retriever.search([q], depth)
        ms.append((time.perf_counter() - t) * 1000)
    if not ms:
        return {}
    return {
        "p50_ms": float(np.percentile(ms, 50)),
        "p95_ms": float(np.percentile(ms, 95)),
        "queries_sampled": len(ms),
    }
