"""The reference every metric test compares with: pytrec_eval (trec_eval's own code) on a run
ordered as trec_eval orders it, and random graded qrels and runs full of ties."""

from __future__ import annotations

import random
from collections import defaultdict

import numpy as np
import pytrec_eval

from rageval.scoring.metrics import METRICS

KS = (1, 3, 5, 10)


def random_case(seed: int, n_queries: int = 40):
    """Graded qrels (0-3) and TREC run lines (qid, docid, score) with ties (also ties only in
    single precision), short and empty rankings, judged queries missing from the run, run-only
    queries and repeated docids."""
    rng = random.Random(seed)
    docs = [f"d{j:02d}" for j in range(30)]
    qrels, lines = {}, []
    for i in range(n_queries):
        qid = f"q{i}"
        if rng.random() < 0.9:
            qrels[qid] = {d: rng.randint(0, 3) for d in rng.sample(docs, rng.randint(1, 8))}
        if rng.random() < 0.15:
            continue  # missing from the run
        n = rng.choice([0, 1, 2, 4, 7, 12, 20, 30])
        tied = rng.random() < 0.5
        for d in rng.sample(docs, n):
            score = rng.choice([1.0, 2.0, 2.0 + 1e-9, 3.0]) if tied else rng.random()
            lines.append((qid, d, score))
            if rng.random() < 0.05:  # the same docid again, scored the same or differently
                lines.append((qid, d, rng.choice([lines[-1][2], rng.random()])))
    lines += [(f"run-only{i}", rng.choice(docs), rng.random()) for i in range(3)]
    return qrels, lines


def trec_ordered(lines):
    """The oracle's view of the run: per query, trec_eval order, duplicates dropped (first kept)."""
    grouped = defaultdict(list)
    for qid, docid, score in lines:
        grouped[qid].append((docid, score))
    ranked = {}
    for qid, pairs in grouped.items():
        seen, ranked[qid] = set(), []
        # trec_eval keeps scores as C floats
        for docid, score in sorted(pairs, key=lambda p: (np.float32(p[1]), p[0]), reverse=True):
            if docid not in seen:
                seen.add(docid)
                ranked[qid].append((docid, score))
    return ranked


def oracle_scores(qrels, lines, ks=KS) -> dict[str, dict[str, float]]:
    """Per judged query, {metric@k: value} from pytrec_eval; queries it skips score 0."""
    ranked = trec_ordered(lines)
    measures = {f"{m}_{k}" for m in ("P", "recall", "ndcg_cut", "map_cut") for k in ks}
    name = {"P": "precision", "recall": "recall", "ndcg_cut": "ndcg", "map_cut": "map"}
    run = {q: dict(pairs) for q, pairs in ranked.items()}
    full = pytrec_eval.RelevanceEvaluator(qrels, measures).evaluate(run)
    rr = pytrec_eval.RelevanceEvaluator(qrels, {"recip_rank"})
    cut = {k: rr.evaluate({q: dict(p[:k]) for q, p in ranked.items()}) for k in ks}
    out = {}
    for qid in qrels:
        row = dict.fromkeys((f"{m}@{k}" for m in METRICS for k in ks), 0.0)
        for measure, value in full.get(qid, {}).items():
            prefix, k = measure.rsplit("_", 1)
            row[f"{name[prefix]}@{k}"] = value
        for k in ks:
            row[f"mrr@{k}"] = cut[k].get(qid, {}).get("recip_rank", 0.0)
            row[f"hit_rate@{k}"] = float(row[f"mrr@{k}"] > 0)
        out[qid] = row
    return out


def relevant_queries(qrels) -> list[str]:
    return [q for q, judged in qrels.items() if any(g >= 1 for g in judged.values())]


def array_case(seed: int, n_queries: int = 30):
    """Graded qrels (some queries judged only 0, some repeated judgements) and run lines (qid,
    docid, score) without a docid repeated within a query: ties (also in single precision only),
    docids of 2 to 30 bytes, queries missing from either file, lines shuffled or grouped."""
    rng = random.Random(seed)
    docs = [f"d{j}" + "x" * rng.choice([0, 0, 7, 15, 27]) for j in range(40)]
    qrels, lines = {}, []
    for i in range(n_queries):
        qid = f"q{i}" + "-long-query-id" * (i % 3 == 0)
        if rng.random() < 0.9:
            top = 0 if rng.random() < 0.1 else 3
            qrels[qid] = {d: rng.randint(0, top) for d in rng.sample(docs, rng.randint(1, 9))}
        if rng.random() < 0.15:
            continue
        tied = rng.random() < 0.5
        for d in rng.sample(docs, rng.choice([1, 2, 5, 12, 25, 40])):
            score = rng.choice([1.0, 2.0, 2.0 + 1e-9, 3.0]) if tied else rng.random()
            lines.append((qid, d, score))
    lines += [(f"run-only{i}", rng.choice(docs), rng.random()) for i in range(3)]
    if seed % 2:
        rng.shuffle(lines)
    return qrels, lines


def write(tmp_path, qrels, lines, repeat_judgements=False):
    rows = [f"{q} 0 {d} {g}\n" for q, judged in qrels.items() for d, g in judged.items()]
    if repeat_judgements:
        rows += rows[::5]
    qrels_path, run_path = tmp_path / "qrels.txt", tmp_path / "run.txt"
    qrels_path.write_text("".join(rows))
    run_path.write_text("".join(f"{q}\tQ0 {d} 1 {s!r} tag\n" for q, d, s in lines))
    return qrels_path, run_path


def assert_same(got, want):
    assert got.query_ids == want.query_ids
    assert (got.missing, got.run_only) == (want.missing, want.run_only)
    np.testing.assert_array_equal(got.first_relevant_rank, want.first_relevant_rank)
    assert got.values.keys() == want.values.keys()
    for key, values in want.values.items():
        np.testing.assert_allclose(got.values[key], values, rtol=0, atol=1e-12, err_msg=key)
