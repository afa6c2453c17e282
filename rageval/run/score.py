"""The score stage: every metric per query (as trec_eval for ranking metrics), ANN recall, and
every recorded stage of a staged retriever scored like the final rankings."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from rageval.report.eval_report import Scored
from rageval.report.stages import StageScores, summarise_stages
from rageval.retrieval.base import Encoder, Retriever
from rageval.retrieval.trace import StageTrace
from rageval.run.measure import SearchCosts, ann_recall
from rageval.run.resolve import Units
from rageval.run.search import Searched
from rageval.run.spec import RunSpec
from rageval.scoring.budget import (
    budget_metrics,
    proportional_truncate,
    token_counts,
    tokenizer_truncate,
)
from rageval.scoring.judged import judged_metrics
from rageval.scoring.metrics import score_rankings
from rageval.scoring.ranking import break_ties
from rageval.scoring.relevance import Resolution
from rageval.scoring.spans import span_metrics
from rageval.types import Chunk, GoldenSet, RankedList


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


def score(
    spec: RunSpec,
    retriever: Retriever,
    encoder: Encoder | None,
    golden: GoldenSet,
    units: Units,
    searched: Searched,
    tokenizer,
    measured: SearchCosts,
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
    stages = score_stages(
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


def stage_metrics(k: int, names: Sequence[str], budgets: Sequence[int]) -> list[str]:
    """The metrics a stage table compares: nDCG@k and recall@k, and the budget metric a sweep
    decides by (``evidence_recall@1024t``, else the middle budget) when the run has it."""
    wanted = [f"ndcg@{k}", f"recall@{k}"]
    if budgets:
        b = 1024 if 1024 in budgets else sorted(budgets)[len(budgets) // 2]
        wanted.append(f"evidence_recall@{b}t")
    return [m for m in wanted if m in names]


def score_stages(
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
