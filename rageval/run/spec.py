"""What a run evaluates: :class:`RunSpec`, built from a run's config or by hand."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from rageval.config_schema import defaults as config_defaults
from rageval.errors import ConfigError
from rageval.inputs.chunking import ChunkingSpec
from rageval.inputs.judgements import label_kinds
from rageval.inputs.split import SplitSpec
from rageval.scoring.ppi import check_interval
from rageval.scoring.slices import check_fields
from rageval.types import Document, GoldenSet

_D = config_defaults()  # rageval.config_schema: the one definition of every key's default


@dataclass(frozen=True)
class RunSpec:
    """What to evaluate: data, chunking, cutoffs and evaluation level. Its fields are the
    config's keys of the same name (rageval.config_schema has their meaning and defaults);
    :meth:`from_config` builds it from a run's config."""

    corpus: str | tuple[Document, ...]  # a path, or documents already read (BEIR)
    golden: str | GoldenSet
    tokenizer_dir: str
    chunking: ChunkingSpec = field(
        default_factory=lambda: ChunkingSpec(_D["chunk"], _D["chunk_overlap"])
    )
    k: int = _D["k"]
    ks: tuple[int, ...] = tuple(_D["ks"])
    level: str = _D["level"]
    depth: int | None = _D["depth"]
    latency_sample: int = _D["latency_sample"]
    allow_model_mismatch: bool = _D["allow_model_mismatch"]
    query_batch: int = _D["query_batch"]
    max_document_mb: float = _D["max_document_mb"]
    budgets: tuple[int, ...] = tuple(_D["budgets"])
    slices: tuple[str, ...] = tuple(_D["slices"])
    min_slice_size: int = _D["min_slice_size"]
    # a path, or None for judgements.jsonl next to the golden set (a missing file holds none)
    judgements: str | None = _D["judgements"]
    labels: str = _D["labels"]
    ppi_interval: str = _D["ppi_interval"]
    judged_warn_below: float = _D["judged_warn_below"]
    split: SplitSpec = field(
        default_factory=lambda: SplitSpec(_D["split"], _D["holdout_fraction"], _D["split_seed"])
    )

    @classmethod
    def from_config(
        cls,
        config: Mapping[str, Any],
        *,
        corpus: str | tuple[Document, ...],
        golden: str | GoldenSet,
        tokenizer_dir: str,
    ) -> RunSpec:
        """The spec of a run whose resolved config is ``config``: each field from the key of
        its name (its schema default when absent), the chunking from ``chunk`` and
        ``chunk_overlap``, the split from ``split``, ``holdout_fraction`` and ``split_seed``."""
        given = {**_D, **{k: v for k, v in config.items() if k in _D}}
        plain = {f.name for f in fields(cls)} - {
            "corpus",
            "golden",
            "tokenizer_dir",
            "chunking",
            "split",
        }
        kw: dict[str, Any] = {n: given[n] for n in plain}
        for n in ("ks", "budgets", "slices"):
            kw[n] = tuple(kw[n])
        kw["slices"] = tuple(str(f) for f in kw["slices"])
        kw["max_document_mb"] = float(kw["max_document_mb"])
        kw["judged_warn_below"] = float(kw["judged_warn_below"])
        return cls(
            corpus=corpus,
            golden=golden,
            tokenizer_dir=tokenizer_dir,
            chunking=ChunkingSpec(given["chunk"], given["chunk_overlap"]),
            split=SplitSpec(
                given["split"], float(given["holdout_fraction"]), int(given["split_seed"])
            ),
            **kw,
        )

    def __post_init__(self) -> None:
        if self.k <= 0 or any(int(x) <= 0 for x in self.ks):
            raise ConfigError(
                f"k and every value in ks must be > 0 (k={self.k}, ks={list(self.ks)})"
            )
        object.__setattr__(self, "ks", tuple(sorted({int(x) for x in (*self.ks, self.k)})))
        bad = [b for b in self.budgets if isinstance(b, bool) or not isinstance(b, int) or b <= 0]
        if bad:
            raise ConfigError(
                f"budgets must be positive token counts like [256, 512, 1024, 2048], got {bad[0]!r}"
            )
        object.__setattr__(self, "budgets", tuple(sorted(set(self.budgets))))
        check_fields(self.slices)  # names, not a string
        object.__setattr__(self, "slices", tuple(self.slices))
        size = self.min_slice_size
        if isinstance(size, bool) or not isinstance(size, int) or size < 1:
            raise ConfigError(f"min_slice_size must be a whole number >= 1, got {size!r}")
        label_kinds(self.labels)  # ConfigError naming the label sets
        check_interval(self.ppi_interval)  # t or z
        warn = self.judged_warn_below
        if isinstance(warn, bool) or not isinstance(warn, int | float) or not 0 <= warn <= 1:
            raise ConfigError(
                f"judged_warn_below must be a share between 0 and 1 (0 turns the warning off), "
                f"got {warn!r}"
            )
