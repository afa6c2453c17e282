"""Judging a pool with a calibrated LLM (``rageval judge POOL --llm``), in two phases the command
prints between: :func:`calibrate` grades passages whose answer is known (the golden labels, human
judgements, complete queries) and measures the agreement (rageval.authoring.calibration), writing
the calibration report; :func:`grade_pool` then grades the pooled passages and appends the
judgements: to the judgements file when the calibration is accepted, else to
``<judgements>.rejected.jsonl`` for inspection."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rageval.errors import ConfigError, InputError


@dataclass(frozen=True)
class LlmJudgeSettings:
    """How the LLM judge is calibrated and run (the options of ``rageval judge --llm``)."""

    pool: str  # the pool file, recorded in the calibration report
    min_kappa: float = 0.6
    calibration_size: int = 40
    min_calibration: int = 20
    complete: str = "tag:complete"
    seed: int = 0
    malformed_retries: int = 1
    report: str | None = None  # the calibration report's path without suffix
    progress: bool = True

    def check(self) -> None:
        """ConfigError for a setting out of its range."""
        if not self.calibration_size > 0:
            raise ConfigError(f"--calibration-size must be >= 1, got {self.calibration_size}")
        if not -1 <= self.min_kappa <= 1:
            raise ConfigError(f"--min-kappa is a kappa in [-1, 1], got {self.min_kappa}")
        if self.malformed_retries < 0:
            raise ConfigError(f"--malformed-retries must be >= 0, got {self.malformed_retries}")


@dataclass
class Calibration:
    """The calibration's outcome: its report (verdict, kappa, confusion), where it was written,
    the grading (skips, an error to raise after printing), and the client the pool is graded
    with (its budget spent so far)."""

    report: dict[str, Any]
    prefix: Path  # the report's .json and .md share it
    graded: Any  # rageval.authoring.llm_grader.Graded
    client: Any
    judge: str
    known: dict = field(default_factory=dict)  # grades the pool's grading reuses

    @property
    def incomplete(self) -> bool:
        return self.report["verdict"] == "incomplete"

    @property
    def accepted(self) -> bool:
        return self.report["verdict"] == "accepted"

    def malformed(self) -> int:
        """Answers that stayed malformed after their retries."""
        return sum(n for why, n in self.graded.skipped.items() if why.startswith("malformed"))


@dataclass
class PoolGrading:
    """The pool's grading: how many passages, the grading, where its judgements went and how
    many were added."""

    items: int
    graded: Any  # rageval.authoring.llm_grader.Graded
    target: Path
    added: int
    accepted: bool


def calibrate(
    settings: LlmJudgeSettings,
    pool: list[dict[str, Any]],
    docs: dict,
    golden,
    judgements: Path,
    endpoint,
    budget,
    golden_path: Path,
) -> Calibration:
    """Grade a sample of passages whose answer is known and write the calibration report (beside
    ``judgements``, or at ``settings.report``). Nothing is sent when the pool holds queries the
    golden set does not, or too few passages have a known answer (InputError, ConfigError)."""
    from rageval.authoring.chat import ChatClient
    from rageval.authoring.llm_grader import grade_items

    _check_pool_queries(pool, golden, golden_path)
    sampled = _calibration_sample(settings, pool, docs, golden, judgements)
    client = ChatClient(endpoint, budget)
    judge = f"llm:{endpoint.model}"
    known: dict = {}
    graded = grade_items(
        client, sampled, settings.malformed_retries, settings.progress, "calibrating", known
    )
    report = _calibration_report(settings, graded, sampled, client, endpoint, judge)
    prefix = _write_calibration_report(report, settings, judgements, endpoint.model)
    return Calibration(report, prefix, graded, client, judge, known)


def _check_pool_queries(pool, golden, golden_path: Path) -> None:
    ids = {q.id for q in golden.queries}
    strangers = [q["query_id"] for q in pool if q["query_id"] not in ids]
    if strangers:
        raise InputError(
            f"the pool holds queries the golden set does not ({', '.join(strangers[:5])}); pass "
            "the golden set the pooled runs measured with --golden, or pool again",
            path=str(golden_path),
        )


def _calibration_sample(settings: LlmJudgeSettings, pool, docs, golden, judgements: Path) -> list:
    """The passages with a known answer to calibrate on, half relevant; ConfigError when fewer
    than ``min_calibration``."""
    from rageval.authoring import calibration as cal
    from rageval.inputs.judgements import load_judgements

    human = [j for j in load_judgements(judgements, docs, golden) if j.kind == "human"]
    complete = cal.complete_queries(golden.queries, settings.complete)
    pos, neg = cal.candidates(pool, golden.queries, docs, human, complete)
    sampled = cal.sample(pos, neg, settings.calibration_size, settings.seed)
    if len(sampled) < settings.min_calibration:
        raise ConfigError(
            f"only {len(sampled)} passages with a known answer to calibrate on "
            f"(--calibration-size {settings.calibration_size}; {len(pos)} known relevant, "
            f"{len(neg)} known not relevant), fewer than --min-calibration "
            f"{settings.min_calibration}: grade pooled passages on the review page, mark complete "
            "queries with --complete, or raise --calibration-size; nothing was sent"
        )
    return sampled


def _calibration_report(settings, graded, sampled, client, endpoint, judge) -> dict[str, Any]:
    from rageval.authoring import calibration as cal
    from rageval.authoring.llm_grader import PROMPT_VERSION
    from rageval.inputs.judgements import now

    meta = {
        "judge": judge,
        "endpoint": client.scrub(endpoint.url),
        "prompt_version": PROMPT_VERSION,
        "temperature": endpoint.temperature,
        "seed": settings.seed,
        "complete": settings.complete,
        "pool": settings.pool,
        "at": now(),
    }
    return cal.report(
        graded.grades,
        sampled,
        meta,
        settings.min_kappa,
        settings.min_calibration,
        graded.stopped or (str(graded.error) if graded.error else None),
        graded.skipped,
    )


def _write_calibration_report(
    report: dict[str, Any], settings: LlmJudgeSettings, judgements: Path, model: str
) -> Path:
    """``<prefix>.json`` and ``.md``, and the copy counting the labels reads; returns the
    prefix."""
    from rageval.authoring import calibration as cal
    from rageval.formats.atomic import atomic_write_text
    from rageval.inputs.judgements import calibration_path

    kept = calibration_path(judgements, model)  # what counting the labels reads
    prefix = Path(settings.report) if settings.report else kept.with_suffix("")
    prefix.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(report, indent=2) + "\n"
    atomic_write_text(prefix.with_name(prefix.name + ".json"), text)
    if prefix.with_name(prefix.name + ".json") != kept:
        atomic_write_text(kept, text)
    atomic_write_text(prefix.with_name(prefix.name + ".md"), cal.markdown(report))
    return prefix


def grade_pool(
    calibration: Calibration,
    settings: LlmJudgeSettings,
    pool: list[dict[str, Any]],
    docs: dict,
    golden,
    judgements: Path,
) -> PoolGrading:
    """Grade every pooled passage and append the judgements: to ``judgements`` when the
    calibration was accepted, else to ``<judgements>.rejected.jsonl``."""
    from rageval.authoring.llm_grader import Item, grade_items, judgement_records
    from rageval.inputs.judgements import append_judgements, now

    items = [
        Item(q["query_id"], q["query"], p["doc"], p["start"], p["text"])
        for q in pool
        for p in q["passages"]
    ]
    graded = grade_items(
        calibration.client,
        items,
        settings.malformed_retries,
        settings.progress,
        "judging",
        calibration.known,
    )
    judge = calibration.judge
    records = judgement_records(graded.grades, judge, now())
    accepted = calibration.accepted
    target = judgements if accepted else judgements.with_name(f"{judgements.stem}.rejected.jsonl")
    added = append_judgements(target, records, docs, golden, source=f"answers of {judge}").added
    return PoolGrading(len(items), graded, target, added, accepted)
