"""A deterministic split of the golden set into the queries a study tunes on and those it proves on.

``split=tune`` keeps the tune queries, ``split=holdout`` the holdout ones, ``split=all`` every
query. A query's side is a function of its id and the seed alone: ``holdout`` when
sha256(seed, id), read as a number in [0, 1), is below ``holdout_fraction``. That is what makes the
split stable when queries are added (a new query never moves an old one): any rule that looks at
the other queries (take the lowest 30% of each source) must move some of them when new ones
arrive. Stratification by ``source`` is therefore in expectation: every source is split at the
same fraction, independently, and the record (report.json's ``split``) counts each source's
tune and holdout queries, with a warning when a large source has none on one side.
"""

from __future__ import annotations

import hashlib
import warnings
from collections import Counter
from dataclasses import dataclass, replace
from typing import Any

from rageval.errors import ConfigError
from rageval.types import GoldenQuery, GoldenSet

SPLITS = ("all", "tune", "holdout")
TUNE, HOLDOUT = "tune", "holdout"
# A source with at least this many queries and none on one side of the split gets a warning.
WARN_SOURCE_SIZE = 10


@dataclass(frozen=True)
class SplitSpec:
    """Which part of the golden set a run scores (``name``), and how the split is drawn."""

    name: str = "all"
    holdout_fraction: float = 0.3
    seed: int = 0

    def __post_init__(self) -> None:
        if self.name not in SPLITS:
            raise ConfigError(f"split must be one of {', '.join(SPLITS)}, got {self.name!r}")
        f = self.holdout_fraction
        if isinstance(f, bool) or not isinstance(f, int | float) or not 0 < f < 1:
            raise ConfigError(
                f"holdout_fraction must be a number between 0 and 1 (exclusive), got {f!r}"
            )
        if isinstance(self.seed, bool) or not isinstance(self.seed, int):
            raise ConfigError(f"split_seed must be an integer, got {self.seed!r}")


def position(query_id: str, seed: int) -> float:
    """The query's place in [0, 1) for this seed: the first 8 bytes of sha256 as a fraction."""
    digest = hashlib.sha256(f"rageval-split\x00{seed}\x00{query_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2.0**64


def side_of(query_id: str, holdout_fraction: float, seed: int = 0) -> str:
    """``holdout`` or ``tune``: the side of the split a query id falls on."""
    return HOLDOUT if position(query_id, seed) < holdout_fraction else TUNE


def sides(query_ids, holdout_fraction: float, seed: int = 0) -> dict[str, str]:
    """Query id -> ``tune`` | ``holdout`` for every id."""
    return {q: side_of(q, holdout_fraction, seed) for q in query_ids}


def split_golden(golden: GoldenSet, spec: SplitSpec) -> tuple[GoldenSet, dict[str, Any]]:
    """The golden set restricted to ``spec.name`` (all: unchanged) and the record of the split.

    The subset keeps the full set's digest: the queries come from the same golden set, and the
    record says which part was scored (report.json ``split``, MLflow ``split`` param and tag).
    """
    side = {q.id: side_of(q.id, spec.holdout_fraction, spec.seed) for q in golden.queries}
    record = split_record(golden.queries, side, spec)
    if spec.name == "all":
        return golden, record
    kept = tuple(q for q in golden.queries if side[q.id] == spec.name)
    if not kept:
        raise ConfigError(
            f"split={spec.name} holds no query of the {len(golden.queries)} in {golden.path} "
            f"(holdout_fraction={spec.holdout_fraction}, split_seed={spec.seed}); "
            "use a larger golden set or another holdout_fraction"
        )
    return replace(golden, queries=kept), record


def split_record(
    queries: tuple[GoldenQuery, ...], side: dict[str, str], spec: SplitSpec
) -> dict[str, Any]:
    """What report.json says about the split: its settings, counts, and counts per source."""
    counts = Counter(side.values())
    by_source: dict[str, dict[str, int]] = {}
    for q in queries:
        row = by_source.setdefault(q.source or "(none)", {TUNE: 0, HOLDOUT: 0})
        row[side[q.id]] += 1
    for source, row in sorted(by_source.items()):
        n = row[TUNE] + row[HOLDOUT]
        if spec.name != "all" and n >= WARN_SOURCE_SIZE and 0 in row.values():
            empty = TUNE if row[TUNE] == 0 else HOLDOUT
            warnings.warn(
                f"source {source!r} has {n} queries and none on the {empty} side of the split "
                f"(holdout_fraction={spec.holdout_fraction}, split_seed={spec.seed}); "
                "another split_seed balances it",
                stacklevel=3,
            )
    return {
        "name": spec.name,
        "holdout_fraction": spec.holdout_fraction,
        "seed": spec.seed,
        "queries": len(queries) if spec.name == "all" else counts[spec.name],
        "of": len(queries),
        TUNE: counts[TUNE],
        HOLDOUT: counts[HOLDOUT],
        "by_source": by_source,
    }
