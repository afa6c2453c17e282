"""Embeddings checked where they enter: vectors a model returns (NaN, infinite, all-zero) are
refused naming the texts, and every cache segment is checked against its checksum when first
read; a corrupt one is deleted with a warning and its texts are embedded again."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import rageval.embedding.cache as cache_mod
from rageval.embedding.cache import (
    EmbeddingCache,
    EmbeddingError,
    check_vectors,
    text_key,
)
from rageval.types import Chunk

KEYS = [text_key(t) for t in ("alpha", "beta", "gamma")]
VECS = np.random.default_rng(0).standard_normal((3, 8)).astype(np.float32)


def _overwrite_rows(npy, values: np.ndarray) -> None:
    """Replace a segment's vectors in place, keeping the .npy header (what a bad disk does)."""
    arr = np.load(npy, mmap_mode="r+")
    arr[:] = values
    arr.flush()
    del arr


def _lookup_warning(root, keys):
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        out, missing = EmbeddingCache(root, "fp").lookup(keys)
    return out, missing, [str(x.message) for x in w]


@pytest.mark.parametrize("bad", ["nan", "random", "one-bit"])
def test_a_corrupt_segment_is_deleted_with_a_warning_and_counts_as_missing(tmp_path, bad):
    c = EmbeddingCache(tmp_path, "fp")
    c.put(KEYS[:2], VECS[:2])
    c.put(KEYS[2:], VECS[2:])
    npy = next(p for p in sorted(c.dir.glob("seg-*.npy")) if np.load(p).shape[0] == 2)
    if bad == "nan":
        _overwrite_rows(npy, np.full((2, 8), np.nan, np.float32))
    elif bad == "random":
        _overwrite_rows(npy, np.random.default_rng(1).standard_normal((2, 8)))
    else:
        raw = bytearray(npy.read_bytes())
        raw[-1] ^= 1
        npy.write_bytes(bytes(raw))
    out, missing, warned = _lookup_warning(tmp_path, KEYS)
    assert missing == [0, 1]
    assert np.array_equal(out[2], VECS[2])
    assert any("checksum does not match" in m and npy.stem in m for m in warned)
    assert not npy.exists() and not npy.with_suffix(".keys").exists()
    # put back by the next run, then read without a warning
    EmbeddingCache(tmp_path, "fp").put(KEYS[:2], VECS[:2])
    out, missing, warned = _lookup_warning(tmp_path, KEYS)
    assert missing == [] and np.array_equal(out, VECS) and not warned


def test_a_truncated_segment_is_dropped(tmp_path):
    c = EmbeddingCache(tmp_path, "fp")
    c.put(KEYS, VECS)
    npy = next(c.dir.glob("seg-*.npy"))
    npy.write_bytes(npy.read_bytes()[:-40])
    _, missing, warned = _lookup_warning(tmp_path, KEYS)
    assert missing == [0, 1, 2] and any("unreadable" in m for m in warned)


def test_a_key_held_by_a_good_and_a_bad_segment_is_served_by_the_good_one(tmp_path):
    c = EmbeddingCache(tmp_path, "fp")
    c.put(KEYS, VECS)  # two processes stored the same texts, in two groupings
    c.put(KEYS[::-1], VECS[::-1])
    first = sorted(c.dir.glob("seg-*.npy"))[0]  # segments are indexed in name order, first wins
    _overwrite_rows(first, np.zeros((3, 8)))
    out, missing, warned = _lookup_warning(tmp_path, KEYS)
    assert missing == [] and np.array_equal(out, VECS) and len(warned) == 1
    assert not first.exists() and len(list(c.dir.glob("seg-*.npy"))) == 1


def test_segments_without_a_checksum_are_still_read_and_checked_for_nan(tmp_path):
    c = EmbeddingCache(tmp_path, "fp")
    c.put(KEYS, VECS)
    keys_file = next(c.dir.glob("seg-*.keys"))
    keys_file.write_bytes(keys_file.read_bytes()[: -cache_mod.TRAILER])  # an older rageval's
    out, missing, warned = _lookup_warning(tmp_path, KEYS)
    assert missing == [] and np.array_equal(out, VECS) and not warned
    _overwrite_rows(keys_file.with_suffix(".npy"), np.where(VECS > 0, np.nan, VECS))
    _, missing, warned = _lookup_warning(tmp_path, KEYS)
    assert missing == [0, 1, 2] and any("non-finite or all-zero" in m for m in warned)


@pytest.mark.parametrize(
    "value, kind", [(np.nan, "non-finite"), (np.inf, "non-finite"), (0.0, "all-zero")]
)
def test_bad_vectors_from_a_model_are_refused_naming_the_texts(value, kind):
    texts = ["fine text", "the broken one", "also fine"]
    vecs = VECS.copy()
    vecs[1] = value
    with pytest.raises(EmbeddingError, match=rf"{kind}.*1 of 3 texts.*'the broken one'"):
        check_vectors(vecs, texts)
    assert check_vectors(VECS, texts) is VECS
    with pytest.raises(EmbeddingError, match="one vector"):
        check_vectors(VECS[:2], texts)


class NanEncoder:
    fingerprint, dim = "nan-model", 8

    def encode_documents(self, texts):
        out = np.ones((len(texts), 8), np.float32)
        out[-1] = np.nan
        return out

    encode_queries = encode_documents


def test_a_plugin_encoder_giving_nan_stops_indexing_with_the_chunk_named():
    from rageval.retrieval.local.dense import FaissRetriever

    chunks = [Chunk(f"c{i}", "d", i, f"chunk text {i}", 0, 1, 1) for i in range(3)]
    with pytest.raises(EmbeddingError, match=r"1 of 3 chunks.*'chunk text 2'"):
        FaissRetriever(progress=False).index(chunks, NanEncoder())


def test_the_model_never_caches_nan(tmp_path, monkeypatch):
    from rageval.embedding import encoder as enc_mod

    encoder = enc_mod.SentenceTransformerEncoder(cache_dir=str(tmp_path), progress=False)
    monkeypatch.setattr(encoder, "_load", lambda: None)
    monkeypatch.setattr(
        enc_mod, "encode_stable", lambda model, texts, bs, **kw: np.full((len(texts), 8), np.nan)
    )
    with pytest.raises(EmbeddingError, match="'some text'.*nothing was cached"):
        encoder.encode_documents(["some text"])
    assert not list(tmp_path.rglob("seg-*"))
