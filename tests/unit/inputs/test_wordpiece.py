"""Chunking's fast path for BERT-style tokenizers (rageval/inputs/wordpiece.py) against the
tokenizers library: the same windows (offsets, token counts, ids) for every text it takes, and
the library for every text it does not."""

from __future__ import annotations

import json
from functools import lru_cache

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rageval.inputs.chunking import (
    ChunkingSpec,
    _library_windows,
    _windows_of,
    chunk_documents,
    load_tokenizer,
)
from rageval.inputs.corpus import load_corpus
from rageval.inputs.wordpiece import WordPieceWindows
from rageval.types import Document

PUNCT = "".join(c for c in map(chr, range(0x21, 0x7F)) if not c.isalnum())
# words the vocabulary splits into pieces, a word over max_input_chars_per_word, added tokens
WORDS = ["retrieval", "embeddings", "unaffordable", "QZXWV", "x" * 101, "[MASK]", "[cls]", "2026"]
# accents, a combining mark, CJK (spaced apart by the normalizer), a dotted capital I (two
# characters once lower-cased), a ligature, Unicode punctuation and spaces, control characters
OTHER = [
    "é",
    "e\u0301",
    "Ünïcode",
    "中文",
    "İ",
    "ﬁ",
    "—",
    "’",
    "\u00a0",
    "\u3000",
    "\x0b",
    "\x00",
    "\ufffd",
    "\x7f",
]
SPECS = [(64, 0), (64, 16), (8, 3), (3, 2), (1, 0), (0, 0)]


def _text(ascii_only: bool):
    letters = st.text("abcXYZ019" + PUNCT + " \t\n\r", max_size=12)
    parts = [letters, st.sampled_from(WORDS), st.just(" ")]
    if not ascii_only:
        parts.append(st.sampled_from(OTHER))
    return st.lists(st.one_of(*parts), max_size=40).map("".join)


def _small_vocab_tokenizer():
    """A WordPiece tokenizer whose vocabulary misses most continuations, so words fall to the
    unknown token (a part matches nothing) and split into many pieces."""
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers

    vocab = {"[UNK]": 0, "[PAD]": 1}
    for piece in ["a", "b", "c", "ab", "abc", "x", "##a", "##b", "##bc", "1", "##1", "0", "!"]:
        vocab[piece] = len(vocab)
    tok = Tokenizer(models.WordPiece(vocab, unk_token="[UNK]", max_input_chars_per_word=6))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.add_special_tokens(["[PAD]"])
    return tok


def _same_as_library(tok, fast, text: str) -> bool:
    """Whether the fast path took ``text`` (every spec), after checking it equals the library."""
    doc = Document("d", text)
    took = True
    for size, overlap in SPECS:
        spans = fast.windows(text, size, overlap)
        expected = _library_windows([doc], ChunkingSpec(size, overlap), tok)[0]
        if spans is None:
            took = False
            continue
        assert spans == [(s, e, n) for s, e, n, _ in expected], (text, size, overlap)
        assert _windows_of([doc], ChunkingSpec(size, overlap), tok)[0] == expected
    return took


def _holds_added_token(text: str) -> bool:
    return any(t in text.lower() for t in ("[mask]", "[cls]", "[pad]", "[sep]", "[unk]"))


@lru_cache(maxsize=1)
def _cased(model_dir: str):
    """The model's tokenizer with a cased normalizer (as a cased BERT's)."""
    from tokenizers import Tokenizer

    spec = json.loads(load_tokenizer(model_dir).to_str())
    spec["normalizer"].update(lowercase=False, strip_accents=False)
    return Tokenizer.from_str(json.dumps(spec))


@pytest.mark.parametrize("cased", [False, True], ids=["uncased", "cased"])
@settings(max_examples=100, deadline=None)
@given(text=_text(ascii_only=False))
def test_any_text_gets_the_librarys_windows_or_goes_to_the_library(model_dir, cased, text):
    tok = _cased(model_dir) if cased else load_tokenizer(model_dir)
    fast = WordPieceWindows.of(tok)
    assert fast is not None and fast.lowercase is not cased
    took = _same_as_library(tok, fast, text)
    # only an added token's text sends a document to the library
    assert took is not _holds_added_token(text)


@settings(max_examples=100, deadline=None)
@given(text=_text(ascii_only=True))
def test_unknown_words_and_many_pieces_match_the_library(text):
    tok = _small_vocab_tokenizer()
    fast = WordPieceWindows.of(tok)
    assert fast is not None
    took = _same_as_library(tok, fast, text)
    assert took is not ("[pad]" in text.lower())


def test_examples_the_rules_name(tokenizer):
    fast = WordPieceWindows.of(tokenizer)
    # split into pieces, punctuation isolated, a 101-character word is one unknown token
    for text in [
        "Unaffordable re-indexing, e.g. (v2.1)!",
        "a" * 101 + " b",
        "x" * 100,
        "",
        "café au lait",
        "tab\x0bbed",
        "Ünïcode’s İstanbul — 中文 ﬁnal\u00a0end",
    ]:
        assert _same_as_library(tokenizer, fast, text)
    assert fast.windows("a" * 101 + " b", 64, 0) == [(0, 103, 2)]
    # an added token's text is matched across punctuation: the library's way, whole
    for text in ["the [MASK] token", "the [mask] token"]:
        assert not _same_as_library(tokenizer, fast, text)


def test_only_the_bert_shape_takes_the_fast_path(tokenizer):
    from tokenizers import Tokenizer, pre_tokenizers

    assert WordPieceWindows.of(tokenizer) is not None
    spec = json.loads(tokenizer.to_str())
    other = Tokenizer.from_str(json.dumps(spec))
    other.pre_tokenizer = pre_tokenizers.Whitespace()
    assert WordPieceWindows.of(other) is None
    truncating = Tokenizer.from_str(json.dumps(spec))
    truncating.enable_truncation(16)
    assert WordPieceWindows.of(truncating) is None
    assert WordPieceWindows.of(object()) is None


@pytest.mark.parametrize("size,overlap", [(256, 0), (64, 16), (0, 0)])
def test_the_demo_and_mini_corpora_chunk_as_before(mini, tokenizer, size, overlap):
    from rageval.app.config import DEMO_DIR

    docs = load_corpus(DEMO_DIR / "corpus") + load_corpus(mini / "corpus")
    spec = ChunkingSpec(size, overlap)
    fast = WordPieceWindows.of(tokenizer)
    taken = sum(fast.windows(d.text, size, overlap) is not None for d in docs)
    assert taken == sum(not _holds_added_token(d.text) for d in docs)
    assert _windows_of(docs, spec, tokenizer) == _library_windows(docs, spec, tokenizer)


def test_worker_processes_chunk_as_one_process_does(model_dir):
    """Each chunking worker builds its own fast path from the tokenizer it is sent."""
    tok = load_tokenizer(model_dir)
    docs = [Document(f"d{i}", f"Document {i}: re-ranking, café {i % 3}. " * 40) for i in range(40)]
    spec = ChunkingSpec(32, 8)
    one = chunk_documents(docs, spec, tok, batch_size=8)
    two = chunk_documents(docs, spec, tok, batch_size=8, workers=2)
    assert [(c.id, c.start, c.end, c.n_tokens) for c in one] == [
        (c.id, c.start, c.end, c.n_tokens) for c in two
    ]
    assert _windows_of(docs, spec, tok) == _library_windows(docs, spec, tok)
