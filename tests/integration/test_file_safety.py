"""Lost or mixed data: concurrent writers of one golden set, atomic writes through symlinks and
onto devices, run folders that a failed or half-written re-run leaves behind, ``import beir
--force`` interrupted, and the traceback-shaped failures (full disk, read-only cache, unwritable
run folder, a golden path that is not a string) that must be one line and an error.json."""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from rageval.app.main import run_app
from rageval.cli.main import main
from rageval.run.folder import MARKER

ROOT = Path(__file__).resolve().parent.parent


def bm25_args(mini, tmp_path, *extra) -> list[str]:
    """A run that needs no embedding model: BM25 over the mini corpus, MLflow off."""
    return [
        "dataset=custom",
        f"dataset.corpus={mini / 'corpus'}",
        f"dataset.golden={mini / 'golden.jsonl'}",
        f"cache_dir={tmp_path / 'cache'}",
        "search=bm25",
        "latency_sample=0",
        "mlflow.enabled=false",
        *extra,
    ]


def test_six_concurrent_golden_adds_keep_all_six_entries(mini, tmp_path):
    golden = tmp_path / "retriever.jsonl"
    quote = "Open a ticket in Helm"
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "rageval",
                "golden",
                "add",
                str(golden),
                "--corpus",
                str(mini / "corpus"),
                "--query",
                f"laptop password question number {i}",
                "--evidence",
                "faq",
                quote,
                "--id",
                f"c{i}",
            ],
            cwd=tmp_path,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for i in range(6)
    ]
    results = [p.communicate(timeout=120) + (p.returncode,) for p in procs]
    assert all(code == 0 for _, _, code in results), results
    ids = sorted(json.loads(line)["id"] for line in golden.read_text().splitlines())
    assert ids == [f"c{i}" for i in range(6)]


def test_a_failed_rerun_in_a_reused_folder_leaves_no_stale_report(mini, tmp_path, capsys):
    out = tmp_path / "run"
    assert run_app(bm25_args(mini, tmp_path, f"hydra.run.dir={out}")) == 0
    assert (out / "report.json").is_file() and not (out / MARKER).exists()
    with pytest.raises(SystemExit) as exit_:
        run_app(
            bm25_args(mini, tmp_path, f"hydra.run.dir={out}", f"dataset.corpus={tmp_path / 'none'}")
        )
    assert exit_.value.code == 2
    assert not (out / "report.json").exists()
    assert "corpus not found" in json.loads((out / "error.json").read_text())["error"]
    baseline = tmp_path / "b.json"
    assert main(["promote", str(out / "report.json"), "--baseline", str(baseline), "--force"]) == 2
    # and a later success removes the error
    assert run_app(bm25_args(mini, tmp_path, f"hydra.run.dir={out}")) == 0
    assert (out / "report.json").is_file() and not (out / "error.json").exists()


def test_a_write_that_fails_mid_run_leaves_the_folder_marked_incomplete(
    mini, tmp_path, monkeypatch
):
    import rageval.formats.trec as trec

    out = tmp_path / "run"
    assert run_app(bm25_args(mini, tmp_path, f"hydra.run.dir={out}")) == 0

    def full(path, *a, **k):
        raise OSError(errno.ENOSPC, "No space left on device", str(path))

    monkeypatch.setattr(trec, "write_qrels", full)
    with pytest.raises(SystemExit) as exit_:
        run_app(bm25_args(mini, tmp_path, f"hydra.run.dir={out}"))
    assert exit_.value.code == 1  # the run failed; the input was fine
    assert not (out / "report.json").exists()  # never the old report beside the new run.trec
    assert "No space left on device" in json.loads((out / "error.json").read_text())["error"]


@pytest.mark.parametrize(
    "override, code, message",
    [
        ("dataset.golden={a: 1}", 2, "dataset.golden must be a path"),
        ("dataset.corpus=[1, 2]", 2, "dataset.corpus must be a path"),
    ],
)
def test_config_values_of_the_wrong_shape_are_one_line(mini, tmp_path, override, code, message):
    out = tmp_path / "run"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "rageval",
            *bm25_args(mini, tmp_path, override, f"hydra.run.dir={out}"),
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == code, proc.stderr
    assert message in proc.stderr and "Traceback" not in proc.stderr
    assert message in json.loads((out / "error.json").read_text())["error"]


def test_an_unwritable_run_folder_is_one_line(mini, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("a file where a folder should be")
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "rageval",
            *bm25_args(mini, tmp_path, f"hydra.run.dir={blocker / 'run'}"),
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr and str(blocker) in proc.stderr


@pytest.mark.parametrize("err", [errno.ENOSPC, errno.EROFS])
def test_a_full_disk_or_read_only_cache_after_embedding_is_one_line(
    mini, tmp_path, monkeypatch, capsys, err
):
    import rageval.embedding.cache as cache

    def fail(path, data):
        raise OSError(err, os.strerror(err), str(path))

    monkeypatch.setattr(cache, "atomic_write_bytes", fail)
    out = tmp_path / "run"
    args = bm25_args(mini, tmp_path, f"hydra.run.dir={out}", "search=vector", "chunk=512")
    with pytest.raises(SystemExit) as exit_:
        run_app(args)
    assert exit_.value.code == (1 if err == errno.ENOSPC else 2)
    line = capsys.readouterr().err.strip().splitlines()[-1]
    assert line.startswith("rageval: error: cannot write") and os.strerror(err) in line
    assert (out / "error.json").is_file() and not (out / "report.json").exists()
