"""Chunk windows under a BERT-style WordPiece tokenizer without the tokenizers library's
per-document encoding.

Chunking needs, for each document, how many word pieces it has, which word each piece belongs
to and the character offsets at window edges. The ``tokenizers`` library computes a full
encoding of every document (ids, offsets and alignments of every piece): ~85% of chunking's time.
For the tokenizers of all-MiniLM-L6-v2 and the other BERT-family models (``BertNormalizer``,
``BertPreTokenizer``, ``WordPiece``) the same pieces follow from how those three work:

- the pre-tokenizer splits at whitespace (removed) and isolates every punctuation character, so
  ASCII whitespace and ASCII punctuation (Rust's ``is_ascii_punctuation``: ``!`` to ``/``, ``:``
  to ``@``, ``[`` to `````, ``{`` to ``~``) cut a document into segments that are tokenized on
  their own, whatever surrounds them (the normalizer works character by character);
- a segment of ASCII letters and digits is one word, which the normalizer only lower-cases (when
  ``lowercase``), and WordPiece splits it by greedy longest match from the vocabulary,
  continuation pieces with their prefix (``##``), the whole word one unknown token when a part
  matches nothing or it is longer than ``max_input_chars_per_word``; computed once a word;
- any other segment (accents, other scripts, Unicode punctuation or spaces, control characters)
  is encoded by the library itself, alone, once a distinct segment.

A document holding an added token's text (``[MASK]``, matched across those cuts) is encoded by
the library whole, as before (:meth:`WordPieceWindows.windows` returns None). Equality with the
library's own windows is tested on generated and real text (tests/unit/inputs/test_wordpiece.py).
"""

from __future__ import annotations

import json
import re
from operator import itemgetter

import numpy as np

from rageval.inputs.windows import token_windows

_PUNCT = r"!-/:-@\[-`{-~"
# a segment: a run of anything but ASCII whitespace and punctuation, or one punctuation character
_SEGMENT = re.compile(rf"[^\t\n\r {_PUNCT}]+|[{_PUNCT}]")

_COUNT = itemgetter(2)
_ASCII_PUNCT = frozenset(c for c in map(chr, range(0x21, 0x7F)) if not c.isalnum())

# code point -> 0: cut (ASCII whitespace), 1: segment character, 2: ASCII punctuation
_KIND = np.ones(128, dtype=np.int8)
_KIND[[ord(c) for c in "\t\n\r "]] = 0
_KIND[[ord(c) for c in _ASCII_PUNCT]] = 2

# a segment's pieces: their offsets within it, their words (None: all one word), their count
Pieces = tuple[tuple[tuple[int, int], ...], tuple[int, ...] | None, int]


class _Cache(dict):
    """segment -> its pieces, computed the first time a segment is seen."""

    def __init__(self, encode) -> None:
        super().__init__()
        self.encode = encode

    def __missing__(self, segment: str) -> Pieces:
        self[segment] = found = self.encode(segment)
        return found


class WordPieceWindows:
    """The windows of documents under one BERT-style tokenizer (see the module)."""

    # distinct segments the cache keeps before it starts again (bounded memory)
    MAX_SEGMENTS = 1_000_000

    def __init__(
        self, tokenizer, vocab: dict, prefix: str, max_chars: int, lowercase: bool, added
    ) -> None:
        self.tokenizer, self.vocab, self.prefix = tokenizer, vocab, prefix
        self.max_chars, self.lowercase = max_chars, lowercase
        self._added = tuple({a.lower() for a in added if a})
        self._cache = _Cache(self._encode)

    @classmethod
    def of(cls, tokenizer) -> WordPieceWindows | None:
        """For a ``tokenizers.Tokenizer`` of exactly that shape (no truncation or padding, added
        tokens matched on the raw text), else None."""
        try:
            spec = json.loads(tokenizer.to_str())
        except (AttributeError, TypeError, ValueError):
            return None
        norm, pre, model = spec.get("normalizer"), spec.get("pre_tokenizer"), spec.get("model")
        added = spec.get("added_tokens") or []
        if not (
            isinstance(norm, dict)
            and norm.get("type") == "BertNormalizer"
            and pre == {"type": "BertPreTokenizer"}
            and isinstance(model, dict)
            and model.get("type") == "WordPiece"
            and spec.get("truncation") is None
            and spec.get("padding") is None
            and not any(t.get("normalized") for t in added)
        ):
            return None
        vocab = model.get("vocab")
        unk, prefix = model.get("unk_token"), model.get("continuing_subword_prefix")
        max_chars = model.get("max_input_chars_per_word")
        if not (
            isinstance(vocab, dict)
            and unk in vocab
            and isinstance(prefix, str)
            and isinstance(max_chars, int)
        ):
            return None
        contents = [t.get("content", "") for t in added]
        return cls(tokenizer, vocab, prefix, max_chars, bool(norm.get("lowercase")), contents)

    def _word(self, word: str) -> tuple[tuple[int, int], ...]:
        """WordPiece of one ASCII word of letters and digits, or of one punctuation character:
        its pieces' offsets."""
        n = len(word)
        if n > self.max_chars:
            return ((0, n),)  # one unknown token
        if self.lowercase:
            word = word.lower()
        out, start = [], 0
        while start < n:
            end = n
            while end > start:
                piece = word[start:end] if start == 0 else self.prefix + word[start:end]
                if piece in self.vocab:
                    break
                end -= 1
            else:
                return ((0, n),)  # a part matches nothing: the word is one unknown token
            out.append((start, end))
            start = end
        return tuple(out)

    def _encode(self, segment: str) -> Pieces:
        if segment.isascii() and (segment.isalnum() or segment in _ASCII_PUNCT):
            offsets = self._word(segment)
            return offsets, None, len(offsets)
        enc = self.tokenizer.encode(segment, add_special_tokens=False)
        return tuple(enc.offsets), tuple(enc.word_ids), len(enc.offsets)

    def windows(self, text: str, size: int, overlap: int) -> list[tuple[int, int, int]] | None:
        """``text``'s windows as (start, end, tokens), exactly those chunking computes from the
        library's encoding (:func:`~rageval.inputs.windows.token_windows`), or None when an
        added token's text is in it."""
        if self._added and any(a in text.lower() for a in self._added):
            return None
        segments = _SEGMENT.findall(text)
        if not segments:
            return []
        code = np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32)
        kind = np.where(code < 128, _KIND[np.minimum(code, 127)], 1)
        inside = kind == 1
        before = np.empty_like(inside)
        before[0], before[1:] = False, inside[:-1]
        starts = np.flatnonzero((kind == 2) | (inside & ~before))
        if len(self._cache) > self.MAX_SEGMENTS:
            self._cache.clear()
        pieces = list(map(self._cache.__getitem__, segments))
        counts = np.fromiter(map(_COUNT, pieces), dtype=np.int64, count=len(pieces))
        n = int(counts.sum())
        if n == 0:
            return []
        if size == 0:
            return [(0, len(text), n)]
        first = np.cumsum(counts) - counts  # each segment's first token
        segment_of = np.repeat(np.arange(len(pieces)), counts)
        if all(p[1] is None for p in pieces):
            word_of = segment_of  # one word a segment
        else:  # segments the library encoded may hold several words: number them apart
            words = np.fromiter(
                (1 if w is None else (max(w) + 1 if w else 0) for _, w, _ in pieces),
                dtype=np.int64,
                count=len(pieces),
            )
            within = np.fromiter(
                (i for _, w, k in pieces for i in (w if w is not None else (0,) * k)),
                dtype=np.int64,
                count=n,
            )
            word_of = np.repeat(np.cumsum(words) - words, counts) + within

        def edge(t: int, side: int) -> int:
            s = int(segment_of[t])
            return int(starts[s]) + pieces[s][0][t - int(first[s])][side]

        spans = token_windows(word_of, size, overlap)
        return [(edge(i, 0), edge(j - 1, 1), j - i) for i, j in spans]
