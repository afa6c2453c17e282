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


def test_a_missing_report_is_named_and_no_tracking_store_is_made(tmp_path, monkeypatch, capsys):
    """A report path that is not there is a missing file (or a failed run), never an MLflow run
    id; a lookup where nothing was logged says so, and leaves no empty mlflow.db behind."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    baseline = tmp_path / "baseline.json"
    run = tmp_path / "run"
    run.mkdir()
    args = ["--baseline", str(baseline), "--force"]
    assert main(["promote", "run/report.json", *args]) == 2
    assert "run/report.json: no such report file" in capsys.readouterr().err
    (run / "error.json").write_text(json.dumps({"error": "corpus not found"}))
    assert main(["promote", str(run / "report.json"), *args]) == 2
    assert "failed" in capsys.readouterr().err
    for lookup in (["0123456789abcdef0123456789abcdef"], ["--best", "ndcg@5"]):
        assert main(["promote", *lookup, *args]) == 2
        err = capsys.readouterr().err
        assert f"no MLflow tracking store at {tmp_path / 'mlflow.db'}" in err, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run"]  # no mlflow.db, no baseline


def test_promote_takes_a_run_folder_for_its_report(tmp_path, capsys):
    report = {"metrics": {"ndcg@5": 0.5}, "per_query": [], "digests": {}, "k": 5}
    run = tmp_path / "run"
    run.mkdir()
    (run / "report.json").write_text(json.dumps(report))
    baseline = tmp_path / "baseline.json"
    assert main(["promote", str(run), "--baseline", str(baseline), "--force"]) == 0
    assert json.loads(baseline.read_text())["metrics"] == {"ndcg@5": 0.5}
    (run / "error.json").write_text("{}")
    assert main(["promote", str(run), "--baseline", str(baseline), "--force"]) == 2
    assert "failed" in capsys.readouterr().err
