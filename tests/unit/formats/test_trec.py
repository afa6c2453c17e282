"""rageval.formats.trec: reading, writing and ordering TREC runs and qrels."""

from __future__ import annotations

import os
import random

import pytest
import pytrec_eval

from rageval.errors import InputError
from rageval.formats.trec import read_qrels, read_run, write_qrels, write_run
from rageval.scoring.ranking import order_like_trec_eval
from rageval.types import RankedList


def write(tmp_path, name, content: str | bytes):
    path = tmp_path / name
    path.write_bytes(content.encode() if isinstance(content, str) else content)
    return path


def test_read_qrels_trec_format(tmp_path):
    path = write(tmp_path, "q.txt", "q1 0 d1 2\r\n\nq1 0 d2 0\nq2 Q0 d1 1\nq1 0 d1 2\n")
    assert read_qrels(path) == {"q1": {"d1": 2, "d2": 0}, "q2": {"d1": 1}}


def test_read_qrels_beir_tsv_with_header(tmp_path):
    path = write(tmp_path, "test.tsv", "query-id\tcorpus-id\tscore\nq1\tdoc 1\t1\nq2\td2\t0\n")
    assert read_qrels(path) == {"q1": {"doc 1": 1}, "q2": {"d2": 0}}


@pytest.mark.parametrize(
    ("content", "line", "message"),
    [
        ("q1 0 d1 1\nq1 0 d2\n", 2, "expected 4 whitespace-separated columns"),
        ("q1 0 d1 1\nq1 0 d2 high\n", 2, "grade 'high' is not an integer"),
        ("q1 0 d1 1\nq1 0 d1 2\n", 2, "judged 2 here but 1 on line 1"),
        ("query-id\tcorpus-id\tscore\nq1\td1\n", 2, "expected 3 tab-separated columns"),
        ("q1 0 d1 1\nq1 0 d\xe9 1\n".encode("latin-1"), 2, "not valid UTF-8"),
    ],
)
def test_read_qrels_bad_lines_name_file_and_line(tmp_path, content, line, message):
    path = write(tmp_path, "q.txt", content)
    with pytest.raises(InputError, match=message) as err:
        read_qrels(path)
    assert str(err.value).startswith(f"{path}:{line}: ")
    assert (err.value.path, err.value.line) == (str(path), line)


@pytest.mark.parametrize("content", ["", "\n \n", "query-id\tcorpus-id\tscore\n"])
def test_read_qrels_without_judgements_is_an_error(tmp_path, content):
    with pytest.raises(InputError, match="no judgements found"):
        read_qrels(write(tmp_path, "q.txt", content))


def test_missing_file_is_an_input_error(tmp_path):
    with pytest.raises(InputError, match="cannot read the file"):
        read_run(tmp_path / "nope.run")


def test_read_run_orders_like_trec_eval_and_ignores_the_rank_column(tmp_path):
    lines = ["q1 Q0 a 1 1.0 t", "q1 Q0 c 2 2.5 t", "q1 Q0 b 3 1.0 t", "q2 Q0 z 9 -1e3 t"]
    run = read_run(write(tmp_path, "r.run", "\n".join(lines) + "\n"))
    assert run == {
        "q1": RankedList(("c", "b", "a"), (2.5, 1.0, 1.0)),
        "q2": RankedList(("z",), (-1000.0,)),
    }


def test_scores_are_compared_in_single_precision_like_trec_eval():
    ranked = order_like_trec_eval([("a", 1.0 + 1e-9), ("b", 1.0), ("c", 1.0 + 1e-6)])
    assert ranked.ids == ("c", "b", "a")
    assert ranked.scores == (1.0 + 1e-6, 1.0, 1.0 + 1e-9)  # as given, not rounded


def test_read_run_keeps_repeated_docids_best_scored_first(tmp_path):
    run = read_run(write(tmp_path, "r.run", "q Q0 a 1 0.5 t\nq Q0 b 2 0.7 t\nq Q0 a 3 0.9 t\n"))
    assert run["q"].ids == ("a", "b", "a")


def test_trec_eval_order_agrees_with_pytrec_eval():
    # Ties by docid descending, checked empirically: pytrec_eval's reciprocal rank of each doc,
    # judged alone, must be 1 / its rank in our order.
    # Scores that differ only beyond single precision are ties for trec_eval too.
    rng = random.Random(7)
    docs = ["a", "B", "b", "a1", "a10", "a2", "Z", "_x", "é", "ü", "10", "9", "c", "d"]
    scores = {d: rng.choice([0.5, 1.0, 1.0 + 1e-9, 1.0 - 1e-12, 2.0]) for d in docs}
    ranked = order_like_trec_eval(scores.items())
    for rank, docid in enumerate(ranked.ids, start=1):
        evaluator = pytrec_eval.RelevanceEvaluator({"q": {docid: 1}}, {"recip_rank"})
        assert evaluator.evaluate({"q": scores})["q"]["recip_rank"] == pytest.approx(1 / rank)


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("q1 Q0 d1 1 0.5", "expected 6 whitespace-separated columns"),
        ("q1 Q0 d1 1 high tag", "score 'high' .* is not a finite number"),
        ("q1 Q0 d1 1 nan tag", "score 'nan'"),
        ("q1 Q0 d1 1 -inf tag", "score '-inf'"),
    ],
)
def test_read_run_bad_lines_name_file_and_line(tmp_path, line, message):
    path = write(tmp_path, "r.run", f"q0 Q0 d0 1 1.0 tag\n{line}\n")
    with pytest.raises(InputError, match=message) as err:
        read_run(path)
    assert str(err.value).startswith(f"{path}:2: ")


def test_read_run_ignores_fields_after_the_tag_like_trec_eval(tmp_path):
    # trec_eval's own test/results.trunc carries extra fields after the run tag
    path = write(tmp_path, "r.run", "q1 Q0 d1 1 0.5 tag 0.5 extra\nq1 Q0 d2 2 0.7 tag x\n")
    assert read_run(path) == {"q1": RankedList(("d2", "d1"), (0.7, 0.5))}


def test_comment_lines_are_skipped_never_read_as_data(tmp_path):
    qrels = write(
        tmp_path, "q.txt", "# judged by A\nq1 0 d1 1\n#q2 0 d9 1\n  # indented\nq1 0 d2 0\n"
    )
    assert read_qrels(qrels) == {"q1": {"d1": 1, "d2": 0}}
    run = write(tmp_path, "r.run", "#q Q0 d 1 1 t\nq1 Q0 d1 1 1.0 t\n# a note\n")
    assert read_run(run) == {"q1": RankedList(("d1",), (1.0,))}


def test_a_trec_qrels_line_with_two_tabs_is_still_trec(tmp_path):
    path = write(tmp_path, "q.txt", "q1 0\td1\t1\nq1 0 d2 2\nq2\t0 d3 1\n")
    assert read_qrels(path) == {"q1": {"d1": 1, "d2": 2}, "q2": {"d3": 1}}
    beir = write(tmp_path, "b.tsv", "q1\td1\t1\nq2\td 2\t0\n")  # BEIR without its header
    assert read_qrels(beir, fmt="beir") == {"q1": {"d1": 1}, "q2": {"d 2": 0}}
    assert read_qrels(write(tmp_path, "c.tsv", "q1\td1\t1\n")) == {"q1": {"d1": 1}}


def test_qrels_of_neither_format_say_so_on_their_line(tmp_path):
    with pytest.raises(InputError, match="expected 4 whitespace-separated fields .* got 5") as err:
        read_qrels(write(tmp_path, "q.txt", "\n# c\nq1 0 d1 1 extra\n"))
    assert err.value.line == 3


@pytest.mark.parametrize("seed", range(5))
def test_vectorised_run_order_equals_the_reference_order(tmp_path, seed):
    rng = random.Random(seed)
    docs = ["a", "B", "b", "a1", "a10", "é", "ü", "10", "9", "_x"]
    lines, want = [], {}
    for q in rng.sample(["q3", "q1", "q10", "q2"], 4):
        pairs = [
            (rng.choice(docs), rng.choice([0.5, 1.0, 1.0 + 1e-9, 2.0, -0.0, 0.0]))
            for _ in range(12)
        ]
        want[q] = order_like_trec_eval(pairs)
        lines += [f"{q} Q0 {d} 0 {s!r} t" for d, s in pairs]
    got = read_run(write(tmp_path, "r.run", "\n".join(lines)))
    assert list(got) == list(want) and got == want


def test_read_run_empty_or_not_utf8(tmp_path):
    with pytest.raises(InputError, match="no results found"):
        read_run(write(tmp_path, "empty.run", ""))
    with pytest.raises(InputError, match="not valid UTF-8") as err:
        read_run(write(tmp_path, "bad.run", b"q Q0 d 1 1.0 t\nq Q0 \xff 2 0.5 t\n"))
    assert err.value.line == 2


def test_run_round_trips(tmp_path):
    rankings = [RankedList(("d2", "d1"), (1 / 3, 0.1 + 0.2)), RankedList((), ())]
    path = tmp_path / "out.run"
    write_run(path, ["q1", "q2"], rankings, tag="bm25")
    assert path.read_text().splitlines()[1] == f"q1 Q0 d1 2 {0.1 + 0.2!r} bm25"
    assert read_run(path) == {"q1": rankings[0]}  # scores survive exactly; empty q2 has no line


def test_qrels_round_trip(tmp_path):
    qrels = {"q1": {"d1": 2, "d2": 0}, "q2": {"d1": 1}}
    write_qrels(tmp_path / "q.txt", qrels)
    assert read_qrels(tmp_path / "q.txt") == qrels


def test_failed_write_leaves_nothing_behind(tmp_path):
    path = tmp_path / "out.run"
    path.write_text("old\n")
    bad = [RankedList(("ok", "has space"), (2.0, 1.0))]
    with pytest.raises(InputError, match="'has space' is empty or holds whitespace"):
        write_run(path, ["q1"], bad)
    with pytest.raises(InputError, match="query id 'q 1'"):
        write_qrels(tmp_path / "q.txt", {"q 1": {"d": 1}})
    with pytest.raises(InputError, match="1 query ids but 2 rankings"):
        write_run(path, ["q1"], bad * 2)
    assert path.read_text() == "old\n"
    assert sorted(os.listdir(tmp_path)) == ["out.run"]


def test_unwritable_path_is_an_input_error(tmp_path):
    (tmp_path / "file").write_text("")
    with pytest.raises(InputError, match="cannot write the file"):
        write_qrels(tmp_path / "file" / "q.txt", {"q": {"d": 1}})
