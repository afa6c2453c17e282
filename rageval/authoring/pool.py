"""Pooling: the passages that runs put near the top and that nobody has labelled yet.

A golden set labels the evidence its authors knew about; a retriever that finds another passage
answering the question is scored as if it missed. Pooling (as TREC builds its judgement pools)
collects, per query, the union of the top-``depth`` results of several runs that neither a gold
label nor an existing judgement covers, so people or a calibrated LLM can judge exactly those.

A run folder is read as written (``report.json``, ``run.trec``, ``qrels.trec``,
``chunks.jsonl``); the passage text is cut from the corpus at the chunk's offsets, and the
corpus must be the one the run measured (its digest is checked).
"""

from __future__ import annotations

import json
import statistics
import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rageval.errors import ConfigError, InputError
from rageval.types import Chunk, Document, RankedList

RUN_FILES = ("report.json", "run.trec", "qrels.trec", "chunks.jsonl")


@dataclass(frozen=True)
class RunFolder:
    """One finished run as its folder holds it: the report, the full rankings (``run.trec``,
    deeper than k), the qrels of its chunking and its chunks (``chunks.jsonl``) by id."""

    path: Path
    name: str
    report: dict[str, Any]
    rankings: Mapping[str, RankedList]
    qrels: Mapping[str, Mapping[str, int]]
    chunks: Mapping[str, Mapping[str, Any]]

    @property
    def level(self) -> str:
        return str(self.report.get("level", "chunk"))

    @property
    def digests(self) -> Mapping[str, str]:
        return self.report.get("digests") or {}

    def dataset(self) -> Mapping[str, Any]:
        """The run's ``dataset`` config node (paths as the run resolved them)."""
        cfg = self.report.get("config") or {}
        return cfg.get("dataset") or {}

    def as_chunks(self, docs: Mapping[str, Document]) -> list[Chunk]:
        """The run's chunks with their text cut from ``docs`` (to label them with judgements)."""
        out = []
        for cid, row in self.chunks.items():
            doc = docs.get(row["doc_id"])
            if doc is None:
                continue
            s, e = int(row["start"]), int(row["end"])
            out.append(
                Chunk.of_document(
                    cid, row["doc_id"], int(row["ordinal"]), doc.text, s, e, row["tokens"]
                )
            )
        return out


@dataclass
class PoolResult:
    """The pooled queries (one JSON object each) and what pooling saw."""

    queries: list[dict[str, Any]]
    n_queries: int
    depth: int
    runs: list[str]
    already_labelled: int = 0  # top-depth results a gold label or a judgement covered
    duplicates: int = 0  # results whose text another pooled passage already has
    short_runs: list[tuple[str, int]] = field(default_factory=list)  # (run, results per query)

    def per_query(self) -> list[int]:
        """Passages per golden query (queries with none included)."""
        counts = [len(q["passages"]) for q in self.queries]
        return counts + [0] * (self.n_queries - len(counts))

    def summary(self) -> str:
        """Two lines: how many passages, per query, from how many runs at which depth."""
        counts = self.per_query()
        total = sum(counts)
        none = sum(1 for c in counts if c == 0)
        head = (
            f"pooled {_n(total, 'passage')} for {len(self.queries)} of "
            f"{_n(self.n_queries, 'query', 'queries')} from {_n(len(self.runs), 'run')} at depth "
            f"{self.depth}"
        )
        if counts:
            head += (
                f"; per query: min {min(counts)}, median {statistics.median(counts):g}, "
                f"max {max(counts)}, mean {total / len(counts):.1f}"
            )
        tail = (
            f"{self.already_labelled} top-{self.depth} results were labelled or judged already, "
            f"{self.duplicates} repeated a pooled passage's text"
        )
        if none:
            tail += f"; {_n(none, 'query has', 'queries have')} nothing left to judge"
        return head + "\n" + tail


def _n(n: int, one: str, many: str | None = None) -> str:
    return f"{n} {one if n == 1 else many or one + 's'}"


def select_ids(
    queries: Iterable[tuple[str, Sequence[str], str | None]], selector: str, option: str
) -> set[str]:
    """Ids of the (id, tags, source) ``queries`` a selector names: ``all``, ``none``,
    ``tag:NAME``, ``source:NAME`` or ids separated by commas (unknown ids are an error)."""
    queries = list(queries)
    if selector == "all":
        return {q[0] for q in queries}
    if selector in ("none", ""):
        return set()
    kind, _, name = selector.partition(":")
    if kind == "tag" and name:
        return {qid for qid, tags, _ in queries if name in tags}
    if kind == "source" and name:
        return {qid for qid, _, source in queries if source == name}
    ids = {x.strip() for x in selector.split(",") if x.strip()}
    unknown = sorted(ids - {q[0] for q in queries})
    if unknown:
        raise ConfigError(
            f"{option} names unknown query ids {', '.join(unknown[:5])}; give all, none, "
            "tag:NAME, source:NAME or golden query ids separated by commas"
        )
    return ids


def find_run_folders(paths: Sequence[str | Path]) -> list[Path]:
    """Run folders named by ``paths``: a run folder itself, or a sweep folder (its job folders
    that finished; failed or unfinished jobs are skipped with a warning)."""
    import warnings

    from rageval.run.folder import ERROR, MARKER

    out: list[Path] = []
    for raw in paths:
        p = Path(raw)
        if not p.is_dir():
            raise InputError(
                "not a folder; pass run folders (each holds report.json) or a sweep folder "
                "(multirun/<date>/<time>)",
                path=str(p),
            )
        if any((p / f).exists() for f in (*RUN_FILES, ERROR, MARKER)):
            out.append(p)
            continue
        jobs = sorted(
            (d for d in p.iterdir() if d.is_dir() and (d / "run.trec").exists()),
            key=lambda d: (not d.name.isdigit(), int(d.name) if d.name.isdigit() else 0, d.name),
        )
        if not jobs:
            raise InputError(
                "neither a run folder (report.json, run.trec) nor a sweep folder (job folders "
                "0/, 1/, ... holding them); pass the folder a run or sweep printed",
                path=str(p),
            )
        for d in jobs:
            if (d / ERROR).exists() or (d / MARKER).exists() or not (d / "report.json").exists():
                warnings.warn(
                    f"{d}: the job failed or did not finish; left out of the pool", stacklevel=2
                )
            else:
                out.append(d)
    if not out:
        raise InputError("no finished run among " + ", ".join(map(str, paths)))
    return out


def read_run_folder(path: str | Path) -> RunFolder:
    """Read one finished run folder; errors name the missing or broken file and what to do."""
    from rageval.formats.textio import jsonl_objects
    from rageval.formats.trec import read_qrels, read_run
    from rageval.report.run_files import load
    from rageval.run.folder import check_complete

    p = Path(path)
    check_complete(p / "report.json")
    missing = [f for f in RUN_FILES if not (p / f).is_file()]
    if missing:
        raise InputError(
            f"not a complete run folder: {', '.join(missing)} missing; pass the folder a run "
            "printed (it writes report.json, run.trec, qrels.trec and chunks.jsonl)",
            path=str(p),
        )
    report = load(p)
    rankings = read_run(p / "run.trec")
    qrels = read_qrels(p / "qrels.trec") if (p / "qrels.trec").stat().st_size else {}
    chunks = {}
    for lineno, row in jsonl_objects(p / "chunks.jsonl"):
        if not {"id", "doc_id", "start", "end"} <= set(row):
            raise InputError(
                "a chunk row needs id, doc_id, start and end",
                path=str(p / "chunks.jsonl"),
                line=lineno,
            )
        chunks[row["id"]] = row
    shown = [o for o in report.get("overrides") or [] if not o.startswith(("hydra.", "hydra/"))]
    return RunFolder(p, " ".join(shown) or p.name, report, rankings, qrels, chunks)


def read_runs(paths: Sequence[str | Path]) -> list[RunFolder]:
    """Every finished run under ``paths``, checked to share one golden set and one corpus; runs
    with the same overrides are told apart by their folder."""
    runs = [read_run_folder(p) for p in find_run_folders(paths)]
    for key, what in (("golden", "golden sets"), ("corpus", "corpora")):
        seen: dict[str, Path] = {}
        for r in runs:
            seen.setdefault(str(r.digests.get(key)), r.path)
        if len(seen) > 1:
            a, b = list(seen.values())[:2]
            raise InputError(
                f"the runs measured different {what}: {a} and {b} ({key} digests "
                f"{', '.join(d[:12] for d in seen)}); a pool is over one golden set and one "
                "corpus: pass runs of the same dataset"
            )
    names = [r.name for r in runs]
    if len(set(names)) < len(names):
        runs = [
            RunFolder(
                r.path,
                f"{r.path.parent.name}/{r.path.name}" if names.count(r.name) > 1 else r.name,
                r.report,
                r.rankings,
                r.qrels,
                r.chunks,
            )
            for r in runs
        ]
    return runs


def dataset_paths(run: RunFolder) -> tuple[str | None, str | None]:
    """(corpus, golden) as the run's config names them (a BEIR dataset: its folder for both)."""
    ds = run.dataset()
    if ds.get("path"):  # BEIR: corpus.jsonl and the qrels in one folder
        return str(ds["path"]), None
    return ds.get("corpus"), ds.get("golden")


def load_golden_set(run: RunFolder, golden: str | Path | None = None):
    """The run's golden set (``golden``, else the path its config names; a BEIR dataset's
    qrels), refused when it is not the one the run measured."""
    from rageval.inputs.golden import load_golden

    ds = run.dataset()
    if golden:
        gs = load_golden(golden)
    elif ds.get("path"):
        from rageval.inputs.beir import beir_dataset

        with warnings.catch_warnings():  # the run already said what the dataset skips
            warnings.simplefilter("ignore")
            gs = beir_dataset(str(ds["path"]), str(ds.get("split") or "test"))[1]
    elif ds.get("golden"):
        if not Path(ds["golden"]).exists():
            raise InputError(
                f"the golden set {run.path} ran on is not at {ds['golden']} (moved, or a path "
                "relative to where the run started); pass it with --golden PATH"
            )
        gs = load_golden(ds["golden"])
    else:
        raise ConfigError(f"{run.path}: its config names no golden set; pass --golden PATH")
    want = run.digests.get("golden")
    if want and gs.digest != want:
        raise InputError(
            f"this golden set is not the one {run.path} measured (digest {gs.digest[:12]}, the "
            f"run's {want[:12]}): pass the run's golden set with --golden, or re-run the sweep",
            path=gs.path,
        )
    return gs


def load_docs(run: RunFolder, corpus: str | Path | None = None) -> dict[str, Document]:
    """The run's corpus (``corpus``, else the path its config names), refused when it is not the
    corpus the run measured: the chunks' offsets would cut other text."""
    from rageval.inputs.corpus import corpus_digest, load_corpus

    path = corpus or dataset_paths(run)[0]
    if not path:
        raise ConfigError(
            f"{run.path}: its config names no corpus; pass --corpus PATH (the run's corpus)"
        )
    if not corpus and not Path(path).exists():
        raise InputError(
            f"the corpus {run.path} ran on is not at {path} (moved, or a path relative to where "
            "the run started); pass it with --corpus PATH"
        )
    docs = load_corpus(path)
    want = run.digests.get("corpus")
    if want and corpus_digest(docs) != want:
        raise InputError(
            f"this corpus is not the one {run.path} measured (digest {corpus_digest(docs)[:12]}, "
            f"the run's {want[:12]}); chunk offsets would point at other text: pass the run's "
            "corpus with --corpus, or re-run the sweep on this one",
            path=str(path),
        )
    return {d.id: d for d in docs}


def passage_key(text: str) -> str:
    """What makes two passages the same: their text with whitespace runs folded."""
    return " ".join(text.split())


def _unit(run: RunFolder, unit: str, docs: Mapping[str, Document]) -> tuple[str, int, int, str]:
    """(doc id, start, end, label) of a ranked unit: a chunk, or a whole document at doc level."""
    if run.level == "doc":
        doc = docs.get(unit)
        if doc is None:
            raise InputError(
                f"run.trec ranks document {unit!r}, which the corpus does not have",
                path=str(run.path / "run.trec"),
            )
        return unit, 0, len(doc.text), unit
    row = run.chunks.get(unit)
    if row is None or row["doc_id"] not in docs:
        raise InputError(
            f"run.trec ranks chunk {unit!r}, which chunks.jsonl (or the corpus) does not have; "
            "the run folder is incomplete or was edited: re-run it",
            path=str(run.path / "run.trec"),
        )
    start, end, size = row["start"], row["end"], len(docs[row["doc_id"]].text)
    if not (
        isinstance(start, int)
        and isinstance(end, int)
        and not isinstance(start, bool)
        and not isinstance(end, bool)
        and 0 <= start < end <= size
    ):
        raise InputError(
            f"chunk {unit!r} of document {row['doc_id']!r} spans characters {start!r} to {end!r}, "
            f"outside the document's 0 to {size}: the run folder was edited or made from another "
            "corpus; re-run it",
            path=str(run.path / "chunks.jsonl"),
        )
    return row["doc_id"], start, end, f"{row['doc_id']}:{row.get('ordinal')}"


def pool(
    runs: Sequence[RunFolder],
    docs: Mapping[str, Document],
    depth: int,
    covered: Mapping[Path, Mapping[str, Iterable[str]]] | None = None,
    queries: str = "all",
) -> PoolResult:
    """Per query, the union of every run's top-``depth`` units that neither the run's qrels (gold
    labels, any grade) nor ``covered`` (run folder -> query id -> unit ids an existing judgement
    labels) covers, deduplicated by text; each passage keeps the runs that retrieved it and their
    ranks. ``queries`` selects the queries to pool (see ``select_ids``). Queries come in
    golden-set order, passages by best rank."""
    if depth < 1:
        raise ConfigError(f"--depth must be >= 1, got {depth}")
    if not runs:
        raise InputError("no runs to pool")
    covered = covered or {}
    rows = _selected_rows(runs[0].report["per_query"], queries)
    result = PoolResult([], len(rows), depth, [r.name for r in runs])
    for r in runs:
        most = max((len(rl.ids) for rl in r.rankings.values()), default=0)
        if most < depth:
            result.short_runs.append((r.name, most))
    for row in rows:
        passages = _query_passages(runs, row["id"], docs, depth, covered, result)
        if not passages:
            continue
        ordered = sorted(
            passages.values(), key=lambda p: (p["best_rank"], -len(p["runs"]), p["doc"], p["start"])
        )
        result.queries.append(_pooled_query(row, ordered, docs))
    return result


def _selected_rows(rows: list[dict[str, Any]], queries: str) -> list[dict[str, Any]]:
    """The per-query rows of the queries ``queries`` selects (see ``select_ids``), in order."""
    wanted = select_ids(
        ((r["id"], r.get("tags") or (), r.get("source")) for r in rows), queries, "--queries"
    )
    if not wanted:
        raise ConfigError(f"--queries {queries} selects no query of the golden set")
    return [r for r in rows if r["id"] in wanted]


def _query_passages(
    runs: Sequence[RunFolder],
    qid: str,
    docs: Mapping[str, Document],
    depth: int,
    covered: Mapping[Path, Mapping[str, Iterable[str]]],
    result: PoolResult,
) -> dict[str, dict[str, Any]]:
    """One query's pool: every run's unlabelled top-``depth`` units by their text's key (the
    runs that retrieved it, their best ranks), counting in ``result`` the units already
    labelled and the same text found elsewhere."""
    passages: dict[str, dict[str, Any]] = {}
    for r in runs:
        labelled = set(r.qrels.get(qid, {})) | set(covered.get(r.path, {}).get(qid, ()))
        ranking = r.rankings.get(qid)
        for rank, unit in enumerate(ranking.ids[:depth] if ranking else (), start=1):
            if unit in labelled:
                result.already_labelled += 1
                continue
            doc_id, start, end, label = _unit(r, unit, docs)
            text = docs[doc_id].text[start:end]
            key = passage_key(text)
            if not key:
                continue
            seen = passages.get(key)
            if seen is None:
                passages[key] = {
                    "doc": doc_id,
                    "start": start,
                    "end": end,
                    "chunk": label,
                    "text": text,
                    "best_rank": rank,
                    "runs": {r.name: rank},
                }
                continue
            if (seen["doc"], seen["start"]) != (doc_id, start):
                result.duplicates += 1  # the same text elsewhere: judged once
            seen["runs"][r.name] = min(rank, seen["runs"].get(r.name, rank))
            seen["best_rank"] = min(seen["best_rank"], rank)
    return passages


def _pooled_query(
    row: Mapping[str, Any], ordered: list[dict[str, Any]], docs: Mapping[str, Document]
) -> dict[str, Any]:
    """A query of the pool: its text, evidence and labels (document labels with their
    opening), and its passages in order."""
    return {
        "query_id": row["id"],
        "query": row.get("query", ""),
        "evidence": [{"doc": e["doc"], "quote": e["quote"]} for e in row.get("evidence") or []],
        "relevant": list(row.get("relevant_labels") or []),
        "relevant_docs": [  # document-level labels (BEIR qrels): what they say
            {"doc": label, "text": opening(docs[label].text)}
            for label in row.get("relevant_labels") or []
            if label in docs
        ],
        "passages": ordered,
    }


def opening(text: str, width: int = 400) -> str:
    """The first ``width`` characters of ``text``, cut at whitespace, "..." when cut."""
    text = " ".join(text.split())
    if len(text) <= width:
        return text
    cut = text.rfind(" ", 0, width)
    return text[: cut if cut > 0 else width] + " ..."


def write_pool(result: PoolResult, out: str | Path, source: Mapping[str, Any]) -> Path:
    """Write the pool as JSONL, one query a line; ``source`` (the golden set and corpus paths and
    digests) goes on every line, so ``rageval judge`` finds them from the pool alone."""
    from rageval.formats.atomic import atomic_write_text

    lines = [json.dumps({**q, "source": dict(source)}, ensure_ascii=False) for q in result.queries]
    atomic_write_text(out, "".join(line + "\n" for line in lines))
    return Path(out)


def read_pool(path: str | Path) -> list[dict[str, Any]]:
    """A pool file's queries, validated: errors name the file, line and key."""
    from rageval.formats.textio import jsonl_objects

    out = []
    for lineno, obj in jsonl_objects(path):
        for key, kind in (("query_id", str), ("query", str), ("passages", list)):
            if not isinstance(obj.get(key), kind):
                raise InputError(
                    f"{key!r} missing or not a {kind.__name__}; is this a file `rageval pool` "
                    "wrote?",
                    path=str(path),
                    line=lineno,
                )
        for i, p in enumerate(obj["passages"]):
            if not (
                isinstance(p, dict)
                and isinstance(p.get("doc"), str)
                and isinstance(p.get("text"), str)
                and isinstance(p.get("start"), int)
            ):
                raise InputError(
                    f"query {obj['query_id']!r}: passages[{i}] needs doc, start and text",
                    path=str(path),
                    line=lineno,
                )
        out.append(obj)
    if not out:
        raise InputError("the pool is empty: nothing to judge", path=str(path))
    return out
