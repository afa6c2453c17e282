"""The load stage: the golden set, the corpus and the judgements of a run, and the golden set cut
to the run's side of the split."""

from __future__ import annotations

import os
from typing import Any

from rageval.errors import ConfigError
from rageval.inputs.corpus import load_corpus
from rageval.inputs.golden import load_golden
from rageval.inputs.judgements import PPI, Judgements, default_path, load_judgements
from rageval.inputs.split import split_golden
from rageval.report.ppi_report import sample_for
from rageval.run.spec import RunSpec
from rageval.scoring.slices import check_fields
from rageval.types import Document, GoldenSet


def load_inputs(spec: RunSpec) -> tuple[GoldenSet, list[Document]]:
    """The golden set and the corpus of ``spec`` (loaded, or as given)."""
    golden = spec.golden if isinstance(spec.golden, GoldenSet) else load_golden(spec.golden)
    docs = (
        load_corpus(spec.corpus, spec.max_document_mb)
        if isinstance(spec.corpus, str)
        else list(spec.corpus)
    )
    return golden, docs


def load(
    spec: RunSpec,
) -> tuple[GoldenSet, list[Document], dict[str, Document], Judgements, dict[str, Any]]:
    """The load phase: the golden set and the corpus (and its documents by id), the judgements,
    and the golden set cut to the run's side of the split with the split's record. A slice
    field no query has or a missing judgements file fails here, before the index is built."""
    golden, docs = load_inputs(spec)
    slice_rows = [{"source": q.source, "tags": q.tags, "meta": q.meta} for q in golden.queries]
    check_fields(spec.slices, slice_rows, golden.path)  # a typo fails before the index is built
    by_id = {d.id: d for d in docs}
    if spec.judgements and not os.path.exists(spec.judgements):
        raise ConfigError(
            f"judgements file {spec.judgements!r} not found; fix the judgements key, or set it "
            "to null for judgements.jsonl next to the golden set (none when that is missing)"
        )
    judgements = load_judgements(spec.judgements or default_path(golden.path), by_id, golden)
    if spec.labels == PPI:  # a missing or bad human sample fails before the index is built
        sample_for(judgements, [q.id for q in golden.queries])
    golden, split = split_golden(golden, spec.split)
    return golden, docs, by_id, judgements, split
