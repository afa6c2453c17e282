"""The files ``rageval judge`` works on: where the golden set, corpus and judgements are (from the
command line, else what the pool file names), the corpus and golden set read and checked against
the pool's digests, and the grades a review page saved, read and appended to the judgements.

Errors name the file (and line) and say what to pass instead. The command line's defaults (the
project's golden set and corpus) are the caller's (rageval.cli.paths); this module takes paths.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rageval.errors import ConfigError, InputError

JUDGE = re.compile(r"^(human|llm):\S.*$")


@dataclass(frozen=True)
class Where:
    """The golden set, corpus and judgements file a judge command works on."""

    golden: Path
    corpus: Path | None
    judgements: Path
    corpus_digest: str | None = None
    golden_digest: str | None = None
    split: str | None = None  # a BEIR folder as the golden set: its qrels split


def pool_source(pool: Sequence[Mapping[str, Any]] | None) -> dict[str, Any]:
    """What the pool file names (``source``: golden set, corpus, judgements, digests, split)."""
    return dict((pool[0].get("source") or {}) if pool else {})


def locate(
    golden: Path,
    corpus: Path | None,
    source: Mapping[str, Any],
    judgements: str | None = None,
    *,
    golden_given: bool = False,
    corpus_given: bool = False,
) -> Where:
    """Where a judge command works: ``golden`` and ``corpus`` (the command line's or the pool's,
    found), the judgements file (``judgements`` from the command line, else the pool's, else the
    golden set's own); the pool's digests are checked only for what the command line did not
    name (``golden_given``, ``corpus_given``)."""
    from rageval.inputs.judgements import default_path

    named = judgements or source.get("judgements")
    split = source.get("split") or "test"
    if is_beir_folder(golden):  # its qrels file stands for the golden set, as in runs
        beside = golden / "qrels" / f"{split}.tsv"
        corpus = corpus or golden
    else:
        beside = golden
    if named and not judgements:
        pool_judgements(Path(named), default_path(beside))
    return Where(
        golden,
        corpus,
        Path(named) if named else default_path(beside),
        None if corpus_given else source.get("corpus_digest"),
        None if golden_given else source.get("golden_digest"),
        split,
    )


def pool_judgements(named: Path, default: Path) -> None:
    """A judgements file a pool file names (it may arrive edited in a pull request) is written
    only when it is the golden set's own or an existing JSONL file; anything else needs
    ``--judgements`` on the command line."""
    if named.resolve() == default.resolve():
        return
    if named.suffix == ".jsonl" and named.is_file():
        return
    raise InputError(
        f"the pool names the judgements file {named}, which is neither the golden set's "
        f"({default}) nor an existing .jsonl file; pass --judgements FILE to write there",
        path=str(named),
    )


def is_beir_folder(path: Path) -> bool:
    """A BEIR dataset folder (corpus.jsonl, queries.jsonl, qrels/) named as the golden set."""
    return path.is_dir() and (path / "corpus.jsonl").is_file()


def read_grades(path: Path, judge: str | None) -> list[tuple[int, dict[str, Any]]]:
    """(line, record) of a saved grades file, each with its judge (``judge`` fills missing ones
    and must agree with the others); errors name the file and line."""
    from rageval.formats.textio import jsonl_objects

    if judge is not None and not JUDGE.match(judge):
        raise ConfigError(f"--judge must be human:NAME or llm:MODEL, got {judge!r}")
    if judge is not None and not judge.startswith("human:"):
        raise ConfigError(
            f"--import takes grades people gave (--judge human:NAME), not {judge!r}: LLM grades "
            "enter only through `rageval judge POOL --llm`, after their calibration is accepted"
        )
    records = []
    for lineno, rec in jsonl_objects(path):
        given = rec.get("judge")
        if given is None:
            if judge is None:
                raise InputError(
                    "no judge on this record: say who graded with --judge human:NAME",
                    path=str(path),
                    line=lineno,
                )
            rec = {**rec, "judge": judge}
        elif judge is not None and given != judge:
            raise InputError(
                f"the record says judge {given!r}, but --judge is {judge!r}; leave out --judge "
                "or fix the file",
                path=str(path),
                line=lineno,
            )
        if not str(rec.get("judge", "")).startswith("human:"):
            raise InputError(
                f"judge {rec.get('judge')!r}: --import takes grades people gave (human:NAME); "
                "LLM grades enter only through `rageval judge POOL --llm`, after their "
                "calibration against gold is accepted",
                path=str(path),
                line=lineno,
            )
        records.append((lineno, rec))
    if not records:
        raise InputError("no grades in the file: grade some passages, then Save", path=str(path))
    return records


def load_inputs(where: Where):
    """The corpus (by id) and golden set the judgements are checked against."""
    from rageval.inputs.corpus import corpus_digest, load_corpus
    from rageval.inputs.golden import load_golden

    if where.corpus is None:
        raise InputError(
            f"no corpus beside {where.golden}: pass --corpus (the corpus the judgements quote)"
        )
    docs = load_corpus(where.corpus)
    if where.corpus_digest and corpus_digest(docs) != where.corpus_digest:
        raise InputError(
            "this corpus is not the one the pool was made from; pass the runs' corpus with "
            "--corpus, or pool again",
            path=str(where.corpus),
        )
    if is_beir_folder(where.golden):
        from rageval.inputs.beir import beir_dataset

        with warnings.catch_warnings():  # the runs already said what the dataset skips
            warnings.simplefilter("ignore")
            golden = beir_dataset(where.golden, where.split or "test")[1]
    else:
        golden = load_golden(where.golden)
    if where.golden_digest and golden.digest != where.golden_digest:
        raise InputError(
            "this golden set is not the one the pool was made from (it changed since, or another "
            "one); pass the runs' golden set with --golden, or pool again",
            path=str(where.golden),
        )
    return {d.id: d for d in docs}, golden


@dataclass(frozen=True)
class Imported:
    """What :func:`import_grades` did: the append's result (added, total, older, replaced), how
    many grades were already in the file, and who graded."""

    result: Any  # rageval.inputs.judgements.append_judgements's result
    skipped: int
    judges: tuple[str, ...]
    target: Path

    def summary(self) -> str:
        """``added 3 judgements by human:ann to judgements.jsonl (12 in the file); skipped ...``"""
        r = self.result
        return (
            f"added {r.added} judgements by {', '.join(self.judges)} to {self.target} "
            f"({r.total} in the file); skipped {self.skipped} already there"
            + (f", {r.older} older than the file's grade" if r.older else "")
            + (
                f"; {r.replaced} replaced an older grade of the same passage by the same judge"
                if r.replaced
                else ""
            )
        )


def import_grades(where: Where, source: Path, judge: str | None) -> Imported:
    """Validate the saved grades file ``source`` and append it to the judgements: what is
    already there is skipped, a newer grade of the same passage by the same judge replaces the
    older one."""
    from rageval.inputs.judgements import (
        append_judgements,
        load_judgements,
        parse_judgement,
        resolve_judgement,
    )

    rows = read_grades(source, judge)
    docs, golden = load_inputs(where)
    ids = {q.id for q in golden.queries}
    cache: dict = {}
    incoming = [
        resolve_judgement(
            parse_judgement(rec, path=str(source), lineno=n),
            docs,
            ids,
            path=str(source),
            cache=cache,
        )
        for n, rec in rows
    ]
    have = {j.key: j.to_dict() for j in load_judgements(where.judgements, docs, golden)}
    fresh = [j for j in incoming if have.get(j.key) != j.to_dict()]
    result = append_judgements(where.judgements, fresh, docs, golden, source=str(source))
    judges = tuple(sorted({j.judge for j in incoming}))
    return Imported(result, len(incoming) - len(fresh), judges, where.judgements)
