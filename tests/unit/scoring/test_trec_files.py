"""`score_trec_files`: the array path (no Python object per line) and the small-file path (no
numpy) give the object path's per-query values and pytrec_eval's, and hand over to the object path
where they must."""

from __future__ import annotations

import numpy as np
import pytest
from trec_oracle import KS, array_case, assert_same, oracle_scores, write

from rageval.errors import InputError
from rageval.scoring import trec_arrays, trec_files
from rageval.scoring.trec_arrays import score_arrays
from rageval.scoring.trec_files import score_objects, score_trec_files
from rageval.scoring.trec_plain import score_plain

FAST = {"arrays": score_arrays, "plain": score_plain}


@pytest.fixture
def big(monkeypatch):
    """score_trec_files takes the array path whatever the files' size."""
    monkeypatch.setattr(trec_files, "SMALL_BYTES", -1)


@pytest.mark.parametrize("path", FAST)
@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("complete", [False, True])
def test_fast_paths_equal_the_object_path_and_pytrec_eval(tmp_path, seed, complete, path):
    qrels, lines = array_case(seed)
    paths = write(tmp_path, qrels, lines, repeat_judgements=seed % 3 == 0)
    got = FAST[path](*paths, KS, complete)
    assert got is not None  # nothing here needs the object path
    assert_same(got, score_objects(*paths, KS, complete))
    oracle = oracle_scores(qrels, lines)
    run_ids = {q for q, _, _ in lines}
    evaluated = [q for q in qrels if complete or q in run_ids]
    assert list(got.query_ids) == evaluated
    for key, values in got.values.items():
        want = [oracle[q][key] for q in evaluated]
        np.testing.assert_allclose(values, want, rtol=0, atol=1e-12, err_msg=key)


@pytest.mark.parametrize("path", FAST)
def test_irregular_layout_and_comments_stay_on_the_fast_paths(tmp_path, path):
    qrels, lines = array_case(11)
    paths = write(tmp_path, qrels, lines)
    want = score_objects(*paths, KS)
    qrels_path, run_path = paths
    qrels_path.write_text("# judged by hand\n\n" + qrels_path.read_text().replace(" 0 ", "  0\t"))
    run_text = run_path.read_text().replace(" tag\n", " tag extra fields\r\n")
    run_path.write_text("#q0 Q0 d1 1 9.0 tag\n" + run_text)
    got = FAST[path](*paths, KS)
    assert got is not None
    assert_same(got, want)


@pytest.mark.parametrize("path", FAST)
def test_a_repeated_docid_goes_to_the_object_path_which_warns(tmp_path, path):
    paths = write(
        tmp_path,
        {"q1": {"a": 1, "b": 1}},
        [("q1", "a", 3.0), ("q1", "a", 2.0), ("q1", "x", 1.0), ("q1", "b", 0.5)],
    )
    assert FAST[path](*paths, (3,)) is None
    result = score_trec_files(*paths, (3,))
    assert result.values["recall@3"].tolist() == [1.0]  # a, x, b once a's copy is gone
    assert any("duplicate" in w for w in result.warnings)


@pytest.mark.parametrize(
    ("qrels_text", "run_text", "where"),
    [
        ("q1 0 a 1\nq1 0 a 2\n", "q1 Q0 a 1 1 t\n", "qrels.txt:2: "),  # conflicting grades
        ("q1 0 a 1.0\n", "q1 Q0 a 1 1 t\n", "qrels.txt:1: "),
        ("q1 0 a 1\n", "q1 Q0 a 1 one t\n", "run.txt:1: "),
        ("q1 0 a 1\n", "q1 Q0 a 1 1\n", "run.txt:1: "),
    ],
)
@pytest.mark.parametrize("path", FAST)
def test_bad_lines_are_named_by_the_object_path(tmp_path, qrels_text, run_text, where, path):
    qrels_path, run_path = tmp_path / "qrels.txt", tmp_path / "run.txt"
    qrels_path.write_text(qrels_text)
    run_path.write_text(run_text)
    assert FAST[path](qrels_path, run_path, (1,)) is None
    with pytest.raises(InputError) as caught:
        score_trec_files(qrels_path, run_path, (1,))
    assert str(caught.value).startswith(f"{tmp_path}/{where}")


@pytest.mark.parametrize("path", FAST)
def test_grades_python_reads_but_numpy_might_not_go_to_the_object_path(tmp_path, path):
    qrels_path, run_path = tmp_path / "qrels.txt", tmp_path / "run.txt"
    qrels_path.write_text("q1 0 a +1\nq1 0 b 0\n")
    run_path.write_text("q1 Q0 b 1 2 t\nq1 Q0 a 2 1 t\n")
    assert FAST[path](qrels_path, run_path, (2,)) is None
    assert score_trec_files(qrels_path, run_path, (2,)).values["mrr@2"].tolist() == [0.5]


@pytest.mark.parametrize("modulus", [5, 1009])
@pytest.mark.parametrize("seed", range(2))
def test_hash_collisions_never_join_different_ids(tmp_path, monkeypatch, big, seed, modulus):
    """With a hash that collides often the results stay exact: every hash match is checked."""
    qrels, lines = array_case(seed)
    paths = write(tmp_path, qrels, lines)
    want = score_objects(*paths, KS)
    weak = lambda rows: rows.sum(axis=1, dtype=np.uint64) % np.uint64(modulus)  # noqa: E731
    monkeypatch.setattr(trec_arrays, "_hash", weak)
    assert_same(score_trec_files(*paths, KS), want)


def test_a_docid_whose_hash_matches_a_judged_one_is_not_judged(tmp_path, monkeypatch, big):
    monkeypatch.setattr(trec_arrays, "_hash", lambda rows: rows[:, 0].copy())  # first 8 bytes
    paths = write(
        tmp_path, {"q1": {"same-8b-judged": 1}}, [("q1", "same-8b-other", 2.0), ("q1", "z", 1.0)]
    )
    assert score_arrays(*paths, (2,)) is None
    assert score_trec_files(*paths, (2,)).values["recall@2"].tolist() == [0.0]


def test_small_files_import_no_numpy(tmp_path):
    """The small-file path is what keeps `rageval score` on a small file under 0.15 s."""
    import subprocess
    import sys

    qrels_path, run_path = write(tmp_path, {"q1": {"a": 1}}, [("q1", "a", 1.0), ("q1", "b", 2.0)])
    code = (
        "import sys; from rageval.cli.main import main\n"
        f"main(['score', {str(qrels_path)!r}, {str(run_path)!r}, '--k', '2', '--json'])\n"
        "print(sorted(m for m in ('numpy', 'rageval.scoring.metrics') if m in sys.modules))"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert '"mrr@2": 0.5' in proc.stdout
    assert proc.stdout.strip().splitlines()[-1] == "[]"
