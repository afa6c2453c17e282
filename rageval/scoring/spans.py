"""Span metrics for evidence labels: how much of the quoted evidence the top k chunks cover.

- ``evidence_recall@k``: characters of the evidence spans covered by the top k chunks, divided
  by all evidence characters (overlapping quotes counted once).
- ``evidence_iou@k``: covered characters / characters in the union of evidence and retrieved
  spans. Both are computed on character offsets; chunks only count against the document they
  came from. Queries without evidence labels get NaN and are left out of these means.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence

import numpy as np

from rageval.relevance import Span
from rageval.types import Chunk


def _merge(intervals: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for s, e in sorted(intervals):
        if out and s <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], e))
        else:
            out.append((s, e))
    return out


def _length(intervals: list[tuple[int, int]]) -> int:
    return sum(e - s for s, e in intervals)


def _intersection(a: list[tuple[int, int]], b: list[tuple[int, int]]) -> int:
    i = j = total = 0
    while i < len(a) and j < len(b):
        lo, hi = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        if hi > lo:
            total += hi - lo
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return total


def span_metrics(
    query_ids: Sequence[str],
    rankings: Sequence[Sequence[str]],
    spans: Mapping[str, list[Span]],
    chunks_by_id: Mapping[str, Chunk],
    ks: Sequence[int],
) -> dict[str, np.ndarray]:
    """``evidence_recall@k`` and ``evidence_iou@k`` per query (NaN where a query has no evidence)."""
    out = {
        f"{m}@{k}": np.full(len(query_ids), np.nan)
        for k in ks
        for m in ("evidence_recall", "evidence_iou")
    }
    for qi, (qid, ranking) in enumerate(zip(query_ids, rankings, strict=True)):
        q_spans = spans.get(qid) or []
        if not q_spans:
            continue
        ev: dict[str, list[tuple[int, int]]] = defaultdict(list)
        for s in q_spans:
            ev[s.doc].append((s.start, s.end))
        ev_m = {d: _merge(v) for d, v in ev.items()}
        ev_len = sum(_length(v) for v in ev_m.values())
        for k in ks:
            got: dict[str, list[tuple[int, int]]] = defaultdict(list)
            for cid in list(ranking)[:k]:
                c = chunks_by_id.get(cid)
                if c is not None:
                    got[c.doc_id].append((c.start, c.end))
            got_m = {d: _merge(v) for d, v in got.items()}
            covered = sum(_intersection(ev_m[d], got_m[d]) for d in ev_m if d in got_m)
            got_len = sum(_length(v) for v in got_m.values())
            out[f"evidence_recall@{k}"][qi] = covered / ev_len if ev_len else 0.0
            union = ev_len + got_len - covered
            out[f"evidence_iou@{k}"][qi] = covered / union if union else 0.0
    return out
