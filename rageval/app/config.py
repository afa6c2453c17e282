"""Where the Hydra config lives and the resolvers it uses (``${rageval_root:}``, ``${rageval_cache_dir:}``)."""

from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CONF_DIR = ROOT / "conf"
# The config groups, in the order the defaults list composes them.
GROUPS = ("dataset", "embedding", "backend", "search", "rerank")


def default_cache_dir() -> str:
    """$RAGEVAL_CACHE_DIR, else ~/.cache/rageval: embeddings and indexes shared by every run."""
    return os.environ.get("RAGEVAL_CACHE_DIR") or str(Path.home() / ".cache" / "rageval")


def register_resolvers() -> None:
    """Register rageval's OmegaConf resolvers (idempotent; a Ray or joblib worker calls it too)."""
    from omegaconf import OmegaConf

    OmegaConf.register_new_resolver("rageval_root", lambda: str(ROOT), replace=True)
    OmegaConf.register_new_resolver("rageval_cache_dir", default_cache_dir, replace=True)
