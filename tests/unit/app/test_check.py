"""``rageval check``'s app side (rageval.app.check): what it refuses before the re-run, checked
once, and what it hands the re-run."""

from __future__ import annotations

import json

import pytest

from rageval.errors import ConfigError


def baseline_file(tmp_path, **extra):
    rows = [
        {"id": f"q{i}", "query": f"question {i}", "source": "ticket", "recall@5": 1.0}
        for i in range(12)
    ]
    data = {
        "metrics": {"recall@5": 1.0},
        "per_query": rows,
        "digests": {"golden": "g1"},
        "k": 5,
        "config": {},
        "choices": {},
        **extra,
    }
    path = tmp_path / "baseline.json"
    path.write_text(json.dumps(data))
    return path


class Stop(Exception):
    pass


def test_gate_slices_are_checked_once_against_the_baseline_before_the_rerun(tmp_path, monkeypatch):
    from rageval.app.check import run_check
    from rageval.gate import slices

    calls, runs = [], []
    real = slices.check_spec

    def counted(*args, **kwargs):
        calls.append(args[2])  # the rows it checks against
        return real(*args, **kwargs)

    def rerun(cfg, out, **kwargs):
        runs.append(kwargs)
        raise Stop  # the re-run itself is the integration tests'

    monkeypatch.setattr(slices, "check_spec", counted)
    monkeypatch.setattr("rageval.app.main.run_job", rerun)
    path = baseline_file(tmp_path)
    with pytest.raises(Stop):
        run_check(path, ["gate.slices.source=ticket.recall@5=0.05"], out=tmp_path / "out")
    assert len(calls) == 1 and [r["id"] for r in calls[0]] == [f"q{i}" for i in range(12)]
    # the re-run is told, so it does not check gate.slices again against the golden set
    assert runs and runs[0]["slices_checked"] is True
    # a slice no query of the baseline is in stops the check before the re-run
    runs.clear()
    with pytest.raises(ConfigError, match="gate.slices"):
        run_check(path, ["gate.slices.source=adversarial.recall@5=0.05"], out=tmp_path / "o2")
    assert runs == []


def test_the_project_of_a_baseline_is_the_one_holding_it(tmp_path):
    from rageval.app.check import baseline_project
    from rageval.gate.baseline import read_baseline

    (tmp_path / "rageval.yaml").write_text("")
    inside = read_baseline(baseline_file(tmp_path))
    assert baseline_project(inside).root == tmp_path.resolve()
    # a recorded root that does not hold the baseline is not followed
    other = tmp_path / "elsewhere"
    other.mkdir()
    (other / "rageval.yaml").write_text("")
    foreign = read_baseline(baseline_file(tmp_path, project={"root": str(other)}))
    assert baseline_project(foreign).root == tmp_path.resolve()
