"""The one tie rule: a ranking keeps the retriever's order, and runs of equal scores are ordered by
id descending, exactly as trec_eval orders equal scores. Exported run files then re-rank the same.

trec_eval keeps scores as C ``float``: scores equal in single precision are ties (1.0 and
1.0 + 1e-9 are), so every comparison here is made on scores rounded to float32.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable

from rageval.types import RankedList


def _as_float32(scores: Iterable[float]) -> list[float]:
    return array("f", scores).tolist()


def order_like_trec_eval(results: Iterable[tuple[str, float]]) -> RankedList:
    """Order ``(docid, score)`` pairs as trec_eval does: score descending, ties by docid descending.

    Docids compare as plain strings (trec_eval's byte order for UTF-8). Pairs sharing a docid keep
    their order, so the best-scored copy comes first. The returned scores are the given ones.
    """
    pairs = list(results)
    keys = _as_float32(score for _, score in pairs)
    order = sorted(range(len(pairs)), key=keys.__getitem__, reverse=True)
    if len(set(keys)) < len(keys):  # ties: sort again, by docid within a score
        order.sort(key=lambda i: (keys[i], pairs[i][0]), reverse=True)
    return RankedList(tuple(pairs[i][0] for i in order), tuple(pairs[i][1] for i in order))


def ranked(pairs: Iterable[tuple[str, float]], depth: int | None = None) -> RankedList:
    """Order (id, score) pairs like trec_eval and cut at ``depth``."""
    rl = order_like_trec_eval(pairs)
    if depth is not None and len(rl.ids) > depth:
        rl = RankedList(rl.ids[:depth], rl.scores[:depth])
    return rl


def break_ties(rl: RankedList) -> RankedList:
    """Within each run of adjacent scores equal in float32, order ids descending; else keep
    order."""
    ids, keys = list(rl.ids), _as_float32(rl.scores)
    scores = list(rl.scores)
    i, n, changed = 0, len(ids), False
    while i < n:
        j = i + 1
        while j < n and keys[j] == keys[i]:
            j += 1
        if j - i > 1:
            block = sorted(
                zip(ids[i:j], scores[i:j], strict=True), key=lambda p: p[0], reverse=True
            )
            if [b[0] for b in block] != ids[i:j]:
                ids[i:j] = [b[0] for b in block]
                scores[i:j] = [b[1] for b in block]
                changed = True
        i = j
    return RankedList(ids=tuple(ids), scores=tuple(scores)) if changed else rl
