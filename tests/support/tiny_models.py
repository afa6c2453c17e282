"""A tiny, randomly initialised CrossEncoder (2 layers, 32 wide) saved to a folder, built from the
packaged model's tokenizer: reranking tests load a real sentence-transformers CrossEncoder in well
under a second, and no reranker model has to ship."""

from __future__ import annotations

from pathlib import Path


def build_tiny_cross_encoder(path: Path, tokenizer_dir: str) -> str:
    """Save the tiny CrossEncoder into ``path`` (seeded: the same weights every time)."""
    import torch
    from transformers import AutoTokenizer, BertConfig, BertForSequenceClassification

    torch.manual_seed(0)
    tok = AutoTokenizer.from_pretrained(tokenizer_dir)
    cfg = BertConfig(
        vocab_size=tok.vocab_size,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        num_labels=1,
    )
    BertForSequenceClassification(cfg).save_pretrained(path)
    tok.save_pretrained(path)
    return str(path)
