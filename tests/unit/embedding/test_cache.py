import numpy as np

from rageval.embedding.cache import EmbeddingCache, _copy_rows, text_key


def test_put_lookup_roundtrip_across_instances(tmp_path):
    keys = [text_key(t) for t in ("a", "b", "c")]
    vecs = np.arange(12, dtype=np.float32).reshape(3, 4)
    EmbeddingCache(tmp_path, "fp").put(keys[:2], vecs[:2])
    other = EmbeddingCache(tmp_path, "fp")
    out, missing = other.lookup(keys)
    assert missing == [2]
    assert np.array_equal(out[:2], vecs[:2])
    other.put(keys[2:], vecs[2:])
    out, missing = EmbeddingCache(tmp_path, "fp").lookup(keys)
    assert missing == [] and np.array_equal(out, vecs)


def test_fingerprints_and_prompts_do_not_share_vectors(tmp_path):
    EmbeddingCache(tmp_path, "model-a").put([text_key("x")], np.ones((1, 2), np.float32))
    assert EmbeddingCache(tmp_path, "model-b").lookup([text_key("x")])[1] == [0]
    assert text_key("x") != text_key("x", prompt="query: ")


def test_half_written_segments_are_ignored_and_temp_files_never_read(tmp_path):
    c = EmbeddingCache(tmp_path, "fp")
    c.put([text_key("a")], np.ones((1, 3), np.float32))
    d = c.dir
    # a writer killed after the .npy but before its .keys: segment not complete, not read
    (d / "seg-dead.npy").write_bytes(b"\x93NUMPY garbage")
    # a corrupted complete segment: skipped with a warning, never raises
    (d / "seg-bad.keys").write_bytes(b"0123456789abcdef")
    (d / "seg-bad.npy").write_bytes(b"not an npy file")
    (d / ".seg-x.npy.tmp").write_bytes(b"partial")
    fresh = EmbeddingCache(tmp_path, "fp")
    import warnings

    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        out, missing = fresh.lookup([text_key("a"), text_key("b")])
    assert missing == [1] and np.array_equal(out[0], np.ones(3))
    assert any("seg-bad" in str(x.message) for x in w)


def test_no_pickle_in_segments(tmp_path):
    c = EmbeddingCache(tmp_path, "fp")
    c.put([text_key("a")], np.ones((1, 3), np.float32))
    npy = next(c.dir.glob("seg-*.npy"))
    np.load(npy, allow_pickle=False)  # would raise if the file needed pickle


def test_copy_rows_matches_fancy_indexing_for_runs_and_scattered_rows():
    seg = np.arange(2000 * 3, dtype=np.float32).reshape(2000, 3)
    rng = np.random.default_rng(0)
    for src in (np.arange(100, 1900), rng.permutation(2000)[:1500]):
        dst = np.arange(len(src)) + 7
        out = np.zeros((len(src) + 7, 3), np.float32)
        _copy_rows(out, dst, seg, src)
        assert np.array_equal(out[dst], seg[src]) and not out[:7].any()


def test_the_key_index_finds_each_key_in_the_first_segment_that_holds_it():
    """The cache's key index (sorted arrays, not a dict of a million bytes objects) answers as a
    dict filled segment by segment with setdefault: first segment, first row wins."""
    import random

    from rageval.embedding.cache import KEY_BYTES, KeyIndex

    rng = random.Random(7)
    pool = [rng.randbytes(KEY_BYTES) for _ in range(300)]
    pool[1] = pool[1][:5] + b"\0" * (KEY_BYTES - 5)  # trailing and inner zero bytes count
    pool[2] = pool[1][:3] + b"\0" + pool[1][4:]
    index, want = KeyIndex(), {}
    for seg in range(6):
        keys = [rng.choice(pool) for _ in range(rng.randint(0, 80))]
        index.add(b"".join(keys), seg)
        for row, k in enumerate(keys):
            want.setdefault(k, seg << 32 | row)
        if seg % 2:  # read between additions, as refresh and lookup interleave
            asked = pool + [b"\xff" * KEY_BYTES, b"\0" * KEY_BYTES]
            assert index.find(asked).tolist() == [want.get(k, -1) for k in asked]
    assert len(index) == len(want)
    assert KeyIndex().find(pool[:2]).tolist() == [-1, -1] and index.find([]).tolist() == []
