"""A damaged index cache costs a warning and a rebuild, never the run nor its numbers: the app run
on the mini set with an HNSW index and BM25 (search=hybrid), its cached indexes then truncated or
overwritten with random bytes of the same size; the next run warns naming the file, exits 0 and
reports the metrics of the clean run."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from rageval.app.main import run_app

pytestmark = pytest.mark.integration


def _run(mini, shared_cache, indexes: Path, out: Path) -> dict:
    code = run_app(
        [
            "dataset=custom",
            f"dataset.corpus={mini / 'corpus'}",
            f"dataset.golden={mini / 'golden.jsonl'}",
            f"cache_dir={shared_cache}",  # the embeddings: the session's cache
            f"backend.cache_dir={indexes}",  # the indexes: this test's own
            "backend.faiss.index_type=hnsw",
            "search=hybrid",
            "chunk=64",
            "mlflow.enabled=false",
            "latency_sample=0",
            f"hydra.run.dir={out}",
        ]
    )
    assert code == 0
    return json.loads((out / "report.json").read_text())["metrics"]


def _truncate(f: Path) -> None:
    f.write_bytes(f.read_bytes()[: f.stat().st_size // 3])


def _random(f: Path) -> None:
    f.write_bytes(os.urandom(f.stat().st_size))


@pytest.mark.parametrize("damage", [_truncate, _random], ids=["truncated", "random bytes"])
def test_a_damaged_index_cache_is_rebuilt_and_the_run_scores_as_a_clean_one(
    mini, shared_cache, tmp_path, damage
):
    indexes = tmp_path / "indexes-cache"
    clean = _run(mini, shared_cache, indexes, tmp_path / "clean")
    (hnsw,) = (indexes / "indexes").glob("faiss-hnsw-*/index.faiss")
    bm25 = max(
        (p for p in (indexes / "indexes").glob("bm25-*/*") if p.name != "rageval-sha256.json"),
        key=lambda p: p.stat().st_size,
    )
    damage(hnsw)
    damage(bm25)
    with pytest.warns(UserWarning) as record:
        again = _run(mini, shared_cache, indexes, tmp_path / "again")
    said = " ".join(str(w.message) for w in record)
    assert f"cached FAISS index {hnsw.parent} is damaged" in said
    assert f"cached BM25 index {bm25.parent} is damaged" in said
    assert again == pytest.approx(clean, abs=1e-9, nan_ok=True)
