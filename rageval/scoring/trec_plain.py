"""The small-file path of :mod:`rageval.scoring.trec_files`: plain Python, no numpy import.

For a file of a few thousand lines, importing numpy costs more than reading and scoring it. This
path reads both files line by line and scores each query with the definitions of
:mod:`rageval.scoring.metrics` written out per query (the tests hold the two to each other and to
pytrec_eval). Like the array path it returns None for anything unusual (a line it cannot parse,
a BEIR qrels file, grades or scores not written plainly, conflicting judgements, a docid
repeated within a query), and the object path decides.
"""

from __future__ import annotations

import math
import os
import re

from rageval.formats.trec import read_bytes
from rageval.scoring.file_scores import FileScores, no_relevant, nothing_shared
from rageval.scoring.ranking import order_like_trec_eval

METRIC_NAMES = ("precision", "recall", "hit_rate", "mrr", "ndcg", "map")  # metrics.METRICS
_GRADE = re.compile(rb"-?[0-9]{1,17}")
_SCORE = re.compile(rb"[-+]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?")


def _data_lines(path: str | os.PathLike):
    """The fields of each data line (comment and blank lines skipped), split on ASCII
    whitespace as the other readers split them."""
    for line in read_bytes(path).split(b"\n"):
        fields = line.split()
        if fields and not fields[0].startswith(b"#"):
            yield fields


def _qrels(path) -> dict[bytes, dict[bytes, int]] | None:
    qrels: dict[bytes, dict[bytes, int]] = {}
    for fields in _data_lines(path):
        if len(fields) != 4 or not _GRADE.fullmatch(fields[3]):
            return None
        grade = int(fields[3])
        if qrels.setdefault(fields[0], {}).setdefault(fields[2], grade) != grade:
            return None
    return qrels or None


def _run(path) -> dict[bytes, list[tuple[bytes, float]]] | None:
    run: dict[bytes, list[tuple[bytes, float]]] = {}
    for fields in _data_lines(path):
        if len(fields) < 6 or not _SCORE.fullmatch(fields[4]):
            return None
        score = float(fields[4])
        if not math.isfinite(score):
            return None
        run.setdefault(fields[0], []).append((fields[2], score))
    return run or None


def query_values(
    grades: list[int], judged: dict[bytes, int], ks: tuple[int, ...]
) -> tuple[dict[str, float], int]:
    """One query's metrics at every k (see each kernel of :mod:`rageval.scoring.metrics`), and
    its first relevant rank; ``grades``: its ranking's grades, best first (0 when unjudged)."""
    ideal = sorted((g for g in judged.values() if g >= 1), reverse=True)
    first = next((r for r, g in enumerate(grades, 1) if g >= 1), 0)
    out = {}
    for k in ks:
        rel = [g >= 1 for g in grades[:k]]
        found = sum(rel)
        discounts = [1.0 / math.log2(r + 2) for r in range(min(k, max(len(rel), len(ideal))))]
        dcg = sum(g * discounts[r] for r, g in enumerate(grades[:k]) if g >= 1)
        idcg = sum(g * discounts[r] for r, g in enumerate(ideal[:k]))
        hits, ap = 0, 0.0
        for r, is_rel in enumerate(rel, 1):
            if is_rel:
                hits += 1
                ap += hits / r
        n_rel = len(ideal)
        out[f"precision@{k}"] = found / k
        out[f"recall@{k}"] = found / n_rel if n_rel else 0.0
        out[f"hit_rate@{k}"] = float(found > 0)
        out[f"mrr@{k}"] = 1.0 / first if 0 < first <= k else 0.0
        out[f"ndcg@{k}"] = dcg / idcg if idcg > 0 else 0.0
        out[f"map@{k}"] = ap / n_rel if n_rel else 0.0
    return out, first


def score_plain(
    qrels_path: str | os.PathLike,
    run_path: str | os.PathLike,
    ks: tuple[int, ...] | None,
    complete: bool = False,
) -> FileScores | None:
    """Both files scored in plain Python; None where the object path must decide."""
    if ks is None:
        return None
    qrels, run = _qrels(qrels_path), _run(run_path)
    if qrels is None or run is None:
        return None
    if not any(g >= 1 for judged in qrels.values() for g in judged.values()):
        raise no_relevant(qrels_path)
    evaluated = list(qrels) if complete else [q for q in qrels if q in run]
    if not evaluated:
        raise nothing_shared(qrels_path, next(iter(run)).decode(), next(iter(qrels)).decode())
    keys = [f"{m}@{k}" for m in METRIC_NAMES for k in ks]
    values: dict[str, list[float]] = {key: [] for key in keys}
    firsts = []
    for qid in evaluated:
        ranking = order_like_trec_eval(run.get(qid, ())).ids
        if len(set(ranking)) != len(ranking):
            return None  # the object path drops the copies and warns
        judged = qrels[qid]
        row, first = query_values([judged.get(d, 0) for d in ranking], judged, ks)
        for key in keys:
            values[key].append(row[key])
        firsts.append(first)
    shared = sum(q in run for q in qrels)
    return FileScores(
        tuple(q.decode() for q in evaluated),
        values,
        firsts,
        missing=len(qrels) - shared,
        run_only=len(run) - shared,
    )
