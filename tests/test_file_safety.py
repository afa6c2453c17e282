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
from rageval.errors import InputError
from rageval.formats.atomic import atomic_write_text, locked, write_target
from rageval.rundir import MARKER

ROOT = Path(__file__).resolve().parent.parent


def bm25_args(mini, tmp_path, *extra) -> list[str]:
    """A run that needs no embedding model: BM25 over the mini corpus, MLflow off."""
    return ["dataset=custom", f"dataset.corpus={mini / 'corpus'}", f"dataset.golden={mini / 'golden.jsonl'}",
            f"cache_dir={tmp_path / 'cache'}", "search=bm25", "latency_sample=0", "mlflow.enabled=false",
            *extra]  # fmt: skip


def test_six_concurrent_golden_adds_keep_all_six_entries(mini, tmp_path):
    golden = tmp_path / "retriever.jsonl"
    quote = "Open a ticket in Helm"
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "rageval", "golden", "add", str(golden), "--corpus",
             str(mini / "corpus"), "--query", f"laptop password question number {i}",
             "--evidence", "faq", quote, "--id", f"c{i}"],
            cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        for i in range(6)
    ]
    results = [p.communicate(timeout=120) + (p.returncode,) for p in procs]
    assert all(code == 0 for _, _, code in results), results
    ids = sorted(json.loads(line)["id"] for line in golden.read_text().splitlines())
    assert ids == [f"c{i}" for i in range(6)]


def test_the_lock_is_reentrant_and_serialises_threads(tmp_path):
    import threading
    import time

    path, order = tmp_path / "g.jsonl", []

    def worker(name):
        with locked(path):
            order.append(f"{name}+")
            time.sleep(0.05)
            with locked(path):  # nested: no deadlock
                order.append(f"{name}-")

    threads = [threading.Thread(target=worker, args=(n,)) for n in "ab"]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert order in (["a+", "a-", "b+", "b-"], ["b+", "b-", "a+", "a-"])


def test_atomic_write_through_a_symlink_replaces_the_target_and_keeps_the_link(tmp_path):
    real = tmp_path / "shared" / "baseline.json"
    real.parent.mkdir()
    real.write_text("old")
    link = tmp_path / "baseline.json"
    link.symlink_to(real)
    atomic_write_text(link, "new")
    assert link.is_symlink() and real.read_text() == "new"
    # a chain of links, and a dangling one (the file it names is created)
    link2 = tmp_path / "again.json"
    link2.symlink_to(link)
    atomic_write_text(link2, "newer")
    assert real.read_text() == "newer" and link2.is_symlink()
    dangling = tmp_path / "dangling.json"
    dangling.symlink_to(tmp_path / "made.json")
    atomic_write_text(dangling, "x")
    assert (tmp_path / "made.json").read_text() == "x" and dangling.is_symlink()


@pytest.mark.parametrize("kind", ["fifo", "folder", "device"])
def test_atomic_write_refuses_a_target_that_is_not_a_regular_file(tmp_path, kind):
    target = {"fifo": tmp_path / "f", "folder": tmp_path / "d", "device": Path("/dev/full")}[kind]
    if kind == "fifo":
        os.mkfifo(target)
    elif kind == "folder":
        target.mkdir()
    with pytest.raises(InputError, match="refusing to write"):
        atomic_write_text(target, "x")
    assert not target.is_file()  # still a device, FIFO or folder
    link = tmp_path / "link"
    link.symlink_to(target)
    with pytest.raises(InputError):
        write_target(link)


def test_promote_refuses_a_failed_or_unfinished_run(tmp_path, capsys):
    report = {"metrics": {"ndcg@5": 0.5}, "per_query": [], "digests": {}, "k": 5}
    run = tmp_path / "run"
    run.mkdir()
    (run / "report.json").write_text(json.dumps(report))
    (run / "error.json").write_text(json.dumps({"error": "boom"}))
    baseline = tmp_path / "baseline.json"
    assert main(["promote", str(run / "report.json"), "--baseline", str(baseline)]) == 2
    assert "failed" in capsys.readouterr().err and not baseline.exists()
    (run / "error.json").unlink()
    (run / MARKER).write_text("{}")
    assert main(["promote", str(run / "report.json"), "--baseline", str(baseline)]) == 2
    assert "did not finish" in capsys.readouterr().err and not baseline.exists()
    assert main(["log", str(run)]) == 2
    (run / MARKER).unlink()
    assert main(["promote", str(run / "report.json"), "--baseline", str(baseline)]) == 0


def test_a_failed_rerun_in_a_reused_folder_leaves_no_stale_report(mini, tmp_path, capsys):
    out = tmp_path / "run"
    assert run_app(bm25_args(mini, tmp_path, f"hydra.run.dir={out}")) == 0
    assert (out / "report.json").is_file() and not (out / MARKER).exists()
    with pytest.raises(SystemExit) as exit_:
        run_app(bm25_args(mini, tmp_path, f"hydra.run.dir={out}", f"dataset.corpus={tmp_path / 'none'}"))
    assert exit_.value.code == 2
    assert not (out / "report.json").exists()
    assert "corpus not found" in json.loads((out / "error.json").read_text())["error"]
    baseline = tmp_path / "b.json"
    assert main(["promote", str(out / "report.json"), "--baseline", str(baseline)]) == 2
    # and a later success removes the error
    assert run_app(bm25_args(mini, tmp_path, f"hydra.run.dir={out}")) == 0
    assert (out / "report.json").is_file() and not (out / "error.json").exists()


def test_a_write_that_fails_mid_run_leaves_the_folder_marked_incomplete(mini, tmp_path, monkeypatch):
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
    proc = subprocess.run([sys.executable, "-m", "rageval", *bm25_args(mini, tmp_path, override,
                           f"hydra.run.dir={out}")], cwd=tmp_path, capture_output=True, text=True)  # fmt: skip
    assert proc.returncode == code, proc.stderr
    assert message in proc.stderr and "Traceback" not in proc.stderr
    assert message in json.loads((out / "error.json").read_text())["error"]


def test_an_unwritable_run_folder_is_one_line(mini, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("a file where a folder should be")
    proc = subprocess.run([sys.executable, "-m", "rageval", *bm25_args(mini, tmp_path,
                           f"hydra.run.dir={blocker / 'run'}")], cwd=tmp_path, capture_output=True,
                          text=True)  # fmt: skip
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr and str(blocker) in proc.stderr


@pytest.mark.parametrize("err", [errno.ENOSPC, errno.EROFS])
def test_a_full_disk_or_read_only_cache_after_embedding_is_one_line(mini, tmp_path, monkeypatch,
                                                                    capsys, err):  # fmt: skip
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


def test_import_beir_force_keeps_the_old_corpus_until_the_new_one_is_complete(tmp_path, monkeypatch):
    from beir_fixture import make_beir

    from rageval.cli import import_beir as mod

    src = make_beir(tmp_path / "beir")
    out = tmp_path / "out"
    mod.import_beir(src, out, corpus_format="folder")
    before = sorted(p.relative_to(out) for p in out.rglob("*"))
    golden_before = (out / "retriever.jsonl").read_bytes()
    calls = {"n": 0}
    real = Path.write_bytes

    def flaky(self, data):
        calls["n"] += 1
        if calls["n"] == 2:
            raise OSError(errno.ENOSPC, "No space left on device", str(self))
        return real(self, data)

    monkeypatch.setattr(Path, "write_bytes", flaky)
    with pytest.raises(OSError):
        mod.import_beir(src, out, corpus_format="folder", force=True)
    monkeypatch.undo()
    assert sorted(p.relative_to(out) for p in out.rglob("*")) == before
    assert (out / "retriever.jsonl").read_bytes() == golden_before
    mod.import_beir(src, out, corpus_format="folder", force=True)
    assert sorted(p.relative_to(out) for p in out.rglob("*")) == before


def test_an_index_cache_that_cannot_be_written_costs_a_warning_not_the_run(tmp_path, monkeypatch):
    import faiss
    import numpy as np

    from rageval.retrieval.local.dense import FaissRetriever

    def read_only(index, path):
        raise RuntimeError(f"Error: 'f' failed: could not open {path} for writing: Read-only file system")

    monkeypatch.setattr(faiss, "write_index", read_only)
    vecs = np.random.default_rng(0).standard_normal((50, 8)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    r = FaissRetriever(index_type="hnsw", cache_dir=str(tmp_path), progress=False)
    with pytest.warns(UserWarning, match="could not cache the FAISS index.*Read-only file system"):
        r.add_vectors([f"d{i}" for i in range(50)], vecs, fingerprint="fp")
    assert r.search_vectors(vecs[:1], 3)[0].ids[0] == "d0"
    assert not list(tmp_path.rglob("*.tmp"))


def test_cli_commands_turn_a_full_disk_into_one_line(mini, tmp_path, monkeypatch, capsys):
    import rageval.authoring.edit as edit

    def full(path, text):
        raise OSError(errno.ENOSPC, "No space left on device", str(path))

    monkeypatch.setattr(edit, "atomic_write_text", full)
    golden = tmp_path / "g.jsonl"
    code = main(["golden", "add", str(golden), "--corpus", str(mini / "corpus"), "--query",
                 "How do I reset my laptop password?", "--evidence", "faq", "Open a ticket in Helm"])  # fmt: skip
    assert code == 1
    assert capsys.readouterr().err.strip() == (
        f"rageval: error: cannot write {golden}: No space left on device; nothing half-written "
        "was kept. Free space (or fix the disk) and run again"
    )
