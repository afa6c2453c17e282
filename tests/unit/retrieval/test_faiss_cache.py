"""A FAISS index cache that cannot be written costs a warning, not the run."""

from __future__ import annotations

import pytest


def test_an_index_cache_that_cannot_be_written_costs_a_warning_not_the_run(tmp_path, monkeypatch):
    import faiss
    import numpy as np

    from rageval.retrieval.local.dense import FaissRetriever

    def read_only(index, path):
        raise RuntimeError(
            f"Error: 'f' failed: could not open {path} for writing: Read-only file system"
        )

    monkeypatch.setattr(faiss, "write_index", read_only)
    vecs = np.random.default_rng(0).standard_normal((50, 8)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    # a cache folder deep enough that FAISS's message (path first, cause last) runs long
    deep = tmp_path.joinpath(*["a-rather-long-folder-name"] * 12)
    r = FaissRetriever(index_type="hnsw", cache_dir=str(deep), progress=False)
    with pytest.warns(
        UserWarning, match="could not cache the FAISS index.*Read-only file system"
    ) as record:
        r.add_vectors([f"d{i}" for i in range(50)], vecs, fingerprint="fp")
    assert r.search_vectors(vecs[:1], 3)[0].ids[0] == "d0"
    assert not list(tmp_path.rglob("*.tmp"))
    assert "a temporary file" in str(record[0].message)
