"""Golden and corpus paths that leave their folders through ``..`` or symlinks are used as written;
whatever they point at, rageval writes only into the run dir, cache_dir and the baseline path."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from rageval.app.main import run_app
from rageval.cli.main import main
from rageval.inputs.corpus import load_corpus

pytestmark = pytest.mark.integration


def snapshot(root: Path) -> dict[str, str]:
    """Every file and link below ``root``, with a digest of what it holds."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in filenames + [d for d in dirnames if os.path.islink(os.path.join(dirpath, d))]:
            p = Path(dirpath, name)
            out[str(p)] = (
                os.readlink(p) if p.is_symlink() else hashlib.sha256(p.read_bytes()).hexdigest()
            )
    return out


@pytest.fixture
def layout(tmp_path, mini) -> Path:
    """data/ (corpus, golden set), links/corpus -> data/corpus, a symlinked file from outside/ and
    a symlink loop inside the corpus; work/ (the working directory), home/ and tmp/."""
    for d in ("work", "home", "tmp", "outside", "links", "data/sub", "baseline"):
        (tmp_path / d).mkdir(parents=True)
    corpus = tmp_path / "data" / "corpus"
    shutil.copytree(mini / "corpus", corpus)
    shutil.copy(mini / "golden.jsonl", tmp_path / "data" / "golden.jsonl")
    (tmp_path / "outside" / "extra.md").write_text(
        "Parking permits are issued by the front desk.\n"
    )
    (corpus / "extra.md").symlink_to("../../outside/extra.md")
    (corpus / "loop").symlink_to(".", target_is_directory=True)
    (tmp_path / "links" / "corpus").symlink_to("../data/corpus", target_is_directory=True)
    return tmp_path


def test_paths_are_used_as_written_and_nothing_is_written_outside_the_allowed_places(
    layout, monkeypatch
):
    # the baseline's three files (its per-query table, its embedding canary's vectors);
    # matplotlib's own font cache (written once per home, by matplotlib)
    work, written = (
        layout / "work",
        {
            "runs",
            "cache",
            "baseline/baseline.json",
            "baseline/baseline.per_query.csv",
            "baseline/baseline.canary.npy",
            "home/.cache/matplotlib",
        },
    )
    corpus, golden = "../links/corpus", "../data/sub/../golden.jsonl"
    before = snapshot(layout)
    env = {
        **os.environ,
        "HOME": str(layout / "home"),
        "TMPDIR": str(layout / "tmp"),
        "HF_HUB_OFFLINE": "1",
    }
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "rageval",
            "dataset=custom",
            f"dataset.corpus={corpus}",
            f"dataset.golden={golden}",
            "cache_dir=../cache",
            "hydra.run.dir=../runs/r1",
            "mlflow.enabled=false",
            "latency_sample=2",
        ],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    monkeypatch.chdir(work)
    assert (
        main(
            [
                "promote",
                "../runs/r1/report.json",
                "--baseline",
                "../baseline/baseline.json",
                "--golden",
                golden,
            ]
        )
        == 0
    )  # the project gates on this golden set, not the configured demo's

    after = snapshot(layout)
    changed = {p for p in after.keys() | before.keys() if after.get(p) != before.get(p)}
    outside = [p for p in changed if not any(p.startswith(str(layout / w)) for w in written)]
    assert outside == [], outside  # not the data, home, tmp, the working directory or outside/
    assert (
        any("/cache/embeddings/" in p for p in changed)
        and str(layout / "baseline/baseline.json") in changed
    )
    report = json.loads((layout / "runs" / "r1" / "report.json").read_text())
    assert (
        report["config"]["dataset"]["corpus"] == corpus
        and report["config"]["dataset"]["golden"] == golden
    )
    assert (
        report["counts"]["documents"] == 6
    )  # the symlinked file counts, the looping link is not followed
    ids = [d.id for d in load_corpus(layout / "links" / "corpus")]
    assert "extra" in ids and not any(i.startswith("loop/") for i in ids)


def test_a_missing_path_is_reported_as_written(layout, shared_cache, monkeypatch, capsys):
    monkeypatch.chdir(layout / "work")
    golden = "../data/missing/../golden.jsonl"  # "missing" does not exist, so neither does this
    with pytest.raises(SystemExit) as exit_:
        run_app(
            [
                "dataset=custom",
                "dataset.corpus=../links/corpus",
                f"dataset.golden={golden}",
                f"cache_dir={shared_cache}",
                "mlflow.enabled=false",
                "hydra.run.dir=../runs/r2",
            ]
        )
    assert exit_.value.code == 2
    assert f"rageval: error: {golden}: golden set not found" in capsys.readouterr().err
