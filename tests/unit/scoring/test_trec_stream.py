"""The streaming path of `rageval score`: run files read in blocks of a few lines here (so every
query boundary, carried query and temporary file is exercised on small files) give the in-memory
paths' per-query values, first relevant ranks, counts and duplicate warnings, on random runs
sorted, ungrouped, with repeated docids, ties and with `-c`."""

from __future__ import annotations

import random

import numpy as np
import pytest
from trec_oracle import KS, array_case, assert_same, oracle_scores, random_case, write

from rageval.errors import InputError
from rageval.scoring import trec_arrays, trec_files, trec_stream
from rageval.scoring.trec_arrays import score_arrays
from rageval.scoring.trec_files import score_objects, score_trec_files
from rageval.scoring.trec_stream import score_stream


@pytest.fixture(params=[64, 700, 1 << 20])
def blocks(request, monkeypatch):
    """Blocks of 64 bytes (a line or two), 700 bytes, and one block for the whole file; an
    ungrouped run spread over temporary files of about 2 KB."""
    monkeypatch.setattr(trec_stream, "BLOCK_BYTES", request.param)
    monkeypatch.setattr(trec_stream, "BUCKET_BYTES", 2048)
    monkeypatch.setattr(trec_files, "SMALL_BYTES", -1)
    return request.param


def grouped(lines, rng):
    """The lines with each query's lines together (queries in a random order), order within a
    query kept: what a retriever writes."""
    by_query = {}
    for line in lines:
        by_query.setdefault(line[0], []).append(line)
    queries = list(by_query)
    rng.shuffle(queries)
    return [line for q in queries for line in by_query[q]]


def run_both(paths, complete, notes=None):
    got = score_stream(*paths, KS, complete, note=None if notes is None else notes.append)
    assert got is not None  # nothing here needs the object path
    return got, score_objects(*paths, KS, complete)


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("complete", [False, True])
@pytest.mark.parametrize("layout", ["grouped", "shuffled"])
def test_stream_equals_the_object_path_and_pytrec_eval(tmp_path, blocks, seed, complete, layout):
    """Repeated docids (scored the same or not), ties also in single precision only, empty and
    short rankings, run-only and missing queries, repeated judgements."""
    qrels, lines = random_case(seed)
    rng = random.Random(seed)
    lines = grouped(lines, rng) if layout == "grouped" else rng.sample(lines, len(lines))
    paths = write(tmp_path, qrels, lines, repeat_judgements=seed % 2 == 0)
    notes = []
    got, want = run_both(paths, complete, notes)
    assert_same(got, want)
    assert got.warnings == want.warnings
    oracle = oracle_scores(qrels, lines)
    for key, values in got.values.items():
        expected = [oracle[q][key] for q in got.query_ids]
        np.testing.assert_allclose(values, expected, rtol=0, atol=1e-12, err_msg=key)
    ungrouped = layout == "shuffled" and len(lines) > 1
    assert bool(notes) == ungrouped
    if notes:
        assert "not grouped" in notes[0] and "temporary files" in notes[0]


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("complete", [False, True])
def test_stream_equals_the_whole_file_array_path(tmp_path, blocks, seed, complete):
    """Long ids (wider in one file than the other), ties, no repeated docid: what the array path
    scored before, number for number."""
    qrels, lines = array_case(seed, n_queries=40)
    paths = write(tmp_path, qrels, lines, repeat_judgements=seed % 3 == 0)
    got = score_stream(*paths, KS, complete)
    want = score_arrays(*paths, KS, complete)
    assert got is not None and want is not None
    assert_same(got, want)
    assert got.warnings == ()


def test_a_repeated_docid_is_dropped_with_the_object_paths_warning(tmp_path, blocks):
    paths = write(
        tmp_path,
        {"q1": {"a": 1, "b": 1}, "q2": {"c": 1}},
        [("q1", "a", 3.0), ("q1", "a", 2.0), ("q1", "x", 1.0), ("q1", "b", 0.5)]
        + [("q2", "c", 1.0), ("q2", "d", 0.5)],
    )
    result = score_trec_files(*paths, (3,))
    assert result.values["recall@3"].tolist() == [1.0, 1.0]  # a, x, b once a's copy is gone
    assert result.warnings == (
        "1 of 2 rankings held duplicate ids; later occurrences were dropped before scoring",
    )


@pytest.mark.parametrize("modulus", [5, 1009])
def test_hash_collisions_never_join_different_ids(tmp_path, monkeypatch, blocks, modulus):
    qrels, lines = random_case(3)
    paths = write(tmp_path, qrels, random.Random(3).sample(lines, len(lines)))
    want = score_objects(*paths, KS)
    weak = lambda rows: rows.sum(axis=1, dtype=np.uint64) % np.uint64(modulus)  # noqa: E731
    monkeypatch.setattr(trec_arrays, "_hash", weak)
    monkeypatch.setattr(trec_stream, "_hash", weak)
    got = score_trec_files(*paths, KS)
    assert_same(got, want)
    assert got.warnings == want.warnings


def test_a_bad_line_deep_in_the_run_is_named_by_the_object_path(tmp_path, blocks):
    qrels, lines = array_case(1)
    qrels_path, run_path = write(tmp_path, qrels, lines)
    text = run_path.read_text().splitlines(keepends=True)
    text[-2] = "q1 Q0 d1 1 high tag\n"
    run_path.write_text("".join(text))
    assert score_stream(qrels_path, run_path, KS) is None
    with pytest.raises(InputError) as caught:
        score_trec_files(qrels_path, run_path, KS)
    assert str(caught.value).startswith(f"{run_path}:{len(text) - 1}: ")


def test_a_run_without_a_final_newline_or_with_a_byte_order_mark(tmp_path, blocks):
    qrels, lines = array_case(2)
    paths = write(tmp_path, qrels, lines)
    want = score_objects(*paths, KS)
    run_path = paths[1]
    run_path.write_bytes(b"\xef\xbb\xbf" + run_path.read_bytes().rstrip(b"\n"))
    assert_same(score_stream(*paths, KS), want)


def test_the_cli_says_when_it_groups_an_ungrouped_run(tmp_path, blocks, capsys):
    from rageval.cli.main import main

    qrels, lines = random_case(5)
    paths = write(tmp_path, qrels, random.Random(5).sample(lines, len(lines)))
    assert main(["score", *map(str, paths), "--json"]) == 0
    err = capsys.readouterr().err
    assert "rageval: note:" in err and "not grouped" in err


def test_no_room_for_the_temporary_files_is_an_error_that_says_what_to_do(
    tmp_path, blocks, monkeypatch
):
    qrels, lines = random_case(6)
    paths = write(tmp_path, qrels, random.Random(6).sample(lines, len(lines)))

    def full(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(trec_stream, "_spread", full)
    with pytest.raises(InputError) as caught:
        score_trec_files(*paths, KS)
    message = str(caught.value)
    assert message.startswith(f"{paths[1]}: ") and "No space left on device" in message
    assert "TMPDIR" in message
