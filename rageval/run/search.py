"""The search stage: every query searched at once, as deep as the cutoffs and budgets need, the
stages of a staged retriever traced."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from rageval.errors import BackendError, ConfigError
from rageval.inputs.judgements import Judgements
from rageval.retrieval.base import Retriever
from rageval.retrieval.passages import PassageStore
from rageval.retrieval.results import ACCEPTED, as_ranked, check_known
from rageval.retrieval.trace import StageTrace, tracing
from rageval.run.resolve import Units, passage_units
from rageval.run.spec import RunSpec
from rageval.scoring.budget import depth_for
from rageval.scoring.level import auto_level, refuse_zeros
from rageval.types import Document, GoldenSet, RankedList


@dataclass(frozen=True)
class Searched:
    """The search phase's outcome: the queries and the depth searched, the rankings, the
    passages that came back with their own ids and text, the stages' trace, and the note for
    results none of whose ids is known (None: some are)."""

    queries: list[str]
    depth: int
    results: list[RankedList]
    store: PassageStore
    trace: StageTrace
    unknown_note: str | None


def search_depth(spec: RunSpec, level: str, chunk_tokens: Sequence[int]) -> int:
    """``spec.depth``, else deep enough for the largest cutoff (x10 at document level, before
    collapsing to documents) and to fill the largest token budget with the smallest chunks."""
    if spec.depth:
        return spec.depth
    by_rank = max(spec.ks) * (10 if level == "doc" else 1)
    return max(by_rank, depth_for(spec.budgets, chunk_tokens))


def search(
    spec: RunSpec,
    retriever: Retriever,
    golden: GoldenSet,
    units: Units,
    docs_by_id: dict[str, Document] | None,
    tokenizer,
    judgements: Judgements,
) -> tuple[Searched, Units]:
    """The search phase: all queries searched at once (stages traced), the run's units (the
    passages that came back, when they have ids and text of their own), and the note for
    results of unknown ids."""
    queries = [q.query for q in golden.queries]
    depth = search_depth(spec, units.res.level, [c.n_tokens for c in units.chunks])
    store = PassageStore()
    with tracing(retriever, StageTrace()) as trace:
        results = search_queries(retriever, queries, depth, spec.query_batch, store)
    if len(store):  # passages with their own ids and text: the run's units are those
        units = Units(
            *passage_units(
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
    return Searched(queries, depth, results, store, trace, unknown_note), units


def search_queries(
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
        bad = [q for q, r in zip(part, got, strict=True) if not finite_scores(r.scores)]
        if bad:  # NaN or inf: no defined order, and no TREC file can hold it
            raise BackendError(
                f"the retriever returned scores that are not finite numbers for {len(bad)} "
                f"queries, e.g. {bad[0]!r}; search() must return real scores",
                failed_queries=bad,
            )
        results.extend(got)
    return results


def finite_scores(scores: Sequence[float]) -> bool:
    try:
        return all(map(math.isfinite, scores))
    except TypeError:  # None or a string where a score belongs
        return False
