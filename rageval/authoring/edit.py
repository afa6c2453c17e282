"""Edit a golden set without breaking it: ``rageval golden add`` and ``rageval golden migrate``.

add: append one query (typed, or taken from a production log line) with its evidence quotes
checked against the corpus, under a unique id. Every other line stays byte for byte as it was.
migrate: chunk labels (``<doc>:<ordinal>`` or content ids) hold for the chunking they were written
against only; each becomes an evidence quote (its chunk's text, or the part of it no other chunk
shares) that resolves back to exactly that chunk under that chunking, and to the same passage
under any other. Labels that resolve to no chunk are reported.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rageval.errors import ConfigError, InputError, did_you_mean
from rageval.formats.atomic import atomic_write_text, locked
from rageval.inputs.golden import entry_from_dict, load_golden
from rageval.scoring.relevance import locate_quote, resolve
from rageval.types import Chunk, Document, Evidence, GoldenQuery, GoldenSet

LOG_FIELDS = ("query", "question", "user_query", "input", "prompt")


def next_ids(existing: Iterable[str], prefix: str, n: int, width: int = 4) -> list[str]:
    """``n`` new ids ``<prefix><number>``, numbered after the highest such id in ``existing``."""
    used = set(existing)
    pattern = re.compile(re.escape(prefix) + r"(\d+)$")
    i = max((int(m.group(1)) for u in used if (m := pattern.match(u))), default=0)
    out: list[str] = []
    while len(out) < n:
        i += 1
        if f"{prefix}{i:0{width}d}" not in used:
            out.append(f"{prefix}{i:0{width}d}")
    return out


def verbatim_quote(doc_text: str, quote: str) -> str | None:
    """The document's own text for ``quote`` (found exactly, or ignoring case, whitespace runs and
    markdown markers), or None when the document does not hold it."""
    span = locate_quote(doc_text, quote)
    return None if span is None else doc_text[span[0] : span[1]]


def read_golden(path: Path) -> tuple[str, GoldenSet | None]:
    """The file's text and its validated entries; ("", None) when it is missing or blank."""
    raw = path.read_bytes() if path.is_file() else b""
    if not raw.strip():
        return "", None
    golden = load_golden(path)  # validates, and names the line of any problem
    return raw.decode("utf-8-sig"), golden


def doc_hint(name: str, docs: Iterable[str]) -> str:
    """A " (did you mean 'x'?)" suffix naming the closest of ``docs``, or "" if none is."""
    return did_you_mean(name, docs, quoted=True)


def add_query(
    path: Path,
    docs: Mapping[str, Document],
    query: str,
    evidence: Sequence[tuple[str, str]],
    grades: Sequence[int] = (),
    qid: str | None = None,
    id_prefix: str = "q-",
    source: str | None = "ticket",
    tags: Sequence[str] = (),
) -> dict[str, Any]:
    """Append one entry to the golden set at ``path`` (created if missing) and return it. Holds a
    lock from reading to writing, so concurrent ``golden add`` runs all keep their entries."""
    with locked(path):
        return _add_query(path, docs, query, evidence, grades, qid, id_prefix, source, tags)


def _add_query(path, docs, query, evidence, grades, qid, id_prefix, source, tags) -> dict[str, Any]:
    text, golden = read_golden(path)
    existing = golden.queries if golden else ()
    if len(grades) > len(evidence):
        raise ConfigError(f"{len(grades)} --grade values for {len(evidence)} --evidence pairs")
    key = " ".join(query.split()).casefold()
    for q in existing:
        if " ".join(q.query.split()).casefold() == key:
            raise InputError(
                f"this query is already in the golden set as {q.id!r}; edit that entry instead",
                path=str(path),
                line=q.line,
            )
        if qid is not None and q.id == qid:
            raise InputError(
                f"id {qid!r} is taken; choose another --id or leave it out for the next free one",
                path=str(path),
                line=q.line,
            )
    items = []
    for i, (doc_id, quote) in enumerate(evidence):
        doc = docs.get(doc_id)
        if doc is None:
            raise InputError(
                f"--evidence #{i + 1}: unknown document {doc_id!r}{doc_hint(doc_id, docs)}; "
                "document ids are file paths below the corpus folder, without extension",
                path=str(path),
            )
        exact = verbatim_quote(doc.text, quote)
        if exact is None:
            raise InputError(
                f"--evidence #{i + 1}: quote not found in document {doc_id!r}: {_short(quote)!r}; "
                "copy it verbatim from the document",
                path=str(path),
            )
        items.append({"doc": doc_id, "quote": exact, "grade": grades[i] if i < len(grades) else 1})
    entry: dict[str, Any] = {
        "id": qid or next_ids((q.id for q in existing), id_prefix, 1, width=3)[0],
        "query": " ".join(query.split()),
        "evidence": items,
    }
    if source:
        entry["source"] = source
    if tags:
        entry["tags"] = list(tags)
    entry_from_dict(entry, path="<new entry>")
    sep = "" if not text or text.endswith("\n") else "\n"
    atomic_write_text(path, text + sep + json.dumps(entry, ensure_ascii=False) + "\n")
    return entry


def query_from_log(where: str, key: str | None = None) -> str:
    """The query text on line LINE of a JSON-lines log, given as ``FILE:LINE``; ``key`` is a dotted
    path (``request.messages.-1.content``), else the first of LOG_FIELDS that holds text."""
    name, _, n = where.rpartition(":")
    if not name or not n.isdecimal() or int(n) < 1:
        raise ConfigError(f"--from-log expects FILE:LINE, e.g. logs/app.jsonl:1042 (got {where!r})")
    lineno, raw = int(n), None
    try:
        with open(name, encoding="utf-8", errors="replace") as fh:
            for i, line in enumerate(fh, 1):
                if i == lineno:
                    raw = line
                    break
    except OSError as err:
        raise InputError(f"cannot read the log: {err.strerror}", path=name) from None
    if raw is None:
        raise InputError(f"the log has fewer than {lineno} lines", path=name)
    try:
        obj = json.loads(raw)
    except ValueError:
        obj = None
    if not isinstance(obj, dict):
        raise InputError(
            "not a JSON object log line; pass the question with --query", path=name, line=lineno
        )
    for k in [key] if key else LOG_FIELDS:
        value = _dig(obj, k)
        if isinstance(value, str) and value.strip():
            return value.strip()
    tried = key or ", ".join(LOG_FIELDS)
    raise InputError(
        f"no query text under {tried}; name the key with --log-field (dotted, e.g. request.query)",
        path=name,
        line=lineno,
    )


def _dig(obj: Any, dotted: str) -> Any:
    for part in dotted.split("."):
        if isinstance(obj, dict):
            obj = obj.get(part)
        elif (
            isinstance(obj, list)
            and re.fullmatch(r"-?\d+", part)
            and -len(obj) <= int(part) < len(obj)
        ):
            obj = obj[int(part)]
        else:
            return None
    return obj


@dataclass
class Migration:
    """The migrated file's text, how many labels became quotes, and the labels that did not."""

    text: str
    converted: int = 0
    queries: int = 0
    problems: list[str] = field(default_factory=list)


def migrate(
    golden: GoldenSet, text: str, docs: Mapping[str, Document], chunks: Sequence[Chunk]
) -> Migration:
    """Rewrite each entry's chunk labels as evidence quotes; unresolvable labels stay and are
    listed."""
    by_label = {c.label: c for c in chunks}
    by_id = {c.id: c for c in chunks}
    by_doc: dict[str, list[Chunk]] = defaultdict(list)
    for c in chunks:
        by_doc[c.doc_id].append(c)
    lines = text.splitlines()
    out = Migration(text="")
    for q in golden.queries:
        if not q.relevant:
            continue
        where = f"{golden.path}:{q.line}: query {q.id!r}"
        evidence = {(e.doc, e.quote): e.grade for e in q.evidence}
        left: dict[str, int] = {}
        for label, grade in q.relevant.items():
            chunk = by_label.get(label) or by_id.get(label)
            quote = chunk_quote(chunk, docs[chunk.doc_id], by_doc[chunk.doc_id]) if chunk else None
            if quote is None:
                why = "matches no chunk" if chunk is None else "cannot be quoted unambiguously"
                out.problems.append(f"{where}: label {label!r} {why} under this chunking")
                left[label] = grade
                continue
            evidence[(chunk.doc_id, quote)] = max(grade, evidence.get((chunk.doc_id, quote), 0))
            out.converted += 1
        obj = json.loads(lines[q.line - 1])
        items = [{"doc": d, "quote": s, "grade": g} for (d, s), g in evidence.items()]
        labels = list(left) if all(g == 1 for g in left.values()) else left
        new: dict[str, Any] = {}
        for k, v in obj.items():
            if k == "relevant" and left:
                new[k] = labels if isinstance(v, list) else left
            if k in ("relevant", "evidence") and items and "evidence" not in new:
                new["evidence"] = items
            elif k not in ("relevant", "evidence"):
                new[k] = v
        lines[q.line - 1] = json.dumps(new, ensure_ascii=False)
        out.queries += 1
    out.text = "\n".join(lines) + "\n"
    return out


def check_migration(
    golden: GoldenSet,
    migrated: Migration,
    out: Path,
    docs: Mapping[str, Document],
    chunks: Sequence[Chunk],
) -> None:
    """InputError unless the migrated set judges every chunk as the original does under the
    chunking the labels were written against (the promise of a migration)."""
    from rageval.inputs.golden import parse_line

    lines = enumerate(migrated.text.splitlines(), 1)
    queries = tuple(parse_line(raw, path=str(out), lineno=i) for i, raw in lines if raw.strip())
    new = resolve(GoldenSet(str(out), queries, ""), docs, chunks, level="chunk").qrels
    if new != resolve(golden, docs, chunks, level="chunk").qrels:
        raise InputError(
            "the migrated set would judge chunks differently; nothing written "
            "(please report this as a bug)",
            path=golden.path,
        )


def chunk_quote(chunk: Chunk, doc: Document, doc_chunks: Sequence[Chunk]) -> str | None:
    """A verbatim quote that resolves to exactly ``chunk`` among ``doc_chunks``: the chunk's text,
    else its longest stretch no other chunk covers; None if neither does (repeated text)."""
    for a, b in ((chunk.start, chunk.end), _core(chunk, doc_chunks)):
        quote = doc.text[a:b].strip()
        probe = GoldenQuery(id="probe", query="probe", evidence=(Evidence(doc.id, quote, 1),))
        if quote and resolve(
            GoldenSet("<migrate>", (probe,), ""), {doc.id: doc}, doc_chunks, level="chunk"
        ).qrels["probe"] == {chunk.id: 1}:
            return quote
    return None


def _core(chunk: Chunk, doc_chunks: Sequence[Chunk]) -> tuple[int, int]:
    covered = sorted(
        (max(c.start, chunk.start), min(c.end, chunk.end))
        for c in doc_chunks
        if c.id != chunk.id and c.start < chunk.end and c.end > chunk.start
    )
    best, pos = (chunk.start, chunk.start), chunk.start
    for a, b in [*covered, (chunk.end, chunk.end)]:
        if a - pos > best[1] - best[0]:
            best = (pos, a)
        pos = max(pos, b)
    return best


def _short(s: str, n: int = 60) -> str:
    return s if len(s) <= n else s[: n - 3] + "..."
