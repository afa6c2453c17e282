"""``labels=ppi``: a run's ranking metrics as prediction-powered estimates (rageval.scoring.ppi).

The run is scored as usual with the LLM side's qrels (golden set + the sample's LLM judge) for
every query; :func:`apply_ppi` scores the sampled queries again with the people's qrels (golden
set + human judgements), and replaces each ranking metric's mean and interval by the PPI++
estimate and its 95% interval (Student-t by default; ``ppi_interval=z`` for ppi_py's normal
one). The per-query rows keep the LLM-label values under the metric's name and gain the
people's as ``human:<metric>`` on the sampled queries (the gate pairs both); ``report.ppi``
holds the sample, the judge, the interval and each metric's estimate beside the human-only and
LLM-only ones. Slices and the other metrics (span, budget, judged@k) stay as measured.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from rageval.errors import ConfigError
from rageval.inputs.judgements import Judgements, calibrated
from rageval.inputs.ppi_sample import HumanSample, load_sample, sample_path
from rageval.report.eval_report import EvalReport, Scored
from rageval.scoring.metrics import score_rankings
from rageval.scoring.ppi import (
    DEFAULT_INTERVAL,
    check_interval,
    few_graded_warning,
    method,
    ppi_by_query,
)
from rageval.scoring.relevance import Resolution

HUMAN = "human:"  # the per-query column prefix of the people's values


def sample_for(judgements: Judgements, query_ids: Iterable[str] | None = None) -> HumanSample:
    """The human sample beside a loaded judgements file, refused unless its judge passed
    calibration and graded queries outside the sample (``labels=ppi``)."""
    sample = load_sample(sample_path(judgements.path), query_ids)
    where = sample.path
    if not calibrated(judgements.path, sample.judge):
        raise ConfigError(
            f"the sample's judge {sample.judge} has no accepted calibration beside "
            f"{judgements.path}; its labels count only after one (rageval judge POOL --llm)",
            path=where,
        )
    graded = {j.query_id for j in judgements if j.judge == sample.judge}
    if not graded - set(sample.queries):
        raise ConfigError(
            f"{sample.judge} graded no query outside the human sample in {judgements.path}: "
            "let it judge every query's pool (rageval judge POOL --llm)",
            path=where,
        )
    return sample


def recorded_interval(report: Mapping[str, Any]) -> str:
    """The interval a ``labels=ppi`` report's estimates used (``report.ppi.interval``), which
    the gate uses for the change and ``rageval plan --width`` plans; a report that does not say
    (from before the choice) gets the default."""
    return check_interval(str((report.get("ppi") or {}).get("interval") or DEFAULT_INTERVAL))


def human_column(metric: str) -> str:
    """``ndcg@5`` -> ``human:ndcg@5``."""
    return f"{HUMAN}{metric}"


def apply_ppi(
    report: EvalReport,
    scored: Scored,
    human: Resolution | None,
    sample: HumanSample,
    ks: Sequence[int],
    interval: str = DEFAULT_INTERVAL,
) -> None:
    """Turn ``report``'s ranking metrics into PPI++ estimates (module docstring); ``interval``
    (``t`` or ``z``) is recorded in ``report.ppi``, where the gate reads it."""
    if human is None:
        raise ConfigError(
            "labels=ppi is measured on rageval's own chunks; a retriever that returns passages "
            "of a deployed index cannot use it yet: use labels=gold or labels=all"
        )
    index = {q: i for i, q in enumerate(scored.query_ids)}
    sampled = [q for q in sample.queries if q in index]
    if len(sampled) < 2:
        raise ConfigError(
            f"{len(sampled)} of the human sample's queries are in this run; an interval needs 2 "
            "(a split that left the sample out? draw the sample from this side's queries)",
            path=sample.path,
        )
    if len(sampled) == len(index):
        raise ConfigError(
            "every query of this run is in the human sample: the LLM labels add nothing; use "
            "labels=gold",
            path=sample.path,
        )
    rankings = [scored.rankings[index[q]].ids for q in sampled]
    people = score_rankings(sampled, rankings, human.qrels, ks)
    rows = {r["id"]: r for r in report.per_query}
    block: dict[str, Any] = {}
    for name, values in people.values.items():
        by_human = {q: float(v) for q, v in zip(sampled, values, strict=True)}
        by_llm = {q: float(scored.values[name][i]) for q, i in index.items()}
        est = ppi_by_query(by_human, by_llm, interval=interval)
        report.metrics[name] = est.ppi.estimate
        report.ci[name] = [est.ppi.low, est.ppi.high]
        block[name] = est.to_dict()
        for q, v in by_human.items():
            rows[q][human_column(name)] = v
    few = few_graded_warning(len(sampled))
    if few:
        report.warnings.append(few)
    report.ppi = {
        "method": method(interval),
        "interval": interval,
        "sample": sample.summary(),
        "metrics": block,
    }
