"""Judged-ness of a run: how much of what it retrieved carries a label, and the headline metrics
with unjudged results set aside.

A golden set labels the evidence its authors knew about; a retriever that finds another passage
answering the question is scored as if it missed. Two views show how much that matters:

- ``judged@k`` = |results in the top k that carry any label or judgement, any grade, 0 included|
  / k (ir_measures ``Judged@k``: trec_eval ``P@k`` with every judged item counted as relevant;
  divides by k also when fewer than k results came back).
- ``<metric>_cond@k`` (``precision_cond``, ``recall_cond``, ``hit_rate_cond``, ``mrr_cond``,
  ``ndcg_cond``, ``map_cond``): the metric on the *condensed list* (Sakai 2007): unjudged
  results removed from the ranking before it is cut at k, as ``trec_eval -J``. Equal to the
  standard metric when every result is judged; higher when unjudged results pushed judged
  relevant ones down.

Both take the qrels of the run's label set (golden labels + human judgements, plus accepted LLM
judgements with ``labels=all``), in which a grade 0 means judged non-relevant.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Sequence
from itertools import islice, repeat

import numpy as np

from rageval.scoring.metrics import check_ks, score_rankings
from rageval.scoring.spec import CONDENSED, HEADLINE
from rageval.types import Qrels, RankedList


def _ids(ranking: Sequence[str] | RankedList) -> Sequence[str]:
    return ranking.ids if isinstance(ranking, RankedList) else ranking


def judged_at(
    query_ids: Sequence[str],
    rankings: Sequence[Sequence[str] | RankedList],
    qrels: Qrels,
    ks: Iterable[int],
) -> dict[str, np.ndarray]:
    """Per query, ``judged@k`` for every k: the share of the top k (duplicates dropped, first
    kept) that the qrels judge, any grade. A query with no results scores 0."""
    ks = check_ks(ks)
    depth = max(ks)
    flags = array("b")  # per query, whether each of its top `depth` results is judged (0-padded)
    for qid, ranking in zip(query_ids, rankings, strict=True):
        ids = _ids(ranking)
        head = ids[:depth]
        if len(set(head)) != len(head):
            head = list(islice(dict.fromkeys(ids), depth))
        flags.extend(map((qrels.get(qid) or {}).__contains__, head))
        flags.extend(repeat(0, depth - len(head)))
    matrix = np.frombuffer(flags, dtype=np.int8).reshape(len(query_ids), depth)
    counts = np.cumsum(matrix, axis=1, dtype=np.int64)
    return {f"judged@{k}": counts[:, k - 1] / k for k in ks}


def condense(
    query_ids: Sequence[str],
    rankings: Sequence[Sequence[str] | RankedList],
    qrels: Qrels,
    depth: int | None = None,
) -> list[list[str]]:
    """Each ranking with its unjudged results removed (order kept), cut at ``depth`` when given:
    trec_eval ``-J``. Duplicate ids are dropped (first kept) here too; the standard metrics
    already warned about them."""
    out = []
    for qid, ranking in zip(query_ids, rankings, strict=True):
        judged = list(filter((qrels.get(qid) or {}).__contains__, _ids(ranking)))
        if len(set(judged)) != len(judged):
            judged = list(dict.fromkeys(judged))
        out.append(judged[:depth])
    return out


def condensed_metrics(
    query_ids: Sequence[str],
    rankings: Sequence[Sequence[str] | RankedList],
    qrels: Qrels,
    ks: Iterable[int],
) -> dict[str, np.ndarray]:
    """Per query, every headline metric of the condensed list at every k, named
    ``<metric>_cond@k`` (``ndcg_cond@5``)."""
    ks = check_ks(ks)
    condensed = condense(query_ids, rankings, qrels, max(ks))  # no metric reads past max(ks)
    scores = score_rankings(query_ids, condensed, qrels, ks)
    rename = dict(zip(HEADLINE, CONDENSED, strict=True))
    out = {}
    for name, values in scores.values.items():
        family, _, k = name.partition("@")
        out[f"{rename[family]}@{k}"] = values
    return out


def judged_metrics(
    query_ids: Sequence[str],
    rankings: Sequence[Sequence[str] | RankedList],
    qrels: Qrels,
    ks: Iterable[int],
) -> dict[str, np.ndarray]:
    """``judged@k`` and the condensed headline metrics, per query, at every k."""
    ks = check_ks(ks)
    return {
        **judged_at(query_ids, rankings, qrels, ks),
        **condensed_metrics(query_ids, rankings, qrels, ks),
    }
