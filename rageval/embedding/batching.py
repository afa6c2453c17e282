"""Batches that do not change a vector's bits.

A transformer pads every text of a batch to the batch's longest, and the padded length changes
the last bits of each vector (other matrix shapes, another summation order). A text's vector then
depends on the texts it happened to share a batch with: a cache filled by parallel sweep jobs, or
by runs in another order, would not equal a fresh one bit for bit, and a near-tie in a ranking
could flip. :func:`encode_stable` pads every text to a length that depends on its own token count
alone (rounded up to a multiple of ``BUCKET``, at most the model's ``max_seq_length``) and puts
only texts of one padded length in a batch. Bucketing also pads less than a mixed batch does.

Padding is not the only cause. Intel MKL (the BLAS of torch's CPU build) rounds the rows of a matrix
product differently with the product's shape, i.e. how many texts share a batch, and with the number
of threads it runs: with two threads, 44 of 50 texts changed their last bits between batches of 64
and of 4. MKL's strict reproducible mode (``MKL_CBWR=AUTO,STRICT``) makes each row depend on that
row alone, for any shape and thread count, at no measured cost. ``import rageval`` sets it unless
torch was imported first, which :func:`warn_if_mkl_unpinned` then reports once.

Every sentence-transformers backend (torch, ONNX Runtime, OpenVINO) takes the same features and
goes through here. ONNX Runtime and OpenVINO keep every row's bits at any batch shape and thread
count; rageval's ONNX int8 scales each token's activations by that token's own values
(rageval.embedding.onnx_graph), so it batches like the others.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable, Mapping, Sequence
from itertools import groupby

import numpy as np

BUCKET = 16
_warned = False


def warn_if_mkl_unpinned() -> None:
    """Warn once if MKL runs without a reproducibility mode (torch was imported before rageval and
    ``MKL_CBWR`` is unset): vectors may then change their last bits with batch and thread count."""
    global _warned
    if _warned or os.environ.get("MKL_CBWR"):
        return
    _warned = True
    warnings.warn(
        "Intel MKL runs without MKL_CBWR (torch was imported before rageval, or MKL_CBWR is "
        "empty): a text's vector "
        "may differ in its last bits with the texts batched with it and the number of threads, "
        "and a cache filled by parallel jobs may differ from a fresh one. Set MKL_CBWR=AUTO,STRICT "
        "in the environment, or import rageval before torch.",
        stacklevel=3,
    )


def encode_stable(
    model, texts: Sequence[str], batch_size: int, progress: Callable[[int], None] | None = None
) -> np.ndarray:
    """L2-normalised float32 vectors of ``texts`` from a sentence-transformers ``model`` (or a
    model with its interface whose features are numpy arrays, rageval.embedding.runner);
    each row depends on its text alone. Models that do not pad tokens use their own ``encode``.
    ``progress(n)`` is called after each batch with the number of texts it encoded."""
    preprocess = getattr(model, "preprocess", None) or model.tokenize  # tokenize before ST 6
    features = preprocess(list(texts))
    mask = features.get("attention_mask") if isinstance(features, Mapping) else None
    cap = getattr(model, "max_seq_length", None)
    if not texts or not _is_matrix(mask) or not cap:
        vec = _encode(model, texts, batch_size)
        if progress is not None:
            progress(len(texts))
        return vec
    lengths = [int(n) for n in mask.sum(1).tolist()]
    width = [min(-(-n // BUCKET) * BUCKET, max(int(cap), n)) for n in lengths]
    pad_id = getattr(getattr(model, "tokenizer", None), "pad_token_id", None) or 0
    device = getattr(model, "device", None)
    order = sorted(range(len(texts)), key=lambda i: (-width[i], i))
    out: np.ndarray | None = None
    for w, run in groupby(order, key=width.__getitem__):
        idx = list(run)
        for lo in range(0, len(idx), batch_size):
            rows = idx[lo : lo + batch_size]
            batch = {
                k: _fit(v, rows, w, pad_id if k == "input_ids" else 0, device)
                for k, v in features.items()
            }
            emb = _run(model, batch)
            if out is None:
                out = np.empty((len(texts), emb.shape[1]), dtype=np.float32)
            out[rows] = emb
            if progress is not None:
                progress(len(rows))
    return out  # type: ignore[return-value]  (texts is not empty)


def _is_matrix(value) -> bool:
    if isinstance(value, np.ndarray):
        return value.ndim == 2
    import torch

    return torch.is_tensor(value) and value.dim() == 2


def _run(model, batch) -> np.ndarray:
    """One batch through ``model``: unit-length float32 rows."""
    if isinstance(batch.get("attention_mask"), np.ndarray):  # a numpy model: no torch at all
        emb = np.asarray(model(batch)["sentence_embedding"], dtype=np.float32)
        return emb / np.maximum(np.linalg.norm(emb, axis=1, keepdims=True), 1e-12)
    import torch

    with torch.inference_mode():
        emb = model(batch)["sentence_embedding"]
        return torch.nn.functional.normalize(emb.float(), p=2, dim=1).cpu().numpy()


def _fit(value, rows: list[int], width: int, pad: int, device):
    """``value``'s ``rows``, cut or padded to ``width`` columns (non-token entries as they are)."""
    if isinstance(value, np.ndarray):
        if value.ndim != 2:
            return value
        value = value[rows]
        if value.shape[1] >= width:
            return value[:, :width]
        return np.pad(value, ((0, 0), (0, width - value.shape[1])), constant_values=pad)
    import torch

    if not torch.is_tensor(value) or value.dim() != 2:
        return value
    value = value[rows] if device is None else value[rows].to(device)
    if value.shape[1] >= width:
        return value[:, :width]
    return torch.nn.functional.pad(value, (0, width - value.shape[1]), value=pad)


def _encode(model, texts: Sequence[str], batch_size: int) -> np.ndarray:
    return model.encode(
        list(texts),
        batch_size=batch_size,
        normalize_embeddings=True,
        convert_to_numpy=True,
        show_progress_bar=False,
    ).astype(np.float32, copy=False)
