"""What scoring a TREC run file against qrels gives (:class:`FileScores`), and the errors every
path of :mod:`rageval.scoring.trec_files` raises alike. No numpy here: the small-file path must
not pay for it."""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from rageval.errors import InputError


@dataclass(frozen=True)
class FileScores:
    """Per-query values of the evaluated queries, and what ``rageval score`` reports about them.

    ``values["ndcg@10"][i]`` belongs to ``query_ids[i]``; ``first_relevant_rank[i]`` is the rank
    of its first relevant result (0: none). ``missing``: judged queries without results in the
    run; ``run_only``: run queries without judgements; ``warnings``: what the scorer warned about
    (repeated docids).
    """

    query_ids: tuple[str, ...]
    values: dict[str, Sequence[float]]
    first_relevant_rank: Sequence[int]
    missing: int
    run_only: int
    warnings: tuple[str, ...] = field(default=())

    def means(self) -> dict[str, float]:
        """Each metric's mean over the evaluated queries (correctly rounded sum / count)."""
        n = len(self.query_ids)
        if not n:
            return dict.fromkeys(self.values, float("nan"))
        plain = {key: v.tolist() if hasattr(v, "tolist") else v for key, v in self.values.items()}
        return {key: math.fsum(v) / n for key, v in plain.items()}


def plain_ks(ks: Iterable) -> tuple[int, ...] | None:
    """Cutoffs as :func:`~rageval.scoring.metrics.check_ks` returns them (duplicates dropped),
    checked without numpy; None where that function must say what is wrong."""
    out = tuple(dict.fromkeys(ks))
    if out and all(type(k) is int and k > 0 for k in out):
        return out
    return None


def no_relevant(qrels_path: str | os.PathLike) -> InputError:
    """The error for qrels without a single relevant judgement."""
    return InputError(
        "no query has a relevant judgement (grade >= 1); nothing to score", path=str(qrels_path)
    )


def nothing_shared(qrels_path: str | os.PathLike, run_qid: str, qrels_qid: str) -> InputError:
    """The error for a run none of whose queries is judged (trec_eval's default averaging)."""
    return InputError(
        f"no query of the run is judged in {qrels_path} (run ids like {run_qid!r}, "
        f"qrels ids like {qrels_qid!r}); check that the files belong together, or "
        "pass -c to score every judged query"
    )
