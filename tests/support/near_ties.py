"""Two backends' rankings of the same vectors compared as far as floating point allows: scores
computed by different code (FAISS's BLAS, PostgreSQL's pgvector) may differ in the last bits, so
results whose scores lie within ``TOL`` of each other may come in either order on another
machine. Everything else must be identical."""

from __future__ import annotations

import math
from collections import defaultdict
from pathlib import Path

TOL = 1e-5


def read_run(folder: Path) -> dict[str, list[tuple[str, float]]]:
    """run.trec of a run folder: query id -> [(doc id, score)] in rank order."""
    out: dict[str, list[tuple[str, float]]] = defaultdict(list)
    for line in (folder / "run.trec").read_text().splitlines():
        qid, _, doc, rank, score, _ = line.split()
        out[qid].append((doc, float(score)))
    return dict(out)


def blocks(ranking: list[tuple[str, float]]) -> list[list[str]]:
    """The ranking cut into runs of near-tied scores (each within TOL of its neighbour)."""
    out: list[list[str]] = []
    for i, (doc, score) in enumerate(ranking):
        if out and abs(ranking[i - 1][1] - score) <= TOL:
            out[-1].append(doc)
        else:
            out.append([doc])
    return out


def same_up_to_near_ties(a: Path, b: Path) -> set[str]:
    """Assert both run folders rank the same results, in the same order except within runs of
    near-tied scores (the last run may be cut anywhere by the depth); returns the queries whose
    rankings are identical."""
    ra, rb = read_run(a), read_run(b)
    assert ra.keys() == rb.keys()
    identical = set()
    for qid, ranking in ra.items():
        other = rb[qid]
        assert len(other) == len(ranking), qid
        assert all(
            math.isclose(x[1], y[1], abs_tol=TOL) for x, y in zip(ranking, other, strict=True)
        ), qid
        if [d for d, _ in ranking] == [d for d, _ in other]:
            identical.add(qid)
            continue
        pos, runs = 0, blocks(ranking)
        for i, block in enumerate(runs):
            got = [d for d, _ in other[pos : pos + len(block)]]
            last = i == len(runs) - 1
            assert last or sorted(got) == sorted(block), (qid, block, got)
            pos += len(block)
    return identical
