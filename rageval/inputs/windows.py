"""Token windows that do not cut words, shared by chunking's two ways of counting tokens."""

from __future__ import annotations

from collections.abc import Sequence


def token_windows(word_ids: Sequence[int | None], size: int, overlap: int) -> list[tuple[int, int]]:
    """Token windows [i, j) of at most ``size`` tokens that do not cut words: a window ends before
    the word it would split (unless that word alone is longer than a window), and the next one
    starts ``overlap`` tokens earlier, moved back to the start of its word."""
    n = len(word_ids)

    def word_start(t: int, floor: int) -> int:
        while t > floor and word_ids[t] is not None and word_ids[t] == word_ids[t - 1]:
            t -= 1
        return t

    windows, i = [], 0
    while i < n:
        j = min(i + size, n)
        if j < n:
            cut = word_start(j, i)
            j = cut if cut > i else j
        windows.append((i, j))
        if j >= n:
            break
        nxt = word_start(j - overlap, i) if overlap else j
        i = nxt if nxt > i else j
    return windows
