"""A run folder measured with judgements, rechecked with trec_eval's own code: its run.trec and
qrels.trec (judgements included, grade 0 too) give, under ``-J``, the condensed metrics
report.json holds per query, and judged@k is the share of the top k those qrels cover."""

from __future__ import annotations

import json
from collections import defaultdict

import pytrec_eval
from run_folders import make_run

from rageval.authoring.pool import read_pool
from rageval.cli.main import main

K = 5


def _trec(run_dir):
    qrels, run, order = defaultdict(dict), defaultdict(dict), defaultdict(list)
    for line in (run_dir / "qrels.trec").read_text().splitlines():
        q, _, doc, grade = line.split()
        qrels[q][doc] = int(grade)
    for line in (run_dir / "run.trec").read_text().splitlines():
        q, _, doc, rank, score, _ = line.split()
        run[q].setdefault(doc, float(score))
        order[q].append((int(rank), doc))
    return dict(qrels), dict(run), order


def test_a_judged_run_folder_agrees_with_trec_eval_judged_only(tmp_path, mini, model_dir):
    judgements = tmp_path / "judgements.jsonl"
    judgements.write_text("")
    first = make_run(mini, model_dir, tmp_path / "a", chunk=32, judgements=str(judgements))
    assert main(["pool", str(first), "--depth", "4", "--out", str(tmp_path / "pool.jsonl")]) == 0
    passages = [(q, p) for q in read_pool(tmp_path / "pool.jsonl") for p in q["passages"]]
    records = [
        {"query_id": q["query_id"], "doc": p["doc"], "quote": p["text"], "start": p["start"],
         "grade": i % 4, "judge": "human:t", "at": "2026-12-01T07:00:00Z"}
        for i, (q, p) in enumerate(passages[::2])
    ]  # fmt: skip
    assert {r["grade"] for r in records} == {0, 1, 2, 3}
    judgements.write_text("".join(json.dumps(r) + "\n" for r in records))
    run_dir = make_run(mini, model_dir, tmp_path / "b", chunk=32, judgements=str(judgements))

    report = json.loads((run_dir / "report.json").read_text())
    assert report["judgements"]["counted"] == len(records)
    per_query = {r["id"]: r for r in report["per_query"]}
    qrels, run, order = _trec(run_dir)
    measures = {f"P_{K}", f"recall_{K}", f"ndcg_cut_{K}", f"map_cut_{K}", f"success_{K}"}
    oracle = pytrec_eval.RelevanceEvaluator(
        qrels, measures | {"recip_rank"}, judged_docs_only_flag=True
    )
    judged = oracle.evaluate(run)
    assert set(judged) == set(per_query)
    names = {"precision": "P", "recall": "recall", "ndcg": "ndcg_cut", "map": "map_cut"}
    for qid, m in judged.items():
        ours = per_query[qid]
        for name, trec in {**names, "hit_rate": "success"}.items():
            assert abs(ours[f"{name}_cond@{K}"] - m[f"{trec}_{K}"]) < 1e-9, (qid, name)
        rr = m["recip_rank"]
        assert abs(ours[f"mrr_cond@{K}"] - (rr if rr and round(1 / rr) <= K else 0.0)) < 1e-9
        top = [doc for _, doc in sorted(order[qid])][:K]
        assert ours[f"judged@{K}"] == sum(doc in qrels[qid] for doc in top) / K
    # the judgements matter: some query's condensed list differs from its standard one
    assert any(per_query[q][f"ndcg_cond@{K}"] != per_query[q][f"ndcg@{K}"] for q in per_query)
