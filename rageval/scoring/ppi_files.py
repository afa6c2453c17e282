"""``rageval score QRELS RUN --llm-qrels FILE``: each metric's prediction-powered estimate from a
run scored twice, against human qrels covering a sample of the queries and LLM qrels covering
them all (rageval.scoring.ppi)."""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass

from rageval.errors import InputError
from rageval.scoring.file_scores import FileScores
from rageval.scoring.ppi import DEFAULT_INTERVAL, PPIEstimate, ppi_by_query


@dataclass(frozen=True)
class PPIFileScores:
    """Each metric's estimate (``estimates["ndcg@10"]``), and the two scorings it came from."""

    estimates: dict[str, PPIEstimate]
    human: FileScores
    llm: FileScores


def score_ppi_files(
    qrels_path: str | os.PathLike,
    llm_qrels_path: str | os.PathLike,
    run_path: str | os.PathLike,
    ks: Iterable[int],
    complete: bool = False,
    fmt: str = "auto",
    alpha: float = 0.05,
    interval: str = DEFAULT_INTERVAL,
) -> PPIFileScores:
    """Score the run against both qrels files as ``rageval score`` does (same averaging: the
    queries each file shares with the run, or with ``complete`` every judged query), then
    estimate each metric's human-label mean: the human qrels' queries are the sample, the LLM
    qrels' other queries the unlabelled set; ``interval`` is ``"t"`` (Student-t) or ``"z"``
    (ppi_py's normal interval; rageval.scoring.ppi).

    Raises :class:`InputError` (naming the file) for what ``rageval score`` refuses, for a
    human-graded query the LLM qrels do not judge, for fewer than 2 human-graded queries, and
    for LLM qrels with no query beyond the human sample.
    """
    from rageval.scoring.trec_files import score_trec_files

    ks = tuple(ks)
    human = score_trec_files(qrels_path, run_path, ks, complete=complete, fmt=fmt)
    llm = score_trec_files(llm_qrels_path, run_path, ks, complete=complete, fmt=fmt)
    llm_ids = set(llm.query_ids)
    missing = [q for q in human.query_ids if q not in llm_ids]
    if missing:
        raise InputError(
            f"{len(missing)} of the {len(human.query_ids)} human-graded queries scored are not "
            f"judged here (e.g. {missing[0]!r}); the LLM qrels must judge every query, the "
            "human sample included",
            path=str(llm_qrels_path),
        )
    if len(human.query_ids) < 2:
        raise InputError(
            f"{len(human.query_ids)} human-graded query scored; an interval needs at least 2",
            path=str(qrels_path),
        )
    if len(llm_ids) == len(human.query_ids):
        raise InputError(
            "judges no query beyond the human-graded ones; there is nothing for the LLM labels "
            "to add: score the human qrels alone",
            path=str(llm_qrels_path),
        )
    estimates = {}
    for key, values in human.values.items():
        by_human = dict(zip(human.query_ids, _floats(values), strict=True))
        by_llm = dict(zip(llm.query_ids, _floats(llm.values[key]), strict=True))
        estimates[key] = ppi_by_query(by_human, by_llm, alpha, interval)
    return PPIFileScores(estimates, human, llm)


def _floats(values) -> list[float]:
    return values.tolist() if hasattr(values, "tolist") else list(values)
