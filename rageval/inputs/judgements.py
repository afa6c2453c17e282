"""Relevance judgements beyond the golden set: ``golden/judgements.jsonl``, one line per
(query, passage) judgement, by a person or an LLM.

A record (keys exactly these; ``rationale``, ``occurrence`` and ``start`` optional)::

    {"query_id": "hr-001", "doc": "hr/parental-leave-2025", "quote": "verbatim passage",
     "grade": 2, "judge": "human:ana", "at": "2026-12-01T06:00:00Z", "rationale": "..."}

- ``doc`` + ``quote`` name the passage the way golden evidence does, so a judgement survives
  re-chunking: the quote is located in the document with the golden set's rules (exact, else
  folding case, whitespace, markdown markers and typographic punctuation; ``occurrence`` or
  ``start`` pick one of several matches).
- ``grade``: 0 = not relevant (the passage is still *judged*), 1-3 = relevant, as graded gain.
- ``judge``: ``human:<name>`` or ``llm:<model>``. Which judges count is the run's label set
  (:data:`LABEL_SETS`): ``gold`` = golden labels + human judgements, ``all`` adds the LLM
  judgements in this file (the accepted ones; a judge that failed calibration writes elsewhere).
- ``at``: when, ISO 8601 with a time zone. Two records for the same query, passage and judge:
  the newer one holds.

A missing file means no judgements. A chunk is judged by a judgement whose passage resolves to it
(:func:`rageval.scoring.relevance.chunks_for_span`: the chunk holds most of the passage or is mostly
passage, the largest overlap otherwise), so a neighbour that shares a few overlapping tokens is
not labelled; its grade is the maximum over such judgements.
"""

from __future__ import annotations

import hashlib
import json
import re
import warnings
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rageval.errors import ConfigError, InputError, RagevalError, did_you_mean
from rageval.formats.atomic import atomic_write_text, locked
from rageval.formats.textio import lines, loads, read_text
from rageval.inputs.golden import quote_place
from rageval.scoring.relevance import (
    Span,
    chunks_for_span,
    pick_occurrence,
    quote_not_found,
    quote_occurrences,
)
from rageval.types import Chunk, Document, Evidence, GoldenSet

FILE_NAME = "judgements.jsonl"
REQUIRED = ("query_id", "doc", "quote", "grade", "judge", "at")
OPTIONAL = ("rationale", "occurrence", "start")
# the longest rationale a record keeps (an LLM's reason is cut to it before it is written)
MAX_RATIONALE = 2000
KEYS = frozenset(REQUIRED + OPTIONAL)
MAX_GRADE = 3
JUDGE_KINDS = ("human", "llm")
# label set -> judge kinds whose judgements count (golden labels always count)
# (ppi: the LLM side of a prediction-powered run, the judge its human sample names; the human
# side is gold's: rageval.inputs.ppi_sample, docs/judging.md)
LABEL_SETS: dict[str, tuple[str, ...]] = {
    "gold": ("human",),
    "all": ("human", "llm"),
    "ppi": ("llm",),
}
PPI = "ppi"
DEFAULT_LABELS = "gold"


@dataclass(frozen=True, slots=True)
class Judgement:
    """One validated judgement; ``span`` is where its quote sits in ``doc`` (characters
    [start, end)), ``line`` its 1-based line in the file it came from (0: not from a file)."""

    query_id: str
    doc: str
    quote: str
    grade: int
    judge: str
    at: str
    rationale: str | None = None
    occurrence: int | None = None
    start: int | None = None
    span: tuple[int, int] = (0, 0)
    line: int = 0

    @property
    def kind(self) -> str:
        """``human`` or ``llm``: the part of ``judge`` before the colon."""
        return self.judge.split(":", 1)[0]

    @property
    def key(self) -> tuple[str, str, int, int, str]:
        """What makes two judgements the same: query, document, resolved span and judge."""
        return (self.query_id, self.doc, self.span[0], self.span[1], self.judge)

    @property
    def when(self) -> datetime:
        """``at`` as an aware UTC datetime (for newest-wins)."""
        return _parse_time(self.at).astimezone(UTC)

    def to_dict(self) -> dict[str, Any]:
        """The JSONL record (keys in the documented order, optional ones only when set)."""
        obj: dict[str, Any] = {
            "query_id": self.query_id,
            "doc": self.doc,
            "quote": self.quote,
            "grade": self.grade,
            "judge": self.judge,
            "at": self.at,
        }
        for name in OPTIONAL:
            value = getattr(self, name)
            if value is not None:
                obj[name] = value
        return obj


@dataclass(frozen=True)
class Judgements:
    """A loaded judgements file: its validated records, newest per :attr:`Judgement.key`."""

    path: str
    records: tuple[Judgement, ...] = ()

    def __iter__(self):
        return iter(self.records)

    def __len__(self) -> int:
        return len(self.records)

    def counted(self, labels: str = DEFAULT_LABELS) -> tuple[Judgement, ...]:
        """The judgements label set ``labels`` uses (``gold``: human ones; ``all``: also the LLM
        ones of a model whose calibration against gold was accepted, :func:`calibrated`)."""
        kinds = label_kinds(labels)
        judges = {j.judge for j in self.records if j.kind == "llm" and j.kind in kinds}
        if labels == PPI:  # one fixed judge: the one the human sample names
            from rageval.inputs.ppi_sample import sample_judge

            judges &= {sample_judge(self.path)}
        ok = {judge for judge in judges if calibrated(self.path, judge)}  # a file read a judge
        return tuple(
            j for j in self.records if j.kind in kinds and (j.kind != "llm" or j.judge in ok)
        )

    def uncalibrated(self) -> tuple[Judgement, ...]:
        """LLM judgements no accepted calibration stands behind: never counted."""
        judges = {j.judge for j in self.records if j.kind == "llm"}
        ok = {judge for judge in judges if calibrated(self.path, judge)}
        return tuple(j for j in self.records if j.kind == "llm" and j.judge not in ok)

    def digest(self, labels: str = DEFAULT_LABELS) -> str:
        """sha256 of the counted judgements (see :func:`judgements_digest`); for ``ppi`` of both
        sides' judgements and the human sample, so a change of any of them shows."""
        if labels == PPI:
            from rageval.inputs.ppi_sample import load_sample, sample_path

            parts = [judgements_digest(self.counted(PPI)), judgements_digest(self.counted())]
            try:
                parts.append(load_sample(sample_path(self.path)).digest())
            except RagevalError:
                parts.append("")
            return hashlib.sha256("\n".join(parts).encode("utf-8")).hexdigest()
        return judgements_digest(self.counted(labels))


def model_slug(model: str) -> str:
    """A model's name as a file name part."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", model).strip("_") or "model"


def calibration_path(judgements: str | Path, model: str) -> Path:
    """Where ``rageval judge --llm`` keeps the calibration of ``model`` (its JSON report):
    ``<judgements>.calibration.<model>.json`` beside the judgements file."""
    p = Path(judgements)
    return p.with_name(f"{p.stem}.calibration.{model_slug(model)}.json")


def calibrated(judgements: str | Path, judge: str) -> bool:
    """True when the calibration report of ``judge`` (``llm:MODEL``) beside the judgements file
    says accepted: LLM labels count only through an accepted calibration against gold."""
    import json

    model = judge.partition(":")[2]
    path = calibration_path(judgements, model)
    try:
        report = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return (
        isinstance(report, dict)
        and report.get("verdict") == "accepted"
        and report.get("judge") == judge
    )


def label_kinds(labels: str) -> tuple[str, ...]:
    """The judge kinds a label set counts; ConfigError naming the valid sets otherwise."""
    try:
        return LABEL_SETS[labels]
    except (KeyError, TypeError):
        raise ConfigError(
            f"labels must be one of {', '.join(LABEL_SETS)} (gold: golden labels + human "
            f"judgements; all: adds accepted LLM judgements; ppi: an LLM judge for every query "
            f"and people for a random sample, docs/judging.md), got {labels!r}"
        ) from None


def default_path(golden_path: str | Path) -> Path:
    """``judgements.jsonl`` in the golden set's folder."""
    return Path(golden_path).parent / FILE_NAME


def now() -> str:
    """The current time as ``at`` is written: ``2026-12-01T06:00:00Z``."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def load_judgements(
    path: str | Path, corpus: Mapping[str, Document] | Iterable[Document], golden: GoldenSet
) -> Judgements:
    """Read and validate ``path`` against the corpus and golden set; a missing file holds no
    judgements. InputError names file and line: bad JSON, unknown key, unknown query id, grade
    not 0-3, judge not ``human:``/``llm:``, time not ISO 8601, quote not found in its document."""
    p = Path(path)
    if not p.exists():
        return Judgements(str(p))
    docs = _docs(corpus)
    ids = {q.id for q in golden.queries}
    cache: dict = {}
    records = [
        resolve_judgement(
            parse_judgement(loads(raw, path=str(p), line=n), path=str(p), lineno=n),
            docs,
            ids,
            path=str(p),
            cache=cache,
        )
        for n, raw in lines(read_text(p))
    ]
    return Judgements(str(p), tuple(newest(records)))


def parse_judgement(obj: Any, *, path: str = "<judgements>", lineno: int = 0) -> Judgement:
    """Check one decoded record's keys and types (no corpus needed); InputError otherwise."""

    def fail(msg: str) -> InputError:
        return InputError(msg, path=path, line=lineno or None)

    if not isinstance(obj, dict):
        raise fail(
            'expected a JSON object like {"query_id": ..., "doc": ..., "quote": ..., '
            '"grade": 0-3, "judge": "human:<name>", "at": "2026-12-01T06:00:00Z"}'
        )
    unknown = sorted(set(obj) - KEYS)
    if unknown:
        raise fail(
            f"unknown key {unknown[0]!r}; a judgement holds {', '.join(REQUIRED)} and optionally "
            f"{', '.join(OPTIONAL)}"
        )
    missing = [k for k in REQUIRED if k not in obj]
    if missing:
        raise fail(f"missing {missing[0]!r}; a judgement holds {', '.join(REQUIRED)}")
    qid = obj["query_id"]
    if isinstance(qid, int) and not isinstance(qid, bool):
        qid = str(qid)
    for key, value in (("query_id", qid), ("doc", obj["doc"]), ("quote", obj["quote"])):
        if not isinstance(value, str) or not value.strip():
            raise fail(f'"{key}" must be a non-empty string (got {value!r})')
    where = f"query {qid!r}"
    grade = obj["grade"]
    if (
        isinstance(grade, bool)
        or not isinstance(grade, int | float)
        or grade != grade  # NaN
        or grade not in range(MAX_GRADE + 1)
    ):
        raise fail(f"{where}: grade must be 0 (not relevant) to {MAX_GRADE} (got {grade!r})")
    judge = obj["judge"]
    kind, _, name = judge.partition(":") if isinstance(judge, str) else ("", "", "")
    if kind not in JUDGE_KINDS or not name.strip():
        raise fail(
            f'{where}: "judge" must be "human:<name>" or "llm:<model>" (got {judge!r}), so a '
            "run can tell people's labels from a model's"
        )
    at = obj["at"]
    try:
        _parse_time(at)
    except ValueError as err:
        raise fail(f'{where}: "at" {err}') from None
    rationale = obj.get("rationale")
    if rationale is not None and not isinstance(rationale, str):
        raise fail(f'{where}: "rationale" must be a string (got {rationale!r})')
    if rationale is not None and len(rationale) > MAX_RATIONALE:
        raise fail(
            f'{where}: "rationale" is {len(rationale):,} characters, above the '
            f"{MAX_RATIONALE:,} a judgement keeps; shorten it (a sentence or two says why)"
        )
    occurrence, start = quote_place(obj, where, fail)
    return Judgement(
        query_id=qid,
        doc=obj["doc"],
        quote=obj["quote"],
        grade=int(grade),
        judge=judge,
        at=at,
        rationale=rationale,
        occurrence=occurrence,
        start=start,
        line=lineno,
    )


def resolve_judgement(
    j: Judgement,
    docs: Mapping[str, Document],
    query_ids: set[str] | frozenset[str],
    *,
    path: str = "<judgements>",
    cache: dict | None = None,
) -> Judgement:
    """``j`` with its span located in its document; InputError for an unknown query id or
    document, or a quote that is not there (with the nearest passage when one is alike)."""

    def fail(msg: str) -> InputError:
        return InputError(f"query {j.query_id!r}: {msg}", path=path, line=j.line or None)

    if j.query_id not in query_ids:
        close = did_you_mean(j.query_id, query_ids, quoted=True)
        raise fail(f"unknown query id{close}; judgements name queries of the golden set")
    doc = docs.get(j.doc)
    if doc is None:
        raise fail(f"unknown document {j.doc!r}{did_you_mean(j.doc, docs, quoted=True)}")
    matches = quote_occurrences(doc.text, j.quote, cache)
    if not matches:
        raise fail(quote_not_found(j.doc, j.quote, doc.text, cache))
    ev = Evidence(j.doc, j.quote, j.grade, j.occurrence, j.start)
    found, problem = pick_occurrence(matches, ev, "the quote")
    if found is None:
        raise fail(problem or "")
    return replace(j, span=found)


def newest(records: Iterable[Judgement]) -> list[Judgement]:
    """One record per :attr:`Judgement.key`, the newest by ``at`` (a later record wins a tie), in
    the order each key first appeared."""
    keep: dict[tuple, Judgement] = {}
    for j in records:
        old = keep.get(j.key)
        if old is not None and j.when == old.when and j.grade != old.grade:
            warnings.warn(
                f"{j.judge} graded the same passage of query {j.query_id!r} {old.grade} and "
                f"{j.grade} at the same time ({j.at}); the later line ({j.grade}) is kept: give "
                "the grades their own times, or remove one",
                DuplicateGradeWarning,
                stacklevel=2,
            )
        if old is None or j.when >= old.when:
            keep[j.key] = j
    return list(keep.values())


class DuplicateGradeWarning(UserWarning):
    """One judge gave one passage two grades with the same time: the later line was kept."""


@dataclass(frozen=True)
class AppendResult:
    """What :func:`append_judgements` did: records new to the file, records that replaced an older
    one for the same passage and judge, records dropped as older than the file's, the total, and
    records the file already held as they are (a second import of the same file changes nothing)."""

    added: int
    replaced: int
    older: int
    total: int
    unchanged: int = 0


def append_judgements(
    path: str | Path,
    records: Iterable[Judgement | Mapping[str, Any]],
    corpus: Mapping[str, Document] | Iterable[Document],
    golden: GoldenSet,
    *,
    source: str = "<new judgements>",
) -> AppendResult:
    """Validate ``records`` (dicts are parsed first; ``source`` names them in errors, line =
    position), merge them into ``path`` newest-wins and rewrite the file atomically under a lock.

    Nothing is written when any record or the existing file is invalid, so a bad import never
    leaves a half-merged file. To import a file with errors that name its lines, load it first:
    ``append_judgements(target, load_judgements(src, corpus, golden), corpus, golden,
    source=str(src))`` (``load_judgements`` reads a missing ``src`` as empty: check it exists)."""
    docs = _docs(corpus)
    ids = {q.id for q in golden.queries}
    cache: dict = {}
    incoming = []
    for n, rec in enumerate(records, start=1):
        j = rec if isinstance(rec, Judgement) else parse_judgement(rec, path=source, lineno=n)
        incoming.append(resolve_judgement(j, docs, ids, path=source, cache=cache))
    with locked(path):
        existing = load_judgements(path, docs, golden).records
        merged = {j.key: j for j in existing}
        added = replaced = older = unchanged = 0
        for j in newest(incoming):
            old = merged.get(j.key)
            if old is None:
                added += 1
            elif old.to_dict() == j.to_dict():
                unchanged += 1
                continue
            elif j.when >= old.when:
                replaced += 1
            else:
                older += 1
                continue
            merged[j.key] = j
        if added or replaced:
            text = "".join(
                json.dumps(j.to_dict(), ensure_ascii=False) + "\n" for j in merged.values()
            )
            atomic_write_text(path, text)
    return AppendResult(added, replaced, older, len(merged), unchanged)


def judgement_qrels(
    judgements: Iterable[Judgement], chunks: Sequence[Chunk], level: str
) -> dict[str, dict[str, int]]:
    """Per query, the units these judgements label for a run's chunking: chunk ids at ``chunk``
    level, document ids at ``doc`` level; grade = max over the judgements of a unit (0 counts:
    judged, not relevant)."""
    by_doc: dict[str, list[Chunk]] = defaultdict(list)
    for c in chunks:
        by_doc[c.doc_id].append(c)
    out: dict[str, dict[str, int]] = defaultdict(dict)
    for j in judgements:
        rel = out[j.query_id]
        units = (
            [j.doc]
            if level == "doc"
            else chunks_for_span(Span(j.doc, *j.span, j.grade), by_doc.get(j.doc, ()))
        )
        for unit in units:
            rel[unit] = max(j.grade, rel.get(unit, 0))
    return dict(out)


def merge_qrels(*qrels: Mapping[str, Mapping[str, int]]) -> dict[str, dict[str, int]]:
    """Union of several qrels, grade = max per (query, unit)."""
    out: dict[str, dict[str, int]] = {}
    for q in qrels:
        for qid, rel in q.items():
            merged = out.setdefault(qid, {})
            for unit, grade in rel.items():
                merged[unit] = max(grade, merged.get(unit, grade))
    return out


def judgements_digest(records: Iterable[Judgement]) -> str:
    """sha256 of the records' canonical JSON in key order: file order and formatting do not
    count; a changed grade, passage or judge does. Empty input: the digest of nothing."""
    h = hashlib.sha256()
    for j in sorted(records, key=lambda j: j.key):
        h.update(json.dumps(j.to_dict(), sort_keys=True, ensure_ascii=False).encode())
        h.update(b"\n")
    return h.hexdigest()


def _docs(corpus: Mapping[str, Document] | Iterable[Document]) -> Mapping[str, Document]:
    return corpus if isinstance(corpus, Mapping) else {d.id: d for d in corpus}


def _parse_time(value: Any) -> datetime:
    if not isinstance(value, str):
        raise ValueError(f"must be an ISO 8601 time such as 2026-12-01T06:00:00Z (got {value!r})")
    try:
        t = datetime.fromisoformat(value)
    except ValueError:
        raise ValueError(
            f"must be an ISO 8601 time such as 2026-12-01T06:00:00Z (got {value!r})"
        ) from None
    if t.tzinfo is None:
        raise ValueError(f"needs a time zone, e.g. {value}Z for UTC (got {value!r})")
    return t
