"""Where the golden-set commands look when no path is given: golden/retriever.jsonl and corpus/."""

from __future__ import annotations

from pathlib import Path

# The demo shipped with rageval, used when the working directory has no golden set.
DEMO = Path(__file__).resolve().parents[2] / "golden"


def default_golden() -> Path:
    """golden/retriever.jsonl in the working directory, else the demo's."""
    local = Path("golden/retriever.jsonl")
    return local if local.is_file() else DEMO / "retriever.jsonl"


def golden_and_corpus(path: str | None, corpus: str | None) -> tuple[Path, Path | None]:
    """The golden set (``path`` or the default) and its corpus (``corpus``, else corpus/ beside
    the golden set; None when that does not exist)."""
    golden = Path(path) if path else default_golden()
    corpus_path = Path(corpus) if corpus else golden.parent / "corpus"
    return golden, (corpus_path if corpus_path.exists() else None)
