"""The files ``rageval judge`` works on (rageval.authoring.judging): where the golden set, corpus
and judgements are, and saved grades read with file:line errors."""

from __future__ import annotations

import json

import pytest

from rageval.authoring.judging import is_beir_folder, locate, pool_judgements, read_grades
from rageval.errors import ConfigError, InputError


def test_a_pool_cannot_point_imports_at_a_new_place(tmp_path):
    default = tmp_path / "golden" / "judgements.jsonl"
    pool_judgements(default, default)  # the golden set's own, even before it exists
    existing = tmp_path / "other.jsonl"
    existing.write_text("")
    pool_judgements(existing, default)
    for bad in (tmp_path / "new" / "dir" / "j.jsonl", tmp_path / "notes.txt"):
        with pytest.raises(InputError, match="pass --judgements FILE to write there"):
            pool_judgements(bad, default)
    assert not (tmp_path / "new").exists()


def test_locate_takes_the_pool_s_files_and_digests_unless_named(tmp_path, mini):
    golden = mini / "golden.jsonl"
    source = {"golden_digest": "g" * 64, "corpus_digest": "c" * 64}
    where = locate(golden, mini / "corpus", source)
    assert where.judgements == golden.with_name("judgements.jsonl")
    assert (where.golden_digest, where.corpus_digest, where.split) == ("g" * 64, "c" * 64, "test")
    named = locate(golden, mini / "corpus", source, golden_given=True, corpus_given=True)
    assert (named.golden_digest, named.corpus_digest) == (None, None)
    # a judgements file the pool names is checked; one the command line names is the user's
    with pytest.raises(InputError, match="pass --judgements FILE"):
        locate(golden, None, {"judgements": str(tmp_path / "x.txt")})
    assert locate(golden, None, {}, str(tmp_path / "x.txt")).judgements == tmp_path / "x.txt"
    beir = tmp_path / "beir"
    beir.mkdir()
    (beir / "corpus.jsonl").write_text("")
    assert is_beir_folder(beir) and not is_beir_folder(golden)
    there = locate(beir, None, {"split": "dev"})
    assert there.corpus == beir and there.judgements.parent == beir / "qrels"


def test_read_grades_names_the_file_and_line(tmp_path):
    saved = tmp_path / "saved.jsonl"
    saved.write_text(
        json.dumps({"query_id": "q1", "judge": "human:ann"}) + "\n" + json.dumps({"query_id": "q2"})
    )
    rows = read_grades(saved, "human:ann")
    assert [(n, r["judge"]) for n, r in rows] == [(1, "human:ann"), (2, "human:ann")]
    with pytest.raises(InputError, match=r"saved.jsonl:2: no judge on this record"):
        read_grades(saved, None)
    with pytest.raises(ConfigError, match="--judge must be human:NAME"):
        read_grades(saved, "ann")
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    with pytest.raises(InputError, match="no grades in the file"):
        read_grades(empty, "human:ann")
