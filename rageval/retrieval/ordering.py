"""The one tie rule: a ranking keeps the retriever's order, and runs of equal scores are ordered by
id descending, exactly as trec_eval orders equal scores. Exported run files then re-rank the same."""

from __future__ import annotations

from collections.abc import Iterable

from rageval.types import RankedList


def ranked(pairs: Iterable[tuple[str, float]], depth: int | None = None) -> RankedList:
    """Sort (id, score) pairs by score descending, ties by id descending, and cut at ``depth``."""
    items = sorted(pairs, key=lambda p: p[0], reverse=True)
    items.sort(key=lambda p: p[1], reverse=True)
    if depth is not None:
        items = items[:depth]
    return RankedList(ids=tuple(i for i, _ in items), scores=tuple(float(s) for _, s in items))


def break_ties(rl: RankedList) -> RankedList:
    """Within each run of equal adjacent scores, order ids descending; otherwise keep the order."""
    ids, scores = list(rl.ids), list(rl.scores)
    i, n, changed = 0, len(ids), False
    while i < n:
        j = i + 1
        while j < n and scores[j] == scores[i]:
            j += 1
        if j - i > 1:
            block = sorted(ids[i:j], reverse=True)
            if block != ids[i:j]:
                ids[i:j] = block
                changed = True
        i = j
    return RankedList(ids=tuple(ids), scores=rl.scores) if changed else rl
