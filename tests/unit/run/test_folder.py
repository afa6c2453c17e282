"""Run-folder states that promote and log trust, and OSErrors turned into one line."""

from __future__ import annotations

import errno
import json

from rageval.cli.main import main
from rageval.run.folder import MARKER


def test_promote_refuses_a_failed_or_unfinished_run(tmp_path, capsys):
    report = {"metrics": {"ndcg@5": 0.5}, "per_query": [], "digests": {}, "k": 5}
    run = tmp_path / "run"
    run.mkdir()
    (run / "report.json").write_text(json.dumps(report))
    (run / "error.json").write_text(json.dumps({"error": "boom"}))
    baseline = tmp_path / "baseline.json"
    assert main(["promote", str(run / "report.json"), "--baseline", str(baseline), "--force"]) == 2
    assert "failed" in capsys.readouterr().err and not baseline.exists()
    (run / "error.json").unlink()
    (run / MARKER).write_text("{}")
    assert main(["promote", str(run / "report.json"), "--baseline", str(baseline), "--force"]) == 2
    assert "did not finish" in capsys.readouterr().err and not baseline.exists()
    assert main(["log", str(run)]) == 2
    (run / MARKER).unlink()
    assert main(["promote", str(run / "report.json"), "--baseline", str(baseline), "--force"]) == 0


def test_cli_commands_turn_a_full_disk_into_one_line(mini, tmp_path, monkeypatch, capsys):
    import rageval.authoring.edit as edit

    def full(path, text):
        raise OSError(errno.ENOSPC, "No space left on device", str(path))

    monkeypatch.setattr(edit, "atomic_write_text", full)
    golden = tmp_path / "g.jsonl"
    code = main(
        [
            "golden",
            "add",
            str(golden),
            "--corpus",
            str(mini / "corpus"),
            "--query",
            "How do I reset my laptop password?",
            "--evidence",
            "faq",
            "Open a ticket in Helm",
        ]
    )
    assert code == 1
    assert capsys.readouterr().err.strip() == (
        f"rageval: error: cannot write {golden}: No space left on device; nothing half-written "
        "was kept. Free space (or fix the disk) and run again"
    )
