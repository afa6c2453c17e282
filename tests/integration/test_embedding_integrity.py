"""The red-team repro end to end: a cache whose vectors turned to NaN used to give a complete
report with every metric 0.0; now the segment fails its checksum, is re-embedded, and the metrics
are those of a clean cache."""

from __future__ import annotations

import numpy as np
import pytest


def _overwrite_rows(npy, values: np.ndarray) -> None:
    arr = np.load(npy, mmap_mode="r+")
    arr[:] = values
    arr.flush()
    del arr


def test_nan_segment_no_longer_gives_a_silent_zero_report(mini, model_dir, tmp_path):
    """The red-team repro: a cache whose vectors turned to NaN used to give every metric 0.0."""
    from rageval.embedding import SentenceTransformerEncoder
    from rageval.inputs.chunking import ChunkingSpec
    from rageval.retrieval.local.dense import FaissRetriever
    from rageval.run.evaluation import evaluate
    from rageval.run.spec import RunSpec

    spec = RunSpec(
        corpus=str(mini / "corpus"),
        golden=str(mini / "golden.jsonl"),
        tokenizer_dir=model_dir,
        chunking=ChunkingSpec(64),
        latency_sample=0,
    )

    def run():
        enc = SentenceTransformerEncoder(cache_dir=str(tmp_path), progress=False)
        return evaluate(spec, FaissRetriever(progress=False), enc)

    clean = run()
    for npy in (tmp_path / "embeddings").rglob("seg-*.npy"):
        arr = np.load(npy)
        _overwrite_rows(npy, np.full(arr.shape, np.nan, np.float32))
    with pytest.warns(UserWarning, match="checksum does not match"):
        again = run()
    assert again.metrics == clean.metrics and max(clean.metrics.values()) > 0
