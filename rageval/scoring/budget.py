"""Token-budget metrics: what the context a RAG pipeline would send within B tokens holds.

The context for a budget of B tokens (of the embedding model's tokenizer, the same count the
chunker uses): the ranked chunks, best first, while they fit whole; the first chunk that does not
fit is truncated to its first ``B - used`` tokens, and the context ends there. Chunk sizes then
compare at equal cost: 4 chunks of 256 tokens against 1 of 1,024.

- ``evidence_recall@Bt``, ``evidence_precision@Bt``, ``evidence_iou@Bt``: the span metrics of
  :mod:`rageval.scoring.spans` on that context (a truncated chunk counts up to where it is cut).
- ``recall@Bt``: with evidence quotes, quotes the context covers whole / quotes; with chunk or
  document labels, relevant chunks (or documents) with any part in the context / relevant ones.
- ``tokens@k``: tokens of the top k chunks, what a top-k pipeline sends.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import numpy as np

from rageval.scoring.relevance import Span
from rageval.scoring.spans import Extents, evidence_by_query, overlap
from rageval.types import Chunk, Qrels

DEFAULT_BUDGETS = (256, 512, 1024, 2048)
# (chunk, n) -> character offset (into the document) where the chunk's first n tokens end
Truncate = Callable[[Chunk, int], int]


def budget_context(
    ranking: Sequence[str], budget: int, n_tokens: Mapping[str, int]
) -> list[tuple[str, int | None]] | None:
    """(chunk id, tokens kept or None when whole) for the chunks sent within ``budget`` tokens;
    None when a result before the budget fills has no known token count (a document id, or an
    id this run has no text for): the budget cannot be measured."""
    used, out = 0, []
    for cid in ranking:
        n = n_tokens.get(cid)
        if n is None:
            return None
        if used + n <= budget:
            out.append((cid, None))
            used += n
            if used == budget:
                break
        else:
            if budget > used:
                out.append((cid, budget - used))
            break
    return out


def depth_for(budgets: Sequence[int], chunk_tokens: Sequence[int], cap: int = 1000) -> int:
    """Search depth that fills the largest budget even with the smallest chunks (at most
    ``cap``)."""
    if not budgets or not len(chunk_tokens):
        return 0
    sizes = np.cumsum(np.sort(np.asarray(chunk_tokens, dtype=np.int64)))
    return int(min(cap, np.searchsorted(sizes, max(budgets)) + 1))


class TokenizerTruncate:
    """Truncation with the model's tokenizer: the chunk's text re-tokenised, cut after n tokens.
    ``prepare`` tokenises the chunks about to be cut in one batch (cached per chunk)."""

    def __init__(self, tokenizer) -> None:
        self.tokenizer = tokenizer
        self.offsets: dict[str, list[tuple[int, int]]] = {}

    def prepare(self, chunks: Sequence[Chunk]) -> None:
        """Tokenise, in one batch, those ``chunks`` whose token offsets are not cached yet."""
        todo = [c for c in {c.id: c for c in chunks}.values() if c.id not in self.offsets]
        if todo:
            encs = self.tokenizer.encode_batch([c.text for c in todo], add_special_tokens=False)
            for c, enc in zip(todo, encs, strict=True):
                self.offsets[c.id] = enc.offsets

    def __call__(self, chunk: Chunk, n: int) -> int:
        if chunk.id not in self.offsets:
            self.prepare([chunk])
        offsets = self.offsets[chunk.id]
        if n <= 0 or not offsets:
            return chunk.start
        return chunk.start + offsets[min(n, len(offsets)) - 1][1]


def tokenizer_truncate(tokenizer) -> TokenizerTruncate:
    """Truncation with the model's tokenizer (see :class:`TokenizerTruncate`)."""
    return TokenizerTruncate(tokenizer)


def proportional_truncate(chunk: Chunk, n: int) -> int:
    """Truncation without a tokenizer: the same share of characters as of tokens."""
    size = chunk.end - chunk.start
    if not chunk.n_tokens or n >= chunk.n_tokens:
        return chunk.end
    return chunk.start + -(-size * max(n, 0) // chunk.n_tokens)  # exact ceiling, no float error


def budget_metrics(
    query_ids: Sequence[str],
    rankings: Sequence[Sequence[str]],
    *,
    chunks_by_id: Mapping[str, Chunk],
    extents: Extents,
    spans: Mapping[str, list[Span]],
    qrels: Qrels,
    unit_of: Callable[[str], str],
    budgets: Sequence[int],
    truncate: Truncate = proportional_truncate,
    cover: Mapping[str, list[tuple[int, int]]] | None = None,
) -> dict[str, np.ndarray]:
    """Per query and budget B: ``recall@Bt`` and, for queries with evidence, the span metrics
    ``evidence_{recall,precision,iou}@Bt`` (NaN without evidence). ``unit_of`` maps a chunk id to
    the unit qrels judge (the chunk itself, or its document at document level)."""
    n = len(query_ids)
    out: dict[str, np.ndarray] = {}
    for b in budgets:
        out[f"recall@{b}t"] = np.full(n, np.nan)
        for m in ("evidence_recall", "evidence_precision", "evidence_iou"):
            out[f"{m}@{b}t"] = np.full(n, np.nan)
    n_tokens = {cid: c.n_tokens for cid, c in chunks_by_id.items()}
    evidence = evidence_by_query(query_ids, spans, extents, cover)
    contexts = [[budget_context(r, b, n_tokens) for b in budgets] for r in rankings]
    prepare = getattr(truncate, "prepare", None)
    if prepare is not None:  # tokenise every chunk that gets cut in one batch
        prepare([chunks_by_id[c] for ctx in contexts for p in ctx if p for c, kept in p if kept])
    for qi, (qid, ev) in enumerate(zip(query_ids, evidence, strict=True)):
        relevant = {u for u, g in (qrels.get(qid) or {}).items() if g >= 1}
        for b, picked in zip(budgets, contexts[qi], strict=True):
            if picked is None:  # not measured (see budget_context)
                continue
            if ev is None:
                out[f"recall@{b}t"][qi] = 0.0
                if relevant:
                    units = {unit_of(cid) for cid, _ in picked}
                    out[f"recall@{b}t"][qi] = len(units & relevant) / len(relevant)
                continue
            if any(cid not in extents for cid, _ in picked):  # a passage not located
                continue
            context = []
            for cid, kept in picked:
                doc, s, e = extents[cid]
                if kept is not None:
                    e = min(e, truncate(chunks_by_id[cid], kept))
                context.append((doc, s, e))
            o = overlap(ev, context)
            out[f"recall@{b}t"][qi] = o.found / len(ev.quotes)
            out[f"evidence_recall@{b}t"][qi] = o.recall
            out[f"evidence_precision@{b}t"][qi] = o.precision
            out[f"evidence_iou@{b}t"][qi] = o.iou
    return out


def token_counts(
    rankings: Sequence[Sequence[str]], n_tokens: Mapping[str, int], ks: Sequence[int]
) -> dict[str, np.ndarray]:
    """``tokens@k``: tokens of the top k chunks of each ranking; NaN (not measured) where one of
    them has no known token count (a document id, an id without text)."""
    out = {}
    for k in ks:
        out[f"tokens@{k}"] = np.array(
            [
                sum(n_tokens[c] for c in r[:k]) if all(c in n_tokens for c in r[:k]) else np.nan
                for r in rankings
            ],
            dtype=float,
        )
    return out
