"""rageval.gate.ci: the gate's verdict reaches GitHub Actions (job summary, annotations)."""

from __future__ import annotations

import pytest


def _comparison(status="regressed"):
    from rageval.gate.compare import Comparison, MetricRow

    rows = [
        MetricRow("ndcg@5", 0.8, 0.7, -0.1, 0.03, 0.01, "regressed", 1, 2, 3),
        MetricRow("recall@5", 0.5, 0.6, 0.1, 0.03, 0.02, "improved"),
        MetricRow("mrr@5", 0.5, 0.5, 0.0, 0.03, 1.0, "ok"),
    ]
    return Comparison(status=status, rows=rows, k=5, n_queries=6)


def test_github_annotations_name_each_regression_and_escape_their_text():
    from rageval.gate.ci import github_annotations

    lines = github_annotations(_comparison(), "golden/base,line:1.json")
    assert lines[0].startswith("::error file=golden/base%2Cline%3A1.json,title=retrieval gate::")
    assert "ndcg@5 0.8000 -> 0.7000 (-0.1000; tolerance 0.03, p 0.01): regressed" in lines[0]
    assert lines[1].startswith("::notice ") and "improved" in lines[1]
    assert lines[-1].endswith("::FAIL: ndcg@5") and len(lines) == 3
    passed = github_annotations(_comparison("pass"), "b.json")[-1]
    assert passed.startswith("::notice") and "PASS" in passed
    from rageval.gate.ci import _data

    assert _data("50%\nnext") == "50%25%0Anext"


def test_the_job_summary_gets_the_gate_markdown_when_github_sets_it(tmp_path, monkeypatch):
    from rageval.gate.ci import append_step_summary

    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    assert append_step_summary(_comparison()) is None
    summary = tmp_path / "summary.md"
    summary.write_text("earlier step\n")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    assert append_step_summary(_comparison()) == summary
    text = summary.read_text()
    assert text.startswith("earlier step\n") and "ndcg@5" in text and "regressed" in text.lower()


@pytest.mark.parametrize("fmt", ["text", "github"])
def test_check_prints_annotations_only_when_asked(fmt, monkeypatch, capsys, tmp_path):
    import rageval.app.check as gate_run
    from rageval.cli.main import main

    monkeypatch.setattr(gate_run, "run_check", lambda *a, **k: (_comparison(), tmp_path))
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(tmp_path / "s.md"))
    assert main(["check", "--baseline", "b.json", "--format", fmt]) == 1
    out = capsys.readouterr().out
    assert ("::error file=b.json" in out) == (fmt == "github")
    assert "appended to the job summary" in out and (tmp_path / "s.md").is_file()
