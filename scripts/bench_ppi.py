"""Validity of the prediction-powered estimates (rageval.scoring.ppi) on simulated LLM judges.

A population of synthetic queries, each with 30 candidate passages graded 0-3 by people (1-6
relevant, grades 1-3) and a retriever's ranking of them (relevant passages score higher, with
noise that varies by query, so some queries are hard). Simulated judges relabel every passage
with known errors, drawn once per passage (a fixed judge):

- **missed relevant**: a relevant passage graded 0, with probability ``miss``;
- **false relevant**: a non-relevant passage graded 1, with probability ``false``;
- **grade shrinkage**: a relevant passage's grade lowered by one (3 -> 2, 2 -> 1), with
  probability ``shrink``.

The target is the population mean of nDCG@10 (or recall@10) under the people's grades, scored
by rageval's own metric code. Each seed draws a golden set of ``N`` queries from the population
and a random human sample of ``n`` of them (the people grade those fully, the judge grades all),
then computes the PPI++ estimate and 95% interval (LLM labels on the ``N - n`` others), the
human-only classical interval on the ``n``, and the LLM-only mean over all ``N`` with its naive
interval, each both ways from the same draw: Student-t (rageval's default; Welch-Satterthwaite
df for the PPI interval, ``n - 1`` for the human-only one) and the normal (z) interval of ppi_py.
Reported over the seeds: each interval's coverage of the target, its mean width, the PPI
interval's mean df, and the LLM-only estimate's bias. Agreement is Cohen's kappa between the
judge's and the people's relevant / not relevant over every passage (the calibration's measure).

    .venv/bin/python scripts/bench_ppi.py --seeds 2000
    .venv/bin/python scripts/bench_ppi.py --seeds 2000 --set-size 200 --human 20,40
"""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass

import numpy as np

from rageval.scoring.metrics import score_rankings
from rageval.scoring.ppi import ppi_mean

PASSAGES = 30
DEPTH = 10


@dataclass(frozen=True)
class Judge:
    name: str
    miss: float  # relevant -> 0
    false: float  # not relevant -> 1
    shrink: float  # a relevant grade lowered by one


JUDGES = (
    Judge("good (2% missed, 2% false, 10% shrunk)", 0.02, 0.02, 0.10),
    Judge("10% missed, 3% false, 20% shrunk", 0.10, 0.03, 0.20),
    Judge("20% missed, 5% false, 30% shrunk", 0.20, 0.05, 0.30),
    Judge("lenient: 5% missed, 15% false", 0.05, 0.15, 0.10),
    Judge("poor: 25% missed, 10% false, 40% shrunk", 0.25, 0.10, 0.40),
)


def population(size: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """People's grades (size x PASSAGES) and each query's ranking (passage indexes, best first)."""
    grades = np.zeros((size, PASSAGES), dtype=np.int64)
    n_rel = rng.integers(1, 7, size=size)
    for i, k in enumerate(n_rel):
        grades[i, :k] = rng.choice([1, 2, 3], size=k, p=[0.4, 0.35, 0.25])
    noise = rng.uniform(0.3, 3.0, size=(size, 1))  # per-query difficulty
    scores = grades + rng.normal(0, 1, size=grades.shape) * noise
    return grades, np.argsort(-scores, axis=1)[:, : DEPTH * 2]


def relabel(grades: np.ndarray, judge: Judge, rng: np.random.Generator) -> np.ndarray:
    """The judge's grades: shrink, then miss relevant, then call non-relevant relevant."""
    out = grades.copy()
    u = rng.uniform(size=(3, *grades.shape))
    shrunk = (grades >= 2) & (u[0] < judge.shrink)
    out[shrunk] -= 1
    out[(grades >= 1) & (u[1] < judge.miss)] = 0
    out[(grades == 0) & (u[2] < judge.false)] = 1
    return out


def kappa(a: np.ndarray, b: np.ndarray) -> float:
    """Cohen's kappa of two binary labellings."""
    a, b = a.ravel() >= 1, b.ravel() >= 1
    p_o = float((a == b).mean())
    p_e = float(a.mean() * b.mean() + (1 - a.mean()) * (1 - b.mean()))
    return (p_o - p_e) / (1 - p_e)


def per_query(grades: np.ndarray, rankings: np.ndarray, metrics: list[str]) -> dict:
    """Each metric per query, by rageval's scorer (the definitions trec_eval uses)."""
    ids = [f"q{i}" for i in range(len(grades))]
    qrels = {
        q: {f"p{j}": int(g) for j, g in enumerate(row)} for q, row in zip(ids, grades, strict=True)
    }
    runs = [[f"p{j}" for j in row] for row in rankings]
    scores = score_rankings(ids, runs, qrels, [DEPTH], metrics=sorted({m for m, _ in metrics}))
    return {f"{m}@{k}": np.asarray(scores.values[f"{m}@{k}"], dtype=float) for m, k in metrics}


def simulate(y_pop, yhat_pop, n_set, n_human, seeds, rng) -> dict[str, float]:
    """Coverage, width and bias over ``seeds`` golden sets drawn from the population, the t and
    the z intervals from the same draws."""
    target = float(y_pop.mean())
    hits: dict[str, int] = {}
    widths: dict[str, list[float]] = {}
    bias, lams, dfs = [], [], []
    for _ in range(seeds):
        chosen = rng.choice(y_pop.size, size=n_set, replace=False)
        sample, others = chosen[:n_human], chosen[n_human:]
        set_mean = float(y_pop[chosen].mean())
        ests = {
            kind: ppi_mean(y_pop[sample], yhat_pop[sample], yhat_pop[others], interval=kind)
            for kind in ("t", "z")
        }
        for kind, est in ests.items():
            for key, iv in (("ppi", est.ppi), ("human", est.human_only), ("llm", est.llm_only)):
                name = f"{key}_{kind}"
                hits[name] = hits.get(name, 0) + (iv.low <= target <= iv.high)
                widths.setdefault(name, []).append(iv.high - iv.low)
            name = f"ppi_set_{kind}"
            hits[name] = hits.get(name, 0) + (est.ppi.low <= set_mean <= est.ppi.high)
        est = ests["t"]  # the estimate, lambda and LLM-only mean are the same both ways
        dfs.append(est.ppi.df)
        bias.append(est.llm_only.estimate - target)
        lams.append(est.lam)
    out = {f"cover_{k}": v / seeds for k, v in hits.items()}
    out.update({f"width_{k}": float(np.mean(v)) for k, v in widths.items()})
    out["llm_bias"] = float(np.mean(bias))
    out["lambda"] = float(np.mean(lams))
    out["df"] = float(np.mean(dfs))
    out["target"] = target
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--population", type=int, default=20000)
    parser.add_argument("--set-size", type=int, default=500, help="N: queries in a golden set")
    parser.add_argument("--human", default="50,100", help="n: human-graded queries, comma list")
    parser.add_argument("--seeds", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    started = time.perf_counter()
    grades, rankings = population(args.population, rng)
    metrics = [("ndcg", DEPTH), ("recall", DEPTH)]
    human = per_query(grades, rankings, metrics)
    print(
        f"population {args.population} queries x {PASSAGES} passages; golden sets of "
        f"{args.set_size}; {args.seeds} seeds; targets: "
        + ", ".join(f"{k} {v.mean():.4f}" for k, v in human.items())
    )
    print(
        "| judge | kappa | metric | n | PPI t covers | PPI z covers | PPI t width | PPI z width | "
        "PPI t df | human-only t covers | human-only z covers | human-only t width | "
        "PPI / human-only width (t) | LLM-only bias | LLM-only t covers | lambda | "
        "PPI t covers the set's mean |"
    )
    print("|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for judge in JUDGES:
        llm_grades = relabel(grades, judge, rng)
        agreement = kappa(grades, llm_grades)
        llm = per_query(llm_grades, rankings, metrics)
        for key in human:
            for n in (int(x) for x in args.human.split(",")):
                r = simulate(human[key], llm[key], args.set_size, n, args.seeds, rng)
                print(
                    f"| {judge.name} | {agreement:.2f} | {key} | {n} | "
                    f"{r['cover_ppi_t']:.3f} | {r['cover_ppi_z']:.3f} | "
                    f"{r['width_ppi_t']:.4f} | {r['width_ppi_z']:.4f} | {r['df']:.0f} | "
                    f"{r['cover_human_t']:.3f} | {r['cover_human_z']:.3f} | "
                    f"{r['width_human_t']:.4f} | {r['width_ppi_t'] / r['width_human_t']:.2f} | "
                    f"{r['llm_bias']:+.4f} | {r['cover_llm_t']:.3f} | {r['lambda']:.2f} | "
                    f"{r['cover_ppi_set_t']:.3f} |",
                    flush=True,
                )
    print(f"{time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
