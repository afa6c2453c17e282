"""Every command writes under the project's root, whatever folder it runs from: a run, a promote
and a check started inside the project's corpus/ leave the corpus as it was (no outputs/, no
mlflow.db, no mlruns/), so a later run indexes the same documents."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from rageval.inputs.corpus import corpus_digest, load_corpus

pytestmark = pytest.mark.integration


def _files(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def _rageval(args: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "rageval", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_commands_run_from_the_corpus_folder_write_under_the_project_root(tmp_path):
    from rageval.app.scaffold import init_project

    root = tmp_path / "team"
    init_project(root)
    corpus = root / "corpus"
    before, digest = _files(corpus), corpus_digest(load_corpus(corpus))
    env = {
        **{
            k: v
            for k, v in os.environ.items()
            if k not in ("RAGEVAL_PROJECT", "MLFLOW_TRACKING_URI")
        },
        "RAGEVAL_CACHE_DIR": str(tmp_path / "cache"),
        "HF_HUB_OFFLINE": "1",
    }
    run = _rageval(["latency_sample=2"], corpus, env)
    assert run.returncode == 0, run.stderr[-2000:]
    reports = list((root / "outputs").rglob("report.json"))
    assert len(reports) == 1, run.stdout[-2000:]
    assert (root / "mlflow.db").is_file()

    promote = _rageval(["promote", str(reports[0])], corpus, env)
    assert promote.returncode == 0, promote.stderr[-2000:]
    check = _rageval(["check"], corpus, env)
    assert check.returncode == 0, check.stdout[-2000:] + check.stderr[-2000:]
    assert list((root / "outputs" / "check").rglob("gate.md"))

    assert _files(corpus) == before  # nothing written, nothing changed
    assert sorted(p.name for p in corpus.iterdir()) == sorted(before)  # no empty folder either
    assert corpus_digest(load_corpus(corpus)) == digest

    # a stray gate report copied into the corpus: skipped and named, the corpus stays 8 documents
    stray = corpus / "outputs" / "check" / "old" / "gate.md"
    stray.parent.mkdir(parents=True)
    stray.write_text(next((root / "outputs" / "check").rglob("gate.md")).read_text())
    out = root / "outputs" / "stray"
    run = _rageval(["mlflow.enabled=false", "latency_sample=2", f"hydra.run.dir={out}"], root, env)
    assert run.returncode == 0, run.stderr[-2000:]
    said = run.stdout + run.stderr
    assert "skipped 1 file(s)" in said and "outputs/check/old/gate.md" in said
    report = json.loads((out / "report.json").read_text())
    assert report["counts"]["documents"] == len(before)
    assert report["digests"]["corpus"] == digest
