"""Ranking metrics, vectorised over a (queries x depth) grade matrix, equal to trec_eval's.

Semantics (each checked against pytrec_eval in the tests):

- A ranking is taken as given, best first; ties were broken by whoever produced it (``read_run``
  orders a TREC run as trec_eval does). Duplicate ids are dropped, the first kept, with one warning
  (the check covers what metrics read: the top max(k) and down to the first relevant result).
- Grade >= 1 is relevant; 0 (or negative) is judged non-relevant and gains nothing.
- A query with no results scores 0 on every metric and stays in the mean.
- A query without any relevant judgement scores 0 on every metric (trec_eval does the same).
"""

from __future__ import annotations

import gc
import warnings
from array import array
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from itertools import count, repeat

import numpy as np

from rageval.errors import ConfigError, InputError
from rageval.scoring.spec import MetricSpec
from rageval.types import Qrels, RankedList


@dataclass(frozen=True, slots=True)
class GradeMatrix:
    """Rankings that have a relevant result in their top ``depth``, as arrays, one row each.

    ``grades[i, r]``: grade of the result at rank ``r + 1`` (0 when unjudged or past the end);
    ``ideal[i]``: the query's grades >= 1 in descending order (0 past them); both cut at
    ``depth``, the largest k. ``n_relevant[i]``: number of judgements with grade >= 1;
    ``first_relevant_rank[i]``: 1-based rank of the first relevant result. A ranking without a
    relevant result in its top ``depth`` has no row: every metric of it is 0.
    """

    grades: np.ndarray
    ideal: np.ndarray
    n_relevant: np.ndarray
    first_relevant_rank: np.ndarray


def _relevant_top(m: GradeMatrix, k: int) -> np.ndarray:
    return m.grades[:, :k] >= 1


def _width(m: GradeMatrix, k: int) -> int:
    """Columns that matter at cutoff k: the matrix is cut where no ranking or ideal reaches."""
    return min(k, m.grades.shape[1])


def _safe_divide(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    return np.divide(num, den, out=np.zeros(num.shape), where=den > 0)


def precision(m: GradeMatrix, k: int) -> np.ndarray:
    """P@k = |relevant in top k| / k (divides by k even when fewer than k results came back)."""
    return _relevant_top(m, k).sum(axis=1) / k


def recall(m: GradeMatrix, k: int) -> np.ndarray:
    """R@k = |relevant in top k| / |relevant judged| (0 when nothing is judged relevant)."""
    return _safe_divide(_relevant_top(m, k).sum(axis=1).astype(float), m.n_relevant)


def hit_rate(m: GradeMatrix, k: int) -> np.ndarray:
    """Hit@k = 1 if any relevant result is in the top k, else 0."""
    return _relevant_top(m, k).any(axis=1).astype(float)


def reciprocal_rank(m: GradeMatrix, k: int) -> np.ndarray:
    """RR@k = 1 / rank of the first relevant result if that rank <= k, else 0 (mean: MRR@k)."""
    r = m.first_relevant_rank
    return _safe_divide(((r > 0) & (r <= k)).astype(float), r)


def ndcg(m: GradeMatrix, k: int) -> np.ndarray:
    """nDCG@k = DCG@k / IDCG@k, DCG@k = sum_{r<=k} grade_r / log2(r + 1) (linear gain).

    IDCG@k is the DCG of all judged relevant grades sorted descending, cut at k (trec_eval
    ``ndcg_cut``); 0 when nothing is judged relevant.
    """
    discount = 1.0 / np.log2(np.arange(2, _width(m, k) + 2))
    dcg = (np.where(_relevant_top(m, k), m.grades[:, :k], 0.0) * discount).sum(axis=1)
    return _safe_divide(dcg, (m.ideal[:, :k] * discount).sum(axis=1))


def average_precision(m: GradeMatrix, k: int) -> np.ndarray:
    """AP@k = sum_{r<=k, rel_r} P@r / |relevant judged| (trec_eval ``map_cut``; mean: MAP@k)."""
    rel = _relevant_top(m, k)
    precision_at = np.cumsum(rel, axis=1) / np.arange(1, _width(m, k) + 1)
    return _safe_divide((precision_at * rel).sum(axis=1), m.n_relevant)


# name -> per-query kernel. The names are what reports and MetricSpec use.
KERNELS: dict[str, Callable[[GradeMatrix, int], np.ndarray]] = {
    "precision": precision,
    "recall": recall,
    "hit_rate": hit_rate,
    "mrr": reciprocal_rank,
    "ndcg": ndcg,
    "map": average_precision,
}
METRICS: tuple[str, ...] = tuple(KERNELS)
__all__ = ["KERNELS", "METRICS", "MetricSpec", "PerQueryScores", "score_rankings"]


@dataclass(frozen=True)
class PerQueryScores:
    """Per-query metric values; ``values["ndcg@10"][i]`` belongs to ``query_ids[i]``."""

    query_ids: tuple[str, ...]
    values: dict[str, np.ndarray]
    first_relevant_rank: np.ndarray

    def mean(self) -> dict[str, float]:
        """Mean of each metric over all queries (NaN when there are no queries)."""
        return {k: float(v.mean()) if v.size else float("nan") for k, v in self.values.items()}

    def to_rows(self) -> list[dict]:
        """One dict per query: ``query_id``, every metric, ``first_relevant_rank``."""
        cols = {key: v.tolist() for key, v in self.values.items()}
        cols["first_relevant_rank"] = self.first_relevant_rank.tolist()
        return [
            {"query_id": q, **{key: col[i] for key, col in cols.items()}}
            for i, q in enumerate(self.query_ids)
        ]


def grade_matrix(
    query_ids: Sequence[str],
    rankings: Sequence[Sequence[str] | RankedList],
    qrels: Qrels,
    depth: int,
) -> tuple[GradeMatrix, np.ndarray, np.ndarray, int]:
    """Join rankings with qrels: the :class:`GradeMatrix` of the rankings with a relevant result
    in their top ``depth``, their indices, every ranking's first relevant rank (0 if none) and the
    number of rankings that held duplicate ids.

    Duplicate ids are dropped (first kept) from the part of a ranking that metrics read: the top
    ``depth`` results and everything down to the first relevant one (a deeper duplicate changes no
    number).
    """
    if len(query_ids) != len(rankings):
        raise InputError(f"{len(query_ids)} query ids but {len(rankings)} rankings")
    firsts = array("q")  # every ranking's first relevant rank
    hits = array("q")  # rankings with a relevant result in the top `depth`, with
    top = array("d")  # the grades of their top `depth` results,
    sizes = array("q")  # how many judgements they have,
    pool = array("d")  # and the grades of those
    n_dup = 0
    # Paused GC: the many short-lived objects below would trigger full collections, each walking
    # every object of a big heap (the rankings themselves). That alone can double the time.
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        # Per ranking: one scan in C down to the first result with a non-zero grade, a duplicate
        # check of what metrics read, and grade lookups for the top `depth` results only.
        for i, ranking, judged in zip(count(), rankings, map(qrels.get, query_ids, repeat({}))):
            ids = ranking.ids if isinstance(ranking, RankedList) else ranking
            first = next(filter(judged.get, ids), None)
            if first is not None and not judged[first] >= 1:  # a grade below 1: rescan
                relevant = {d for d, g in judged.items() if g >= 1}
                first = next(filter(relevant.__contains__, ids), None)
            head = ids[:depth]
            p = -1 if first is None else ids.index(first)
            read = ids[: p + 1] if p >= depth else head
            if len(set(read)) != len(read):
                n_dup += 1
                ids = list(dict.fromkeys(ids))
                head = ids[:depth]
                p = -1 if first is None else ids.index(first)
            firsts.append(p + 1)
            if 0 <= p < depth:
                hits.append(i)
                top.extend(map(judged.get, head, repeat(0)))
                top.extend(repeat(0, depth - len(head)))
                sizes.append(len(judged))
                pool.extend(judged.values())
    finally:
        if gc_was_enabled:
            gc.enable()
    rows, first_rank = np.frombuffer(hits, dtype=np.int64), np.frombuffer(firsts, dtype=np.int64)
    sizes_array = np.frombuffer(sizes, dtype=np.int64)
    ideal, n_relevant = ideal_grades(np.frombuffer(pool), sizes_array, depth)
    grades = np.frombuffer(top).reshape(len(rows), depth)
    return GradeMatrix(grades, ideal, n_relevant, first_rank[rows]), rows, first_rank, n_dup


def ideal_grades(
    grades: np.ndarray, sizes: np.ndarray, depth: int
) -> tuple[np.ndarray, np.ndarray]:
    """Per query (its ``sizes[i]`` grades in a row): relevant grades sorted descending and cut at
    ``depth``, and how many there are."""
    owner = np.repeat(np.arange(len(sizes)), sizes)
    keep = grades >= 1
    g, owner = grades[keep], owner[keep]
    n_relevant = np.bincount(owner, minlength=len(sizes))
    order = np.lexsort((-g, owner))
    g, owner = g[order], owner[order]
    rank = np.arange(len(g)) - (np.cumsum(n_relevant) - n_relevant)[owner]
    cut = rank < depth
    ideal = np.zeros((len(sizes), depth))
    ideal[owner[cut], rank[cut]] = g[cut]
    return ideal, n_relevant


def check_ks(ks: Iterable[int]) -> tuple[int, ...]:
    """Validate cutoffs (positive integers); duplicates dropped, order kept."""
    out = tuple(dict.fromkeys(ks))
    if not out or any(isinstance(k, bool) or not isinstance(k, int | np.integer) for k in out):
        raise ConfigError(f"cutoffs must be positive integers like 1,5,10; got {list(out)}")
    if min(out) <= 0:
        raise ConfigError(f"cutoff k must be a positive integer, got {min(out)}")
    return tuple(map(int, out))


def score_rankings(
    query_ids: Sequence[str],
    rankings: Sequence[Sequence[str] | RankedList],
    qrels: Qrels,
    ks: Iterable[int],
    metrics: Sequence[str] = METRICS,
) -> PerQueryScores:
    """Score each ranking (best first) against ``qrels`` at every cutoff in ``ks``, in one pass.

    ``rankings[i]`` belongs to ``query_ids[i]``. Returns per-query values keyed ``"<metric>@<k>"``
    for every metric and k (see each kernel's docstring for its formula). Warns once when some
    rankings held duplicate ids.
    """
    ks = check_ks(ks)
    unknown = [m for m in metrics if m not in KERNELS]
    if unknown:
        raise ConfigError(f"unknown metric {unknown[0]!r}; valid metrics: {', '.join(METRICS)}")
    specs = [MetricSpec(name, k) for name in metrics for k in ks]
    # No metric reads past the longest ranking or the most judgements of a query: a cutoff of a
    # billion must not allocate a billion columns.
    longest = max(
        map(len, (r.ids if isinstance(r, RankedList) else r for r in rankings)), default=0
    )
    judged = max((len(qrels.get(q, ())) for q in query_ids), default=0)
    depth = max(1, min(max(ks), max(longest, judged)))
    matrix, rows, first, n_dup = grade_matrix(query_ids, rankings, qrels, depth)
    if n_dup:
        warnings.warn(
            f"{n_dup} of {len(query_ids)} rankings held duplicate ids; "
            "later occurrences were dropped before scoring",
            stacklevel=2,
        )
    values = {}
    for spec in specs:
        values[str(spec)] = np.zeros(len(query_ids))
        values[str(spec)][rows] = KERNELS[spec.name](matrix, spec.k)
    return PerQueryScores(tuple(query_ids), values, first)
