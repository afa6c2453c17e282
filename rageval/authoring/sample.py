"""``rageval judge POOL --review HTML --sample N --model M``: draw the random human sample of a
``labels=ppi`` evaluation (rageval.inputs.ppi_sample) from the golden set's queries, record it
beside the judgements file, and keep the review page to those queries (people grade them fully;
the LLM judge grades every query's pool)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rageval.errors import ConfigError
from rageval.inputs.ppi_sample import HumanSample, draw_sample, load_sample, sample_path
from rageval.inputs.ppi_sample import write_sample as write_sample_file
from rageval.types import GoldenSet

AUTO, NONE = "auto", "none"


def strata_field(rows: list[dict[str, Any]], strata: str) -> str | None:
    """``auto``: ``source`` when the queries come from more than one source, else none;
    ``none``: no strata; otherwise the field named."""
    if strata == NONE:
        return None
    if strata == AUTO:
        return "source" if len({r["source"] for r in rows}) > 1 else None
    from rageval.scoring.slices import check_fields

    check_fields([strata], rows, "the golden set")
    return strata


def draw_for_pool(
    pool: list[dict[str, Any]],
    golden: GoldenSet,
    judgements: str | Path,
    size: int,
    seed: int,
    model: str | None,
    strata: str = AUTO,
    at: str = "",
) -> tuple[HumanSample, bool]:
    """The sample of ``size`` of the golden set's queries, written to ``<judgements>.sample.json``
    unless that file already holds the same sample; returns it and whether it was written. An
    existing file holding another sample is refused: its grades belong to it."""
    if not model:
        raise ConfigError(
            "--sample needs --model: the LLM judge that grades every query is part of the sample"
        )
    # every query a run scores: one whose top results were all labelled has nothing pooled, and
    # is sampled like the others (people then have nothing to grade for it)
    rows = [
        {"id": q.id, "source": q.source, "tags": list(q.tags), "meta": dict(q.meta)}
        for q in golden.queries
    ]
    sample = draw_sample(rows, size, seed, f"llm:{model}", strata_field(rows, strata), at)
    path = sample_path(judgements)
    if path.exists():
        old = load_sample(path)
        if old.digest() == sample.digest():
            return old, False
        raise ConfigError(
            f"a human sample is recorded already ({len(old.queries)} queries, judge {old.judge}, "
            f"seed {old.seed}); the grades people gave belong to it. Grade that sample, or delete "
            "the file to draw another (and grade the new one fully)",
            path=str(path),
        )
    write_sample_file(sample, path)
    return HumanSample(**{**sample.__dict__, "path": str(path)}), True
