"""The resolve stage: the run's units (rageval's chunks, or the passages a deployed index
returned) and the qrels over them, for this chunking."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from rageval.inputs.judgements import PPI, Judgements
from rageval.retrieval.passages import PassageStore, passage_chunks
from rageval.run.labels import with_judgements
from rageval.run.load import load_inputs
from rageval.run.spec import RunSpec
from rageval.scoring.relevance import Resolution, resolve, resolve_passages
from rageval.scoring.spans import ChunkExtents
from rageval.types import Chunk, Document, GoldenSet, RankedList

log = logging.getLogger("rageval")


@dataclass
class Units:
    """What a run is scored on: its units (rageval's chunks, or the passages a deployed index
    returned), where they lie in their documents, the qrels over them, and the characters
    evidence may lie in (None: the units tile their documents)."""

    chunks: list[Chunk]
    extents: Mapping[str, tuple[str, int, int]]
    res: Resolution
    cover: dict[str, list[tuple[int, int]]] | None = None
    # labels=ppi: the qrels under the people's labels (golden set + human judgements)
    human: Resolution | None = None


def resolve_units(
    spec: RunSpec,
    golden: GoldenSet,
    docs: list[Document],
    by_id: dict[str, Document],
    chunks: list[Chunk],
    judgements: Judgements,
) -> Units:
    """The resolve phase: the qrels over ``chunks`` (the golden set's labels with the
    judgements laid over them, only the run's side of a split) and the chunks' extents."""
    gold = resolve(golden, by_id, chunks, spec.level)
    res = with_judgements(gold, judgements, spec.labels, chunks)
    # labels=ppi: res is the LLM side (every query), human the people's (the sampled queries)
    human = with_judgements(gold, judgements, "gold", chunks) if spec.labels == PPI else None
    if spec.split.name != "all":  # judgements of the other side's queries stay out of qrels.trec
        kept = {q.id for q in golden.queries}
        res = Resolution({q: r for q, r in res.qrels.items() if q in kept}, res.spans, res.level)
    extents = ChunkExtents(chunks, {d.id: len(d.text) for d in docs})
    return Units(chunks, extents, res, human=human)


def passage_units(
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
