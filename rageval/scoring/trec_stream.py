"""The streaming path of :mod:`rageval.scoring.trec_files`: memory follows the qrels and one block
of the run, not the run file.

The qrels are read once into compact arrays: each query id and docid as rows of 64-bit words (an
id interned as its bytes, no Python string per line), the judgements sorted by a 64-bit hash of
(query, docid), grades in the smallest integer type that holds them. The run file is then read in
blocks of whole lines (:data:`BLOCK_BYTES`); a block's last query may go on in the next block, so
its lines are carried over, and every other query of the block is complete and scored at once:
its lines joined with the judgements, put in trec_eval's order, later copies of a docid dropped
(below), and the grades of its top results kept (a few bytes per query). The
metrics are computed at the end over those kept grades with the kernels of
:mod:`rageval.scoring.metrics`, so every number equals the in-memory paths' to the last bit.

A run whose queries are not grouped (a query's lines further down the file, after another
query's) is found out when a query comes back; the file is then read once more and its lines
spread by query over temporary files (a query's lines all in one file, in file order), each small
enough to score in memory. ``note`` is told so.

Repeated docids (trec_eval refuses them: ``duplicate docs``): a query's results are put in
trec_eval's order (score descending in single precision, ties by docid descending; copies of a
docid keep their file order, so the best-scored copy comes first) and only the first copy of each
docid is kept, as the object path keeps it. The warning counts the rankings with a copy within
what metrics read, as the object path does.

Every hash match is checked against the id rows themselves, so a collision never joins two ids;
what this path cannot settle exactly (a line it cannot parse, a BEIR file, grades or scores
written oddly, a hash collision within the qrels) returns None and the object path decides.
"""

from __future__ import annotations

import itertools
import os
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import numpy as np

from rageval.errors import InputError
from rageval.formats import trec
from rageval.scoring import trec_arrays as ta
from rageval.scoring.file_scores import FileScores, no_relevant, nothing_shared
from rageval.scoring.metrics import GradeMatrix, ideal_grades

BLOCK_BYTES = 8 << 20  # run bytes read at a time
BUCKET_BYTES = 8 << 20  # about this much run per temporary file of an ungrouped run
_BOM = b"\xef\xbb\xbf"
_NO_DUP = np.iinfo(np.int64).max


class _Ungrouped(Exception):
    """The run's queries are not grouped: ``qid`` comes back after other queries."""

    def __init__(self, qid: str):
        super().__init__(qid)
        self.qid = qid


def _hash(rows: np.ndarray) -> np.ndarray:
    """A 64-bit hash of each id row that does not depend on how many zero words pad it (an id
    holds no NUL byte, so a word is zero only past the id's end); equal ids, equal hashes."""
    h = np.full(len(rows), 0x9E3779B97F4A7C15, dtype=np.uint64)
    for column in rows.T:
        mixed = (h ^ column) * ta._MIX[0]
        mixed ^= mixed >> np.uint64(31)
        h = np.where(column != 0, mixed, h)
    return h


def _fit(rows: np.ndarray, n_words: int) -> tuple[np.ndarray, np.ndarray]:
    """Rows cut or zero-padded to ``n_words``, and which rows fit (an id longer than every id of
    the other file can equal none of them)."""
    if rows.shape[1] > n_words:
        return rows[:, :n_words], ~rows[:, n_words:].any(axis=1)
    return ta._pad(rows, n_words), np.ones(len(rows), dtype=bool)


@dataclass
class _Qrels:
    """The qrels as compact arrays (see the module docstring)."""

    heads: np.ndarray  # each query's id row, in order of first appearance
    head_hash: np.ndarray  # their hashes, sorted, and which query each is
    head_order: np.ndarray
    pooled: np.ndarray  # the grades of the judgements that count (not a later copy), by query,
    pool_start: np.ndarray  # where each query's start
    judged: np.ndarray  # and how many each query has
    j_key: np.ndarray  # the judgements that count: sorted (query, docid) hashes,
    j_query: np.ndarray  # their query,
    j_docs: np.ndarray  # docid rows
    j_grades: np.ndarray  # and grades
    bits: np.uint64 = field(default=np.uint64(0))
    bitmap: np.ndarray | None = None  # bit (key & bits) is set for some judgement's key

    def queries(self, rows: np.ndarray) -> np.ndarray:
        """The qrels query of each id row (-1: none)."""
        fitted, fits = _fit(rows, self.heads.shape[1])
        h = _hash(fitted)
        at = np.minimum(np.searchsorted(self.head_hash, h), len(self.head_hash) - 1)
        code = self.head_order[at]
        same = fits & (self.head_hash[at] == h) & (self.heads[code] == fitted).all(axis=1)
        return np.where(same, code, -1)

    def grade_of(self, query: np.ndarray, docs: np.ndarray) -> np.ndarray:
        """The grade of each (qrels query, docid row) pair; 0 where unjudged or query -1."""
        out = np.zeros(len(query), dtype=self.j_grades.dtype)
        fitted, fits = _fit(docs, self.j_docs.shape[1])
        key = ta._with_query(_hash(fitted), np.maximum(query, 0))
        # a bitmap of the judgements' hashes first: most run lines are unjudged
        low = key & self.bits
        bit = (self.bitmap[low >> np.uint64(3)] >> (low & np.uint64(7)).astype(np.uint8)) & 1
        maybe = np.flatnonzero(bit.astype(bool) & fits & (query >= 0))
        at = np.minimum(np.searchsorted(self.j_key, key[maybe]), len(self.j_key) - 1)
        hit = self.j_key[at] == key[maybe]
        line, match = maybe[hit], at[hit]
        same = (self.j_query[match] == query[line]) & (self.j_docs[match] == fitted[line]).all(
            axis=1
        )
        out[line[same]] = self.j_grades[match[same]]
        return out


def _small_ints(values: np.ndarray) -> np.ndarray:
    for dtype in (np.int8, np.int16, np.int32):
        info = np.iinfo(dtype)
        if not len(values) or (info.min <= values.min() and values.max() <= info.max):
            return values.astype(dtype)
    return values


def _qrels_columns(path) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """The qrels file's query id rows, docid rows and grades, read in blocks (a whole file's
    field locations would take several times its size); None where the object path must read it.
    """
    parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    for data in _blocks(path):
        cols = None if data is None else trec.columns_of(data, 4, (0, 2, 3), exact=True)
        if cols is None:
            return None
        grade_words = cols.words(3)
        if not ta._plain_integers(grade_words, cols.lengths[3]):
            return None
        grades = grade_words.view(f"S{8 * grade_words.shape[1]}")[:, 0].astype(np.int64)
        parts.append((cols.words(0), cols.words(2), grades))
    if not parts:
        return None
    out = []
    for j in (0, 1):  # one column at a time: the blocks' rows are freed as they are joined
        width = max(part[j].shape[1] for part in parts)
        out.append(np.concatenate([ta._pad(part[j], width) for part in parts]))
        parts = [tuple(None if i == j else x for i, x in enumerate(part)) for part in parts]
    return out[0], out[1], np.concatenate([part[2] for part in parts])


def read_qrels(path: str | os.PathLike) -> _Qrels | None:
    """The qrels file as :class:`_Qrels`; None where the object path must read it."""
    found = _qrels_columns(path)
    if found is None:
        return None
    ids, docs, grades = found
    groups = ta._groups(ids)
    if groups is None:
        return None
    q_code, q_heads = groups
    heads = ids[q_heads]
    head_hash = _hash(heads)
    head_order = np.argsort(head_hash)
    del ids
    keep = ta._first_judgements(q_code, docs, grades)
    if keep is None or bool((np.diff(head_hash[head_order]) == 0).any()):
        return None  # conflicting judgements, or a hash collision
    kept = np.flatnonzero(keep)
    j_key = ta._with_query(_hash(docs[kept]), q_code[kept])
    order = np.argsort(j_key)
    j_key = j_key[order]
    order = kept[order]
    if bool((np.diff(j_key) == 0).any()):
        return None  # two judgements of one hash
    small = _small_ints(grades)
    judged = np.bincount(q_code[kept], minlength=len(q_heads))
    by_query = kept[np.argsort(q_code[kept], kind="stable")]  # as trec_arrays._judged_grades
    q = _Qrels(
        heads,
        head_hash[head_order],
        head_order,
        small[by_query],
        np.cumsum(judged) - judged,
        judged,
        j_key,
        q_code[order].astype(np.int32 if len(q_heads) < 2**31 else np.int64),
        docs[order],
        small[order],
    )
    q.bits = np.uint64((1 << max(16, min(26, 2 * len(j_key).bit_length()))) - 1)
    bitmap = np.zeros(int(q.bits) + 1, dtype=bool)
    bitmap[j_key & q.bits] = True
    q.bitmap = np.packbits(bitmap, bitorder="little")
    return q


@dataclass
class _Part:
    """What one block leaves for the end: per query of the block, its qrels query (-1: none),
    its number of lines, the rank (from 1) of its first relevant result once copies are dropped
    (0: none), the index (from 0) of that result among its lines as read (-1: none), the index
    of its first later copy of a docid (:data:`_NO_DUP`: none); and for the queries with a
    relevant result within ``cap``, their grades at ranks 1 to ``cap``."""

    query: np.ndarray
    length: np.ndarray
    first: np.ndarray
    first_line: np.ndarray
    first_dup: np.ndarray
    top_query: np.ndarray
    top: np.ndarray


def _block(q: _Qrels, cols: trec.Columns, cap: int, grouped: bool, seen: set) -> _Part | None:
    """Score the complete queries of one block of run lines (see :class:`_Part`); raises
    :class:`_Ungrouped` when ``grouped`` and a query's lines are not together or came before
    (``seen``: the hashes of the queries of earlier blocks); None on a line this path cannot read.
    """
    score_words = cols.words(4)
    try:
        scores = score_words.view(f"S{8 * score_words.shape[1]}")[:, 0].astype(np.float64)
    except ValueError:
        return None
    if not bool(np.isfinite(scores).all()):
        return None
    ids, docs = cols.words(0), cols.words(2)
    change = np.ones(len(ids), dtype=bool)
    change[1:] = (ids[1:] != ids[:-1]).any(axis=1)
    heads = np.flatnonzero(change)
    head_hash = _hash(ids[heads])
    if len(np.unique(head_hash)) < len(heads) or not seen.isdisjoint(head_hash.tolist()):
        if grouped:
            raise _Ungrouped(_ungrouped_query(ids, heads, head_hash, seen))
        line_hash = _hash(ids)
        _, first, code = np.unique(line_hash, return_index=True, return_inverse=True)
        code = code.reshape(-1)
        if not np.array_equal(ids, ids[first[code]]):
            return None  # a hash collision
        by_query = np.argsort(code, kind="stable")  # a query's lines in file order
        ids, docs, scores = ids[by_query], docs[by_query], scores[by_query]
        change[1:] = (ids[1:] != ids[:-1]).any(axis=1)
        heads = np.flatnonzero(change)
        head_hash = _hash(ids[heads])
    seen.update(head_hash.tolist())
    code = np.cumsum(change) - 1
    query = q.queries(ids[heads])
    grade = q.grade_of(query[code], docs)
    key = ta._with_query(ta._hash(docs), code)
    code, grade, key, docs = _trec_order(code, docs, scores, grade, key)
    return _ranked(query, code, grade, key, docs, cap)


def _ungrouped_query(ids, heads, head_hash, seen) -> str:
    again = [i for i, h in enumerate(head_hash.tolist()) if h in seen]
    if not again:
        _, first = np.unique(head_hash, return_index=True)
        again = sorted(set(range(len(heads))) - set(first.tolist()))
    return ta._decode(ids[heads[again[:1]]])[0]


def _trec_order(code, docs, scores, grade, key):
    """The block's lines in trec_eval's order (:func:`trec_arrays._trec_order`), docid rows too."""
    k = -scores.astype(np.float32)
    same_query = code[1:] == code[:-1]
    if not bool((same_query & (k[1:] <= k[:-1])).any()):
        return code, grade, key, docs
    big_endian = docs.byteswap()
    doc_desc = [~big_endian[:, w] for w in reversed(range(docs.shape[1]))]
    order = np.lexsort((*doc_desc, k, code))  # stable: copies keep their file order
    return code[order], grade[order], key[order], docs[order]


def _ranked(query, code, grade, key, docs, cap) -> _Part | None:
    """The block's :class:`_Part` from its ordered lines; later copies of a docid dropped."""
    n_queries = len(query)
    start = np.searchsorted(code, np.arange(n_queries))
    line_rank = np.arange(len(code)) - start[code]
    relevant = np.flatnonzero(grade >= 1)
    first_line = np.full(n_queries, -1, dtype=np.int64)
    head = relevant[np.flatnonzero(np.diff(code[relevant], prepend=-1))]
    first_line[code[head]] = line_rank[head]
    length = np.diff(np.append(start, len(code)))
    first_dup = np.full(n_queries, _NO_DUP, dtype=np.int64)
    # what metrics can read: the top `cap` and down to the first relevant result; a copy only
    # further down changes nothing (dropping it moves nothing above it), so it is left alone
    read = np.sort(key[line_rank < np.maximum(cap, first_line[code] + 1)])
    if bool((read[1:] == read[:-1]).any()):
        by_key = np.argsort(key, kind="stable")  # copies: in their order
        repeat = np.flatnonzero(key[by_key][1:] == key[by_key][:-1])
        a, b = by_key[repeat], by_key[repeat + 1]
        if not (np.array_equal(code[a], code[b]) and np.array_equal(docs[a], docs[b])):
            return None  # a hash collision
        np.minimum.at(first_dup, code[b], line_rank[b])
        kept = np.ones(len(code), dtype=bool)
        kept[b] = False
        code, grade = code[kept], grade[kept]
    rank, lengths, first = ta._ranks(code, grade, n_queries)
    width = max(1, min(cap, int(lengths.max()) if n_queries else 1))
    rows = np.flatnonzero((first >= 1) & (first <= width) & (query >= 0))
    row_of = np.full(n_queries, -1, dtype=np.int64)
    row_of[rows] = np.arange(len(rows))
    top = np.flatnonzero((rank < width) & (row_of[code] >= 0))
    matrix = np.zeros((len(rows), width), dtype=grade.dtype)
    matrix[row_of[code[top]], rank[top]] = grade[top]
    return _Part(query, length, first, first_line, first_dup, query[rows], matrix)


def _lines(cols: trec.Columns, lo: int, hi: int) -> trec.Columns:
    return trec.Columns(
        cols.padded,
        {j: s[lo:hi] for j, s in cols.starts.items()},
        {j: n[lo:hi] for j, n in cols.lengths.items()},
    )


def _blocks(path: str | os.PathLike) -> Iterator[bytes | None]:
    """The run file's bytes in blocks of whole lines (UTF-8 checked; a byte-order mark dropped);
    None for a block that is not UTF-8 (the object path names the line)."""
    with open(path, "rb") as f:
        tail = b""
        first = True
        while True:
            chunk = f.read(BLOCK_BYTES)
            if first and chunk.startswith(_BOM):
                chunk = chunk[len(_BOM) :]
            first = False
            data = tail + chunk
            if not chunk:
                if data:
                    yield _utf8(data if data.endswith(b"\n") else data + b"\n")
                return
            cut = data.rfind(b"\n") + 1
            tail = data[cut:]
            if cut:
                yield _utf8(data[:cut])


def _utf8(data: bytes) -> bytes | None:
    if data.isascii():
        return data
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    return data


class _Unreadable(Exception):
    """A run line this path cannot read: the object path decides."""


def _grouped_parts(q: _Qrels, run_path, cap: int) -> Iterator[tuple[_Part, str]]:
    """Each block's :class:`_Part` and its first query id, a query's lines carried over to the
    next block when the block may end inside them; raises :class:`_Ungrouped`."""
    seen: set = set()
    carry = b""
    for data in itertools.chain(_peek(_blocks(run_path)), [None]):
        if data is None and carry == b"":
            return
        last = data is None
        data = carry + (data or b"")
        cols = trec.columns_of(data, 6, (0, 2, 4), exact=False)
        if cols is None:
            raise _Unreadable
        ids = cols.words(0)
        end = len(ids)
        if not last:
            changes = np.flatnonzero((ids[1:] != ids[:-1]).any(axis=1))
            if not len(changes):
                carry = data
                continue
            end = int(changes[-1]) + 1  # the last query's first line
            carry = data[int(cols.starts[0][end]) :]
        part = _block(q, _lines(cols, 0, end), cap, True, seen)
        if part is None:
            raise _Unreadable
        yield part, ta._decode(ids[:1])[0]
        if last:
            return


def _peek(blocks: Iterator[bytes | None]) -> Iterator[bytes]:
    for data in blocks:
        if data is None:
            raise _Unreadable
        yield data


def _bucket_parts(q: _Qrels, run_path, cap: int, n_buckets: int) -> Iterator[tuple[_Part, str]]:
    """The run's lines spread over ``n_buckets`` temporary files by query, then each file scored
    in memory."""
    with tempfile.TemporaryDirectory(prefix="rageval-score-") as tmp:
        names = [os.path.join(tmp, f"{b}.run") for b in range(n_buckets)]
        files = [open(name, "wb") for name in names]  # noqa: SIM115 (closed below)
        first_id = None
        try:
            for data in _peek(_blocks(run_path)):
                cols = trec.columns_of(data, 6, (0,), exact=False)
                if cols is None:
                    raise _Unreadable
                ids = cols.words(0)
                if first_id is None and len(ids):
                    first_id = ta._decode(ids[:1])[0]
                _spread(data, cols.starts[0], _hash(ids) % np.uint64(n_buckets), files)
        finally:
            for f in files:
                f.close()
        for name in names:
            with open(name, "rb") as f:
                data = f.read()
            os.unlink(name)
            if not data:
                continue
            cols = trec.columns_of(data, 6, (0, 2, 4), exact=False)
            part = None if cols is None else _block(q, cols, cap, False, set())
            if part is None:
                raise _Unreadable
            yield part, first_id


def _spread(data: bytes, starts: np.ndarray, bucket: np.ndarray, files) -> None:
    """Append each line (from ``starts[i]`` to its newline) to its bucket's file, in order."""
    buf = np.frombuffer(data, dtype=np.uint8)
    newlines = np.flatnonzero(buf == 10)
    ends = newlines[np.searchsorted(newlines, starts)] + 1
    sizes = ends - starts
    order = np.argsort(bucket, kind="stable")
    picked = buf[ta._ranges(starts[order], sizes[order])].tobytes()
    counts = np.bincount(bucket.astype(np.int64), weights=sizes, minlength=len(files))
    at = 0
    for f, n in zip(files, counts.astype(np.int64).tolist(), strict=True):
        if n:
            f.write(picked[at : at + n])
            at += n


@dataclass
class _Totals:
    """The parts gathered per qrels query (see :class:`_Part`)."""

    n_queries: int
    matched: np.ndarray = field(init=False)
    first: np.ndarray = field(init=False)
    first_line: np.ndarray = field(init=False)
    first_dup: np.ndarray = field(init=False)
    length: np.ndarray = field(init=False)
    tops: list = field(default_factory=list)
    run_only: int = 0
    run_only_longest: int = 0
    run_only_dup: int = _NO_DUP
    first_run_id: str | None = None

    def __post_init__(self):
        n = self.n_queries
        self.matched = np.zeros(n, dtype=bool)
        self.first = np.zeros(n, dtype=np.int64)
        self.first_line = np.full(n, -1, dtype=np.int64)
        self.first_dup = np.full(n, _NO_DUP, dtype=np.int64)
        self.length = np.zeros(n, dtype=np.int64)

    def add(self, part: _Part, first_id: str) -> None:
        if self.first_run_id is None:
            self.first_run_id = first_id
        mine = part.query >= 0
        at = part.query[mine]
        self.matched[at] = True
        self.first[at] = part.first[mine]
        self.first_line[at] = part.first_line[mine]
        self.first_dup[at] = part.first_dup[mine]
        self.length[at] = part.length[mine]
        others = ~mine
        self.run_only += int(others.sum())
        if others.any():
            self.run_only_longest = max(self.run_only_longest, int(part.length[others].max()))
            self.run_only_dup = min(self.run_only_dup, int(part.first_dup[others].min()))
        self.tops.append((part.top_query, part.top))


def score_stream(
    qrels_path: str | os.PathLike,
    run_path: str | os.PathLike,
    ks: tuple[int, ...],
    complete: bool = False,
    note: Callable[[str], None] | None = None,
) -> FileScores | None:
    """The streaming path (see the module docstring); None where the object path must decide."""
    q = read_qrels(qrels_path)
    if q is None:
        return None
    cap = max(ks)
    totals = _Totals(len(q.heads))
    try:
        try:
            for part, first_id in _grouped_parts(q, run_path, cap):
                totals.add(part, first_id)
        except _Ungrouped as ungrouped:
            size = os.path.getsize(run_path)
            n_buckets = max(1, min(512, -(-size // BUCKET_BYTES)))
            if note is not None:
                note(
                    f"{run_path}: the run's queries are not grouped (query {ungrouped.qid!r} "
                    f"comes back after other queries); reading it again, its lines spread by "
                    f"query over {n_buckets} temporary files in {tempfile.gettempdir()} "
                    f"({size / 2**20:.0f} MiB in all)"
                )
            totals = _Totals(len(q.heads))
            try:
                for part, first_id in _bucket_parts(q, run_path, cap, n_buckets):
                    totals.add(part, first_id)
            except OSError as err:
                raise InputError(
                    f"the run's queries are not grouped, and grouping them through temporary "
                    f"files in {tempfile.gettempdir()} failed ({err.strerror or err}); free "
                    "space there or point TMPDIR at a folder with room for the run, or write "
                    "each query's lines together",
                    path=str(run_path),
                ) from None
    except _Unreadable:
        return None
    if totals.first_run_id is None:
        return None  # no run line: the object path says so
    if not bool((q.pooled >= 1).any()):
        raise no_relevant(qrels_path)
    return _finish(q, totals, ks, complete, qrels_path)


def _finish(q: _Qrels, t: _Totals, ks, complete: bool, qrels_path) -> FileScores:
    """The metrics of the evaluated queries from the gathered parts, with the depth and the
    duplicate rule of the in-memory paths."""
    shared = int(t.matched.sum())
    if not complete and not shared:
        raise nothing_shared(qrels_path, t.first_run_id, ta._decode(q.heads[:1])[0])
    evaluated = np.arange(t.n_queries) if complete else np.flatnonzero(t.matched)
    judged_max = int(q.judged[evaluated].max())
    longest = max(int(t.length.max()), t.run_only_longest)
    depth = max(1, min(max(ks), max(longest, judged_max)))  # trec_arrays' depth
    reads = np.maximum(depth, t.first_line + 1)
    n_dup, warnings = 0, ()
    if bool((t.first_dup < reads).any()) or t.run_only_dup < depth:
        # where the array path handed over to the object path: its depth and its warning
        depth = max(1, min(max(ks), max(int(t.length[evaluated].max()), judged_max)))
        reads = np.maximum(depth, t.first_line + 1)[evaluated]
        n_dup = int((t.first_dup[evaluated] < reads).sum())
    if n_dup:
        warnings = (
            f"{n_dup} of {len(evaluated)} rankings held duplicate ids; "
            "later occurrences were dropped before scoring",
        )
    firsts = t.first[evaluated]
    rows = np.flatnonzero((firsts >= 1) & (firsts <= depth))
    scored = evaluated[rows]
    row_of = np.full(t.n_queries, -1, dtype=np.int64)
    row_of[scored] = np.arange(len(rows))
    matrix = np.zeros((len(rows), depth))
    for top_query, top in t.tops:
        r = row_of[top_query]
        mine = r >= 0
        width = min(depth, top.shape[1])
        matrix[r[mine], :width] = top[mine, :width]
    pool = q.pooled[ta._ranges(q.pool_start[scored], q.judged[scored])]
    ideal, n_relevant = ideal_grades(pool.astype(np.float64), q.judged[scored], depth)
    m = GradeMatrix(matrix, ideal, n_relevant, firsts[rows])
    return FileScores(
        tuple(ta._decode(q.heads[evaluated])),
        ta._metric_values(m, ks, rows, len(evaluated)),
        firsts,
        missing=t.n_queries - shared,
        run_only=t.run_only,
        warnings=warnings,
    )
