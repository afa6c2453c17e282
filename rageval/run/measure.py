"""What a run measures besides its metrics: the stage timings, the search's latency, ANN recall,
the backend calls and the costs block."""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from rageval.report.costs import costs_block
from rageval.report.eval_report import EvalReport, RunFacts
from rageval.retrieval.base import Encoder, Retriever
from rageval.retrieval.trace import StageTrace, parts, tracing
from rageval.run.index import Indexed, request_counts
from rageval.run.search import Searched
from rageval.run.spec import RunSpec
from rageval.types import Chunk, RankedList


class Clock:
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


@dataclass(frozen=True)
class SearchCosts:
    """Measured after the search lap: the encoder's seconds on the queries, the texts asked of
    it, the search's backend calls, the latency sample (overall and per stage), and why there is
    none when it was not sampled."""

    embed_queries: float
    asked: int
    requests: dict[str, int] | None
    latency: dict
    stage_ms: dict[str, list[float]]
    latency_note: str | None = None


def unsampled_latency(retriever: Retriever) -> str | None:
    """Why the retriever's latency is not sampled, or None: the first of its parts that says so in
    a ``latency_unsampled`` member (a scanned flat FAISS index does)."""
    for part in parts(retriever):
        why = getattr(part, "latency_unsampled", None)
        if isinstance(why, str) and why:
            return why
    return None


# Each sampled query is searched this often and its fastest time counts: a busy machine's hiccup
# (another process, a page fault) is not the retriever's latency; the spread between queries stays.
LATENCY_REPEATS = 3
# a search slower than this is timed once: scheduler noise is small against it, and repeating a
# remote or reranked search costs real requests and seconds
REPEAT_BELOW_MS = 20.0


def sample_latency(
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


def requests_of_search(before: dict | None, after: dict | None) -> dict[str, int] | None:
    """Index calls up to the search, and the search calls of the batch search alone."""
    if before is None or after is None:
        return None
    return {"index": before["index"], "search": after["search"] - before["search"]}


def measure_search(
    spec: RunSpec, retriever: Retriever, indexed: Indexed, searched: Searched
) -> SearchCosts:
    """What the search cost (encoder seconds and texts, backend calls), then its latency
    sampled over single-query searches."""
    timed = indexed.timed
    embed_queries = (timed.seconds - indexed.embed_seconds) if timed else 0.0
    asked = timed.texts if timed else 0
    requests = requests_of_search(indexed.requests, request_counts(retriever))
    note = unsampled_latency(retriever) if spec.latency_sample > 0 else None
    if note is not None:
        return SearchCosts(embed_queries, asked, requests, {}, {}, note)
    latency, stage_ms = sample_latency(
        retriever, searched.queries, searched.depth, spec.latency_sample
    )
    return SearchCosts(embed_queries, asked, requests, latency, stage_ms)


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


def costs(
    spec: RunSpec,
    retriever: Retriever,
    clock: Clock,
    indexed: Indexed,
    searched: Searched,
    measured: SearchCosts,
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
