"""``golden validate`` checks the judgements file beside the golden set (or ``--judgements``)."""

import json
import shutil

from rageval.cli.main import main


def _project(tmp_path, mini):
    shutil.copytree(mini / "corpus", tmp_path / "corpus")
    shutil.copy(mini / "golden.jsonl", tmp_path / "golden.jsonl")
    return tmp_path / "golden.jsonl"


def _line(**over):
    rec = {
        "query_id": "q01",
        "doc": "policies/leave",
        "quote": "sixteen weeks of fully paid parental leave",
        "grade": 2,
        "judge": "human:ana",
        "at": "2026-12-01T06:00:00Z",
    }
    return json.dumps({**rec, **over}) + "\n"


def test_validate_checks_the_judgements_beside_the_golden_set(tmp_path, mini, capsys):
    golden = _project(tmp_path, mini)
    assert main(["golden", "validate", str(golden)]) == 0
    assert "judgements" not in capsys.readouterr().out  # none there: nothing to say
    (tmp_path / "judgements.jsonl").write_text(_line() + _line(judge="llm:m", grade=0))
    assert main(["golden", "validate", str(golden)]) == 0
    assert "ok: 2 judgements (1 human, 1 LLM), every passage found" in capsys.readouterr().out
    (tmp_path / "judgements.jsonl").write_text(_line() + _line(quote="twelve weeks of leave"))
    assert main(["golden", "validate", str(golden)]) == 2
    err = capsys.readouterr().err
    assert f"{tmp_path / 'judgements.jsonl'}:2: query 'q01': quote not found" in err


def test_validate_with_an_explicit_judgements_file(tmp_path, mini, capsys):
    golden = _project(tmp_path, mini)
    other = tmp_path / "other.jsonl"
    assert main(["golden", "validate", str(golden), "--judgements", str(other)]) == 2
    assert "judgements file not found" in capsys.readouterr().err
    other.write_text(_line(grade=7))
    assert main(["golden", "validate", str(golden), "--judgements", str(other)]) == 2
    assert f"{other}:1: query 'q01': grade must be 0" in capsys.readouterr().err
