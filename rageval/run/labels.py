"""The judged labels of a run: judgements laid over the golden set's qrels, what report.json says
about them, and the warning when too few of the top k are judged."""

from __future__ import annotations

import math
from collections.abc import Sequence

from rageval.inputs.judgements import PPI, Judgements, judgement_qrels, merge_qrels
from rageval.report.eval_report import EvalReport
from rageval.scoring.relevance import Resolution
from rageval.types import Chunk


class LowJudgedWarning(UserWarning):
    """judged@k of a run is below ``judged_warn_below``: its metrics understate it. Also in
    ``EvalReport.warnings`` (report.json, the console table)."""


def with_judgements(
    res: Resolution, judgements: Judgements, labels: str, chunks: Sequence[Chunk]
) -> Resolution:
    """``res`` with the judgements label set ``labels`` counts laid over its qrels (grade = max;
    a chunk judged 0 is judged). Evidence spans stay the golden set's own."""
    counted = judgements.counted(labels)
    if not counted:
        return res
    extra = judgement_qrels(counted, chunks, res.level)
    return Resolution(qrels=merge_qrels(res.qrels, extra), spans=res.spans, level=res.level)


def judgements_summary(judgements: Judgements, labels: str) -> dict:
    """What report.json says about the judgements: file, how many counted (by kind), how many the
    label set left out, and the digest of those counted."""
    counted = judgements.counted(labels)
    if labels == PPI:  # both sides: the LLM judge's and the people's
        counted += judgements.counted()
    return {
        "file": judgements.path,
        "counted": len(counted),
        "human": sum(j.kind == "human" for j in counted),
        "llm": sum(j.kind == "llm" for j in counted),
        # left out by the label set, or LLM ones without an accepted calibration
        "not_counted": len(judgements) - len(counted),
        "digest": judgements.digest(labels),
    }


def judged_warnings(report: EvalReport, below: float) -> list[str]:
    """A warning when judged@k of the run is below ``below``: its metrics then understate it."""
    name = f"judged@{report.k}"
    share = report.metrics.get(name)
    if share is None or math.isnan(share) or share >= below:
        return []
    where = (report.judgements or {}).get("file") or "the judgements file"
    # judged@k divides by k: a query that retrieved fewer than k results has empty places too
    short = sum(len(r.get("retrieved") or ()) < report.k for r in report.per_query or ())
    what = (
        "results carry no label and count as misses"
        if not short
        else f"places hold a result without a label (a miss) or nothing ({short} "
        f"quer{'y' if short == 1 else 'ies'} retrieved fewer than {report.k})"
    )
    return [
        f"{name} = {share:.2f} is below judged_warn_below={below:g}: {1 - share:.0%} of the top "
        f"{report.k} {what}, so the metrics understate this run (the condensed ones set them "
        f"aside); judge those results into {where}, or set judged_warn_below=0 to silence this"
    ]
