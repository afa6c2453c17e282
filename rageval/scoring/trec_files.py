"""Score a TREC run file against qrels as trec_eval does: ``rageval score``'s engine.

Averaging follows trec_eval: by default over the queries present in both files (a judged query
whose judgements are all grade 0 counts and scores 0), with ``complete`` over every query of the
qrels (``trec_eval -c``: one missing from the run scores 0). Per query the run is ordered as
trec_eval orders it (score descending in single precision, ties by docid descending) and scored
with the metric definitions of :mod:`rageval.scoring.metrics`.

Three paths to the same numbers, the first that applies wins:

- small files (:data:`SMALL_BYTES` together): :mod:`rageval.scoring.trec_plain`, plain Python,
  so a small file costs no numpy import (``rageval score`` then starts and ends in a tenth of a
  second);
- :mod:`rageval.scoring.trec_stream`: numpy over the qrels and over the run in blocks, no Python
  object per line, memory following the qrels and one block of the run (an ungrouped run is
  grouped through temporary files, and ``note`` is told); repeated docids dropped as trec_eval
  drops them, with the object path's warning;
- the object path here: both files read into dicts (:func:`~rageval.formats.trec.read_qrels`,
  :func:`~rageval.formats.trec.read_run`), then
  :func:`~rageval.scoring.metrics.score_rankings`. It handles everything: BEIR qrels, repeated
  docids (dropped with a warning), and every bad line, which it names (file and line).

The first two return None where they cannot be sure to match the object path cheaply. This
module imports no numpy itself. (:mod:`rageval.scoring.trec_arrays`, the whole-file array path
the streaming one replaced, stays as the reference the tests hold it to.)
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable, Iterable

from rageval.errors import InputError
from rageval.scoring.file_scores import FileScores, no_relevant, nothing_shared, plain_ks

QRELS_FORMATS = ("auto", "trec", "beir")
# Below this many bytes (qrels and run together) plain Python beats importing numpy.
SMALL_BYTES = 256 * 1024


def score_trec_files(
    qrels_path: str | os.PathLike,
    run_path: str | os.PathLike,
    ks: Iterable[int],
    complete: bool = False,
    fmt: str = "auto",
    note: Callable[[str], None] | None = None,
) -> FileScores:
    """Score the run file against the qrels file at every cutoff in ``ks`` (every metric of
    :data:`~rageval.scoring.metrics.METRICS`), averaging like trec_eval (``complete``: like
    ``trec_eval -c``). ``fmt`` is the qrels format: ``auto``, ``trec`` or ``beir``. ``note`` is
    told when a big run file must be grouped by query through temporary files.

    Raises :class:`InputError` for unreadable files (naming file and line), qrels without any
    relevant judgement, and files that share no query.
    """
    ks = tuple(ks)
    if fmt not in QRELS_FORMATS:
        raise InputError(f"qrels format {fmt!r} is not one of {', '.join(QRELS_FORMATS)}")
    out = None
    sizes = (_size(qrels_path), _size(run_path))
    if fmt != "beir" and None not in sizes:  # an unreadable file: the object path names it
        if sum(sizes) <= SMALL_BYTES:
            from rageval.scoring.trec_plain import score_plain

            out = score_plain(qrels_path, run_path, plain_ks(ks), complete)
        else:
            from rageval.scoring.metrics import check_ks
            from rageval.scoring.trec_stream import score_stream

            out = score_stream(qrels_path, run_path, check_ks(ks), complete, note)
    return out if out is not None else score_objects(qrels_path, run_path, ks, complete, fmt)


def _size(path: str | os.PathLike) -> int | None:
    try:
        return os.stat(path).st_size
    except OSError:
        return None


def score_objects(
    qrels_path: str | os.PathLike,
    run_path: str | os.PathLike,
    ks: Iterable[int],
    complete: bool = False,
    fmt: str = "auto",
) -> FileScores:
    """The object path (see the module docstring): dicts of strings, then ``score_rankings``."""
    from rageval.formats.trec import read_qrels, read_run
    from rageval.scoring.metrics import check_ks, score_rankings
    from rageval.types import RankedList

    ks = check_ks(ks)
    qrels = read_qrels(qrels_path, fmt=fmt)
    results = read_run(run_path)
    if not any(g >= 1 for judged in qrels.values() for g in judged.values()):
        raise no_relevant(qrels_path)
    query_ids = list(qrels) if complete else [q for q in qrels if q in results]
    if not query_ids:
        raise nothing_shared(qrels_path, next(iter(results)), next(iter(qrels)))
    empty = RankedList((), ())
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        scores = score_rankings(query_ids, [results.get(q, empty) for q in query_ids], qrels, ks)
    return FileScores(
        scores.query_ids,
        scores.values,
        scores.first_relevant_rank,
        missing=sum(q not in results for q in qrels),
        run_only=sum(q not in qrels for q in results),
        warnings=tuple(str(w.message) for w in caught),
    )
