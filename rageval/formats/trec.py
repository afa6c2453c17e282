"""TREC run and qrels files (and BEIR qrels tsv): read, write, and order runs like trec_eval.

- qrels: ``qid iter docid grade`` (4 whitespace-separated fields), or BEIR
  ``query-id<TAB>corpus-id<TAB>score`` (3 tab-separated fields, usually after a header line).
  ``fmt="auto"`` decides by the first data line: the BEIR header or 3 fields is BEIR, 4 fields is
  TREC; a TREC line that happens to hold two tabs is still 4 fields, so it is read as TREC.
- run: ``qid Q0 docid rank score tag``; fields after the tag are ignored, as trec_eval ignores
  them (its own ``results.trunc`` test file has them). trec_eval ignores the rank column and
  orders each query's results by score descending (in single precision), ties by docid
  descending; :func:`read_run` does the same.
- Lines whose first field starts with ``#`` are comments and skipped (trec_eval 10 does the same),
  blank lines too.

Both readers are vectorised (numpy over the whole file's bytes), so a run of millions of lines
reads in about a second. Every problem in a file is an :class:`~rageval.errors.InputError` naming
the file and line. Writes are atomic (:mod:`rageval.formats.atomic`): a reader sees the old file or
the new one. numpy is imported only by the readers (and the atomic writer by the writers), so
importing this module stays cheap.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rageval.errors import InputError
from rageval.types import Qrels, RankedList

_TREC_QRELS = "qid 0 docid grade"
_BEIR_HEADER = ("query-id", "corpus-id", "score")
_RUN_LINE = "qid Q0 docid rank score tag"
MAX_GRADE = 2**63 - 1  # what trec_eval (a C long) and numpy can hold
QRELS_FORMATS = ("auto", "trec", "beir")


@dataclass(frozen=True)
class _Fields:
    """The data lines of a file, split on ASCII whitespace (comments and blank lines dropped).

    Field ``t`` of the file spans bytes ``starts[t]:ends[t]`` of ``data``; data line ``i`` holds
    fields ``offset[i] .. offset[i] + count[i] - 1`` and is line ``number[i]`` of the file. No
    Python object is made per field: :meth:`column` decodes one column in a few numpy calls.
    """

    data: bytes
    buf: Any
    starts: Any
    ends: Any
    offset: Any
    count: Any
    number: Any

    def column(self, j: int, block: int = 1 << 20) -> list[str]:
        """Field ``j`` of every data line, as str (gathered in blocks to bound memory)."""
        import numpy as np

        out: list[str] = []
        for lo in range(0, len(self.offset), block):
            t = self.offset[lo : lo + block] + j
            s, n = self.starts[t], self.ends[t] - self.starts[t] + 1  # with the byte after it
            first = np.concatenate(([0], np.cumsum(n)[:-1]))
            picked = self.buf[np.repeat(s - first, n) + np.arange(int(n.sum()))]
            picked[_space_table()[picked]] = 10  # the byte after each field: its separator
            out += picked.tobytes().decode().split("\n")[:-1]
        return out

    def fixed(self, j: int) -> Any:
        """Field ``j`` of every data line as a fixed-width bytes array (sortable, comparable and
        parsable as numbers in C); fields hold no NUL byte, so none is lost to the padding."""
        import numpy as np

        t = self.offset + j
        s, n = self.starts[t], self.ends[t] - self.starts[t]
        width = max(int(n.max()) if len(n) else 1, 1)
        first = np.cumsum(n) - n  # where each field starts among the gathered bytes
        k = np.arange(int(n.sum())) - np.repeat(first, n)  # byte index within its field
        row = np.repeat(np.arange(len(t)) * width, n)
        out = np.zeros(len(t) * width, dtype=np.uint8)
        out[row + k] = self.buf[np.repeat(s, n) + k]
        return out.view(f"S{width}")

    def raw_line(self, i: int) -> str:
        return self.data.split(b"\n", int(self.number[i]))[int(self.number[i]) - 1].decode()


def _space_table() -> Any:
    """ASCII whitespace (trec_eval's field separators) as a 256-entry lookup table."""
    import numpy as np

    table = np.zeros(256, dtype=bool)
    table[[9, 10, 11, 12, 13, 32]] = True
    return table


def read_bytes(path: str | os.PathLike) -> bytes:
    """The file's bytes, a byte-order mark dropped; UTF-8 checked (with the line of a bad byte)."""
    try:
        data = Path(path).read_bytes()
    except OSError as err:
        raise InputError(f"cannot read the file: {err.strerror or err}", path=str(path)) from None
    if data.isascii():  # the usual case, checked in C without decoding
        return data
    from rageval.formats.textio import read_text

    return read_text(path).encode()


def _split_fields(path: str | os.PathLike) -> _Fields:
    return _split_data(read_bytes(path) + b"\n")  # a final newline ends every field


def _split_data(data: bytes) -> _Fields:
    import numpy as np

    buf = np.frombuffer(data, dtype=np.uint8)
    is_space = _space_table()[buf]
    before = np.concatenate(([True], is_space[:-1]))
    starts = np.flatnonzero(~is_space & before)
    ends = np.flatnonzero(is_space & ~before)
    line_ends = np.flatnonzero(buf == 10)
    first_field = np.concatenate(([0], np.searchsorted(starts, line_ends)))
    count = np.diff(first_field)
    offset = first_field[:-1]
    keep = count > 0
    keep[keep] = buf[starts[offset[keep]]] != ord("#")  # comment lines
    number = np.flatnonzero(keep) + 1
    return _Fields(data, buf, starts, ends, offset[keep], count[keep], number)


@dataclass(frozen=True)
class Columns:
    """Some fields of every data line of a file, located but not decoded (see :func:`columns`).

    Field ``j`` of data line ``i`` is bytes ``starts[j][i] : starts[j][i] + lengths[j][i]`` of
    ``padded``, the file's bytes followed by 8 to 15 zero bytes, a multiple of 8 in all (so that
    :meth:`words` may read it as aligned 64-bit words, one past any field start).
    """

    padded: Any
    starts: dict[int, Any]
    lengths: dict[int, Any]

    def words(self, j: int, n_words: int = 0) -> Any:
        """Field ``j`` of every line as rows of little-endian 64-bit words, zero-padded to
        ``max(n_words, words of the longest field)`` words: equal rows are equal fields (a field
        holds no NUL byte), so rows compare, hash and join without a Python string per line."""
        import numpy as np

        starts, lengths = self.starts[j], self.lengths[j]
        longest = int(lengths.max()) if len(lengths) else 0
        n_words = max(n_words, (longest + 7) // 8, 1)
        aligned = self.padded.view("<u8")  # 8 bytes at s: two aligned words, shifted and joined
        masks = np.array([(1 << (8 * i)) - 1 for i in range(9)], dtype=np.uint64)
        shift = (starts & 7).astype(np.uint64) * np.uint64(8)
        back = np.uint64(63) - shift  # (x << 1) << (63 - shift): no shift by 64
        out = np.empty((len(starts), n_words), dtype="<u8")
        for w in range(n_words):
            at = np.minimum((starts >> 3) + w, len(aligned) - 2)  # past a field's end its mask is 0
            word = (aligned[at] >> shift) | ((aligned[at + 1] << np.uint64(1)) << back)
            out[:, w] = word & masks[np.clip(lengths - 8 * w, 0, 8)]
        return out


def columns(path: str | os.PathLike, n_fields: int, wanted: Sequence[int], exact: bool):
    """Locate fields ``wanted`` of every data line of a TREC file, or None when some data line
    has fewer than ``n_fields`` fields (other than ``n_fields`` with ``exact``): the callers then
    read the file with :func:`read_run` / :func:`read_qrels`, which name the line.

    Comment and blank lines are skipped as by the readers. A file whose every line holds exactly
    ``n_fields`` fields split by single spaces or tabs (what programs write) is located in a
    few passes over its bytes; any other layout goes through the general splitter.
    """
    return columns_of(read_bytes(path), n_fields, wanted, exact)


def columns_of(data: bytes, n_fields: int, wanted: Sequence[int], exact: bool):
    """:func:`columns` of a file's bytes (or of whole lines of it: a block of a run file)."""
    import numpy as np

    if not data.endswith(b"\n"):
        data += b"\n"  # a final newline ends every field
    padded = np.frombuffer(data + bytes(16 - len(data) % 8), dtype=np.uint8)
    buf = padded[: len(data)]
    space = np.subtract(buf, 9, dtype=np.uint8) < 5  # \t \n \v \f \r
    space |= buf == 32
    seps = np.flatnonzero(space)
    n = data.count(b"\n")
    if len(seps) == n * n_fields and seps[0] > 0 and bool((np.diff(seps) > 1).all()):
        # no empty field anywhere; each line n_fields fields if its last one ends the line
        grid = seps.reshape(n, n_fields)  # the byte after each field, by line
        line_start = np.concatenate(([0], grid[:-1, -1] + 1))
        if bool((buf[grid[:, -1]] == 10).all()) and not bool((buf[line_start] == 35).any()):
            starts = {j: grid[:, j - 1] + 1 if j else line_start for j in wanted}
            return Columns(padded, starts, {j: grid[:, j] - starts[j] for j in wanted})
    f = _split_data(data)
    if not len(f.count) or (
        bool((f.count != n_fields).any()) if exact else bool((f.count < n_fields).any())
    ):
        return None
    at = {j: f.offset + j for j in wanted}
    return Columns(
        padded,
        {j: f.starts[t] for j, t in at.items()},
        {j: f.ends[t] - f.starts[t] for j, t in at.items()},
    )


def _bad_line(f: _Fields, i: int, message: str, where: str) -> InputError:
    return InputError(message, path=where, line=int(f.number[i]))


def _numbers(f: _Fields, column: Any, parse, describe, where: str) -> list:
    """Parse a column with ``parse`` (int or float); the first bad field is an error on its line."""
    values = column
    try:
        return list(map(parse, values))
    except (ValueError, OverflowError):
        for i, text in enumerate(values):
            try:
                parse(text)
            except (ValueError, OverflowError):
                raise _bad_line(f, i, describe(text), where) from None
        raise


def _grade_message(text: str) -> str:
    return (
        f"relevance grade {text[:40]!r} is not an integer of at most 18 digits; use 0 for "
        "non-relevant, 1+ for relevant"
    )


def _detect_qrels_format(f: _Fields, where: str) -> str:
    raw = f.raw_line(0).rstrip("\r")
    cells = [c.strip().lower() for c in raw.split("\t")]
    if tuple(cells) == _BEIR_HEADER or int(f.count[0]) == 3:
        return "beir"
    if int(f.count[0]) == 4:
        return "trec"
    raise _bad_line(
        f,
        0,
        f"expected 4 whitespace-separated fields ({_TREC_QRELS}) or a BEIR qrels tsv "
        f"({chr(9).join(_BEIR_HEADER)}), got {int(f.count[0])} fields; fix the file or pass "
        "--format trec|beir",
        where,
    )


def _without_gc(fn):
    """Run ``fn`` with the cyclic GC paused: the millions of short-lived strings a big file makes
    would trigger full collections, each walking every object of the heap (no cycles are made)."""
    import functools
    import gc

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        was_enabled = gc.isenabled()
        gc.disable()
        try:
            return fn(*args, **kwargs)
        finally:
            if was_enabled:
                gc.enable()

    return wrapper


@_without_gc
def read_qrels(path: str | os.PathLike, fmt: str = "auto") -> dict[str, dict[str, int]]:
    """Read relevance judgements: query id -> {docid: grade}, in file order.

    ``fmt`` is ``auto`` (see the module docstring), ``trec`` or ``beir``. A judgement repeated
    with the same grade is accepted; with a different grade it is an error.
    """
    import numpy as np

    where = str(path)
    if fmt not in QRELS_FORMATS:
        raise InputError(f"qrels format {fmt!r} is not one of {', '.join(QRELS_FORMATS)}")
    f = _split_fields(path)
    if len(f.count) and fmt == "auto":
        fmt = _detect_qrels_format(f, where)
    if fmt == "beir":
        rows, numbers = _beir_rows(f, where)
    else:
        bad = np.flatnonzero(f.count != 4)
        if len(bad):
            raise _bad_line(
                f,
                int(bad[0]),
                f"expected 4 whitespace-separated columns ({_TREC_QRELS}), got "
                f"{int(f.count[bad[0]])}; fix or remove this line",
                where,
            )
        grades = _numbers(f, f.column(3), int, _grade_message, where)
        rows, numbers = (
            zip(f.column(0), f.column(2), grades, strict=True),
            f.number,
        )
    qrels: dict[str, dict[str, int]] = {}
    for i, (qid, docid, grade) in enumerate(rows):
        if not -MAX_GRADE <= grade <= MAX_GRADE:
            raise InputError(_grade_message(str(grade)), path=where, line=int(numbers[i]))
        judged = qrels.get(qid)
        if judged is None:
            judged = qrels[qid] = {}
        old = judged.setdefault(docid, grade)
        if old != grade:
            first = next(
                int(numbers[j])
                for j, (q, d, _) in enumerate(_rows_again(f, fmt, where))
                if q == qid and d == docid
            )
            raise InputError(
                f"{docid!r} of query {qid!r} is judged {grade} here but {old} on line {first}; "
                "keep one judgement",
                path=where,
                line=int(numbers[i]),
            )
    if not qrels:
        raise InputError(
            f"no judgements found; expected lines '{_TREC_QRELS}' or a BEIR qrels tsv",
            path=where,
        )
    return qrels


def _rows_again(f: _Fields, fmt: str, where: str):
    if fmt == "beir":
        return _beir_rows(f, where)[0]
    cols = f.column(0), f.column(2), map(int, f.column(3))
    return zip(*cols, strict=False)


def _beir_rows(f: _Fields, where: str) -> tuple[list[tuple[str, str, int]], list[int]]:
    """BEIR qrels lines split on tabs (ids may hold spaces); the header line skipped."""
    text = f.data.decode().split("\n")
    rows, numbers = [], []
    for i, number in enumerate(f.number.tolist()):
        cells = [c.strip() for c in text[number - 1].rstrip("\r").split("\t")]
        if i == 0 and tuple(c.lower() for c in cells) == _BEIR_HEADER:
            continue
        if len(cells) != 3 or not all(cells):
            raise InputError(
                f"expected 3 tab-separated columns ({' '.join(_BEIR_HEADER)}) like the "
                f"first line, got {len(cells)}; fix or remove this line",
                path=where,
                line=number,
            )
        try:
            grade = int(cells[2])
        except ValueError:
            raise InputError(_grade_message(cells[2]), path=where, line=number) from None
        rows.append((cells[0], cells[1], grade))
        numbers.append(number)
    return rows, numbers


@_without_gc
def read_run(path: str | os.PathLike) -> dict[str, RankedList]:
    """Read a TREC run: query id -> its results ordered like trec_eval (see module docstring),
    queries in the order they first appear.

    Repeated docids are kept (best-scored first); scoring drops the later copies with a warning.
    """
    import numpy as np

    where = str(path)
    f = _split_fields(path)
    if not len(f.count):
        raise InputError(f"no results found; expected lines '{_RUN_LINE}'", path=where)
    short = np.flatnonzero(f.count < 6)
    if len(short):
        raise _bad_line(
            f,
            int(short[0]),
            f"expected 6 whitespace-separated columns ({_RUN_LINE}), got "
            f"{int(f.count[short[0]])}; fix or remove this line (fields after the tag are ignored)",
            where,
        )
    score_col, docids = f.fixed(4), f.column(2)
    try:
        scores = score_col.astype(np.float64)
    except ValueError:  # the first field that is no number, on its line
        texts = [t.decode() for t in score_col.tolist()]
        scores = np.array(_numbers(f, texts, float, _score_message, where), dtype=np.float64)
    bad = np.flatnonzero(~np.isfinite(scores))
    if len(bad):
        raise _bad_line(f, int(bad[0]), _score_message(score_col[bad[0]].decode()), where)
    query, qids = _query_codes(f.fixed(0))
    key = -scores.astype(np.float32)  # trec_eval compares C floats
    order = np.lexsort((key, query))  # stable: copies of a docid keep their file order
    q_sorted, k_sorted = query[order], key[order]
    if np.any((q_sorted[1:] == q_sorted[:-1]) & (k_sorted[1:] == k_sorted[:-1])):
        # ties: docid descending within a score (bytewise, as trec_eval's strcmp)
        _, doc_rank = np.unique(f.fixed(2), return_inverse=True)  # bytewise, as strcmp
        order = np.lexsort((-doc_rank.reshape(-1), key, query))
        q_sorted = query[order]
    docs = np.array(docids, dtype=object)[order].tolist()
    sorted_scores = scores[order].tolist()
    bounds = np.flatnonzero(np.diff(q_sorted)) + 1
    starts = [0, *bounds.tolist()]
    ends = [*bounds.tolist(), len(order)]
    return {
        qid: RankedList(tuple(docs[a:b]), tuple(sorted_scores[a:b]))
        for qid, a, b in zip(qids, starts, ends, strict=True)
    }


def _query_codes(column: Any) -> tuple[Any, list[str]]:
    """Per line, the query's number in order of first appearance; and the query ids in that order.

    A run usually holds each query's lines together: then the codes are a running count of the
    places where the id changes; otherwise the ids are sorted out with numpy.
    """
    import numpy as np

    change = np.concatenate(([True], column[1:] != column[:-1]))
    heads = column[change]
    if len(np.unique(heads)) == len(heads):
        return np.cumsum(change) - 1, [h.decode() for h in heads.tolist()]
    names, first_seen, inverse = np.unique(column, return_index=True, return_inverse=True)
    by_appearance = np.argsort(first_seen, kind="stable")
    code = np.empty(len(names), dtype=np.int64)
    code[by_appearance] = np.arange(len(names))
    return code[inverse.reshape(-1)], [
        q.decode() for q in column[first_seen[by_appearance]].tolist()
    ]


def _score_message(text: str) -> str:
    return f"score {text[:40]!r} (column 5) is not a finite number; write a real score"


def _check_token(value: str, what: str, path: str) -> None:
    if not value or len(value.split()) != 1 or value != value.strip():
        raise InputError(
            f"{what} {value!r} is empty or holds whitespace, which TREC files cannot represent; "
            "rename it",
            path=path,
        )


def write_run(
    path: str | os.PathLike,
    query_ids: Sequence[str],
    rankings: Sequence[RankedList],
    tag: str = "rageval",
) -> None:
    """Write a TREC run: one line per result, rank 1 first, scores as given (round-trip exact).

    trec_eval re-orders results by score, ties by docid descending; rankings whose ties are in
    another order will be scored in that order when the file is read back.
    """
    where = str(path)
    if len(query_ids) != len(rankings):
        raise InputError(f"{len(query_ids)} query ids but {len(rankings)} rankings", path=where)
    _check_token(tag, "run tag", where)
    lines = []
    for qid, ranking in zip(query_ids, rankings, strict=True):
        _check_token(qid, "query id", where)
        if len(ranking.ids) != len(ranking.scores):
            raise InputError(
                f"query {qid!r}: {len(ranking.ids)} ids but {len(ranking.scores)} scores",
                path=where,
            )
        for rank, (docid, score) in enumerate(
            zip(ranking.ids, ranking.scores, strict=True), start=1
        ):
            _check_token(docid, f"docid of query {qid!r}", where)
            lines.append(f"{qid} Q0 {docid} {rank} {float(score)!r} {tag}\n")
    _write_atomic(path, "".join(lines))


def write_qrels(path: str | os.PathLike, qrels: Qrels) -> None:
    """Write judgements in TREC format (``qid 0 docid grade``)."""
    where = str(path)
    lines = []
    for qid, judged in qrels.items():
        _check_token(qid, "query id", where)
        for docid, grade in judged.items():
            _check_token(docid, f"docid of query {qid!r}", where)
            lines.append(f"{qid} 0 {docid} {int(grade)}\n")
    _write_atomic(path, "".join(lines))


def _write_atomic(path: str | os.PathLike, text: str) -> None:
    from rageval.formats.atomic import atomic_write_text  # imported by writers only

    try:
        atomic_write_text(path, text)
    except OSError as err:
        raise InputError(f"cannot write the file: {err.strerror or err}", path=str(path)) from err
