"""The sweep's leaderboard: one row per job, the deciding metric first, best and tied marked.

Phases: read each job's report.json (:func:`load_jobs`; a job's swept values are those its run
resolved, :func:`resolved_value`), pick the deciding metric
(:func:`deciding_metric`), test every job against the best on the per-query values of that
metric (:func:`rank`, the gate's paired randomization test, Holm-corrected), then render the one
:class:`Leaderboard` as markdown, CSV or an aligned console table.

A job is ``best`` when it has the highest mean of the deciding metric, ``tied`` when the test
cannot tell it from the best at ``alpha``: a user never reads noise as a winner. Each job's costs
(rageval.report.costs) are columns too, and the jobs on the Pareto front of the deciding metric
against ``sweep.pareto_cost`` are marked ``front`` (rageval.report.pareto). A section by slice
(rageval.report.sweep_slices) shows the deciding metric per slice for every job.
"""

from __future__ import annotations

import json
import math
import textwrap
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rageval.config_schema import SweepConfig, override_key
from rageval.errors import ConfigError
from rageval.report.costs import COSTS, DEFAULT_PARETO_COST, cost_spec
from rageval.report.fit import fit_table, job_table
from rageval.report.pareto import Point, pareto_front
from rageval.report.sweep_slices import sweep_slices
from rageval.report.table import Column, Table
from rageval.scoring.spec import MetricSpec
from rageval.scoring.stats import holm, paired_randomization_test

CHUNKING_KEYS = ("chunk", "chunk_overlap")
DEFAULT_BUDGET = 1024
CONSOLE_WIDTH = 120
CI = "(ci)"  # the console table's pseudo-column: the deciding metric's 95% CI


@dataclass
class Job:
    """One job folder of a sweep: its overrides and, when it finished, its report."""

    job: int
    overrides: list[str]
    status: str  # ok | failed
    error: str = ""
    report: dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def metrics(self) -> dict[str, float]:
        """The job's mean metrics (empty for a failed job)."""
        return self.report.get("metrics", {})

    @property
    def values(self) -> dict[str, str]:
        """The job's swept values: override key (without its ``+``/``++`` prefix) -> the value
        the run resolved (report.json's ``config`` at that key, a config group's choice), else
        the override's text: a job that left no resolved config (failed), or a key the config
        does not hold (``hydra.*``)."""
        config = self.report.get("config")
        choices = self.report.get("choices") or {}
        out = {}
        for o in self.overrides:
            if "=" in o:
                key = override_key(o)
                out[key] = resolved_value(config, choices, key, o.split("=", 1)[1])
        return out

    @property
    def costs(self) -> dict[str, float]:
        """The job's costs block (a report from before the block: its latency and timings)."""
        costs = self.report.get("costs")
        if costs:
            return costs
        old = {f"latency_{k}": v for k, v in (self.report.get("latency") or {}).items()}
        old.update(self.report.get("timings") or {})
        return {k: v for k, v in old.items() if k in COSTS}

    def per_query(self, metric: str) -> dict[str, float]:
        """Query id -> value of ``metric`` (queries where it is undefined left out)."""
        return {
            r["id"]: float(r[metric])
            for r in self.report.get("per_query", [])
            if r.get(metric) is not None
        }


def resolved_value(
    config: Mapping[str, Any] | None, choices: Mapping[str, Any], key: str, text: str
) -> str:
    """What a run resolved for the override of ``key`` (``text``: the override's value): the
    config group's choice (``search=hybrid``), else the value at the dotted ``key`` of the
    resolved ``config`` (an interpolation resolved, ``1.50`` read as 1.5), shown as an override
    would write it; ``text`` when ``config`` is missing or does not hold ``key``."""
    if choices.get(key) is not None:
        return str(choices[key])
    node: Any = config
    for part in key.split("."):
        if not isinstance(node, Mapping) or part not in node:
            return text
        node = node[part]
    if isinstance(node, bool):
        return str(node).lower()
    if node is None:
        return "null"
    if isinstance(node, Mapping | list | tuple):
        return json.dumps(node, separators=(",", ":"), default=str)
    return str(node)


def load_jobs(sweep_dir: Path) -> list[Job]:
    """One Job per numbered folder, in job order: report.json, else error.json, else a note."""
    jobs = []
    for d in sorted(
        (p for p in Path(sweep_dir).iterdir() if p.is_dir() and p.name.isdigit()),
        key=lambda p: int(p.name),
    ):
        if (d / "report.json").is_file():
            rep = json.loads((d / "report.json").read_text())
            jobs.append(Job(int(d.name), rep.get("overrides", []), "ok", report=rep))
        elif (d / "error.json").is_file():
            err = json.loads((d / "error.json").read_text())
            jobs.append(Job(int(d.name), err.get("overrides", []), "failed", err.get("error", "")))
        else:
            jobs.append(Job(int(d.name), [], "failed", "the job left no report (killed?)"))
    return jobs


def swept_keys(jobs: Sequence[Job]) -> list[str]:
    """Override keys whose resolved value (:attr:`Job.values`) differs between jobs (all keys
    when none differs)."""
    keys: list[str] = []
    for j in jobs:
        for o in j.overrides:
            key = override_key(o) if "=" in o else o
            if key not in keys:
                keys.append(key)
    swept = [k for k in keys if len({j.values.get(k) for j in jobs}) > 1]
    return swept or keys


def deciding_metric(jobs: Sequence[Job], chosen: str | None = None) -> tuple[str, str]:
    """The metric that decides the best job, and why. ``chosen`` wins; else a budget metric
    (``evidence_recall@1024t`` with evidence quotes, ``recall@1024t`` without) when the golden
    set has evidence quotes or the sweep varies the chunking, else ``ndcg@k``."""
    if chosen:
        return str(MetricSpec.parse(chosen)), "sweep.compare_metric"
    ok = [j for j in jobs if j.status == "ok"]
    names = {m for j in ok for m, v in j.metrics.items() if measured(v)}
    k = ok[0].report.get("k", 5) if ok else 5
    varies = [key for key in swept_keys(jobs) if key in CHUNKING_KEYS]
    return default_metric(names, k, varies)


def measured(value: Any) -> bool:
    """A metric value a run really measured: a finite number (a BEIR run's evidence metrics are
    NaN, since document labels carry no quotes)."""
    return isinstance(value, int | float) and math.isfinite(value)


def default_metric(names: Collection[str], k: int, varies: Sequence[str]) -> tuple[str, str]:
    """The default rule of :func:`deciding_metric` for runs reporting the metrics ``names`` (those
    with a measured value) at cutoff ``k``, where ``varies`` lists the chunking keys that differ
    between them (a tuning study: those in its search space)."""
    evidence = any(n.startswith("evidence_recall@") for n in names)
    budgets = sorted(
        {int(n.split("@")[1][:-1]) for n in names if n.startswith("recall@") and n.endswith("t")}
    )
    if budgets and (evidence or varies):
        b = DEFAULT_BUDGET if DEFAULT_BUDGET in budgets else budgets[len(budgets) // 2]
        why = "the golden set has evidence quotes" if evidence else f"the sweep varies {varies[0]}"
        return (
            f"{'evidence_recall' if evidence else 'recall'}@{b}t",
            f"{why}: chunkings compare at an equal budget of {b} tokens",
        )
    return f"ndcg@{k}", "the sweep keeps the chunking fixed"


@dataclass
class Leaderboard:
    """The ranked view of a sweep; ``markdown``, ``csv`` and ``console`` render it."""

    metric: str
    why: str
    keys: list[str]
    columns: list[str]
    jobs: list[Job]
    verdict: dict[int, str]  # job -> best | tied | "" (a worse job) | failed
    pvalues: dict[int, float]
    alpha: float
    note: str = ""
    # the Pareto front against one cost (rageval.report.pareto) and the cost columns shown
    pareto_cost: str = DEFAULT_PARETO_COST
    front: list[int] = field(default_factory=list)
    cost_columns: list[str] = field(default_factory=list)
    # the deciding metric per slice and job (rageval.report.sweep_slices); None without slices
    slices: Any = None

    @property
    def best(self) -> int | None:
        """Job number marked best, None when no job finished."""
        return next((j for j, v in self.verdict.items() if v == "best"), None)

    def header(self) -> str:
        """One line: jobs, failures, the deciding metric and how many tied with the best."""
        ok = sum(j.status == "ok" for j in self.jobs)
        failed = len(self.jobs) - ok
        tied = sum(v == "tied" for v in self.verdict.values())
        text = (
            f"Sweep of {len(self.jobs)} jobs ({failed} failed), decided by {self.metric} "
            f"({self.why}); best: job {self.best}"
            if self.best is not None
            else f"Sweep of {len(self.jobs)} jobs ({failed} failed), decided by {self.metric}"
        )
        if tied:
            text += (
                f", {tied} tied with it (paired randomization test, Holm-corrected, "
                f"p >= {self.alpha})"
            )
        return text + (f". {self.note}" if self.note else "")

    def _cells(self, job: Job, metric: str, ci: bool) -> str:
        mean = job.metrics.get(metric)
        if mean is None or (isinstance(mean, float) and math.isnan(mean)):
            return ""
        fmt = ".1f" if metric.startswith("tokens@") else ".3f"
        lo, hi = (job.report.get("ci") or {}).get(metric, (None, None))
        if ci and lo is not None and not math.isnan(lo):
            return f"{mean:{fmt}} [{lo:{fmt}}, {hi:{fmt}}]"
        return f"{mean:{fmt}}"

    def markdown(self) -> str:
        """A markdown table (means with 95% CIs), headed by the verdict line."""
        costs = [COSTS[c].header for c in self.cost_columns]
        head = ["job", *self.keys, *self.columns, *costs, "pareto", "verdict"]
        table = Table([Column(h) for h in head])
        for j in self.jobs:
            cells = [str(j.job), *[j.values.get(k, "") for k in self.keys]]
            if j.status == "ok":
                cells += [self._cells(j, m, ci=True) for m in self.columns]
                cells += [self._cost(j, c) for c in self.cost_columns]
                cells.append(self._front_mark(j))
                cells.append(self.verdict.get(j.job, ""))
            else:
                cells += [""] * (len(self.columns) + len(costs) + 1) + [f"FAILED: {j.error}"]
            table.add_row(*cells)
        # leaderboard.md keeps a "<" as it is, as it always has
        lines = [f"{self.header()}\n", table.markdown(escape_lt=False).rstrip("\n")]
        if self.front:  # what the pareto column means, before the slices' section
            lines.append(self.pareto_note().rstrip("\n"))
        if self.slices is not None:
            lines += ["", self.slices.markdown().rstrip("\n")]
        return "\n".join(lines) + "\n"

    def _cost(self, job: Job, name: str) -> str:
        value = job.costs.get(name)
        if value is None or (isinstance(value, float) and math.isnan(value)):
            return ""
        return COSTS[name].format(value)

    def _front_mark(self, job: Job) -> str:
        return "front" if job.job in self.front else ""

    def pareto_note(self) -> str:
        """What ``front`` means in the table (empty when no job is on a front)."""
        if not self.front:
            return ""
        spec = COSTS[self.pareto_cost]
        return (
            f"\n`front`: on the Pareto front of {self.metric} (higher is better) against "
            f"{self.pareto_cost} ({spec.meaning}; lower is better): no other job is at least as "
            "good on both and better on one (sweep.pareto_cost chooses the cost).\n"
        )

    def csv(self) -> str:
        """Numbers only: ``<metric>``, ``<metric>_low``, ``<metric>_high`` per column, the
        deciding metric per slice (``<metric> [<slice>]``, its CI and ``n [<slice>]``, when the
        jobs slice), the p-value against the best, the verdict and each job's MLflow run id."""
        head = ["job", *self.keys]
        for m in self.columns:
            head += [m, f"{m}_low", f"{m}_high"]
        names = self.slices.names if self.slices is not None else []
        for name in names:
            col = f"{self.slices.metric} [{name}]"
            head += [col, f"{col}_low", f"{col}_high", f"n [{name}]"]
        head += list(self.cost_columns)
        head += ["pareto_front", "p_value", "verdict", "status", "mlflow_run_id", "error"]
        table = Table([Column(h) for h in head])
        for j in self.jobs:
            row: list[Any] = [j.job, *[j.values.get(k, "") for k in self.keys]]
            for m in self.columns:
                lo, hi = (j.report.get("ci") or {}).get(m, (None, None))
                row += [_num(j.metrics.get(m)), _num(lo), _num(hi)]
            cells = self.slices.cells.get(j.job, {}) if names else {}
            for name in names:
                n, mean, lo, hi = cells.get(name, ("", None, None, None))
                row += [_num(mean), _num(lo), _num(hi), n]
            row += [_num(j.costs.get(c)) for c in self.cost_columns]
            row.append(("1" if j.job in self.front else "0") if j.status == "ok" else "")
            p = self.pvalues.get(j.job)
            row += [_num(p), self.verdict.get(j.job, ""), j.status]
            row += [j.report.get("mlflow_run_id") or "", j.error]
            table.add_row(*row)
        return table.csv()

    def console(self, width: int = CONSOLE_WIDTH) -> str:
        """Aligned tables that fit ``width`` columns, one line per job: the deciding metric (with
        its CI) first, then the headline, span and token columns that fit (leaderboard.md and .csv
        have them all); then the section by slice and the costs."""

        def build(shown: list[str]) -> Table:
            ci = CI in shown  # the deciding metric's CI: the last to give way
            metrics = [m for m in shown if m != CI]
            table = job_table(self.keys)
            table.columns += [
                Column(_two_lines(m), "right", bold=i == 0) for i, m in enumerate(metrics)
            ]
            table.columns.append(Column("verdict"))
            for j in self.jobs:
                cells = [str(j.job), *[j.values.get(k, "") for k in self.keys]]
                if j.status == "ok":
                    cells += [self._cells(j, m, ci=ci and i == 0) for i, m in enumerate(metrics)]
                    cells.append(self.verdict.get(j.job, ""))
                else:
                    cells += [""] * len(metrics) + ["FAILED"]
                table.add_row(*cells)
            return table

        columns = [CI, *_console_columns(self.columns)]
        body, dropped = fit_table(build, columns, [*_drop_order(columns[1:]), CI], width)
        head = textwrap.fill(self.header(), width=width)
        if dropped:
            names = [f"the CI of {self.metric}" if d == CI else d for d in dropped]
            body += "\n" + textwrap.fill(
                f"(not shown here, in leaderboard.md and .csv: {', '.join(names)})", width=width
            )
        if self.slices is not None:
            body += "\n\n" + self.slices.console(width)
        costs = self.costs_console(width)
        return f"{head}\n\n{body}" + (f"\n\n{costs}" if costs else "")

    def costs_console(self, width: int = CONSOLE_WIDTH) -> str:
        """The costs of each job as a second aligned table (one line per job, the costs that fit
        ``width`` columns; the Pareto cost always), the Pareto front marked."""
        shown = [c for c in self.cost_columns if c in CONSOLE_COSTS or c == self.pareto_cost]
        if not shown:
            return ""

        def build(names: list[str]) -> Table:
            table = job_table(self.keys)
            table.columns += [
                Column(COSTS[c].header, "right", bold=c == self.pareto_cost) for c in names
            ]
            table.columns.append(Column("pareto"))
            for j in self.jobs:
                cells = [str(j.job), *[j.values.get(k, "") for k in self.keys]]
                if j.status == "ok":
                    cells += [self._cost(j, c) for c in names] + [self._front_mark(j)]
                else:
                    cells += [""] * len(names) + ["FAILED"]
                table.add_row(*cells)
            return table

        drop = [c for c in CONSOLE_COSTS_DROP_ORDER if c != self.pareto_cost]
        body, dropped = fit_table(build, shown, drop, width)
        if dropped:
            body += "\n" + textwrap.fill(
                f"(not shown here, in leaderboard.md and .csv: "
                f"{', '.join(COSTS[c].header for c in dropped)})",
                width=width,
            )
        lead = (
            f"Costs (front: the Pareto front of {self.metric} against {self.pareto_cost}; "
            "a job there is beaten on both by no other job)"
        )
        return f"{textwrap.fill(lead, width=width)}\n\n{body}"


# Costs the console's costs table shows (leaderboard.md and .csv have every cost the jobs report).
CONSOLE_COSTS = (
    "total_s",
    "embed_s",
    "search_s",
    "rerank_s",
    "latency_p50_ms",
    "latency_p95_ms",
    "texts_embedded",
    "index_disk_bytes",
    "index_memory_bytes",
    "requests_search",
)
# Which of them give way first when the costs table is wider than the console.
CONSOLE_COSTS_DROP_ORDER = (
    "texts_embedded",
    "search_s",
    "embed_s",
    "rerank_s",
    "latency_p50_ms",
    "index_disk_bytes",
    "total_s",
    "requests_search",
    "index_memory_bytes",
    "latency_p95_ms",
)


def cost_columns_for(jobs: Sequence[Job], pareto_cost: str) -> list[str]:
    """The costs any finished job reports, in the registry's order; a cost that is 0 for every job
    (no reranker, nothing embedded) is left out unless it is the Pareto cost."""
    ok = [j for j in jobs if j.status == "ok"]
    out = []
    for name in COSTS:
        values = [j.costs.get(name) for j in ok if j.costs.get(name) is not None]
        if name == pareto_cost or any(v for v in values):
            out.append(name)
    return out


def _console_columns(columns: Sequence[str]) -> list[str]:
    """The deciding metric, quote recall (or recall and nDCG without quotes), the evidence
    metrics at k and tokens@k."""
    evidence = any(m.startswith("quote_recall@") for m in columns)
    keep = [columns[0]]
    for m in columns[1:]:
        family = m.split("@")[0]
        if family in ("ndcg", "recall") and evidence:
            continue
        if family in ("evidence_precision_max", "ndcg_cond"):
            continue
        keep.append(m)
    return keep


def _drop_order(columns: Sequence[str]) -> list[str]:
    """Which console columns give way first when the table is too wide: near-duplicates of what
    stays (IoU follows evidence precision), then precision, judged, tokens, then the others from
    the right; never the deciding metric (the first column)."""
    first = ("evidence_iou", "evidence_precision", "judged", "tokens")
    rest = [m for m in reversed(columns[1:]) if m.split("@")[0] not in first]
    return [m for f in first for m in columns[1:] if m.split("@")[0] == f] + rest


def _two_lines(name: str) -> str:
    """``evidence_precision@5`` as ``evidence_`` over ``precision@5``: narrow console headers."""
    head, sep, rest = name.partition("_")
    return f"{head}{sep}\n{rest}" if sep and len(name) > 10 else name


def _num(x: Any) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return ""
    return repr(float(x))


def columns_for(metric: str, jobs: Sequence[Job]) -> list[str]:
    """The deciding metric, then headline, span and budget metrics and tokens@k the jobs have."""
    ok = [j for j in jobs if j.status == "ok"]
    k = ok[0].report.get("k", 5) if ok else 5
    names = {m for j in ok for m in j.metrics}
    wanted = [metric, f"ndcg@{k}", f"recall@{k}", f"quote_recall@{k}"]
    # index fidelity beside the quality it costs, when some job's index is approximate
    ann = f"ann_recall@{k}"
    if any(j.metrics.get(ann) is not None and j.metrics[ann] < 1.0 for j in ok):
        wanted.insert(2, ann)
    wanted += [f"evidence_{m}@{k}" for m in ("recall", "precision", "iou")]
    wanted += ["evidence_precision_max", f"tokens@{k}"]
    # how much of each job's top k is judged, and nDCG with unjudged results set aside
    wanted += [f"judged@{k}", f"ndcg_cond@{k}"]
    return [m for m in dict.fromkeys(wanted) if m in names or m == metric]


def rank(
    jobs: Sequence[Job],
    compare_metric: str | None = None,
    *,
    alpha: float = SweepConfig.alpha,
    resamples: int = SweepConfig.resamples,
    pareto_cost: str = DEFAULT_PARETO_COST,
) -> Leaderboard:
    """Decide the sweep: the best job by the mean of the deciding metric, and every job the
    paired randomization test cannot tell from it (Holm-corrected p >= alpha) as tied; and the
    Pareto front of the deciding metric against ``pareto_cost``."""
    if not 0 < alpha < 1:
        raise ConfigError(f"sweep.alpha must be between 0 and 1, got {alpha!r}")
    pareto_cost = cost_spec(pareto_cost).name
    metric, why = deciding_metric(jobs, compare_metric)
    keys = swept_keys(jobs)
    ok = [j for j in jobs if j.status == "ok"]
    verdict: dict[int, str] = {j.job: ("" if j.status == "ok" else "failed") for j in jobs}
    pvalues: dict[int, float] = {}
    scored = [j for j in ok if not math.isnan(j.metrics.get(metric, math.nan))]
    values = [float(j.metrics[metric]) for j in scored]
    saturated = len(scored) > 1 and max(values) - min(values) <= 1e-12
    note = _rank_note(ok, scored, metric, values[0] if saturated else None)
    if scored and not saturated:
        decided, pvalues = _best_and_tied(scored, metric, alpha, resamples)
        verdict.update(decided)
    front = _front(scored, metric, pareto_cost) if scored else []
    best_job = next((j for j, v in verdict.items() if v == "best"), None)
    return Leaderboard(
        metric=metric,
        why=why,
        keys=keys,
        columns=columns_for(metric, jobs),
        jobs=list(jobs),
        verdict=verdict,
        pvalues=pvalues,
        alpha=alpha,
        note=note,
        pareto_cost=pareto_cost,
        front=front,
        cost_columns=cost_columns_for(jobs, pareto_cost),
        slices=sweep_slices(jobs, metric, keys, best_job) if scored else None,
    )


def _rank_note(
    ok: Sequence[Job], scored: Sequence[Job], metric: str, saturated_at: float | None
) -> str:
    """What the leaderboard says above its table: no job measured the metric (and the ones
    they did), the jobs counted different label sets, every job scores ``saturated_at`` (None:
    they differ) so none is named best."""
    note = ""
    if ok and not scored:
        have = sorted({m for j in ok for m, v in j.metrics.items() if measured(v)})
        note = (
            f"No job measured {metric}; choose one the jobs measured with "
            f"sweep.compare_metric=...: {', '.join(have)}"
        )
    label_sets = sorted({str(j.report.get("label_set") or "gold") for j in ok})
    if len(label_sets) > 1:  # e.g. -m labels=gold,all: each job counted other labels
        note = " ".join(
            x
            for x in (
                note,
                f"The jobs were measured with different label sets ({', '.join(label_sets)}): "
                "their metrics count different labels, so rank jobs of one set only.",
            )
            if x
        )
    if saturated_at is not None:  # every job scores the same: the metric cannot rank them
        note = " ".join(
            x
            for x in (
                note,
                f"Saturated: every job scores {saturated_at:.3f} on {metric}, which cannot rank "
                "them (the corpus fits the budget, or the golden set is too easy); no job is "
                "named best: decide by another metric with sweep.compare_metric=METRIC.",
            )
            if x
        )
    return note


def _best_and_tied(
    scored: Sequence[Job], metric: str, alpha: float, resamples: int
) -> tuple[dict[int, str], dict[int, float]]:
    """The best job by the metric's mean (the lower job number on a tie) and the jobs the
    paired randomization test cannot tell from it (Holm-corrected p >= alpha): their verdicts
    ("best", "tied"), and every other job's corrected p-value."""
    verdict: dict[int, str] = {}
    pvalues: dict[int, float] = {}
    sign = 1.0 if MetricSpec.parse(metric).higher_is_better else -1.0  # fewest tokens wins
    best = max(scored, key=lambda j: (sign * j.metrics[metric], -j.job))
    verdict[best.job] = "best"
    ref = best.per_query(metric)
    others = [j for j in scored if j is not best]
    raw = []
    for j in others:
        mine = j.per_query(metric)
        shared = sorted(set(ref) & set(mine))
        if not shared:
            raw.append(0.0)
            continue
        a, b = [ref[q] for q in shared], [mine[q] for q in shared]
        raw.append(paired_randomization_test(a, b, n_resamples=resamples, seed=0))
    for j, p in zip(others, holm(raw), strict=True):
        pvalues[j.job] = p
        if p >= alpha:
            verdict[j.job] = "tied"
    return verdict, pvalues


def _front(scored: Sequence[Job], metric: str, pareto_cost: str) -> list[int]:
    """The jobs on the Pareto front of the metric (signed so that more is better) against
    ``pareto_cost``; jobs without that cost are left out."""
    sign = 1.0 if MetricSpec.parse(metric).higher_is_better else -1.0
    points = [
        Point(j.job, sign * float(j.metrics[metric]), float(j.costs[pareto_cost]))
        for j in scored
        if j.costs.get(pareto_cost) is not None
    ]
    return pareto_front(points)
