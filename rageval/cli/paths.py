"""Where the golden-set commands look when no path is given: golden/retriever.jsonl and corpus/."""

from __future__ import annotations

from pathlib import Path

from rageval.app.config import DEMO_DIR, project_dataset

# The demo shipped with rageval, used when neither the working directory nor the project has a
# golden set.
DEMO = DEMO_DIR


def default_golden() -> Path:
    """golden/retriever.jsonl in the working directory, else the project's configured golden
    set, else the demo's."""
    local = Path("golden/retriever.jsonl")
    if local.is_file():
        return local
    configured = project_dataset()
    if configured is not None and configured[0].is_file():
        return configured[0]
    return DEMO / "retriever.jsonl"


def golden_and_corpus(path: str | None, corpus: str | None) -> tuple[Path, Path | None]:
    """The golden set (``path`` or the default) and its corpus: ``corpus``, else corpus/ beside
    the golden set, else the project's configured corpus when the golden set is the project's;
    None when there is none."""
    golden = Path(path) if path else default_golden()
    if corpus:
        return golden, Path(corpus) if Path(corpus).exists() else None
    beside = golden.parent / "corpus"
    if beside.exists():
        return golden, beside
    configured = project_dataset()
    if configured is not None and configured[0].resolve() == golden.resolve():
        found = configured[1]
        return golden, found if found is not None and found.exists() else None
    return golden, None


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
