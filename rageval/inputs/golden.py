"""Load and validate a golden set (JSONL, one query a line) and compute its digest.

Three label kinds, any mix per query (see docs/golden-set.md and README.md):
``relevant`` (chunk labels, list or {label: grade}), ``relevant_docs`` (document ids, list or
{doc: grade}) and ``evidence`` (verbatim quotes: [{"doc", "quote", "grade"?, "occurrence"? or
"start"?}]).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from rageval.errors import InputError
from rageval.formats.textio import lines, loads, printable, read_text
from rageval.types import Evidence, GoldenQuery, GoldenSet

SOURCES = ("ticket", "synthetic", "adversarial")
MAX_GRADE = 2**63 - 1
EVIDENCE_KEYS = frozenset(
    {"doc", "quote", "grade", "occurrence", "start"}
)  # what trec_eval (a C long) and numpy can hold


def load_golden(path: str | Path, problems: list[InputError] | None = None) -> GoldenSet:
    """Read and validate ``path``; raises InputError naming file, line and query id. Given
    ``problems`` (``golden validate``), each bad line's InputError is added to it instead and the
    good lines are returned, so one pass shows every mistake."""
    p = Path(path)
    if not p.is_file():
        raise InputError("golden set not found; set dataset.golden to a JSONL file", path=str(p))
    queries: list[GoldenQuery] = []
    first_line: dict[str, int] = {}
    for lineno, raw in lines(read_text(p)):
        try:
            q = parse_line(raw, path=str(p), lineno=lineno)
            if q.id in first_line:
                raise InputError(
                    f"duplicate query id {q.id!r} (first on line {first_line[q.id]}); "
                    "ids must be unique",
                    path=str(p),
                    line=lineno,
                )
        except InputError as err:
            if problems is None:
                raise
            problems.append(err)
            continue
        first_line[q.id] = lineno
        queries.append(q)
    if not queries and not problems:
        raise InputError("golden set is empty: add one JSON object per line", path=str(p))
    return GoldenSet(path=str(p), queries=tuple(queries), digest=golden_digest(queries))


def parse_line(raw: str, *, path: str = "<golden>", lineno: int = 0) -> GoldenQuery:
    """Parse one JSONL line into a GoldenQuery."""
    obj = loads(raw, path=path, line=lineno or None)
    return entry_from_dict(obj, path=path, lineno=lineno)


def entry_from_dict(obj: Any, *, path: str = "<golden>", lineno: int = 0) -> GoldenQuery:
    """Validate one decoded golden entry."""

    def fail(msg: str) -> InputError:
        return InputError(msg, path=path, line=lineno or None)

    if not isinstance(obj, dict):
        raise fail('expected a JSON object like {"id": ..., "query": ..., "evidence": [...]}')
    qid = obj.get("id")
    if isinstance(qid, int) and not isinstance(qid, bool):
        qid = str(qid)
    if not isinstance(qid, str) or not qid.strip():
        raise fail('missing "id": give every query a unique string id')
    if len(qid.split()) != 1 or qid != qid.strip():
        raise fail(
            f"query id {qid!r} holds whitespace, which run.trec and qrels.trec cannot hold (their "
            f"columns are separated by whitespace); rename it, e.g. {'-'.join(qid.split())!r}"
        )
    if printable(qid) != qid:
        raise fail(
            f"query id {printable(qid)!r} holds a control character (NUL, ESC, U+202E...), which "
            "run files, terminals and pages cannot show faithfully; rename it"
        )
    query = obj.get("query")
    if not isinstance(query, str) or not query.strip():
        raise fail(f'query {qid!r}: missing or empty "query" text')
    relevant = _labels(obj.get("relevant"), "relevant", qid, fail)
    relevant_docs = _labels(obj.get("relevant_docs"), "relevant_docs", qid, fail)
    evidence = _evidence(obj.get("evidence"), qid, fail)
    if not relevant and not relevant_docs and not evidence:
        raise fail(
            f'query {qid!r} has no labels: give "relevant", "relevant_docs" or "evidence" '
            "with at least one item"
        )
    source = obj.get("source")
    if source is not None and not isinstance(source, str):
        raise fail(f'query {qid!r}: "source" must be a string such as "ticket"')
    tags = obj.get("tags", [])
    if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
        raise fail(f'query {qid!r}: "tags" must be a list of strings')
    meta = _meta(obj.get("meta"), qid, fail)
    return GoldenQuery(
        id=qid,
        query=query,
        relevant=relevant,
        relevant_docs=relevant_docs,
        evidence=evidence,
        source=source,
        tags=tuple(tags),
        line=lineno,
        meta=meta,
    )


def _scalar(v: Any) -> bool:
    return v is None or isinstance(v, str | int | float | bool)


def _meta(value: Any, qid: str, fail) -> dict[str, Any]:
    """``meta``: an object of fields to slice by; values are strings, numbers, booleans or lists
    of them (a query with a list is in the slice of each item)."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise fail(f'query {qid!r}: "meta" must be an object like {{"difficulty": "hard"}}')
    for key, v in value.items():
        if not key.strip():
            raise fail(f'query {qid!r}: "meta" holds an empty key; name every field')
        if not (_scalar(v) or isinstance(v, list) and all(_scalar(x) for x in v)):
            raise fail(
                f'query {qid!r}: "meta"[{key!r}] must be a string, number, boolean or a list of '
                f"them (got {type(v).__name__}); slices group queries by these values"
            )
    return dict(value)


def _grade(value: Any, where: str, fail) -> int:
    whole = isinstance(value, int) or isinstance(value, float) and value.is_integer()
    if isinstance(value, bool) or not whole:  # also NaN and infinity
        raise fail(f"{where}: grade must be a whole number (got {value!r})")
    if value < 0:
        raise fail(f"{where}: grade must be >= 0 (got {value!r})")
    if value > MAX_GRADE:
        raise fail(f"{where}: grade must be at most {MAX_GRADE} (got {value!r})")
    return int(value)


def _trec_safe(labels: dict[str, int], key: str, qid: str, fail) -> dict[str, int]:
    """Document labels end up in qrels.trec at document level: no whitespace in them."""
    if key == "relevant_docs":
        for label in labels:
            if len(label.split()) != 1 or label != label.strip():
                raise fail(
                    f'query {qid!r}: "{key}" label {label!r} holds whitespace, which qrels.trec '
                    "cannot hold; rename the document so its id has none"
                )
    return labels


def _labels(value: Any, key: str, qid: str, fail) -> dict[str, int]:
    if value is None:
        return {}
    if isinstance(value, list):
        if not all(isinstance(v, str) and v.strip() for v in value):
            raise fail(f'query {qid!r}: "{key}" must hold non-empty strings')
        if not value:
            raise fail(f'query {qid!r}: "{key}" is empty; remove the key or add labels')
        return _trec_safe(dict.fromkeys(value, 1), key, qid, fail)
    if isinstance(value, dict):
        if not value:
            raise fail(f'query {qid!r}: "{key}" is empty; remove the key or add labels')
        labels = {
            str(k): _grade(v, f'query {qid!r}, "{key}"[{k!r}]', fail) for k, v in value.items()
        }
        return _trec_safe(labels, key, qid, fail)
    raise fail(f'query {qid!r}: "{key}" must be a list of labels or a {{label: grade}} mapping')


def _evidence(value: Any, qid: str, fail) -> tuple[Evidence, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not value:
        raise fail(f'query {qid!r}: "evidence" must be a non-empty list of {{"doc", "quote"}}')
    out = []
    for i, item in enumerate(value):
        where = f"query {qid!r}, evidence[{i}]"
        if not isinstance(item, dict):
            raise fail(f'{where}: expected an object {{"doc": ..., "quote": ...}}')
        doc, quote = item.get("doc"), item.get("quote")
        if not isinstance(doc, str) or not doc.strip():
            raise fail(f'{where}: missing "doc" (the document id the quote comes from)')
        if not isinstance(quote, str) or not quote.strip():
            raise fail(f'{where}: missing or empty "quote"')
        unknown = sorted(set(item) - EVIDENCE_KEYS)
        if unknown:
            raise fail(
                f"{where}: unknown key {unknown[0]!r}; an evidence item holds "
                f"{', '.join(sorted(EVIDENCE_KEYS))}"
            )
        grade = _grade(item.get("grade", 1), where, fail)
        occurrence, start = quote_place(item, where, fail)
        out.append(Evidence(doc, quote, grade, occurrence, start))
    return tuple(out)


def quote_place(item: Mapping[str, Any], where: str, fail) -> tuple[int | None, int | None]:
    """The ``occurrence`` and ``start`` that pin a quote found more than once in its document
    (an evidence item, a judgement): each optional, whole numbers, not both; ``fail(message)``
    builds the error to raise."""
    occurrence, start = item.get("occurrence"), item.get("start")
    if occurrence is not None and not _whole(occurrence, 1):
        raise fail(f'{where}: "occurrence" must be a whole number >= 1 (got {occurrence!r})')
    if start is not None and not _whole(start, 0):
        raise fail(f'{where}: "start" must be a character offset >= 0 (got {start!r})')
    if occurrence is not None and start is not None:
        raise fail(f'{where}: give "occurrence" or "start", not both')
    return occurrence, start


def _whole(value: Any, least: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= least


def entry_to_dict(q: GoldenQuery) -> dict[str, Any]:
    """The JSON form of an entry (inverse of ``entry_from_dict``, without the line number)."""
    obj: dict[str, Any] = {"id": q.id, "query": q.query}
    if q.relevant:
        obj["relevant"] = dict(q.relevant)
    if q.relevant_docs:
        obj["relevant_docs"] = dict(q.relevant_docs)
    if q.evidence:
        obj["evidence"] = [_evidence_dict(e) for e in q.evidence]
    if q.source is not None:
        obj["source"] = q.source
    if q.tags:
        obj["tags"] = list(q.tags)
    if q.meta:
        obj["meta"] = dict(q.meta)
    return obj


def _evidence_dict(e: Evidence) -> dict[str, Any]:
    d: dict[str, Any] = {"doc": e.doc, "quote": e.quote, "grade": e.grade}
    if e.occurrence is not None:
        d["occurrence"] = e.occurrence
    if e.start is not None:
        d["start"] = e.start
    return d


def golden_digest(queries: Iterable[GoldenQuery]) -> str:
    """sha256 of the entries' canonical JSON, sorted by id: formatting and order do not count."""
    h = hashlib.sha256()
    for q in sorted(queries, key=lambda q: q.id):
        h.update(json.dumps(entry_to_dict(q), sort_keys=True, ensure_ascii=False).encode())
        h.update(b"\n")
    return h.hexdigest()
