"""``rageval judge --import``: saved grades validated (file:line errors, nothing written on a bad
file), the judge recorded, what is already there skipped, a newer grade replacing an older one."""

from __future__ import annotations

import json

import pytest

from rageval.cli.main import main

PASSAGE = "The payments service is deployed to westeurope and northeurope"


def record(**kw):
    rec = {
        "query_id": "q02",
        "doc": "runbooks/payments",
        "quote": PASSAGE,
        "grade": 2,
        "at": "2026-12-01T07:00:00Z",
    }
    return {k: v for k, v in {**rec, **kw}.items() if v is not None}


@pytest.fixture
def where(tmp_path, mini):
    def run(records, *extra):
        saved = tmp_path / "saved.jsonl"
        saved.write_text("".join(json.dumps(r) + "\n" for r in records))
        argv = ["judge", "--import", str(saved), "--golden", str(mini / "golden.jsonl")]
        argv += ["--corpus", str(mini / "corpus"), "--judgements", str(tmp_path / "j.jsonl")]
        return main([*argv, *extra])

    return run


def stored(tmp_path):
    path = tmp_path / "j.jsonl"
    return [json.loads(x) for x in path.read_text().splitlines()] if path.exists() else []


def test_the_judge_is_recorded_and_a_second_import_adds_nothing(where, tmp_path, capsys):
    faq = record(query_id="q06", doc="faq", quote='Open a ticket in Helm, choose "Account access"')
    assert where([record(), faq], "--judge", "human:bob") == 0
    assert "added 2 judgements by human:bob" in capsys.readouterr().out
    assert [r["judge"] for r in stored(tmp_path)] == ["human:bob", "human:bob"]
    assert where([record(judge="human:bob")]) == 0
    out = capsys.readouterr().out
    assert "added 0 judgements" in out and "skipped 1 already there" in out
    assert where([record(judge="human:bob", grade=1, at="2026-12-01T08:00:00Z")]) == 0
    assert "1 replaced an older grade" in capsys.readouterr().out
    assert [r["grade"] for r in stored(tmp_path)] == [1, 2]


@pytest.mark.parametrize(
    "records, extra, message",
    [
        ([record()], [], "saved.jsonl:1: no judge on this record: say who graded with --judge"),
        (
            [record(judge="human:ann")],
            ["--judge", "human:bob"],
            "saved.jsonl:1: the record says judge 'human:ann', but --judge is 'human:bob'",
        ),
        (
            [record(), record(grade=5)],
            ["--judge", "human:bob"],
            "saved.jsonl:2: query 'q02': grade",
        ),
        (
            [record(quote="not in the runbook at all, anywhere")],
            ["--judge", "human:bob"],
            "saved.jsonl:1: query 'q02': ",
        ),
        ([record(query_id="q99")], ["--judge", "human:bob"], "unknown query id"),
        # LLM grades never enter through --import (a rejected calibration's file, a hand-written
        # record): only `rageval judge --llm` after an accepted calibration writes them
        (
            [record(judge="human:bob"), record(judge="llm:gpt-x")],
            [],
            "saved.jsonl:2: judge 'llm:gpt-x': --import takes grades people gave",
        ),
        ([record()], ["--judge", "llm:gpt-x"], "--import takes grades people gave"),
        ([record()], ["--judge", "bob"], "--judge must be human:NAME or llm:MODEL"),
    ],
)
def test_bad_grades_are_refused_with_file_and_line_and_nothing_is_written(
    where, tmp_path, capsys, records, extra, message
):
    assert where(records, *extra) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "j.jsonl").exists()
