"""The random human sample behind ``labels=ppi`` (rageval.scoring.ppi, docs/judging.md).

People grade the pooled results of a random sample of queries fully; an LLM judge grades every
query's. ``rageval judge POOL --sample N`` draws the sample (seeded; stratified by a slice field
when one is given: each slice gets its proportional share, rounded by largest remainder, so
every query keeps about the same chance) and records it beside the judgements file as
``<judgements>.sample.json``:

```json
{"judge": "llm:gpt-4o-mini", "seed": 0, "strata": "source", "population": 168,
 "queries": ["hr-001", "hr-030"], "at": "2026-12-04T15:00:00Z"}
```

``judge`` is the LLM judge whose labels the other queries are measured with: one fixed judge, as
the method assumes. The file is data: a run with ``labels=ppi`` reads it and records its digest,
so a baseline measured with another sample or judge is a label change for the gate.
"""

from __future__ import annotations

import hashlib
import json
import math
import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rageval.errors import ConfigError, InputError
from rageval.formats.atomic import atomic_write_text

KEYS = ("judge", "seed", "strata", "population", "queries", "at")
MIN_SAMPLE = 2  # an interval needs two human-graded queries


@dataclass(frozen=True)
class HumanSample:
    """The sampled query ids, the LLM judge of the others, and how the sample was drawn."""

    queries: tuple[str, ...]
    judge: str
    seed: int
    strata: str | None
    population: int
    at: str
    path: str = ""

    def to_dict(self) -> dict[str, Any]:
        """The file's JSON object."""
        return {
            "judge": self.judge,
            "seed": self.seed,
            "strata": self.strata,
            "population": self.population,
            "queries": list(self.queries),
            "at": self.at,
        }

    def digest(self) -> str:
        """sha256 of what defines the sample: its queries (as a set), judge, seed and strata."""
        text = json.dumps(
            [sorted(self.queries), self.judge, self.seed, self.strata], separators=(",", ":")
        )
        return hashlib.sha256(text.encode("utf-8")).hexdigest()

    def summary(self) -> dict[str, Any]:
        """What a report records about the sample."""
        return {
            "file": self.path,
            "judge": self.judge,
            "size": len(self.queries),
            "population": self.population,
            "seed": self.seed,
            "strata": self.strata,
            "digest": self.digest(),
        }


def sample_path(judgements: str | Path) -> Path:
    """``golden/judgements.jsonl`` -> ``golden/judgements.sample.json``."""
    p = Path(judgements)
    return p.with_name(f"{p.stem}.sample.json")


def _stratum(row: Any, field: str | None) -> str:
    if field is None:
        return ""
    from rageval.scoring.slices import field_values

    return "+".join(sorted(field_values(row, field))) or "(none)"


def allocate(sizes: dict[str, int], n: int) -> dict[str, int]:
    """Proportional allocation of ``n`` draws over strata of ``sizes`` (largest remainder, never
    more than a stratum's size): every query has about the same chance to be drawn, so the
    sample stays a random sample of the whole set, as the estimate assumes."""
    total = sum(sizes.values())
    quota = {s: n * c / total for s, c in sizes.items()}
    out = {s: min(c, math.floor(quota[s])) for s, c in sizes.items()}
    order = sorted(sizes, key=lambda s: (-(quota[s] - math.floor(quota[s])), s))
    while sum(out.values()) < n:
        progressed = False
        for s in order:
            if sum(out.values()) < n and out[s] < sizes[s]:
                out[s] += 1
                progressed = True
        if not progressed:
            break
    return out


def draw_sample(
    rows: Sequence[dict[str, Any]],
    size: int,
    seed: int,
    judge: str,
    strata: str | None = None,
    at: str = "",
) -> HumanSample:
    """A seeded random sample of ``size`` of the queries ``rows`` describe (``id`` and the slice
    fields ``source``, ``tags``, ``meta``), stratified by the field ``strata`` when given."""
    if isinstance(size, bool) or not isinstance(size, int) or size < MIN_SAMPLE:
        raise ConfigError(f"--sample takes at least {MIN_SAMPLE} queries, got {size!r}")
    if size >= len(rows):
        raise ConfigError(
            f"--sample {size} is not below the {len(rows)} queries: the LLM labels would add "
            "nothing; grade them all, or sample fewer"
        )
    if not judge.startswith("llm:") or judge == "llm:":
        raise ConfigError(f"the sample's judge must be an LLM judge llm:<model>, got {judge!r}")
    groups: dict[str, list[str]] = {}
    for row in rows:
        groups.setdefault(_stratum(row, strata), []).append(str(row["id"]))
    rng = random.Random(seed)
    chosen: list[str] = []
    for name, n in sorted(allocate({s: len(q) for s, q in groups.items()}, size).items()):
        chosen += rng.sample(sorted(groups[name]), n)
    order = {str(r["id"]): i for i, r in enumerate(rows)}
    chosen.sort(key=order.__getitem__)
    return HumanSample(tuple(chosen), judge, seed, strata, len(rows), at)


def write_sample(sample: HumanSample, path: str | Path) -> Path:
    """Write the sample file atomically."""
    atomic_write_text(path, json.dumps(sample.to_dict(), indent=2) + "\n")
    return Path(path)


def load_sample(path: str | Path, query_ids: Iterable[str] | None = None) -> HumanSample:
    """The sample file at ``path``, checked against the golden set's ``query_ids`` (None: not
    checked, the file was checked before the golden set was split)."""
    p = Path(path)
    where = str(p)
    if not p.is_file():
        raise ConfigError(
            "labels=ppi needs the random human sample recorded here; draw one with "
            "`rageval judge POOL --sample N --judge llm:<model>`, have people grade its queries, "
            "and let the LLM judge grade every query",
            path=where,
        )
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as err:
        raise InputError(f"not a valid sample JSON file: {err}", path=where) from None
    if not isinstance(data, dict):
        raise InputError("a sample file holds one JSON object", path=where)
    unknown = sorted(set(data) - set(KEYS))
    if unknown:
        raise InputError(
            f"unknown key {unknown[0]!r}; a sample holds {', '.join(KEYS)}", path=where
        )
    queries = data.get("queries")
    if not isinstance(queries, list) or not all(isinstance(q, str) for q in queries):
        raise InputError("key 'queries' must be a list of query ids", path=where)
    known = set(queries if query_ids is None else query_ids)
    strangers = [q for q in queries if q not in known]
    if strangers:
        raise InputError(
            f"key 'queries': {strangers[0]!r} is not a query of the golden set", path=where
        )
    if len(set(queries)) < MIN_SAMPLE:
        raise InputError(f"key 'queries': at least {MIN_SAMPLE} distinct queries", path=where)
    judge, seed = data.get("judge"), data.get("seed")
    if not isinstance(judge, str) or not judge.startswith("llm:") or judge == "llm:":
        raise InputError(f"key 'judge' must be llm:<model>, got {judge!r}", path=where)
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise InputError(f"key 'seed' must be an integer, got {seed!r}", path=where)
    strata = data.get("strata")
    if strata is not None and not isinstance(strata, str):
        raise InputError(f"key 'strata' must be a field name or null, got {strata!r}", path=where)
    population = data.get("population", len(known))
    if isinstance(population, bool) or not isinstance(population, int):
        raise InputError(f"key 'population' must be an integer, got {population!r}", path=where)
    return HumanSample(
        tuple(dict.fromkeys(queries)),
        judge,
        seed,
        strata,
        population,
        str(data.get("at") or ""),
        where,
    )


def sample_judge(judgements: str | Path) -> str | None:
    """The judge the sample beside the judgements file names; None without a readable one."""
    try:
        data = json.loads(sample_path(judgements).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    judge = data.get("judge") if isinstance(data, dict) else None
    return judge if isinstance(judge, str) else None
