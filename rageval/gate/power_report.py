"""``rageval compare`` and ``rageval plan``: the gate's statistics (rageval.scoring.power) on any
two runs, and the golden-set size they call for."""

from __future__ import annotations

import itertools
import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from rageval.config_schema import GATE_METRICS, GateConfig, RagevalConfig
from rageval.errors import InputError
from rageval.gate.score_files import Scores, read_scores
from rageval.report.table import Column, Table
from rageval.scoring.power import FAIL, METHOD, Paired, mde, one_run_sd, paired, queries_needed

GATE_FAMILIES = GATE_METRICS


@dataclass
class PairedComparison:
    """``rageval compare``'s result: the paired rows and what was paired."""

    a: str
    b: str
    rows: list[Paired]
    only_a: int
    only_b: int
    notes: list[str] = field(default_factory=list)
    # what changed beneath (two rageval runs: corpus, golden set, judgements, embedding) and the
    # embedding canary's verdict (rageval.gate.compare); empty for TREC or CSV files
    beneath: list[str] = field(default_factory=list)
    canary: dict[str, Any] = field(default_factory=dict)

    @property
    def exit_code(self) -> int:
        return 1 if any(r.verdict == FAIL for r in self.rows) else 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "a": self.a,
            "b": self.b,
            "method": METHOD,
            "only_a": self.only_a,
            "only_b": self.only_b,
            "rows": [r.to_dict() for r in self.rows],
            "beneath": list(self.beneath),
            "canary": dict(self.canary),
        }

    def text(self) -> str:
        r0 = self.rows[0]
        left = (
            f" ({self.only_a} only in A, {self.only_b} only in B: left out)"
            if self.only_a or self.only_b
            else ""
        )
        lines = [
            f"A (baseline): {self.a}",
            f"B (current):  {self.b}",
            f"paired on {r0.n} queries{left}; B - A with its {1 - r0.alpha:.0%} interval "
            f"({METHOD})",
        ]
        for r in self.rows:
            lines.append(r.line())
            lines.append(
                f"  A {r.baseline:.4f}  B {r.current:.4f}  sd of differences {r.sd:.3f}; "
                f"p {r.p_t:.3g} (paired t-test), {r.p_randomization:.3g} (paired randomization "
                "test), two-sided, not adjusted for the metrics compared"
            )
        if self.beneath:
            from rageval.formats.textio import printable  # ids are the project's text

            lines.append("Changed beneath the change: " + printable("; ".join(self.beneath)))
        if self.canary:
            lines.append(self.canary["line"][0].upper() + self.canary["line"][1:])
        lines += self.notes
        return "\n".join(lines)


def _pair(a: Scores, b: Scores, metric: str) -> tuple[np.ndarray, np.ndarray, int, int]:
    qa, qb = a.values[metric], b.values[metric]
    shared = sorted(set(qa) & set(qb))
    if len(shared) < 2:
        raise InputError(
            f"{metric}: {len(shared)} queries scored by both files; compare runs of the same "
            "queries"
        )
    x = np.array([qa[q] for q in shared])
    y = np.array([qb[q] for q in shared])
    return x, y, len(set(qa) - set(qb)), len(set(qb) - set(qa))


def default_metrics(shared: Sequence[str]) -> list[str]:
    """The gate's metrics at the cutoff both files have (``ndcg@5``...), else every shared one."""
    for k in (5, 10, 3, 1, 20):
        found = [f"{m}@{k}" for m in GATE_FAMILIES if f"{m}@{k}" in shared]
        if found:
            return found
    return list(shared)


def compare_files(
    a: str | Path,
    b: str | Path,
    metrics: Sequence[str] = (),
    tolerance: float = GateConfig.tolerance,
    alpha: float = GateConfig.alpha,
    power: float = 0.8,
    resamples: int = GateConfig.resamples,
) -> PairedComparison:
    """Compare run ``b`` against run ``a`` metric by metric (see rageval.scoring.power)."""
    sa, sb = read_scores(a), read_scores(b)
    shared = [m for m in sa.metrics() if m in sb.values]
    if not shared:
        raise InputError(
            f"no metric is in both files ({', '.join(sa.metrics()[:5])} ... against "
            f"{', '.join(sb.metrics()[:5])} ...)"
        )
    chosen = list(metrics) or default_metrics(shared)
    missing = [m for m in chosen if m not in shared]
    if missing:
        raise InputError(
            f"metric {missing[0]!r} is not in both files; they share {', '.join(shared[:12])}"
        )
    rows, only_a, only_b = [], 0, 0
    for m in chosen:
        x, y, only_a, only_b = _pair(sa, sb, m)
        rows.append(paired(m, x, y, tolerance, alpha, power, resamples))
    result = PairedComparison(str(a), str(b), rows, only_a, only_b)
    result.beneath, result.canary = _beneath(a, b)
    return result


def _beneath(a: str | Path, b: str | Path) -> tuple[list[str], dict[str, Any]]:
    """What changed beneath, and the canary's verdict, when both files are rageval reports."""
    from rageval.gate.baseline import load_report
    from rageval.gate.compare import canary_verdict
    from rageval.report.provenance import diff

    def report(path: str | Path) -> dict[str, Any] | None:
        p = Path(path) / "report.json" if Path(path).is_dir() else Path(path)
        return load_report(p) if p.suffix == ".json" else None

    ra, rb = report(a), report(b)
    if ra is None or rb is None:
        return [], {}
    return diff(ra.get("provenance"), rb.get("provenance")), canary_verdict(ra, rb)


@dataclass(frozen=True)
class PlanRow:
    """One pair of runs (or one run's bound) for one metric: what its variance calls for."""

    metric: str
    pair: str
    n: int
    sd: float
    mde: float
    needed: int

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class Plan:
    """``rageval plan``'s result."""

    rows: list[PlanRow]
    drop: float
    alpha: float
    power: float
    basis: str

    def text(self) -> str:
        lines = [
            f"Golden-set size for a drop of {self.drop:g} at {self.power:.0%} power, alpha "
            f"{self.alpha:g} ({METHOD}); sd: of the per-query differences, {self.basis}",
        ]
        table = Table(
            [
                Column("metric"),
                Column("pair"),
                Column("n", "right", min_width=5),
                Column("sd", "right", min_width=6),
                Column("detects (n)", "right"),
                Column("queries for " + format(self.drop, "g"), "right", min_width=16),
            ]
        )
        for r in self.rows:
            table.add_row(r.metric, r.pair, r.n, f"{r.sd:.3f}", f"{r.mde:.3f}", f"{r.needed:,}")
        lines.append(table.console())
        by_metric: dict[str, list[PlanRow]] = {}
        for r in self.rows:
            by_metric.setdefault(r.metric, []).append(r)
        for metric, rows in by_metric.items():
            if len(rows) > 1:
                need = statistics.median(r.needed for r in rows)
                lines.append(
                    f"{metric}: median over {len(rows)} pairs: about {int(need):,} queries"
                )
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        return {
            "drop": self.drop,
            "alpha": self.alpha,
            "power": self.power,
            "method": METHOD,
            "basis": self.basis,
            "rows": [r.to_dict() for r in self.rows],
        }


def _jobs(folder: Path) -> list[Path]:
    return sorted(
        (p for p in folder.iterdir() if p.is_dir() and (p / "report.json").is_file()),
        key=lambda p: (not p.name.isdigit(), int(p.name) if p.name.isdigit() else 0, p.name),
    )


def _job_names(jobs: Sequence[Path]) -> dict[str, str]:
    """A sweep job's name in a plan: what its overrides set that not every job's do
    (``search=bm25``), else its number."""
    import json

    overrides = {}
    for p in jobs:
        try:
            data = json.loads((p / "report.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            data = {}
        lines = data.get("overrides") if isinstance(data, dict) else None
        overrides[p.name] = [str(o) for o in lines or [] if not str(o).startswith("hydra")]
    common = set.intersection(*(set(v) for v in overrides.values())) if overrides else set()
    return {
        name: " ".join(o for o in lines if o not in common) or f"job {name}"
        for name, lines in overrides.items()
    }


def plan(
    sources: Sequence[str | Path],
    metrics: Sequence[str] = (),
    drop: float = GateConfig.tolerance,
    alpha: float = GateConfig.alpha,
    power: float = 0.8,
) -> Plan:
    """How many queries detect a drop of ``drop``: from every pair of jobs of a sweep folder
    (the realistic estimate), from two runs, or from one run alone (a bound: the differences' sd
    taken as sqrt(2) times the run's per-query sd, which holds unless two runs' scores are
    negatively correlated)."""
    paths = [Path(s) for s in sources]
    if len(paths) == 1 and paths[0].is_dir() and not (paths[0] / "report.json").is_file():
        jobs = _jobs(paths[0])
        if len(jobs) < 2:
            raise InputError(
                "a sweep folder with fewer than 2 finished jobs: nothing to pair",
                path=str(paths[0]),
            )
        names = _job_names(jobs)
        runs = [(names[p.name], read_scores(p)) for p in jobs]
        basis = f"between the {len(runs)} jobs of the sweep, pair by pair"
    elif len(paths) in (1, 2):
        runs = [(p.name if p.is_dir() else p.stem, read_scores(p)) for p in paths]
        basis = (
            "between the two runs"
            if len(paths) == 2
            else "a bound from one run: sqrt(2) x its per-query sd (runs whose scores are not "
            "negatively correlated differ by no more)"
        )
    else:
        raise InputError("plan takes a sweep folder, two runs, or one run")
    shared = [m for m in runs[0][1].metrics() if all(m in s.values for _, s in runs)]
    chosen = list(metrics) or default_metrics(shared)
    missing = [m for m in chosen if m not in shared]
    if missing:
        raise InputError(
            f"metric {missing[0]!r} is not in every run; they share {', '.join(shared[:12])}"
        )
    rows = []
    for m in chosen:
        if len(runs) == 1:
            v = np.array(list(runs[0][1].values[m].values()))
            n, sd = v.size, one_run_sd(v)
            rows.append(
                PlanRow(
                    m,
                    runs[0][0],
                    n,
                    sd,
                    mde(sd, n, alpha, power),
                    queries_needed(sd, drop, alpha, power),
                )
            )
            continue
        for (na, sa), (nb, sb) in itertools.combinations(runs, 2):
            x, y, _, _ = _pair(sa, sb, m)
            sd = float((y - x).std(ddof=1))
            n = int(x.size)
            rows.append(
                PlanRow(
                    m,
                    f"{na} vs {nb}",
                    n,
                    sd,
                    mde(sd, n, alpha, power),
                    queries_needed(sd, drop, alpha, power),
                )
            )
    return Plan(rows, drop, alpha, power, basis)


def golden_set_power(
    baseline_path: str | Path,
    golden_digest: str,
    alpha: float = GateConfig.alpha,
    power: float = 0.8,
) -> dict[str, dict[str, float | int]] | None:
    """For ``rageval golden stats``: the drop each gated metric of the baseline detects on this
    golden set, and the queries a drop of the gate's tolerance needs (``queries_for_0.03``), from
    the bound of one run (sqrt(2) x the baseline's per-query sd); None when there is no baseline
    measured on this golden set."""
    from rageval.gate.baseline import load_report

    path = Path(baseline_path)
    if not path.is_file():
        return None
    report = load_report(path)
    if (report.get("digests") or {}).get("golden") != golden_digest:
        return None
    k = int(report.get("k", RagevalConfig.k))
    out: dict[str, dict[str, float | int]] = {}
    for family in GATE_FAMILIES:
        m = f"{family}@{k}"
        values = [r.get(m) for r in report["per_query"]]
        v = np.array([x for x in values if isinstance(x, int | float) and math.isfinite(x)])
        if v.size < 2:
            continue
        sd = one_run_sd(v)
        out[m] = {
            "detects": mde(sd, int(v.size), alpha, power),
            f"queries_for_{GateConfig.tolerance}": queries_needed(
                sd, GateConfig.tolerance, alpha, power
            ),
        }
    return out or None
