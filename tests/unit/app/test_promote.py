"""promote's guards on report files (no MLflow): golden set, label set, metric names."""

from __future__ import annotations

import json

import pytest

from rageval.app.promote import promote
from rageval.errors import ConfigError, InputError
from rageval.gate.baseline import load_baseline
from rageval.inputs.golden import load_golden


@pytest.fixture
def report(tmp_path, mini):
    digest = load_golden(str(mini / "golden.jsonl")).digest
    data = {
        "metrics": {"ndcg@5": 0.5},
        "per_query": [{"id": "q1", "query": "x", "ndcg@5": 0.5}],
        "digests": {"golden": digest},
        "k": 5,
        "config": {"chunk": 64},
        "choices": {"search": "vector"},
    }
    path = tmp_path / "report.json"
    path.write_text(json.dumps(data))
    return path


def test_a_report_on_the_project_golden_set_is_promoted_and_summarised(report, tmp_path, mini):
    done = promote(str(report), str(tmp_path / "b.json"), golden=str(mini / "golden.jsonl"))
    assert load_baseline(done.path)["metrics"] == {"ndcg@5": 0.5}
    assert done.summary().startswith("promoted the report file to ")
    assert "chunk=64 search=vector; 1 queries; ndcg@5 = 0.5000" in done.summary()


def test_another_golden_set_or_label_set_is_refused_unless_forced(report, tmp_path, mini):
    other = tmp_path / "other.jsonl"
    other.write_text((mini / "golden.jsonl").read_text().splitlines()[0] + "\n")
    with pytest.raises(InputError, match="measured on another golden set"):
        promote(str(report), str(tmp_path / "b.json"), golden=str(other))
    data = json.loads(report.read_text())
    report.write_text(json.dumps({**data, "label_set": "llm"}))
    with pytest.raises(InputError, match="never compares across label sets"):
        promote(str(report), str(tmp_path / "b.json"), golden=str(mini / "golden.jsonl"))
    assert not (tmp_path / "b.json").exists()
    promote(str(report), str(tmp_path / "b.json"), golden=str(mini / "golden.jsonl"), force=True)
    assert (tmp_path / "b.json").exists()


def test_best_without_a_cutoff_lists_the_choices(tmp_path):
    with pytest.raises(ConfigError, match="must name a cutoff: name@k .e.g. ndcg@5.*valid names"):
        promote(None, str(tmp_path / "b.json"), best="ndcg")


def test_golden_may_be_a_beir_folder_and_its_split(report, tmp_path):
    import warnings

    from beir_fixture import make_beir

    from rageval.inputs.beir import load_beir

    beir = make_beir(tmp_path / "beir")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        digest = load_beir(beir).golden.digest
    data = json.loads(report.read_text())
    report.write_text(json.dumps({**data, "digests": {"golden": digest}}))
    done = promote(str(report), str(tmp_path / "b.json"), golden=str(beir))
    assert load_baseline(done.path)["digests"]["golden"] == digest
    assert promote(str(report), str(tmp_path / "c.json"), golden=f"{beir}:test").path.exists()
    with pytest.raises(InputError, match="no qrels for split 'dev'"):
        promote(str(report), str(tmp_path / "d.json"), golden=f"{beir}:dev")
