"""The ``Encoder`` plug point: what turns text into vectors, and what rageval reads from it.

A team plugs its own embedding model in by writing a class with the four required members below
and naming it with ``_target_`` in ``conf/embedding``. The optional members, declared in
:class:`EncoderExtras`, are read with ``getattr`` when present:

- ``tokenizer_dir`` (or, failing that, ``model_path``): a folder holding the ``tokenizer.json``
  that counts chunk tokens. Chunking counts in the embedding model's own tokens, so an encoder
  that gives neither is refused with the fix (see :func:`tokenizer_dir_of`), never silently
  chunked with another model's tokenizer.
- ``max_seq_length``: the tokens the model sees; a chunk size above it draws a warning.
- ``texts_encoded``: texts that went through the model in this process (cache misses), reported
  as ``texts_embedded`` in report.json.
- ``description``: a readable name of the model and how it runs (``all-MiniLM-L6-v2 onnx int8``),
  written beside the fingerprint in report.json and MLflow.
- ``source_fingerprint`` and ``max_cosine_distance``: the fingerprint of the model the vectors come
  from (before export or quantization) and the largest cosine distance measured between this
  encoder's vectors and that model's reference vectors; the query/index guard uses both.
- ``close()``: releases what the encoder holds (sessions, threads); called when a run ends.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Protocol, runtime_checkable

import numpy as np

from rageval.errors import ConfigError


@runtime_checkable
class Encoder(Protocol):
    """Embeds texts as L2-normalised float32 rows, through the embedding cache."""

    @property
    def fingerprint(self) -> str:
        """Identifies the model by its weights, config and way of running, not just its name.

        Vectors are cached under it: two encoders whose vectors may differ (another backend, a
        quantized copy) must not share a fingerprint."""
        ...

    @property
    def dim(self) -> int:
        """Length of each vector."""
        ...

    def encode_documents(self, texts: Sequence[str]) -> np.ndarray:
        """Return an array of shape (len(texts), dim), float32, rows of unit length."""
        ...

    def encode_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Like ``encode_documents``; a model with a query prompt applies it here."""
        ...


class EncoderExtras(Protocol):
    """The optional members of an encoder (documentation for plug-in authors; none is required)."""

    tokenizer_dir: str | Path
    model_path: str | Path
    max_seq_length: int | None
    texts_encoded: int
    description: str
    source_fingerprint: str
    max_cosine_distance: float

    def close(self) -> None:
        """Release the model (memory, threads); the encoder may load it again later."""
        ...


def tokenizer_dir_of(encoder: object) -> str:
    """The folder whose ``tokenizer.json`` counts chunk tokens for ``encoder``.

    Raises a ConfigError naming the fix when the encoder gives none."""
    for attr in ("tokenizer_dir", "model_path"):
        value = getattr(encoder, attr, None)
        if value:
            return str(value)
    raise ConfigError(
        f"the embedding encoder {type(encoder).__module__}.{type(encoder).__qualname__} gives no "
        "tokenizer: chunking counts tokens with the embedding model's own tokenizer. Give the "
        "encoder a `tokenizer_dir` attribute (a folder with tokenizer.json, e.g. the model's "
        "Hugging Face folder), or a `model_path` to a sentence-transformers folder"
    )
