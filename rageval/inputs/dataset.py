"""The ``dataset`` config group's builders: where a run's corpus and golden set come from."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from rageval.types import Document, GoldenSet


@dataclass(frozen=True)
class Dataset:
    """A corpus and a golden set: paths the pipeline reads, or data already read (BEIR)."""

    name: str
    corpus: str | tuple[Document, ...]
    golden: str | GoldenSet


def files(corpus: str, golden: str, name: str = "custom") -> Dataset:
    """A corpus folder or JSONL file and a golden-set JSONL file (``~`` expanded)."""
    return Dataset(name, str(Path(corpus).expanduser()), str(Path(golden).expanduser()))


def beir(path: str, split: str = "test", name: str = "beir") -> Dataset:
    """A BEIR folder's corpus and the ``split`` qrels as a golden set of document labels."""
    from rageval.inputs.beir import beir_dataset

    docs, golden = beir_dataset(path, split)
    return Dataset(name, docs, golden)
