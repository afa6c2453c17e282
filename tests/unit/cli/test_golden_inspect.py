"""``golden stats`` and ``golden validate``: tag counts in the table, and a warning for a quote
that occurs more than once in its document without an occurrence or start."""

import json

from rageval.cli.main import main

TEXT = "Restart the service.\nCheck the logs.\nRestart the service.\n"


def _files(tmp_path, evidence):
    corpus = tmp_path / "corpus"
    corpus.mkdir(parents=True)
    (corpus / "ops.md").write_text(TEXT)
    golden = tmp_path / "golden.jsonl"
    rows = [
        {
            "id": "q1",
            "query": "how to recover",
            "tags": ["ops", "runbook"],
            "evidence": [{"doc": "ops", "quote": "Restart the service", **evidence}],
        },
        {
            "id": "q2",
            "query": "what next",
            "tags": ["ops"],
            "evidence": [{"doc": "ops", "quote": "Check the logs"}],
        },
    ]
    golden.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return golden, corpus


def test_stats_prints_tags_and_warns_about_a_repeated_quote(tmp_path, capsys):
    golden, corpus = _files(tmp_path, {})
    assert main(["golden", "stats", str(golden), "--corpus", str(corpus)]) == 0
    out, err = capsys.readouterr()
    assert "tags                ops 2, runbook 1" in out
    assert f"warning: {golden}:1: query 'q1', evidence[0]: the quote occurs 2 times" in err
    assert "(lines 1, 3)" in err and f'"start": {TEXT.rindex("Restart")}' in err


def test_validate_warns_but_passes_and_occurrence_silences_it(tmp_path, capsys):
    golden, corpus = _files(tmp_path, {})
    assert main(["golden", "validate", str(golden), "--corpus", str(corpus)]) == 0
    assert "occurs 2 times" in capsys.readouterr().err
    golden, corpus = _files(tmp_path / "b", {"occurrence": 2})
    assert main(["golden", "validate", str(golden), "--corpus", str(corpus)]) == 0
    assert "occurs" not in capsys.readouterr().err


def test_validate_lists_every_bad_line_in_file_order_in_one_pass(tmp_path, capsys):
    golden, corpus = _files(tmp_path, {})
    good = golden.read_text()
    bad = [
        {"id": "q3", "query": "x", "evidence": [{"doc": "ops", "quote": "Reboot the whole fleet"}]},
        {"id": "q4", "query": "no labels"},
        {"id": "q1", "query": "a second q1", "relevant_docs": ["ops"]},
    ]
    golden.write_text(good + "".join(json.dumps(r) + "\n" for r in bad) + "not json\n")
    assert main(["golden", "validate", str(golden), "--corpus", str(corpus)]) == 2
    err = [x for x in capsys.readouterr().err.splitlines() if "warning" not in x]
    assert [x.split(": ", 1)[0] for x in err[:-1]] == [f"{golden}:{n}" for n in (3, 4, 5, 6)]
    assert "quote not found" in err[0] and "has no labels" in err[1]
    assert "duplicate query id 'q1' (first on line 1)" in err[2] and "malformed JSON" in err[3]
    assert err[-1] == "rageval: 4 of 6 queries have problems"
