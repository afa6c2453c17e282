"""Per-slice gates: a slice that drops beyond its tolerance fails the gate even when the mean does
not (an improving category can hide a collapse in another).

``gate.slices`` maps a slice to its tolerances (absolute drop of the slice's mean)::

    gate:
      slices:
        source=adversarial: {recall@5: 0.05}   # these metrics, these tolerances
        tags=multi-hop: 0.1                     # every gate metric, 0.1
        source: 0.05                            # every slice of source (small ones pooled)

On the command line: ``gate.slices.source=adversarial.recall@5=0.05`` (one metric),
``gate.slices.source=adversarial=0.05`` (every gate metric) or ``gate.slices.source=0.05``;
:func:`normalize_slice_override` turns these into an override Hydra parses.

Each (slice, metric) is decided as a headline metric is (rageval.gate.paired: the paired t
interval on the slice's queries, the paired randomization test): ok, regressed or inconclusive.
The p-values are Holm-adjusted over the family of all slice tests of the check (the headline
metrics are a family of their own, so adding slice gates never changes their verdict).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from rageval.config_schema import GateConfig
from rageval.errors import ConfigError, InputError, did_you_mean
from rageval.gate.paired import Change, finish, measure, verdict
from rageval.report.table import Column, Table, num
from rageval.scoring.slices import (
    DEFAULT_MIN_SIZE,
    SliceGroup,
    canonical_field,
    find_group,
    group_rows,
    slice_fields,
)
from rageval.scoring.spec import FAMILIES, MetricSpec
from rageval.scoring.stats import holm

SLICE_OVERRIDE = re.compile(r"^(\+{0,2})gate\.slices\.(.+)=([^=]*)$", re.DOTALL)
# characters Hydra's override grammar needs escaped in a dictionary key
_HYDRA_ESCAPE = re.compile(r"([\\=:,\[\]{}()])")


@dataclass
class SliceRow(Change):
    """One gated (slice, metric): the slice's means, interval and verdict decided as a headline
    metric's (rageval.gate.paired.Change), over the slice's ``n`` queries."""

    slice: str = ""
    n: int = 0
    pooled: list[str] | None = None

    def line(self) -> str:
        return f"{super().line()} on {self.slice} ({self.n} queries)"


def _split_key(rest: str) -> tuple[str, str | None]:
    """``source=adversarial.recall@5`` -> (``source=adversarial``, ``recall@5``); a key without a
    trailing metric -> (key, None)."""
    head, dot, tail = rest.rpartition(".")
    if dot and head and MetricSpec.is_metric(tail):
        return head, tail
    return rest, None


def normalize_slice_override(text: str) -> str:
    """``gate.slices.<slice>[.<metric>]=<tolerance>`` -> ``++gate.slices={<slice>: ...}`` (the
    slice name escaped for Hydra; merged into the mapping, so several such overrides add up);
    any other override unchanged."""
    m = SLICE_OVERRIDE.match(text)
    if not m:
        return text
    key, metric = _split_key(m.group(2))
    try:
        float(m.group(3))
    except ValueError:
        raise ConfigError(
            f"override {text!r}: a slice tolerance is a number, e.g. "
            "gate.slices.source=adversarial.recall@5=0.05"
        ) from None
    if any(c in key for c in "'\"") or key != key.strip():
        raise ConfigError(
            f"override {text!r}: the slice name holds quotes or surrounding spaces, which an "
            "override cannot carry; write it under gate.slices in a config file instead"
        )
    name = _HYDRA_ESCAPE.sub(r"\\\1", key)
    if metric is None:
        return f"++gate.slices={{{name}:{m.group(3)}}}"
    return f"++gate.slices={{{name}:{{{MetricSpec.parse(metric).mlflow_key}:{m.group(3)}}}}}"


def parse_tolerances(
    spec: Mapping[str, Any] | None, gate_metrics: Sequence[str]
) -> list[tuple[str, dict[str, float]]]:
    """``gate.slices`` as (slice key, {metric: tolerance}) pairs, metrics in report spelling; a
    plain number applies to every gate metric."""
    out = []
    for key, value in (spec or {}).items():
        where = f"gate.slices[{key!r}]"
        if isinstance(value, Mapping):
            tol = {str(MetricSpec.parse(str(m))): _tolerance(v, where) for m, v in value.items()}
            if not tol:
                raise ConfigError(
                    f"{where} is empty: give metric tolerances, e.g. {{recall@5: 0.05}}"
                )
        else:
            t = _tolerance(value, where)
            tol = {str(MetricSpec.parse(m)): t for m in gate_metrics}
        out.append((str(key), tol))
    return out


def _tolerance(value: Any, where: str) -> float:
    ok = isinstance(value, int | float) and not isinstance(value, bool)
    if not ok or not math.isfinite(value) or value < 0:
        raise ConfigError(
            f"{where}: a tolerance is a number >= 0 (an absolute drop of the slice's mean), "
            f"got {value!r}; e.g. {{recall@5: 0.05}} or 0.05 for every gate metric"
        )
    return float(value)


def _groups(
    rows: Sequence[Mapping[str, Any]],
    key: str,
    min_size: int,
    gate_metrics: Sequence[str] = (),
) -> list[SliceGroup]:
    if "=" in key:
        try:
            return [find_group(rows, key, min_size)]
        except ConfigError as e:
            _refuse_metric(rows, key, min_size, gate_metrics, e)
            raise ConfigError(f"gate.slices: {e}") from None
    groups = group_rows(rows, [canonical_field(key)], min_size)
    if not groups:
        fields = slice_fields(rows)
        hint = did_you_mean(key, fields, n=2, ignore_case=True)
        raise ConfigError(
            f"gate.slices names the field {key!r}, which no query of the golden set has"
            f"{hint}; write <field>=<value> (source=adversarial) or a field "
            f"the queries have: {', '.join(fields)}"
        )
    return groups


def _refuse_metric(
    rows: Sequence[Mapping[str, Any]],
    key: str,
    min_size: int,
    gate_metrics: Sequence[str],
    error: ConfigError,
) -> None:
    """``source=adversarial.recal@5``: a slice that exists followed by a metric name that is none
    (which is why the override read it as part of the slice name) -> say so, did you mean."""
    head, dot, tail = key.rpartition(".")
    if not dot or "=" not in head:
        return
    try:
        find_group(rows, head, min_size)
    except ConfigError:
        return
    names = list(dict.fromkeys(str(MetricSpec.parse(m)) for m in gate_metrics))
    k = re.search(r"(?:@|_at_)(\d+)$", tail)
    names += [f"{f}@{k.group(1)}" for f in FAMILIES] if k else list(FAMILIES)
    raise ConfigError(
        f"gate.slices[{key!r}]: {tail!r} after the slice {head!r} is no metric"
        f"{did_you_mean(tail.replace('_at_', '@'), names, n=2, ignore_case=True)}; write "
        f"gate.slices.{head}.<metric>=<tolerance> with a metric such as "
        f"{', '.join(str(MetricSpec.parse(m)) for m in gate_metrics[:3]) or 'recall@5'}"
    ) from error


def check_spec(
    spec: Mapping[str, Any] | None,
    gate_metrics: Sequence[str],
    rows: Sequence[Mapping[str, Any]],
    min_size: int = DEFAULT_MIN_SIZE,
    *,
    measured: bool = True,
) -> None:
    """Refuse a bad ``gate.slices`` before anything runs: tolerances that are not numbers, metric
    names that are none, (when the baseline's ``rows`` carry the slice fields) slices no query is
    in and (``measured``: the rows hold metric values) metrics the rows do not hold."""
    wanted = parse_tolerances(spec, gate_metrics)
    if rows and any(_has_fields(r) for r in rows):
        for key, _ in wanted:
            _groups(rows, key, min_size, gate_metrics)
    have = {m for r in rows for m in r}
    for key, tolerances in wanted if rows and measured else ():
        missing = [m for m in tolerances if m not in have]
        if missing:
            have = [m for m in dict.fromkeys(str(MetricSpec.parse(g)) for g in gate_metrics)]
            gated = sorted(m for m in have if "@" in m)
            hint = did_you_mean(missing[0], gated, n=2, ignore_case=True)
            raise ConfigError(
                f"gate.slices[{key!r}]: the baseline's per-query rows have no {missing[0]!r}"
                f"{hint}; gate a "
                f"metric the baseline measured, e.g. {', '.join(have[:3]) or 'recall@5'}"
            )


def _num(x: Any) -> float:
    return math.nan if x is None else float(x)


def _has_fields(row: Mapping[str, Any]) -> bool:
    return any(k in row for k in ("source", "tags", "meta"))


def compare_slices(
    base_q: Mapping[str, Mapping[str, Any]],
    cur_q: Mapping[str, Mapping[str, Any]],
    shared: Sequence[str],
    spec: Mapping[str, Any] | None,
    gate_metrics: Sequence[str],
    *,
    min_size: int = DEFAULT_MIN_SIZE,
    alpha: float = GateConfig.alpha,
    resamples: int = GateConfig.resamples,
) -> list[SliceRow]:
    """The gated slices of ``spec`` (``gate.slices``) over the ``shared`` queries: one row per
    (slice, metric), decided as the headline metrics are (rageval.gate.paired.verdict) with p
    Holm-adjusted over all of them; a named slice's tolerance wins over its field's
    (``source=adversarial`` over ``source``). Slice membership comes from the current rows'
    source, tags and meta (the baseline's when a current row lacks them)."""
    wanted = parse_tolerances(spec, gate_metrics)
    if not wanted:
        return []
    rows = [cur_q[q] if _has_fields(cur_q[q]) else base_q[q] for q in shared]
    # (slice, metric) -> tolerance; a named slice overrides its field's tolerance
    gated: dict[tuple[str, str], tuple[SliceGroup, float, str]] = {}
    for key, tolerances in sorted(wanted, key=lambda kv: "=" in kv[0]):
        for g in _groups(rows, key, min_size, gate_metrics):
            for metric, tol in tolerances.items():
                gated[(g.name, metric)] = (g, tol, key)
    out: list[SliceRow] = []
    for (_, metric), (g, tol, key) in gated.items():
        ids = [shared[i] for i in g.index]
        if not any(metric in base_q[q] for q in ids) or not any(metric in cur_q[q] for q in ids):
            raise InputError(
                f"gate.slices[{key!r}]: metric {metric!r} is missing from the per-query rows of "
                "the baseline or the current report; gate a metric both have"
            )
        a = np.array([_num(base_q[q].get(metric)) for q in ids])
        b = np.array([_num(cur_q[q].get(metric)) for q in ids])
        pairs = measure(a, b, resamples)
        base_mean, cur_mean = _mean(a), _mean(b)
        row = SliceRow(
            metric,
            base_mean,
            cur_mean,
            cur_mean - base_mean,
            tol,
            pairs.p,
            slice=g.name,
            n=len(ids),
            pooled=list(g.pooled) or None,
        )
        finish(row, pairs, alpha)
        out.append(row)
    for r, p_adj in zip(out, holm([r.p_value for r in out]), strict=True):
        r.p_value = float(p_adj)
        r.verdict = verdict(r, float(p_adj), alpha)
    return out


def _mean(v: np.ndarray) -> float:
    v = v[~np.isnan(v)]
    return float(v.mean()) if v.size else math.nan


def _interval(r: SliceRow) -> str:
    return f"[{r.low:+.3f}, {r.high:+.3f}]" if math.isfinite(r.low) else "n/a"


def _table(rows: Sequence[SliceRow], *, md: bool) -> Table:
    """The slice rows: gate.md's names the values an ``other`` slice pooled and has the
    win/tie/loss column; the console's is narrower."""
    from rageval.formats.textio import printable

    table = Table(
        [
            Column("slice"),
            Column("n", "right", min_width=5),
            Column("metric", min_width=6),
            Column("baseline", "right", min_width=8),
            Column("current", "right", min_width=8),
            Column("delta", "right", min_width=8),
            Column("interval", min_width=18),
            Column("tolerance", "right"),
            Column("detects", "right"),
            Column("p (Holm)", "right"),
            *([Column("win/tie/loss", "right")] if md else []),
            Column("verdict"),
        ]
    )
    for r in rows:
        pooled = f" ({', '.join(r.pooled)})" if md and r.pooled else ""
        table.add_row(
            printable(r.slice + pooled),
            r.n,
            r.metric,
            num(r.baseline),
            num(r.current),
            num(r.delta, "+.4f"),
            _interval(r),
            num(r.tolerance),
            num(r.detects),
            num(r.p_value, ".3g"),
            *([f"{r.wins}/{r.ties}/{r.losses}"] if md else []),
            r.verdict,
        )
    return table


def markdown(rows: Sequence[SliceRow]) -> list[str]:
    """gate.md's slice section (empty without gated slices)."""
    if not rows:
        return []
    return [
        "",
        f"**Slices** (tolerance: absolute drop of the slice's mean; interval: 95% paired t; "
        f"p: paired randomization test, Holm-adjusted over the {len(rows)} slice tests)",
        "",
        *_table(rows, md=True).markdown().rstrip("\n").split("\n"),
    ]


def console(rows: Sequence[SliceRow]) -> list[str]:
    """The slice rows as aligned terminal lines (none without gated slices)."""
    if not rows:
        return []
    return [
        f"Slices (p Holm-adjusted over the {len(rows)} slice tests):",
        *_table(rows, md=False).console().split("\n"),
    ]
