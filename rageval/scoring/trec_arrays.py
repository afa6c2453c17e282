"""The array path of :mod:`rageval.scoring.trec_files`: qrels and run joined without a Python
object per line.

Each id field becomes rows of 64-bit words (:meth:`rageval.formats.trec.Columns.words`); query and
document ids are matched through 64-bit hashes of those rows, and every hash match is checked
against the rows themselves, so a hash collision can never join two different ids. Anything this
path cannot settle cheaply and exactly (a line it cannot parse, grades that are not plain
integers, conflicting judgements, a docid repeated within the part of a ranking that metrics read,
a hash collision) returns None, and the caller takes the object path.
"""

from __future__ import annotations

import os

import numpy as np

from rageval.formats import trec
from rageval.scoring.file_scores import FileScores, no_relevant, nothing_shared
from rageval.scoring.metrics import KERNELS, METRICS, GradeMatrix, ideal_grades
from rageval.scoring.spec import MetricSpec

_MIX = (np.uint64(0xBF58476D1CE4E5B9), np.uint64(0x94D049BB133111EB))


def _hash(rows: np.ndarray) -> np.ndarray:
    """A 64-bit hash of each row of words (equal rows, equal hashes; the converse is checked)."""
    h = np.full(len(rows), 0x9E3779B97F4A7C15, dtype=np.uint64)
    for column in rows.T:
        h ^= column
        h *= _MIX[0]
        h ^= h >> np.uint64(31)
    return h


def _with_query(doc_hash: np.ndarray, query: np.ndarray) -> np.ndarray:
    h = doc_hash ^ (query.astype(np.uint64) * _MIX[1])
    h *= _MIX[0]
    return h ^ (h >> np.uint64(29))


def _groups(ids: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """Per line, its query's number in order of first appearance, and each query's first line;
    None on a hash collision."""
    n = len(ids)
    change = np.ones(n, dtype=bool)
    change[1:] = (ids[1:] != ids[:-1]).any(axis=1)
    heads = np.flatnonzero(change)
    head_hashes = np.sort(_hash(ids[heads]))
    if not bool((head_hashes[1:] == head_hashes[:-1]).any()):  # each query's lines together
        return np.cumsum(change) - 1, heads
    hashes, first, inverse = np.unique(_hash(ids), return_index=True, return_inverse=True)
    inverse = inverse.reshape(-1)
    if not np.array_equal(ids, ids[first[inverse]]):
        return None
    by_appearance = np.argsort(first, kind="stable")
    code = np.empty(len(first), dtype=np.int64)
    code[by_appearance] = np.arange(len(first))
    return code[inverse], first[by_appearance]


def _decode(rows: np.ndarray) -> list[str]:
    width = 8 * rows.shape[1]
    return [b.decode() for b in np.ascontiguousarray(rows).view(f"S{width}")[:, 0].tolist()]


def _same_width(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Both sets of rows zero-padded to the wider one's words, so equal ids are equal rows."""
    width = max(a.shape[1], b.shape[1])
    return _pad(a, width), _pad(b, width)


def _pad(rows: np.ndarray, n_words: int) -> np.ndarray:
    if rows.shape[1] == n_words:
        return rows
    out = np.zeros((len(rows), n_words), dtype="<u8")
    out[:, : rows.shape[1]] = rows
    return out


def _plain_integers(rows: np.ndarray, lengths: np.ndarray) -> bool:
    """Every field is ASCII digits with an optional leading '-', at most 18 characters: what
    numpy and Python's ``int`` read alike (anything else goes to the object path)."""
    if not len(lengths) or int(lengths.max()) > 18:
        return False
    chars = rows.view(np.uint8).reshape(len(rows), -1)
    digit = (chars >= ord("0")) & (chars <= ord("9"))
    position = np.arange(chars.shape[1])
    inside = position < lengths[:, None]
    ok = digit | ~inside
    ok[:, 0] |= (chars[:, 0] == ord("-")) & (lengths > 1)
    return bool(ok.all())


def _ranges(starts: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """Concatenated ``arange(starts[i], starts[i] + sizes[i])``."""
    before = np.cumsum(sizes) - sizes
    return np.repeat(starts - before, sizes) + np.arange(int(sizes.sum()))


def score_arrays(
    qrels_path: str | os.PathLike,
    run_path: str | os.PathLike,
    ks: tuple[int, ...],
    complete: bool = False,
) -> FileScores | None:
    """The array path (see the module docstring); None where the object path must decide."""
    parsed = _parse(qrels_path, run_path)
    if parsed is None:
        return None
    qrels, run, grades, scores = parsed
    q_ids, r_ids = _same_width(qrels.words(0), run.words(0))
    q_groups, r_groups = _groups(q_ids), _groups(r_ids)
    if q_groups is None or r_groups is None:
        return None
    q_code, q_heads = q_groups
    r_code, r_heads = r_groups
    run_query = _run_queries(q_ids[q_heads], r_ids[r_heads])
    if run_query is None:
        return None  # a hash collision
    same = run_query >= 0
    shared = int(same.sum())
    if not complete and not shared:
        raise nothing_shared(
            qrels_path, _decode(r_ids[r_heads[:1]])[0], _decode(q_ids[q_heads[:1]])[0]
        )

    # judgements: duplicates must agree (else the object path names the line), then the join
    q_docs, r_docs = _same_width(qrels.words(2), run.words(2))
    keep = _first_judgements(q_code, q_docs, grades)
    if keep is None:
        return None  # a hash collision or conflicting judgements
    j_rows = np.flatnonzero(keep & (run_query[q_code] >= 0))
    r_key = _with_query(_hash(r_docs), r_code)
    grade = _run_grades(
        run_query[q_code[j_rows]], q_docs[j_rows], grades[j_rows], r_code, r_docs, r_key
    )
    if grade is None:
        return None  # a hash collision
    r_code, grade, r_key = _trec_order(r_code, r_docs, scores, grade, r_key)

    # ranks and the depth metrics read; a docid repeated there goes to the object path
    n_queries = len(r_heads)
    rank, lengths, first_rank = _ranks(r_code, grade, n_queries)
    judged = np.bincount(q_code[keep], minlength=len(q_heads))
    evaluated = np.arange(len(q_heads)) if complete else np.flatnonzero(same)
    depth = max(1, min(max(ks), max(int(lengths.max()), int(judged[evaluated].max()))))
    read = np.sort(r_key[(rank < depth) | (rank < first_rank[r_code])])
    if bool((read[1:] == read[:-1]).any()):
        return None  # a repeated docid (or a hash collision): the object path warns

    # the grade matrix of the evaluated queries with a relevant result in their top `depth`
    firsts, rows, matrix = _top_grades(run_query[evaluated], first_rank, rank, r_code, grade, depth)
    scored = evaluated[rows]
    pool = _judged_grades(grades, q_code, keep, judged, scored)
    ideal, n_relevant = ideal_grades(pool.astype(np.float64), judged[scored], depth)
    m = GradeMatrix(matrix, ideal, n_relevant, firsts[rows])
    return FileScores(
        tuple(_decode(q_ids[q_heads[evaluated]])),
        _metric_values(m, ks, rows, len(evaluated)),
        firsts,
        missing=len(q_heads) - shared,
        run_only=n_queries - shared,
    )


def _parse(
    qrels_path: str | os.PathLike, run_path: str | os.PathLike
) -> tuple[trec.Columns, trec.Columns, np.ndarray, np.ndarray] | None:
    """Both files' columns, the qrels' grades and the run's scores; None where a line or a field
    is not what this path reads; raises when no judgement is relevant."""
    qrels = trec.columns(qrels_path, 4, (0, 2, 3), exact=True)
    if qrels is None:
        return None
    run = trec.columns(run_path, 6, (0, 2, 4), exact=False)
    if run is None:
        return None
    grade_words = qrels.words(3)
    if not _plain_integers(grade_words, qrels.lengths[3]):
        return None
    grades = grade_words.view(f"S{8 * grade_words.shape[1]}")[:, 0].astype(np.int64)
    score_words = run.words(4)
    try:
        scores = score_words.view(f"S{8 * score_words.shape[1]}")[:, 0].astype(np.float64)
    except ValueError:
        return None
    if not bool(np.isfinite(scores).all()):
        return None
    if not bool((grades >= 1).any()):
        raise no_relevant(qrels_path)
    return qrels, run, grades, scores


def _run_queries(qrels_heads: np.ndarray, run_heads: np.ndarray) -> np.ndarray | None:
    """Which run query each qrels query is (-1: none), from the id rows of each file's queries
    in order; None on a hash collision."""
    r_head_hash = _hash(run_heads)
    q_head_hash = _hash(qrels_heads)
    by_hash = np.argsort(r_head_hash)
    where = np.searchsorted(r_head_hash[by_hash], q_head_hash)
    where = np.minimum(where, len(by_hash) - 1)
    candidate = by_hash[where]
    same_hash = r_head_hash[candidate] == q_head_hash
    same = same_hash & (run_heads[candidate] == qrels_heads).all(axis=1)
    if bool((same_hash & ~same).any()):
        return None
    return np.where(same, candidate, -1)


def _first_judgements(
    q_code: np.ndarray, q_docs: np.ndarray, grades: np.ndarray
) -> np.ndarray | None:
    """Which qrels lines count: all but the later copies of a repeated (query, docid)
    judgement; None when the copies disagree or hashes collide."""
    q_key = _with_query(_hash(q_docs), q_code)
    order = np.argsort(q_key, kind="stable")
    sorted_key = q_key[order]
    repeat = np.flatnonzero(sorted_key[1:] == sorted_key[:-1])
    keep = np.ones(len(q_key), dtype=bool)
    if len(repeat):
        a, b = order[repeat], order[repeat + 1]
        if not (
            np.array_equal(q_code[a], q_code[b])
            and np.array_equal(q_docs[a], q_docs[b])
            and np.array_equal(grades[a], grades[b])
        ):
            return None
        keep[b] = False
    return keep


def _run_grades(
    j_query: np.ndarray,
    j_docs: np.ndarray,
    j_grades: np.ndarray,
    r_code: np.ndarray,
    r_docs: np.ndarray,
    r_key: np.ndarray,
) -> np.ndarray | None:
    """The grade of each run line (0: unjudged) from the judgements to join (their run query,
    docid rows and grade); ``r_key``: each run line's (query, docid) hash. None on a hash
    collision."""
    j_key = _with_query(_hash(j_docs), j_query)
    j_order = np.argsort(j_key)
    j_sorted = j_key[j_order]
    grade = np.zeros(len(r_key), dtype=np.int64)
    if not len(j_sorted):
        return grade
    # a bitmap of the judgements' hashes first: most run lines are unjudged, and a lookup
    # in it costs far less than a binary search
    bits = np.uint64((1 << max(16, min(26, 2 * len(j_sorted).bit_length()))) - 1)
    bitmap = np.zeros(int(bits) + 1, dtype=bool)
    bitmap[j_sorted & bits] = True
    maybe = np.flatnonzero(bitmap[r_key & bits])
    at = np.minimum(np.searchsorted(j_sorted, r_key[maybe]), len(j_sorted) - 1)
    hit = j_sorted[at] == r_key[maybe]
    line = maybe[hit]
    match = j_order[at[hit]]
    if not (
        np.array_equal(j_query[match], r_code[line]) and np.array_equal(j_docs[match], r_docs[line])
    ):
        return None
    grade[line] = j_grades[match]
    return grade


def _trec_order(
    r_code: np.ndarray,
    r_docs: np.ndarray,
    scores: np.ndarray,
    grade: np.ndarray,
    r_key: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The run lines' query numbers, grades and keys with each query's results ordered like
    trec_eval (queries in order, score descending in single precision, then docid descending);
    unchanged when the file is already in that order."""
    key = -scores.astype(np.float32)  # trec_eval compares C floats
    same_query = r_code[1:] == r_code[:-1]
    in_order = bool((r_code[1:] >= r_code[:-1]).all()) and not bool(
        (same_query & (key[1:] <= key[:-1])).any()
    )
    if in_order:
        return r_code, grade, r_key
    # stable: copies of a docid keep their file order
    big_endian = r_docs.byteswap()
    doc_desc = [~big_endian[:, w] for w in reversed(range(r_docs.shape[1]))]
    order = np.lexsort((*doc_desc, key, r_code))
    return r_code[order], grade[order], r_key[order]


def _ranks(
    r_code: np.ndarray, grade: np.ndarray, n_queries: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Of ordered run lines: each line's rank (from 0), each query's number of results, and
    the rank (from 1) of each query's first relevant result (0: none)."""
    start = np.searchsorted(r_code, np.arange(n_queries))
    rank = np.arange(len(r_code)) - start[r_code]
    lengths = np.diff(np.append(start, len(r_code)))
    relevant = np.flatnonzero(grade >= 1)
    first_line = relevant[np.flatnonzero(np.diff(r_code[relevant], prepend=-1))]
    first_rank = np.zeros(n_queries, dtype=np.int64)
    first_rank[r_code[first_line]] = rank[first_line] + 1
    return rank, lengths, first_rank


def _top_grades(
    eval_run: np.ndarray,
    first_rank: np.ndarray,
    rank: np.ndarray,
    r_code: np.ndarray,
    grade: np.ndarray,
    depth: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For the evaluated queries (their run query in ``eval_run``, -1: none): their first
    relevant ranks, which of them (rows) have one within ``depth``, and those rows' grades at
    ranks 1 to ``depth``."""
    firsts = np.where(eval_run >= 0, first_rank[np.maximum(eval_run, 0)], 0)
    rows = np.flatnonzero((firsts >= 1) & (firsts <= depth))
    row_of = np.full(len(first_rank), -1, dtype=np.int64)
    row_of[eval_run[rows]] = np.arange(len(rows))
    top = np.flatnonzero((rank < depth) & (row_of[r_code] >= 0))
    matrix = np.zeros((len(rows), depth))
    matrix[row_of[r_code[top]], rank[top]] = grade[top]
    return firsts, rows, matrix


def _judged_grades(
    grades: np.ndarray,
    q_code: np.ndarray,
    keep: np.ndarray,
    judged: np.ndarray,
    queries: np.ndarray,
) -> np.ndarray:
    """The grades of the judgements that count of the qrels queries ``queries``, query after
    query (``judged``: each query's number of them)."""
    kept = np.flatnonzero(keep)
    by_query = kept[np.argsort(q_code[kept], kind="stable")]
    q_start = np.cumsum(judged) - judged
    return grades[by_query[_ranges(q_start[queries], judged[queries])]]


def _metric_values(
    m: GradeMatrix, ks: tuple[int, ...], rows: np.ndarray, n_evaluated: int
) -> dict[str, np.ndarray]:
    """Every metric at every cutoff for each evaluated query: the kernels' values on ``rows``,
    0 for the queries without a relevant result within the depth."""
    values = {}
    for spec in (MetricSpec(name, k) for name in METRICS for k in ks):
        values[str(spec)] = np.zeros(n_evaluated)
        values[str(spec)][rows] = KERNELS[spec.name](m, spec.k)
    return values
