"""The ``dataset`` config group's builders: where a run's corpus and golden set come from."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rageval.errors import ConfigError
from rageval.types import Document, GoldenSet


@dataclass(frozen=True)
class Dataset:
    """A corpus and a golden set: paths the pipeline reads, or data already read (BEIR)."""

    name: str
    corpus: str | tuple[Document, ...]
    golden: str | GoldenSet


def files(corpus: str, golden: str, name: str = "custom", **notes: Any) -> Dataset:
    """A corpus folder or JSONL file and a golden-set JSONL file (``~`` expanded). Other keys of
    the dataset node (``notes``: a description, an owner) stay in the run's config, unused here."""
    for key, value in (("corpus", corpus), ("golden", golden)):
        if not isinstance(value, str) or not value:  # e.g. dataset.golden='{a: 1}'
            raise ConfigError(f"dataset.{key} must be a path (a string), got {value!r}")
    return Dataset(name, str(Path(corpus).expanduser()), str(Path(golden).expanduser()))


def beir(
    path: str,
    split: str = "test",
    name: str = "beir",
    max_document_mb: float | None = None,
    **notes: Any,
) -> Dataset:
    """A BEIR folder's corpus and the ``split`` qrels as a golden set of document labels (other
    keys of the dataset node stay in the run's config). ``max_document_mb`` caps one document
    as it does for every corpus (conf/dataset/beir.yaml passes the run's ``max_document_mb``)."""
    from rageval.inputs.beir import beir_dataset

    docs, golden = beir_dataset(path, split, max_document_mb)
    return Dataset(name, docs, golden)
