"""The evaluation level a run is scored at, decided from what the retriever returned.

``level=auto`` starts from the golden set (document level when it has only document labels, else
chunk level, rageval.scoring.relevance). A retriever that returns document ids (a team's search
function over whole documents) cannot score at chunk level: no document id is a chunk, so every
ranking metric would be 0. :func:`auto_level` looks at the returned ids and moves such a run to
document level and says so (the expected decisions go to the debug log; report.json records the
level of every run). With the level set by hand, :func:`refuse_zeros` stops a
run whose ranking metrics are all 0 while its results hold documents relevant at the other level,
naming the setting to change.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from rageval.errors import ConfigError
from rageval.scoring.relevance import Resolution
from rageval.types import Chunk, RankedList

log = logging.getLogger(__name__)


def to_document_level(res: Resolution, chunks: Sequence[Chunk]) -> Resolution:
    """``res``'s chunk-level qrels as document-level qrels: each relevant chunk counts for its
    document, grades combined by maximum (as resolve(level="doc") labels them)."""
    doc_of = {c.id: c.doc_id for c in chunks}
    qrels: dict[str, dict[str, int]] = {}
    for qid, rel in res.qrels.items():
        docs: dict[str, int] = {}
        for unit, grade in rel.items():
            doc = doc_of.get(unit, unit)
            docs[doc] = max(grade, docs.get(doc, grade))
        qrels[qid] = docs
    return Resolution(qrels=qrels, spans=res.spans, level="doc")


def _returned(results: Sequence[RankedList], chunks: Sequence[Chunk]) -> tuple[int, int, int]:
    """(returned ids, chunk ids among them, document ids among them that are not chunk ids)."""
    chunk_ids = {c.id for c in chunks} | {c.label for c in chunks}
    doc_ids = {c.doc_id for c in chunks} - chunk_ids
    ids = [i for r in results for i in r.ids]
    return len(ids), sum(i in chunk_ids for i in ids), sum(i in doc_ids for i in ids)


def auto_level(
    level: str, res: Resolution, chunks: Sequence[Chunk], results: Sequence[RankedList]
) -> Resolution:
    """The resolution to score with: ``res``, or for ``level=auto`` and a retriever that returned
    mostly document ids, the same labels at document level. Logs what was decided."""
    if level != "auto":
        return res
    if res.level == "doc":  # the expected decisions: in the log file, not on every console
        log.debug("level=auto: document level (the golden set has only document labels)")
        return res
    total, as_chunks, as_docs = _returned(results, chunks)
    if as_docs > as_chunks:
        log.info(
            "level=auto: document level, because the retriever returns document ids (%d of %d "
            "returned ids name documents, %d name chunks); set level=chunk to score chunks",
            as_docs,
            total,
            as_chunks,
        )
        return to_document_level(res, chunks)
    log.debug(
        "level=auto: chunk level (the golden set labels chunks or evidence, and the retriever "
        "returns chunk ids: %d of %d); set level=doc to score documents",
        as_chunks,
        total,
    )
    return res


def refuse_zeros(
    res: Resolution,
    chunks: Sequence[Chunk],
    qids: Sequence[str],
    results: Sequence[RankedList],
    depth: int,
) -> None:
    """ConfigError when a chunk-level run found nothing relevant in any query's top ``depth``
    while its results hold document ids relevant to their query at document level: its ranking
    metrics would all be 0 for a reason of settings, not of retrieval."""
    if res.level != "chunk":
        return
    if any(
        res.qrels.get(q, {}).get(i, 0) > 0
        for q, r in zip(qids, results, strict=True)
        for i in r.ids[:depth]
    ):
        return
    chunk_ids = {c.id for c in chunks}
    by_doc = to_document_level(res, chunks).qrels
    hits = [
        (q, i, rank)
        for q, r in zip(qids, results, strict=True)
        for rank, i in enumerate(r.ids[:depth], start=1)
        if i not in chunk_ids and by_doc.get(q, {}).get(i, 0) > 0
    ]
    if hits:
        q, doc, rank = hits[0]
        raise ConfigError(
            f"every ranking metric is 0 at level=chunk, but the retriever returned document ids: "
            f"{len(hits)} results are documents relevant to their query (query {q!r}: {doc!r} "
            f"at rank {rank}); score documents with level=doc (or level=auto), or return chunk "
            "ids or passages with their text"
        )
