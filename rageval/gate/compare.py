"""The regression gate: compare a run with the baseline query by query, in phases.

1. pair: the queries both reports hold, each gate metric's per-query values side by side;
2. decide (rageval.gate.paired, docs/gate.md): each metric gets the paired t interval on its
   change and a paired randomization test, Holm-adjusted across metrics. It passes when the
   interval shows any drop is within its tolerance (non-inferiority), regresses when the drop is
   beyond tolerance and the test rejects no change, and is inconclusive otherwise: the golden set
   cannot tell (``gate.on_inconclusive``: warn, fail or pass). Every metric also says the drop
   its golden set detects with 80% power;
3. win/tie/loss: per metric, the queries that went up, stayed, went down;
4. slices (``gate.slices``, rageval.gate.slices): each gated slice and metric decided the same
   way, Holm-adjusted over the slice tests; a slice beyond its tolerance fails the gate even when
   the mean does not, and an undecided slice makes the check inconclusive;
5. queries: those that lost their hit at k (split into "fell out of the top k" and "no longer
   retrieved" within the search depth), those that gained one, the largest first-rank drops.

Beside the verdict, the gate names what changed beneath the change (rageval.report.provenance:
documents added, removed or changed, golden queries, judgements, the embedding's backend,
precision, CPU class and library versions) and whether the embedding canary's vectors moved
(rageval.embedding.canary); a moved embedding warns, or fails the check with
``gate.on_embedding_drift=fail``.

A golden set that changed since the baseline is its own verdict: neither a pass nor a regression.
So is another label set (``labels=gold`` against ``labels=all``) or other judgements counted: the
numbers were measured against other labels (``rageval check`` refuses before it re-runs).
:func:`compare` returns a :class:`Comparison`; ``console()``, ``markdown()`` and ``to_dict()`` are
views of it (``rageval check`` writes gate.md and gate.json).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from rageval.config_schema import CODE_KEYS, GateConfig, RagevalConfig, measures
from rageval.embedding import canary
from rageval.errors import ConfigError, InputError
from rageval.formats.redact import MASK
from rageval.gate import slices as slice_gate
from rageval.gate.baseline import config_summary
from rageval.gate.labels import label_info, labels_problem, labels_text
from rageval.gate.paired import (
    INCONCLUSIVE,
    Change,
    finish,
    finish_ppi,
    human_values,
    measure,
    verdict,
)
from rageval.report import provenance
from rageval.report.table import Column, Table, num
from rageval.scoring.spec import MetricSpec
from rageval.scoring.stats import holm

PASS, REGRESSED, GOLDEN_CHANGED = "pass", "regressed", "golden_changed"
LABELS_CHANGED = "labels_changed"
# the embedding canary moved and gate.on_embedding_drift=fail (exit 1)
EMBEDDING_CHANGED = "embedding_changed"
# what an embedding drift does (gate.on_embedding_drift): warn (said on every output) or fail
ON_EMBEDDING_DRIFT = ("warn", "fail")
# what an inconclusive check does (gate.on_inconclusive): warn (exit 0, said loudly), fail, pass
ON_INCONCLUSIVE = ("warn", "fail", "pass")
OUT_OF_TOP_K, NOT_RETRIEVED = "out_of_top_k", "not_retrieved"
SHOWN = 10  # queries listed before the rest goes into a <details> block / "and N more"


class MetricRow(Change):
    """One gate metric over every compared query: baseline and current means, ``delta``
    (current - baseline), interval, detectable drop, verdict (rageval.gate.paired.Change)."""


@dataclass
class Comparison:
    """The gate's result: ``status``, a row per metric, and the queries that moved."""

    status: str
    rows: list[MetricRow]
    lost_hits: list[dict[str, Any]] = field(default_factory=list)
    gained_hits: list[dict[str, Any]] = field(default_factory=list)
    rank_drops: list[dict[str, Any]] = field(default_factory=list)
    golden: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    k: int = 0
    n_queries: int = 0
    baseline_info: dict[str, Any] = field(default_factory=dict)
    current_info: dict[str, Any] = field(default_factory=dict)
    config_diff: list[str] = field(default_factory=list)
    # label set and judgements of each side: {"baseline": {...}, "current": {...}}
    labels: dict[str, dict[str, Any]] = field(default_factory=dict)
    # gate.slices: one row per gated (slice, metric)
    slices: list[slice_gate.SliceRow] = field(default_factory=list)
    on_inconclusive: str = GateConfig.on_inconclusive
    # what changed beneath the change (rageval.report.provenance.diff): corpus, golden set,
    # judgements, embedding; and the embedding canary's verdict (rageval.embedding.canary.drift)
    beneath: list[str] = field(default_factory=list)
    canary: dict[str, Any] = field(default_factory=dict)
    on_embedding_drift: str = GateConfig.on_embedding_drift

    @property
    def exit_code(self) -> int:
        """The process exit code: 0 pass, 1 regressed (or the embedding moved, with
        ``gate.on_embedding_drift=fail``), 2 golden set changed; inconclusive: 1 with
        ``gate.on_inconclusive=fail``, else 0."""
        if self.status == INCONCLUSIVE:
            return 1 if self.on_inconclusive == "fail" else 0
        return {PASS: 0, REGRESSED: 1, EMBEDDING_CHANGED: 1}.get(self.status, 2)

    @property
    def embedding_changed(self) -> bool:
        """The embedding canary moved beyond float noise since the baseline."""
        return self.canary.get("status") == "changed"

    def inconclusive(self) -> list[Change]:
        """The metrics (then the gated slices) the golden set could not decide."""
        return [r for r in [*self.rows, *self.slices] if r.verdict == INCONCLUSIVE]

    def to_dict(self) -> dict[str, Any]:
        """Every field as plain JSON-ready data (what gate.json holds)."""
        return asdict(self)

    def regressed(self) -> list[str]:
        """What regressed: ``recall@5`` for a metric, ``recall@5 on source=adversarial`` for a
        slice."""
        out = [r.metric for r in self.rows if r.verdict == "regressed"]
        return out + [f"{r.metric} on {r.slice}" for r in self.slices if r.verdict == "regressed"]

    def _where(self) -> str:
        """When only slices regressed: that the headline metrics passed."""
        if any(r.verdict == "regressed" for r in self.rows):
            return ""
        return (
            " (every headline metric is within tolerance; the slice table below shows the "
            "slices that are not)"
        )

    def header_lines(self) -> list[str]:
        """Baseline run, current config, what changed between them, how it was tested."""
        b, c = self.baseline_info, self.current_info
        run = f"run {b['run_id']}" if b.get("run_id") else (b.get("file") or "a report file")
        lines = [
            f"Baseline: {run}, promoted {b.get('promoted_at') or '?'}: {b.get('config')}",
            f"Current: {c.get('config')}"
            + (f" (overrides: {' '.join(c['overrides'])})" if c.get("overrides") else ""),
            f"Config changes: {'; '.join(self.config_diff) if self.config_diff else 'none'}",
            *self.beneath_lines(),
            f"Queries compared: {self.n_queries}; tolerance: absolute drop of the mean per metric; "
            f"detects: the smallest drop found with 80% power (paired t-test; when no query "
            f"changed, a bound from the baseline's spread); "
            f"p: paired randomization test, Holm-adjusted over {len(self.rows)} metrics",
        ]
        if self.labels:
            lines.append("Labels: " + labels_text(self.labels))
        return lines

    def beneath_lines(self) -> list[str]:
        """What changed beneath the change (inputs, embedding) and the canary's verdict."""
        lines = []
        if self.beneath:
            # document and query ids are the project's text: terminal-safe here, and gate.md's
            # header makes them HTML-neutral too
            shown = "; ".join(_user(b, md=False) for b in self.beneath)
            lines.append("Changed beneath the change: " + shown)
        elif self.canary:  # both sides recorded what they stand on, and it is the same
            lines.append(
                "Changed beneath the change: nothing (corpus, golden set, judgements "
                "and embedding as in the baseline)"
            )
        if self.canary:
            lines.append(self.canary["line"][0].upper() + self.canary["line"][1:])
        return lines

    def table(self) -> Table:
        """The metric table of gate.md and the console: a row per gated metric."""
        table = Table(
            [
                Column("metric"),
                Column("baseline", "right", min_width=8),
                Column("current", "right", min_width=8),
                Column("delta", "right", min_width=8),
                Column("tolerance", "right"),
                Column("detects", "right"),
                Column("p (Holm)", "right"),
                Column("win/tie/loss", "right", min_width=12),
                Column("verdict"),
            ]
        )
        for r in self.rows:
            table.add_row(
                r.metric,
                num(r.baseline),
                num(r.current),
                num(r.delta, "+.4f"),
                num(r.tolerance),
                num(r.detects),
                num(r.p_value, ".3g"),
                f"{r.wins}/{r.ties}/{r.losses}",
                r.verdict,
            )
        return table

    def markdown(self) -> str:
        """The verdict as Markdown (gate.md): header, metric table, then the queries that moved."""
        head = {
            PASS: "✅ No retrieval regression",
            REGRESSED: "❌ Retrieval regressed",
            INCONCLUSIVE: "⚠️ Inconclusive: the golden set cannot tell",
            GOLDEN_CHANGED: "⚠️ Golden set changed since the baseline",
            LABELS_CHANGED: "⚠️ Labels differ from the baseline's",
            EMBEDDING_CHANGED: "❌ Embedding changed since the baseline",
        }[self.status]
        lines = [f"### {head}", ""]
        if self.embedding_changed:
            lines += [f"**Warning:** {self.canary['line']}", ""]
        if self.status == REGRESSED:  # what failed, first: a slice can fail a passing mean
            failed = _user(", ".join(self.regressed()), md=True)
            lines += [f"**Regressed:** {failed}{self._where()}", ""]
        if self.status == INCONCLUSIVE:
            lines += [f"**Inconclusive:** {r.line()}" for r in self.inconclusive()] + [""]
        lines += [f"- {_user(line, md=True)}" for line in self.header_lines()]
        lines += ["", self.table().markdown().rstrip("\n")]
        lines += ["", *[f"_{n}_" for n in detection_notes(self.rows, self.n_queries)]]
        lines += slice_gate.markdown(self.slices)
        sections = [
            (f"Queries that lost their hit@{self.k}", self.lost_hits, _lost_line),
            ("Largest drops of the first relevant rank", self.rank_drops, _drop_line),
            (f"Queries that gained a hit@{self.k}", self.gained_hits, _gain_line),
        ]
        for title, items, line in sections:
            if not items:
                continue
            lines += ["", f"**{title}** ({len(items)})", ""]
            lines += [f"- {line(q, self.k, md=True)}" for q in items[:SHOWN]]
            if len(items) > SHOWN:
                lines += ["", f"<details><summary>{len(items) - SHOWN} more</summary>", ""]
                lines += [f"- {line(q, self.k, md=True)}" for q in items[SHOWN:]]
                lines += ["", "</details>"]
        lines += ["", *[f"_{n}_" for n in self.notes]]
        return "\n".join(lines).rstrip() + "\n"

    def console(self) -> str:
        """The verdict as terminal text, ending in a PASS / FAIL / GOLDEN SET CHANGED line."""
        out = list(self.header_lines())
        out.append(self.table().console())
        out += detection_notes(self.rows, self.n_queries)
        out += slice_gate.console(self.slices)
        for items, line in (
            (self.lost_hits, _lost_line),
            (self.rank_drops, _drop_line),
            (self.gained_hits, _gain_line),
        ):
            out += [line(q, self.k) for q in items[:SHOWN]]
            if len(items) > SHOWN:
                out.append(f"  ... and {len(items) - SHOWN} more (see gate.md)")
        out += self.notes
        verdict = {
            PASS: "PASS: every gated metric is shown within tolerance (95% interval above "
            "-tolerance)",
            INCONCLUSIVE: (
                "INCONCLUSIVE"
                + (" (gate.on_inconclusive=fail: exit 1)" if self.on_inconclusive == "fail" else "")
                + ": "
                + "; ".join(r.line() for r in self.inconclusive())
            ),
            REGRESSED: "FAIL: " + _user(", ".join(self.regressed()), md=False) + " regressed",
            GOLDEN_CHANGED: (
                "GOLDEN SET CHANGED: neither a pass nor a regression; re-promote a baseline"
            ),
            LABELS_CHANGED: (
                "LABELS DIFFER: neither a pass nor a regression; measure with the baseline's "
                "labels or re-promote a baseline"
            ),
            EMBEDDING_CHANGED: (
                f"FAIL (gate.on_embedding_drift=fail): {self.canary.get('line')}; promote a "
                "baseline measured with this embedding, or set gate.on_embedding_drift=warn"
            ),
        }[self.status]
        if self.embedding_changed and self.status != EMBEDDING_CHANGED:
            verdict += f" (warning: {self.canary['line']})"
        return "\n".join([*out, verdict])


def _rank(r: int) -> str:
    return str(r) if r else "not retrieved"


def _user(text: object, md: bool) -> str:
    """Golden-set text as a line shows it: terminal-safe, and in gate.md (a pull-request comment)
    HTML-neutral (no tag, comment or image reaches the page)."""
    from rageval.formats.textio import printable
    from rageval.report.markdown import cell

    shown = printable(text)
    return cell(shown) if md else shown


def _tag(label: str, qid: object, md: bool) -> str:
    """``MISS q1`` on a terminal; in markdown a code span, which shows its text literally."""
    text = f"{label} {_user(qid, False)}".strip()
    return f"`{text.replace('`', chr(39))}`" if md else text


def _names(q: Mapping[str, Any], md: bool = False) -> str:
    """Readable evidence for a query line: expected documents and what came back, when known."""
    parts = []
    if q.get("expected"):
        parts.append("expected " + ", ".join(_user(x, md) for x in q["expected"][:3]))
    if q.get("retrieved"):
        parts.append("got " + ", ".join(_user(x, md) for x in q["retrieved"][:3]))
    return f" [{'; '.join(parts)}]" if parts else ""


def _lost_line(q: Mapping[str, Any], k: int, md: bool = False) -> str:
    tag = _tag("MISS", q["id"], md)
    if q["why"] == NOT_RETRIEVED:
        why = f"no longer retrieved (rank {q['baseline_rank']} -> beyond the search depth)"
    else:
        why = f"fell out of the top {k} (rank {q['baseline_rank']} -> {q['current_rank']})"
    return f"{tag} {why}: {_user(q['query'], md)}{_names(q, md)}"


def _drop_line(q: Mapping[str, Any], k: int, md: bool = False) -> str:
    tag = _tag("", q["id"], True) if md else f"{_tag('RANK', q['id'], False)}:"
    ranks = f"rank {_rank(q['baseline_rank'])} -> {_rank(q['current_rank'])}"
    return f"{tag} {ranks}: {_user(q['query'], md)}"


def _gain_line(q: Mapping[str, Any], k: int, md: bool = False) -> str:
    tag = _tag("HIT", q["id"], md) if md else f"{_tag('HIT', q['id'], False)}:"
    return f"{tag} {_user(q['query'], md)}"


def detection_notes(rows: Sequence[MetricRow], n: int) -> list[str]:
    """What the gate cannot enforce: the metrics whose tolerance is below the smallest change
    the golden set detects with 80% power, and the queries that would."""
    weak = [r for r in rows if r.detects == r.detects and r.detects > r.tolerance]
    if not weak:
        return []
    parts = [
        f"{r.metric} detects {r.detects:.3f}, its tolerance is {r.tolerance:g}"
        + (f" (about {r.needed:,} queries would detect it)" if r.needed else "")
        for r in weak
    ]
    return [
        f"power: on these {n} queries a drop as small as the tolerance passes unnoticed more "
        f"often than 1 time in 5: {'; '.join(parts)}"
    ]


def tolerance_for(metric: str, default: float, per_metric: Mapping[str, float]) -> float:
    """``per_metric``'s tolerance for ``metric`` (keys in either spelling), else ``default``."""
    spec = MetricSpec.parse(metric)
    for key, value in per_metric.items():
        if MetricSpec.parse(str(key)) == spec:
            return float(value)
    return float(default)


def _num(x: Any) -> float:
    return math.nan if x is None else float(x)


def _flat(node: Any, prefix: str = "") -> dict[str, Any]:
    if not isinstance(node, Mapping):
        return {prefix[:-1]: node}
    out: dict[str, Any] = {}
    for key, value in node.items():
        if not measures(f"{prefix}{key}"):  # where a run happened: not part of the diff
            continue
        out.update(_flat(value, f"{prefix}{key}."))
    return out


def interpolated_keys(cfg) -> list[str]:
    """The keys of a composed config whose value is just another key of it
    (``backend.bm25: ${search.bm25}``; not a resolver such as ``${oc.env:...}``): the
    ``mirrors`` of :func:`config_diff`."""
    import re

    from omegaconf import OmegaConf

    plain = re.compile(r"\$\{[A-Za-z_][\w.]*\}")
    raw = _flat(OmegaConf.to_container(cfg, resolve=False))
    return [k for k, v in raw.items() if isinstance(v, str) and plain.fullmatch(v)]


def config_diff(
    baseline: Mapping[str, Any],
    current: Mapping[str, Any],
    limit: int = 10,
    mirrors: Sequence[str] = (),
) -> list[str]:
    """``chunk: 256 -> 512`` for each config value that differs (where-it-ran keys left out).
    ``mirrors``: keys that only repeat another key of the config (``backend.bm25`` is
    ``${search.bm25}``), left out so a change is listed once, where it was made."""

    def mirrored(key: str) -> bool:
        return any(key == m or key.startswith(m + ".") for m in mirrors)

    def recorded(key: str, x: Any, y: Any) -> bool:
        """A key both sides can hold: never code (a baseline names none, the project's config
        does) nor a masked secret (a baseline stores none)."""
        masked = any(isinstance(v, str) and MASK in v for v in (x, y))
        return not masked and not CODE_KEYS.intersection(key.split("."))

    a, b = _flat(baseline.get("config") or {}), _flat(current.get("config") or {})
    diffs = [
        f"{k}: {a.get(k, '(unset)')} -> {b.get(k, '(unset)')}"
        for k in sorted(a.keys() | b.keys())
        if a.get(k) != b.get(k) and not mirrored(k) and recorded(k, a.get(k), b.get(k))
    ]
    if len(diffs) > limit:
        diffs = [*diffs[:limit], f"and {len(diffs) - limit} more"]
    return diffs


def _info(report: Mapping[str, Any]) -> dict[str, Any]:
    source = report.get("promoted_from") or {}
    return {
        "run_id": source.get("run_id") or report.get("mlflow_run_id"),
        "file": source.get("file"),
        "promoted_at": source.get("promoted_at"),
        "config": config_summary(report),
        "overrides": list(report.get("overrides") or []),
    }


def compare(
    baseline: Mapping[str, Any],
    current: Mapping[str, Any],
    metrics: Sequence[str],
    tolerance: float = GateConfig.tolerance,
    tolerances: Mapping[str, float] | None = None,
    alpha: float = GateConfig.alpha,
    resamples: int = GateConfig.resamples,
    top_drops: int = 10,
    slices: Mapping[str, Any] | None = None,
    min_slice_size: int = RagevalConfig.min_slice_size,
    mirrors: Sequence[str] = (),
    on_inconclusive: str = GateConfig.on_inconclusive,
    on_embedding_drift: str = GateConfig.on_embedding_drift,
) -> Comparison:
    """Compare two reports query by query (see the module docstring); ``slices`` is
    ``gate.slices`` (rageval.gate.slices), ``min_slice_size`` pools a gated field's small
    slices; ``mirrors`` are config keys that repeat others (:func:`config_diff`)."""
    tolerances = tolerances or {}
    _one_of("gate.on_inconclusive", on_inconclusive, ON_INCONCLUSIVE)
    _one_of("gate.on_embedding_drift", on_embedding_drift, ON_EMBEDDING_DRIFT)
    metrics = [str(MetricSpec.parse(m)) for m in metrics]
    golden = {
        "baseline": baseline["digests"].get("golden", ""),
        "current": current["digests"].get("golden", ""),
    }
    # phase 1: pair the queries
    base_q, cur_q, shared, notes = _pair(baseline, current)
    # phases 2 and 3: each metric's paired test (Holm-adjusted), interval, power, win/tie/loss
    rows = _metric_rows(
        baseline, current, base_q, cur_q, shared, metrics, (tolerance, tolerances), alpha, resamples
    )
    # phase 4: the gated slices (their own Holm family)
    slice_rows = slice_gate.compare_slices(
        base_q,
        cur_q,
        shared,
        slices,
        metrics,
        min_size=min_slice_size,
        alpha=alpha,
        resamples=resamples,
    )
    # phase 5: the queries behind the numbers
    k = int(baseline["k"])
    lost, gained, drops = _moved_queries(base_q, cur_q, shared, k)
    status = _status(
        golden, labels_problem(baseline, current), rows, slice_rows, on_inconclusive, notes
    )
    drifted = canary_verdict(baseline, current)
    if drifted.get("status") == "changed" and on_embedding_drift == "fail":
        status = EMBEDDING_CHANGED if status in (PASS, INCONCLUSIVE) else status
    improved = [r.metric for r in rows if r.verdict == "improved"]
    if improved:
        notes.append(
            "improved beyond tolerance: " + ", ".join(improved) + " (consider promoting this run)"
        )
    return Comparison(
        status,
        rows,
        lost,
        gained,
        drops[:top_drops],
        golden,
        notes,
        k,
        len(shared),
        _info(baseline),
        _info(current),
        config_diff(baseline, current, mirrors=mirrors),
        {"baseline": label_info(baseline), "current": label_info(current)},
        slices=slice_rows,
        on_inconclusive=on_inconclusive,
        beneath=provenance.diff(baseline.get("provenance"), current.get("provenance")),
        canary=drifted,
        on_embedding_drift=on_embedding_drift,
    )


def _one_of(key: str, value: str, choices: Sequence[str]) -> None:
    if value not in choices:
        raise ConfigError(f"{key} must be one of {', '.join(choices)}, got {value!r}")


def canary_verdict(baseline: Mapping[str, Any], current: Mapping[str, Any]) -> dict[str, Any]:
    """The embedding canary's verdict; {} when neither side is a rageval run that records one
    (TREC or CSV files, reports from before the canary)."""
    if not (baseline.get("canary") or current.get("canary") or current.get("provenance")):
        return {}
    if not current.get("provenance") and not current.get("canary"):
        return {
            "status": "not_compared",
            "line": "embedding canary: not recorded for this run",
            "texts": 0,
            "min_cosine": None,
        }
    return canary.drift(baseline.get("canary"), current.get("canary"))


def _pair(
    baseline: Mapping[str, Any], current: Mapping[str, Any]
) -> tuple[dict[str, Any], dict[str, Any], list[str], list[str]]:
    """Each report's per-query rows by id, the ids both hold (in the baseline's order), and
    the notes so far: how many were compared when the two hold different queries."""
    base_q = {r["id"]: r for r in baseline["per_query"]}
    cur_q = {r["id"]: r for r in current["per_query"]}
    shared = [q for q in base_q if q in cur_q]
    notes = []
    if len(shared) != len(base_q) or len(shared) != len(cur_q):
        notes.append(
            f"{len(base_q)} baseline queries, {len(cur_q)} current, {len(shared)} compared"
        )
    return base_q, cur_q, shared, notes


def _metric_rows(
    baseline: Mapping[str, Any],
    current: Mapping[str, Any],
    base_q: Mapping[str, Mapping[str, Any]],
    cur_q: Mapping[str, Mapping[str, Any]],
    shared: Sequence[str],
    metrics: Sequence[str],
    tolerances: tuple[float, Mapping[str, float]],
    alpha: float,
    resamples: int,
) -> list[MetricRow]:
    """A row per gate metric over the ``shared`` queries: means, the paired test, interval,
    power and win/tie/loss, its p-value Holm-adjusted across the metrics and its verdict.
    ``tolerances``: the default tolerance and the per-metric ones."""
    rows: list[MetricRow] = []
    for m in metrics:
        if m not in baseline["metrics"] or m not in current["metrics"]:
            raise InputError(
                f"metric {m!r} is missing from the baseline or the current report; gate.metrics "
                "lists metrics both have"
            )
        a = np.array([_num(base_q[q].get(m)) for q in shared])
        b = np.array([_num(cur_q[q].get(m)) for q in shared])
        ppi = _ppi_differences(baseline, current, base_q, cur_q, shared, m)
        pairs = measure(a, b, resamples if ppi is None else 1)
        base_mean, cur_mean = _num(baseline["metrics"][m]), _num(current["metrics"][m])
        row = MetricRow(
            m,
            base_mean,
            cur_mean,
            cur_mean - base_mean,
            tolerance_for(m, *tolerances),
            pairs.p,
        )
        if ppi is None:
            finish(row, pairs, alpha)
        else:  # labels=ppi: the paired change estimated from both label sources
            from rageval.report.ppi_report import recorded_interval

            ok = ~(np.isnan(a) | np.isnan(b))
            finish_ppi(row, pairs, ppi[ok], alpha, recorded_interval(current))
        rows.append(row)
    for r, p_adj in zip(rows, holm([r.p_value for r in rows]) if rows else [], strict=True):
        r.p_value = float(p_adj)
        r.verdict = verdict(r, float(p_adj), alpha)
    return rows


def _ppi_differences(
    baseline: Mapping[str, Any],
    current: Mapping[str, Any],
    base_q: Mapping[str, Mapping[str, Any]],
    cur_q: Mapping[str, Mapping[str, Any]],
    shared: Sequence[str],
    metric: str,
) -> np.ndarray | None:
    """For two ``labels=ppi`` reports whose metric has human-label values: the per-query
    human-label differences (current - baseline; nan outside the human sample). None otherwise:
    the gate's usual paired test decides."""
    if not (baseline.get("ppi") and current.get("ppi")):
        return None
    b, c = label_info(baseline), label_info(current)
    if (b.get("judge"), b.get("sample")) != (c.get("judge"), c.get("sample")):
        return None  # a label change: the status says so; the rows are shown for the reader
    if metric not in (current["ppi"].get("metrics") or {}):
        return None  # not a ranking metric (span, budget, judged@k): measured on one label set
    base = human_values([base_q[q] for q in shared], metric)
    return human_values([cur_q[q] for q in shared], metric) - base


def _moved_queries(
    base_q: Mapping[str, Mapping[str, Any]],
    cur_q: Mapping[str, Mapping[str, Any]],
    shared: Sequence[str],
    k: int,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]:
    """The queries that lost their hit at k (and why), those that gained one, and those whose
    first relevant result fell, largest fall first."""
    hit = f"hit_rate@{k}"
    lost, gained, drops = [], [], []
    for q in shared:
        was, now = _num(base_q[q].get(hit)) > 0, _num(cur_q[q].get(hit)) > 0
        a, b = base_q[q].get("first_relevant_rank") or 0, cur_q[q].get("first_relevant_rank") or 0
        row = {"id": q, "query": cur_q[q].get("query", ""), "baseline_rank": a, "current_rank": b}
        row.update(_labels(cur_q[q], k))
        if was and not now:
            lost.append({**row, "why": NOT_RETRIEVED if not b else OUT_OF_TOP_K})
        elif now and not was:
            gained.append(row)
        elif a and (b == 0 or b > a):
            drops.append({**row, "fall": (b or 10**6) - a})
    drops.sort(key=lambda d: (-d["fall"], d["id"]))
    return lost, gained, drops


def _status(
    golden: Mapping[str, str],
    labels: str | None,
    rows: Sequence[MetricRow],
    slice_rows: Sequence[slice_gate.SliceRow],
    on_inconclusive: str,
    notes: list[str],
) -> str:
    """The gate's status: another golden set or other labels are their own verdicts (said in
    ``notes``); else a regressed metric or slice regresses, an undecided one is inconclusive
    (unless ``on_inconclusive`` is pass), and the rest passes."""
    if golden["baseline"] != golden["current"]:
        notes.append(
            f"golden set digest {golden['baseline'][:12]} (baseline) != "
            f"{golden['current'][:12]} (now): "
            "promote a new baseline after reviewing the change"
        )
        return GOLDEN_CHANGED
    if labels:
        notes.append(labels)
        return LABELS_CHANGED
    regressed = [r for r in [*rows, *slice_rows] if r.verdict == "regressed"]
    undecided = [r for r in [*rows, *slice_rows] if r.verdict == INCONCLUSIVE]
    if regressed:
        return REGRESSED
    if undecided and on_inconclusive != "pass":
        return INCONCLUSIVE
    return PASS


def _labels(row: Mapping[str, Any], k: int) -> dict[str, Any]:
    """Readable names (``doc-id:ordinal``) of what was expected and retrieved, when the report
    carries them; nothing otherwise (the lines then show ids only)."""
    out = {}
    expected = row.get("expected_docs") or row.get("expected_labels")
    if expected:
        out["expected"] = list(expected)
    retrieved = row.get("retrieved_labels") or row.get("retrieved")
    if retrieved:
        out["retrieved"] = list(retrieved)[:k]
    return out
