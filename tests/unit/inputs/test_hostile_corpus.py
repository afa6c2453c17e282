"""Hostile corpora: two files that would be one document, paths that are not files, documents too
large to tokenize in memory. Each is a one-line InputError naming the file, never a hang or a
wrong document."""

from __future__ import annotations

import os
import threading

import pytest

from rageval.errors import InputError
from rageval.inputs.chunking import ChunkingSpec, chunk_documents
from rageval.inputs.corpus import load_corpus
from rageval.inputs.limits import encode_texts, split_points
from rageval.types import Document


def test_same_stem_two_extensions_is_an_error_naming_both(tmp_path):
    (tmp_path / "faq.txt").write_text("Refunds take five days.")
    (tmp_path / "faq.md").write_text("Refunds are instant.")
    with pytest.raises(InputError) as err:
        load_corpus(tmp_path)
    assert "faq.md" in str(err.value) and "faq.txt" in str(err.value)
    assert "'faq'" in str(err.value)


def test_ids_differing_only_in_case_are_an_error(tmp_path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "Guide.md").write_text("one")
    (tmp_path / "sub" / "guide.md").write_text("two")
    with pytest.raises(InputError, match=r"sub/Guide\.md and sub/guide\.md"):
        load_corpus(tmp_path)


def test_distinct_stems_still_load(tmp_path):
    (tmp_path / "faq.md").write_text("a")
    (tmp_path / "faq-2.md").write_text("b")
    assert sorted(d.id for d in load_corpus(tmp_path)) == ["faq", "faq-2"]


def test_fifo_corpus_is_refused_without_blocking(tmp_path):
    fifo = tmp_path / "corpus.jsonl"
    os.mkfifo(fifo)
    result: list = []
    t = threading.Thread(target=lambda: result.append(_error(load_corpus, fifo)), daemon=True)
    t.start()
    t.join(10)
    if t.is_alive():  # unblock the reader so the suite can go on, then fail
        with open(fifo, "w"):
            pass
        pytest.fail("reading a FIFO corpus blocked")
    assert isinstance(result[0], InputError) and "not a regular file" in str(result[0])


def test_dev_zero_corpus_and_golden_are_refused():
    from rageval.inputs.golden import load_golden

    with pytest.raises(InputError, match="not a regular file"):
        load_corpus("/dev/zero")
    with pytest.raises(InputError, match="/dev/zero"):
        load_golden("/dev/zero")


def test_document_above_the_limit_is_refused_naming_it(tmp_path):
    (tmp_path / "big.txt").write_text("word " * 300_000)  # 1.5 MB
    (tmp_path / "small.txt").write_text("fine")
    with pytest.raises(
        InputError, match=r"big\.txt.*1\.5 MB, above the 1 MB limit.*max_document_mb"
    ):
        load_corpus(tmp_path, max_document_mb=1)
    assert len(load_corpus(tmp_path, max_document_mb=2)) == 2

    jsonl = tmp_path / "c.jsonl"
    jsonl.write_text('{"id": "a", "text": "ok"}\n{"id": "b", "text": "' + "é" * 600_000 + '"}\n')
    with pytest.raises(InputError, match=r"c\.jsonl:2: document 'b' is 1\.2 MB"):
        load_corpus(jsonl, max_document_mb=1)


def test_max_document_mb_reaches_the_pipeline(tmp_path):
    from hydra import compose, initialize_config_dir

    from rageval.app.main import CONF_DIR, build, register_resolvers
    from rageval.errors import ConfigError

    register_resolvers()
    with initialize_config_dir(str(CONF_DIR), version_base="1.3"):
        spec = build(compose("config", ["max_document_mb=0.5"])).spec
        assert spec.max_document_mb == 0.5
        with pytest.raises(ConfigError, match="max_document_mb must be a number > 0"):
            build(compose("config", ["max_document_mb=0"]))


@pytest.mark.parametrize("piece", [7, 16, 64])
def test_long_texts_tokenize_in_pieces_with_the_same_chunks(tokenizer, piece):
    text = "Refunds for annual plans are prorated.\nContact billing@example.com, ext. 42! " * 12
    whole = chunk_documents([Document("d", text)], ChunkingSpec(16, 4), tokenizer)
    import rageval.inputs.limits as limits

    old = limits.PIECE_CHARS
    limits.PIECE_CHARS = piece
    try:
        pieces = chunk_documents([Document("d", text)], ChunkingSpec(16, 4), tokenizer)
    finally:
        limits.PIECE_CHARS = old
    assert [(c.start, c.end, c.n_tokens, c.id) for c in pieces] == [
        (c.start, c.end, c.n_tokens, c.id) for c in whole
    ]
    assert all(type(c.start) is int and type(c.end) is int for c in pieces)


def test_split_points_bound_every_piece_and_prefer_whitespace():
    text = "ab " * 50 + "x" * 70
    cuts = split_points(text, 32)
    assert cuts[0] == 0 and cuts[-1] == len(text)
    assert all(0 < b - a <= 32 for a, b in zip(cuts, cuts[1:], strict=False))
    assert all(text[c - 1] == " " for c in cuts[1:-1] if c <= 150)


def test_encode_texts_matches_encode_batch_for_short_texts(tokenizer):
    texts = ["short one", "another short text"]
    got = encode_texts(tokenizer, texts)
    want = tokenizer.encode_batch(texts, add_special_tokens=False)
    assert [g.offsets for g in got] == [w.offsets for w in want]


def _error(fn, *args):
    try:
        fn(*args)
    except Exception as err:
        return err
    return None
