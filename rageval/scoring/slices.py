"""Slices: the queries of a golden set grouped by a field, each group with its n, means and 95%
bootstrap CIs, so a collapse in one kind of question is not hidden by the mean over all.

A slice field is ``source``, ``tags`` (a query is in the slice of each of its tags) or a key of a
golden line's ``meta`` object (``difficulty``, or ``meta.difficulty`` when a meta key shadows
``source`` or ``tags``). A slice is named ``<field>=<value>`` (``source=ticket``, ``tags=hr``).
Queries without the field form ``<field>=(none)``. Slices with fewer than ``min_slice_size``
queries are pooled into ``<field>=other``, which lists the values it holds.

Everything works on per-query rows (report.json's ``per_query``: ``id``, ``source``, ``tags``,
``meta`` and one value per metric, None where undefined), so a run, a baseline and a sweep's jobs
are sliced by the same code.
"""

from __future__ import annotations

import hashlib
import math
import re
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from rageval.errors import ConfigError, did_you_mean
from rageval.scoring.spec import mlflow_key
from rageval.scoring.stats import bootstrap_ci

DEFAULT_FIELDS = ("source",)
DEFAULT_MIN_SIZE = 10
OTHER = "other"
NONE = "(none)"
TOP_FIELDS = ("source", "tags")


def field_values(row: Mapping[str, Any], field: str) -> list[str]:
    """The values of ``field`` for one query row: ``[source]``, its tags, or its meta value (a
    list gives each item); ``[]`` when the query does not have the field."""
    if field == "source":
        raw: Any = row.get("source")
    elif field in ("tags", "tag"):
        raw = list(row.get("tags") or [])
    else:
        key = field[len("meta.") :] if field.startswith("meta.") else field
        raw = (row.get("meta") or {}).get(key)
    items = raw if isinstance(raw, list | tuple) else [raw]
    return list(dict.fromkeys(_text(x) for x in items if x is not None and x != ""))


def _text(x: Any) -> str:
    if isinstance(x, bool):
        return "true" if x else "false"
    if isinstance(x, float) and x.is_integer():
        return str(int(x))
    return str(x)


def canonical_field(field: str) -> str:
    """``tag`` -> ``tags``; other names as given."""
    return "tags" if field == "tag" else str(field)


def check_fields(
    fields: Sequence[str], rows: Sequence[Mapping[str, Any]] | None = None, where: str = ""
) -> None:
    """Refuse ``slices`` that is not a list of names and, given the golden set's ``rows``, a field
    that no query has (a typo would otherwise slice nothing), naming the fields it does have."""
    if isinstance(fields, str) or not all(isinstance(f, str) and f.strip() for f in fields):
        raise ConfigError(
            f"slices must be a list of field names like [source, tags, difficulty], got {fields!r}"
        )
    for f in fields if rows is not None else ():
        if f in TOP_FIELDS or f == "tag" or any(field_values(r, f) for r in rows):
            continue
        meta = sorted({k for r in rows for k in (r.get("meta") or {})})
        raise ConfigError(
            f"slices: no query of {where} has the field {f!r}; slice by source, tags"
            + (f" or a meta key ({', '.join(meta)})" if meta else " (its lines have no meta)")
        )


# the most slices one field is broken into: a field with thousands of values (an id, a
# timestamp) would otherwise mean a console table, MLflow metrics and report.json rows for each
MAX_SLICES = 50


class SliceCapWarning(UserWarning):
    """A slice field had more values than :data:`MAX_SLICES`; the smallest were pooled."""


@dataclass(frozen=True)
class SliceGroup:
    """The queries (row indices) of one slice; ``pooled`` lists the values an ``other`` slice
    holds."""

    field: str
    value: str
    index: tuple[int, ...]
    pooled: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        """``source=ticket``."""
        return f"{self.field}={self.value}"


def group_rows(
    rows: Sequence[Mapping[str, Any]], fields: Sequence[str], min_size: int = DEFAULT_MIN_SIZE
) -> list[SliceGroup]:
    """The slices of ``rows`` by each of ``fields``: largest first, then by value, the pooled
    ``other`` last. A slice smaller than ``min_size`` joins ``other`` (a query counted once there
    even when two of its tags were pooled); a value named ``other`` is pooled too."""
    if isinstance(min_size, bool) or not isinstance(min_size, int) or min_size < 1:
        raise ConfigError(f"min_slice_size must be a whole number >= 1, got {min_size!r}")
    out: list[SliceGroup] = []
    for raw_field in dict.fromkeys(fields):
        field = canonical_field(raw_field)
        by_value: dict[str, list[int]] = {}
        for i, r in enumerate(rows):
            for v in field_values(r, field) or [NONE]:
                by_value.setdefault(v, []).append(i)
        if set(by_value) == {NONE}:  # no query has the field: nothing to slice
            continue
        kept = [(v, idx) for v, idx in by_value.items() if len(idx) >= min_size and v != OTHER]
        kept.sort(key=lambda t: (-len(t[1]), t[0]))
        if len(kept) > MAX_SLICES:  # an id-like field: the largest slices, the rest pooled
            warnings.warn(
                f"slices by {field}: {len(kept)} values reach min_slice_size={min_size}; the "
                f"{MAX_SLICES} largest are reported, the other {len(kept) - MAX_SLICES} pooled "
                f"into {field}={OTHER} (is {field} an id rather than a category?)",
                SliceCapWarning,
                stacklevel=2,
            )
            kept = kept[:MAX_SLICES]
        small = sorted(v for v in by_value if v not in dict(kept))
        out += [SliceGroup(field, v, tuple(idx)) for v, idx in kept]
        if small:
            pool = sorted({i for v in small for i in by_value[v]})
            out.append(SliceGroup(field, OTHER, tuple(pool), tuple(small)))
    return out


def find_group(
    rows: Sequence[Mapping[str, Any]], name: str, min_size: int = DEFAULT_MIN_SIZE
) -> SliceGroup:
    """The slice ``<field>=<value>`` of ``rows``: a value of the field (pooled or not), or the
    pooled ``<field>=other``. Raises ConfigError naming the field's slices when there is none."""
    field, sep, value = str(name).partition("=")
    if not sep or not field or not value:
        raise ConfigError(f"slice {name!r} must be written <field>=<value>, e.g. source=ticket")
    field = canonical_field(field)
    if value == OTHER:
        pooled = [g for g in group_rows(rows, [field], min_size) if g.value == OTHER]
        if pooled:
            return pooled[0]
    raw = {g.value: g for g in group_rows(rows, [field], 1)}
    if value in raw and value != OTHER:
        return raw[value]
    if not raw:
        fields = slice_fields(rows)
        hint = did_you_mean(field, fields, n=2, ignore_case=True)
        raise ConfigError(
            f"no query is in slice {name!r}: no query has the field {field!r}"
            f"{hint}; the golden set's slice fields: {', '.join(fields)}"
        )
    values = sorted(raw)
    if any(g.value == OTHER for g in group_rows(rows, [field], min_size)):
        values.append(OTHER)
    close = did_you_mean(value, values, n=2, ignore_case=True, prefix=f"{field}=")
    raise ConfigError(
        f"no query is in slice {name!r}{close}; the slices of {field}: {', '.join(values)}"
    )


def slice_fields(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """The fields the queries of ``rows`` can be sliced by: source, tags and the meta keys any
    query has (sorted)."""
    meta = sorted({str(k) for r in rows for k in (r.get("meta") or {})})
    top = [f for f in TOP_FIELDS if any(field_values(r, f) for r in rows)]
    return top + [f"meta.{k}" if k in TOP_FIELDS else k for k in meta]


def _values(rows: Sequence[Mapping[str, Any]], metric: str, index: Sequence[int]) -> np.ndarray:
    v = np.array([_num(rows[i].get(metric)) for i in index], dtype=float)
    return v[~np.isnan(v)]


def _num(x: Any) -> float:
    return math.nan if x is None else float(x)


def slice_table(
    rows: Sequence[Mapping[str, Any]],
    fields: Sequence[str],
    metrics: Sequence[str],
    min_size: int = DEFAULT_MIN_SIZE,
    confidence: float = 0.95,
) -> list[dict[str, Any]]:
    """One entry per slice: ``slice``, ``field``, ``value``, ``n``, ``pooled`` (for ``other``),
    ``metrics`` (means over the slice's queries where the metric is defined) and ``ci`` (the
    percentile bootstrap of :func:`rageval.scoring.stats.bootstrap_ci`, seeded as the headline
    CIs are)."""
    out = []
    for g in group_rows(rows, fields, min_size):
        means: dict[str, float] = {}
        ci: dict[str, list[float]] = {}
        for m in metrics:
            v = _values(rows, m, g.index)
            means[m] = float(v.mean()) if v.size else math.nan
            ci[m] = list(bootstrap_ci(v, confidence)) if v.size else [math.nan, math.nan]
        entry: dict[str, Any] = {"slice": g.name, "field": g.field, "value": g.value}
        entry["n"] = len(g.index)
        if g.pooled:
            entry["pooled"] = list(g.pooled)
        entry.update(metrics=means, ci=ci)
        out.append(entry)
    return out


_UNSAFE = re.compile(r"[^A-Za-z0-9_\-]")
KEY_PREFIX = "slice"
_MAX_PART = 60  # characters of a field or value kept in a key (MLflow keys hold 250)


def key_part(text: str) -> str:
    """A field or value as MLflow accepts it on every platform: letters, digits, ``_`` and ``-``
    kept; any other character (``.``, ``/``, ``:``, spaces, non-ASCII) becomes ``_`` and the key
    then ends in ``_`` + 6 hex digits of the original's sha256, so two values that differ only
    there never share a key. Long parts are cut to 60 characters (also hashed)."""
    safe = _UNSAFE.sub("_", text)
    if safe == text and len(text) <= _MAX_PART:
        return text
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()[:6]
    return f"{safe[:_MAX_PART]}_{digest}"


def slice_key(field: str, value: str, metric: str) -> str:
    """The MLflow key of a slice metric: ``slice/source.ticket.recall_at_5`` (the ``slice/``
    section groups them in the MLflow UI)."""
    return f"{KEY_PREFIX}/{key_part(field)}.{key_part(value)}.{mlflow_key(metric)}"
