"""``rageval promote``'s command line: every option reaches the promotion, its summary is printed,
and a refusal is one line with exit 2. (Promotion itself: tests/integration/test_gate.py.)"""

from __future__ import annotations

import subprocess
import sys

import pytest

from rageval.app import promote as promote_mod
from rageval.cli.main import main
from rageval.errors import InputError


class Done:
    def summary(self):
        return "promoted run abc123 to golden/baseline.json"


def test_options_reach_the_promotion_and_its_summary_is_printed(monkeypatch, capsys):
    seen = {}
    monkeypatch.setattr(
        promote_mod,
        "promote",
        lambda run, baseline, **kw: seen.update(run=run, baseline=baseline, **kw) or Done(),
    )
    argv = [
        "promote",
        "--best",
        "ndcg@5",
        "--experiment",
        "e",
        "--sweep",
        "p1",
        "--golden",
        "g.jsonl",
        "--force",
        "--tracking-uri",
        "sqlite:///x.db",
        "--baseline",
        "b.json",
    ]
    assert main(argv) == 0
    assert seen == {
        "run": None,
        "baseline": "b.json",
        "best": "ndcg@5",
        "experiment": "e",
        "sweep": "p1",
        "golden": "g.jsonl",
        "force": True,
        "uri": "sqlite:///x.db",
    }
    assert "promoted run abc123" in capsys.readouterr().out


def test_defaults(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)  # outside any project: golden/baseline.json here
    seen = {}
    monkeypatch.setattr(
        promote_mod,
        "promote",
        lambda run, baseline, **kw: seen.update(run=run, baseline=baseline, **kw) or Done(),
    )
    assert main(["promote", "runs/r1/report.json"]) == 0
    assert seen["run"] == "runs/r1/report.json" and seen["baseline"] == "golden/baseline.json"
    assert seen["experiment"] is None and seen["force"] is False and seen["best"] is None


def test_a_refusal_is_one_line_and_exit_2(monkeypatch, capsys):
    def refuse(*a, **kw):
        raise InputError("run abc was measured on another golden set; pass --force to promote it")

    monkeypatch.setattr(promote_mod, "promote", refuse)
    assert main(["promote", "abc"]) == 2
    err = capsys.readouterr().err.strip()
    assert "another golden set" in err and len(err.splitlines()) == 1


@pytest.mark.parametrize("command", ["promote", "score"])
def test_python_m_rageval_dispatches_commands(command):
    out = subprocess.run(
        [sys.executable, "-m", "rageval", command, "--help"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0 and "usage:" in out.stdout and command in out.stdout
