"""Bounds on what one input may cost: document size, and tokenizing long texts in pieces.

The ``tokenizers`` library slows down and grows far faster than linearly on one very long text
(a 10 MB single-line document took 17 s and 1.2 GB), so a long text is tokenized in pieces of
at most ``PIECE_CHARS`` characters, cut at whitespace where there is any, and the pieces' offsets
and word ids are joined. Cutting at whitespace changes no token of a WordPiece or BPE tokenizer
whose pre-tokenizer splits on whitespace (all the sentence-transformers models rageval packages).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

DEFAULT_MAX_DOCUMENT_MB = 50
PIECE_CHARS = 1 << 16


@dataclass
class JoinedEncoding:
    """The parts of a tokenizer ``Encoding`` chunking reads, as arrays."""

    offsets: np.ndarray  # (n, 2) character offsets into the whole text
    word_ids: np.ndarray  # (n,) word index; a token of no word (None) gets its own negative id

    def __len__(self) -> int:
        return len(self.word_ids)


def split_points(text: str, piece: int = PIECE_CHARS) -> list[int]:
    """Cut positions so that no piece is longer than ``piece`` characters, each cut just after a
    whitespace character when the piece holds one (a word longer than a piece is cut anyway)."""
    cuts, start, n = [0], 0, len(text)
    while n - start > piece:
        end = start + piece
        window = text[start + piece // 2 : end]
        ws = max(window.rfind(" "), window.rfind("\n"), window.rfind("\t"))
        if ws >= 0:
            end = start + piece // 2 + ws + 1
        cuts.append(end)
        start = end
    cuts.append(n)
    return cuts


def encode_texts(tokenizer, texts: Sequence[str], piece: int = PIECE_CHARS) -> list:
    """``tokenizer.encode_batch(texts, add_special_tokens=False)``, with every text longer than
    ``piece`` characters tokenized in pieces (returned as a :class:`JoinedEncoding`)."""
    short = [i for i, t in enumerate(texts) if len(t) <= piece]
    out: list = [None] * len(texts)
    for i, enc in zip(
        short,
        tokenizer.encode_batch([texts[i] for i in short], add_special_tokens=False),
        strict=True,
    ):
        out[i] = enc
    for i, t in enumerate(texts):
        if out[i] is None:
            out[i] = _encode_long(tokenizer, t, piece)
    return out


def _encode_long(tokenizer, text: str, piece: int) -> JoinedEncoding:
    cuts = split_points(text, piece)
    offsets, word_ids, next_word, n_tokens = [], [], 0, 0
    for lo in range(0, len(cuts) - 1, 64):  # 64 pieces a batch: bounded memory, still parallel
        starts = cuts[lo : lo + 65]
        texts = [text[a:b] for a, b in zip(starts, starts[1:], strict=False)]
        for start, enc in zip(
            starts, tokenizer.encode_batch(texts, add_special_tokens=False), strict=False
        ):
            if not enc.offsets:
                continue
            off = np.asarray(enc.offsets, dtype=np.int64) + start
            wid = np.asarray([-1 if w is None else w for w in enc.word_ids], dtype=np.int64)
            known = wid >= 0
            wid[known] += next_word
            if known.any():
                next_word = int(wid[known].max()) + 1
            none = np.flatnonzero(~known)  # distinct, so no two of them count as one word
            wid[none] = -1 - (none + n_tokens)
            n_tokens += len(wid)
            offsets.append(off)
            word_ids.append(wid)
    if not offsets:
        return JoinedEncoding(np.zeros((0, 2), np.int64), np.zeros(0, np.int64))
    return JoinedEncoding(np.concatenate(offsets), np.concatenate(word_ids))
