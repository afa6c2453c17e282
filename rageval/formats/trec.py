"""TREC run and qrels files (and BEIR qrels tsv): read, write, and order runs like trec_eval.

- qrels: ``qid 0 docid grade`` (whitespace-separated), or BEIR ``query-id<TAB>corpus-id<TAB>score``
  with its header line; the format is detected from the first line.
- run: ``qid Q0 docid rank score tag``. trec_eval ignores the rank column and orders each query's
  results by score descending (in single precision), ties by docid descending; :func:`read_run`
  does the same.

Every problem in a file is an :class:`~rageval.errors.InputError` naming the file and line.
Writes are atomic (:mod:`rageval.formats.atomic`): a reader sees the old file or the new one.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Sequence

from rageval.errors import InputError
from rageval.formats.atomic import atomic_write_text
from rageval.formats.textio import lines, read_text
from rageval.inputs.golden import MAX_GRADE
from rageval.ranking import order_like_trec_eval  # noqa: F401 (re-exported)
from rageval.types import Qrels, RankedList

_TREC_QRELS = "qid 0 docid grade"
_BEIR_HEADER = ("query-id", "corpus-id", "score")
_RUN_LINE = "qid Q0 docid rank score tag"


def _lines(path: str | os.PathLike) -> Iterable[tuple[int, list[str], str]]:
    """Yield (line number, whitespace-split fields, raw line) for each non-blank line."""
    for number, raw in lines(read_text(path)):  # UTF-8, a byte-order mark dropped
        yield number, raw.split(), raw.rstrip("\r")


def _grade(text: str, path: str, line: int) -> int:
    try:
        grade = int(text)
    except ValueError:
        grade = None
    if grade is None or not -MAX_GRADE <= grade <= MAX_GRADE:
        raise InputError(
            f"relevance grade {text[:40]!r} is not an integer of at most 18 digits; use 0 for "
            "non-relevant, 1+ for relevant",
            path=path,
            line=line,
        )
    return grade


def read_qrels(path: str | os.PathLike) -> dict[str, dict[str, int]]:
    """Read relevance judgements: query id -> {docid: grade}, in file order.

    A judgement repeated with the same grade is accepted; with a different grade it is an error.
    """
    where = str(path)
    qrels: dict[str, dict[str, int]] = {}
    first_line: dict[tuple[str, str], int] = {}
    beir: bool | None = None
    for number, fields, raw in _lines(path):
        if beir is None:
            beir = "\t" in raw and len(raw.split("\t")) == 3
            if beir and raw.split("\t")[2].strip().lower() == _BEIR_HEADER[2]:
                continue
        if beir:
            fields = [f.strip() for f in raw.split("\t")]
            if len(fields) != 3 or not all(fields):
                raise InputError(
                    f"expected 3 tab-separated columns ({' '.join(_BEIR_HEADER)}) like the "
                    f"first line, got {len(fields)}; fix or remove this line",
                    path=where,
                    line=number,
                )
            qid, docid, grade_text = fields
        else:
            if len(fields) != 4:
                raise InputError(
                    f"expected 4 whitespace-separated columns ({_TREC_QRELS}), got "
                    f"{len(fields)}; fix or remove this line",
                    path=where,
                    line=number,
                )
            qid, _, docid, grade_text = fields
        grade = _grade(grade_text, where, number)
        judged = qrels.setdefault(qid, {})
        if docid in judged and judged[docid] != grade:
            raise InputError(
                f"{docid!r} of query {qid!r} is judged {grade} here but {judged[docid]} on line "
                f"{first_line[qid, docid]}; keep one judgement",
                path=where,
                line=number,
            )
        first_line.setdefault((qid, docid), number)
        judged[docid] = grade
    if not qrels:
        raise InputError(
            f"no judgements found; expected lines '{_TREC_QRELS}' or a BEIR qrels tsv",
            path=where,
        )
    return qrels


def read_run(path: str | os.PathLike) -> dict[str, RankedList]:
    """Read a TREC run: query id -> its results ordered like trec_eval (see module docstring).

    Repeated docids are kept (best-scored first); scoring drops the later copies with a warning.
    """
    where = str(path)
    results: dict[str, list[tuple[str, float]]] = {}
    for number, fields, _ in _lines(path):
        if len(fields) != 6:
            raise InputError(
                f"expected 6 whitespace-separated columns ({_RUN_LINE}), got {len(fields)}; "
                "fix or remove this line",
                path=where,
                line=number,
            )
        try:
            score = float(fields[4])
        except ValueError:
            score = math.nan
        if not math.isfinite(score):
            raise InputError(
                f"score {fields[4]!r} (column 5) is not a finite number; write a real score",
                path=where,
                line=number,
            )
        results.setdefault(fields[0], []).append((fields[2], score))
    if not results:
        raise InputError(f"no results found; expected lines '{_RUN_LINE}'", path=where)
    return {qid: order_like_trec_eval(pairs) for qid, pairs in results.items()}


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
    try:
        atomic_write_text(path, text)
    except OSError as err:
        raise InputError(f"cannot write the file: {err.strerror or err}", path=str(path)) from err
