"""The chunk stage: the corpus cut into chunks with the run's tokenizer, and their token counts."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from rageval.inputs.chunking import chunk_documents, chunk_workers, load_tokenizer
from rageval.run.spec import RunSpec
from rageval.types import Chunk, Document


def chunk(spec: RunSpec, docs: list[Document]) -> tuple[object, list[Chunk]]:
    """The run's tokenizer (the embedding model's) and the documents cut into chunks with it, in
    several processes for a large corpus (rageval.inputs.chunking)."""
    tokenizer = load_tokenizer(spec.tokenizer_dir)
    workers = chunk_workers(docs)
    chunks = chunk_documents(docs, spec.chunking, tokenizer, workers=workers, progress=True)
    return tokenizer, chunks


def chunk_token_stats(chunks: Sequence[Chunk]) -> dict[str, float]:
    """Mean and max tokens per chunk (``chunk_tokens_mean``/``_max``); 0 for no chunks."""
    n_tok = np.array([c.n_tokens for c in chunks] or [0])
    return {"chunk_tokens_mean": float(n_tok.mean()), "chunk_tokens_max": int(n_tok.max())}
