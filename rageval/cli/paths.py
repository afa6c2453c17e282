"""Where the golden-set commands look when no path is given: golden/retriever.jsonl and corpus/."""

from __future__ import annotations

from pathlib import Path

from rageval.app.config import DEMO_DIR

# The demo shipped with rageval, used when neither the working directory nor the project has a
# golden set.
DEMO = DEMO_DIR


def default_golden() -> Path:
    """golden/retriever.jsonl in the working directory, else in the project's root, else the
    demo's."""
    from rageval.project import find_project

    local = Path("golden/retriever.jsonl")
    if local.is_file():
        return local
    project = find_project()
    if project is not None and (project.root / local).is_file():
        return project.root / local
    return DEMO / "retriever.jsonl"


def golden_and_corpus(path: str | None, corpus: str | None) -> tuple[Path, Path | None]:
    """The golden set (``path`` or the default) and its corpus (``corpus``, else corpus/ beside
    the golden set; None when that does not exist)."""
    golden = Path(path) if path else default_golden()
    corpus_path = Path(corpus) if corpus else golden.parent / "corpus"
    return golden, (corpus_path if corpus_path.exists() else None)


def default_baseline(write: bool = False) -> Path:
    """The baseline ``check``, ``promote`` and the pytest helper use when none is named: the
    project's (``baseline`` in rageval.yaml), else golden/baseline.json in the working directory,
    else (for reading) the demo's."""
    from rageval.project import find_project

    project = find_project()
    if project is not None:
        return project.baseline
    local = Path("golden/baseline.json")
    return local if write or local.is_file() else DEMO / "baseline.json"
