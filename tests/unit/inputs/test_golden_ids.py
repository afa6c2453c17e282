"""Golden sets that would fail only after embedding: ids that run.trec cannot hold are refused
when the golden set is read (and by ``golden validate``); quotes too short to mean anything are
warned about."""

from __future__ import annotations

import json

import pytest

from rageval.cli.main import main
from rageval.errors import InputError
from rageval.inputs.golden import load_golden


def write(tmp_path, *entries):
    path = tmp_path / "golden.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in entries))
    return path


@pytest.mark.parametrize("qid", ["q 1", " q1", "q1\t", "q\u00a01"])
def test_query_ids_with_whitespace_are_refused_with_file_and_line(tmp_path, qid):
    path = write(
        tmp_path,
        {"id": "ok", "query": "x", "relevant_docs": ["faq"]},
        {"id": qid, "query": "y", "relevant_docs": ["faq"]},
    )
    with pytest.raises(
        InputError, match=r"golden\.jsonl:2: query id .* holds whitespace.*run\.trec"
    ):
        load_golden(path)


def test_document_labels_with_whitespace_are_refused(tmp_path):
    path = write(tmp_path, {"id": "q1", "query": "y", "relevant_docs": {"my notes": 1}})
    with pytest.raises(InputError, match=r":1: query 'q1': \"relevant_docs\" label 'my notes'"):
        load_golden(path)


def test_golden_validate_rejects_whitespace_ids_before_any_embedding(mini, tmp_path, capsys):
    path = write(
        tmp_path,
        {
            "id": "q 1",
            "query": "How do I reset my laptop password?",
            "evidence": [{"doc": "faq", "quote": "Open a ticket in Helm"}],
        },
    )
    assert main(["golden", "validate", str(path), "--corpus", str(mini / "corpus")]) == 2
    assert "holds whitespace" in capsys.readouterr().err


def test_golden_validate_warns_on_short_quotes_and_still_passes(mini, tmp_path, capsys):
    path = write(
        tmp_path,
        {
            "id": "q1",
            "query": "How do I reset my laptop password?",
            "evidence": [
                {"doc": "faq", "quote": "Helm"},
                {"doc": "faq", "quote": "Open a ticket in Helm"},
            ],
        },
    )
    assert main(["golden", "validate", str(path), "--corpus", str(mini / "corpus")]) == 0
    err = capsys.readouterr().err
    assert f"{path}:1: warning: query 'q1', evidence[0]: the quote 'Helm' is 1 word" in err
    assert "evidence[1]" not in err
