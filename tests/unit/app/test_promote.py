"""promote's guards on report files (no MLflow): golden set, label set, metric names."""

from __future__ import annotations

import json

import pytest

from rageval.app.promote import promote
from rageval.errors import ConfigError, InputError
from rageval.gate.baseline import read_baseline
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
    assert read_baseline(done.path).report["metrics"] == {"ndcg@5": 0.5}
    assert done.summary().startswith("promoted the report file to ")
    assert "chunk=64 search=vector; 1 queries; ndcg@5 = 0.5000" in done.summary()


def test_another_golden_set_or_label_set_is_refused_unless_forced(report, tmp_path, mini):
    other = tmp_path / "other.jsonl"
    other.write_text((mini / "golden.jsonl").read_text().splitlines()[0] + "\n")
    with pytest.raises(InputError, match="measured on another golden set"):
        promote(str(report), str(tmp_path / "b.json"), golden=str(other))
    golden = str(mini / "golden.jsonl")
    promote(str(report), str(tmp_path / "b.json"), golden=golden)  # a gold baseline
    data = json.loads(report.read_text())
    report.write_text(json.dumps({**data, "label_set": "llm"}))
    before = (tmp_path / "b.json").read_bytes()
    with pytest.raises(InputError, match="judged with the 'llm' label set, the baseline with"):
        promote(str(report), str(tmp_path / "b.json"), golden=golden)
    assert (tmp_path / "b.json").read_bytes() == before
    promote(str(report), str(tmp_path / "b.json"), golden=golden, force=True)
    assert read_baseline(tmp_path / "b.json").label_set == "llm"


@pytest.mark.parametrize("labels", ["ppi", "llm", "human"])
def test_the_first_baseline_takes_the_runs_label_set(report, tmp_path, mini, labels):
    """No baseline yet: nothing to compare the run's label set with, so it is promoted as it
    is (with --golden, or the project's configured dataset), and the next run is held to it."""
    data = json.loads(report.read_text())
    report.write_text(json.dumps({**data, "label_set": labels}))
    done = promote(str(report), str(tmp_path / "b.json"), golden=str(mini / "golden.jsonl"))
    assert read_baseline(done.path).label_set == labels
    report.write_text(json.dumps({**data, "label_set": "gold"}))
    with pytest.raises(InputError, match=f"the baseline with '{labels}'"):
        promote(str(report), str(tmp_path / "b.json"), golden=str(mini / "golden.jsonl"))


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
    assert read_baseline(done.path).report["digests"]["golden"] == digest
    assert promote(str(report), str(tmp_path / "c.json"), golden=f"{beir}:test").path.exists()
    with pytest.raises(InputError, match="no qrels for split 'dev'"):
        promote(str(report), str(tmp_path / "d.json"), golden=f"{beir}:dev")


def test_promote_names_what_changed_beneath_the_baseline_it_replaces(report, tmp_path, mini):
    from rageval.app.promote import ProjectData, what_differs
    from rageval.report import provenance
    from rageval.types import Document

    golden = load_golden(str(mini / "golden.jsonl"))
    data = json.loads(report.read_text())

    def with_docs(*names):
        docs = [Document(n, f"text of {n}") for n in names]
        block = provenance.corpus_block(docs, provenance.text_digest(repr(names)))
        return {**data, "provenance": provenance.record(block, golden, "j", None)}

    base = tmp_path / "b.json"
    first = promote(str(report), str(base), golden=str(mini / "golden.jsonl"))
    assert first.beneath == () and "embedding canary: none (the run was measured before" in (
        first.summary()
    )
    report.write_text(json.dumps(with_docs("faq")))
    promote(str(report), str(base), golden=str(mini / "golden.jsonl"))
    report.write_text(json.dumps(with_docs("faq", "outputs/check/x/gate")))
    done = promote(str(report), str(base), golden=str(mini / "golden.jsonl"))
    assert done.beneath == (
        "corpus: 1 document added (outputs/check/x/gate), 0 removed, 0 changed",
    )
    assert "changed beneath since the previous baseline: corpus: 1 document added" in done.summary()
    assert "embedding canary: none (the run embeds nothing" in done.summary()
    # --best finding no run says which digest keeps the runs out
    project = ProjectData("g" * 64, "c" * 64, "the current baseline")
    measured = {f"{'g' * 64} {'d' * 64} gold": ["r1", "r2"], f"{'h' * 64} {'c' * 64} gold": ["r3"]}
    assert what_differs(measured, project) == (
        f": 2 on another corpus (digest {'d' * 12}); 1 on another golden set (digest {'h' * 12})"
    )
