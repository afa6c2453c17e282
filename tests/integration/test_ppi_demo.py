"""labels=ppi and ``rageval score --llm-qrels`` end to end on the demo: a BM25 run of the demo's
168 queries, its pool, a random human sample drawn by ``rageval judge --sample``, the demo's
judgements file, grades for the sampled queries (people stood in for by the golden evidence),
an LLM stand-in that misses a third of the relevant passages and calls a tenth of the others
relevant, a labels=ppi run, the gate against its baseline, and the TREC-file path agreeing with
the run's estimates."""

from __future__ import annotations

import json
import re
import shutil
import zlib

import pytest
from fakes.chat_server import JUDGE_KEY, ChatServer
from run_folders import make_run

from rageval.app.config import DEMO_DIR
from rageval.cli.main import main
from rageval.gate.baseline import read_baseline, write_baseline
from rageval.gate.compare import LABELS_CHANGED, PASS, compare
from rageval.inputs.golden import load_golden
from rageval.inputs.ppi_sample import load_sample

KEY = JUDGE_KEY
DEMO = DEMO_DIR


def _fold(s):
    return " ".join(s.lower().split())


def holds_evidence(golden):
    quotes = {q.id: [_fold(e.quote) for e in q.evidence] for q in golden.queries}
    return lambda qid, text: any(qt in _fold(text) for qt in quotes.get(qid, []))


def biased_judge(golden):
    """The stand-in LLM: relevant when the passage holds evidence, except a third of those;
    a tenth of the others relevant."""
    by_text = {q.query: q.id for q in golden.queries}
    hit = holds_evidence(golden)

    def answer(body):
        text = body["messages"][-1]["content"]
        question = re.search(r"<question>\n(.*)\n</question>", text, re.S).group(1)
        passage = re.search(r"<passage>\n(.*)\n</passage>", text, re.S).group(1)
        noise = zlib.crc32(passage.encode()) % 30
        relevant = hit(by_text[question], passage)
        grade = (2 if noise >= 10 else 0) if relevant else (1 if noise < 3 else 0)
        return json.dumps({"grade": grade, "reason": "stand-in"})

    return answer


def people_grades(pool, sample, golden, out):
    hit = holds_evidence(golden)
    with out.open("w") as fh:
        for q in pool:
            if q["query_id"] not in sample.queries:
                continue
            for p in q["passages"]:
                record = {"query_id": q["query_id"], "doc": p["doc"], "quote": p["text"]}
                record |= {"start": p["start"], "grade": 2 if hit(q["query_id"], p["text"]) else 0}
                fh.write(
                    json.dumps(record | {"judge": "human:ana", "at": "2026-12-04T10:00:00Z"}) + "\n"
                )


def test_ppi_on_the_demo(llm_env, tmp_path, model_dir, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    golden_path = tmp_path / "retriever.jsonl"
    shutil.copy(DEMO / "retriever.jsonl", golden_path)
    judgements = tmp_path / "judgements.jsonl"
    shutil.copy(DEMO / "judgements.jsonl", judgements)
    golden = load_golden(golden_path)
    corpus = DEMO / "corpus"
    kw = {"golden": golden_path, "corpus": corpus, "chunk": 256}
    run = make_run(tmp_path, model_dir, tmp_path / "run", judgements=str(judgements), **kw)
    pool_file, where = tmp_path / "pool.jsonl", ["--judgements", str(judgements)]
    assert main(["pool", str(run), "--depth", "5", "--out", str(pool_file), *where]) == 0
    argv = ["judge", str(pool_file), "--review", str(tmp_path / "review.html")]
    assert main([*argv, "--sample", "40", "--model", "stand-in", *where]) == 0
    sample = load_sample(tmp_path / "judgements.sample.json")
    assert len(sample.queries) == 40 and sample.population == len(golden.queries)
    pool = [json.loads(line) for line in pool_file.read_text().splitlines()]
    people_grades(pool, sample, golden, tmp_path / "grades.jsonl")
    assert main(["judge", "--import", str(tmp_path / "grades.jsonl"), *where]) == 0
    with ChatServer(key=KEY, responder=biased_judge(golden)) as srv:
        code = main(
            ["judge", str(pool_file), "--llm", "--model", "stand-in", "--base-url", srv.base_url]
            + [*where, "--no-progress", "--complete", "all", "--max-requests", "5000"]
            + ["--min-kappa", "0.3"]  # a deliberately biased judge
        )
    out, err = capsys.readouterr()
    assert code == 0, out + err

    ppi = make_run(
        tmp_path, model_dir, tmp_path / "ppi", judgements=str(judgements), labels="ppi", **kw
    )
    report = json.loads((ppi / "report.json").read_text())
    est = report["ppi"]["metrics"]["recall@5"]
    assert est["n_human"] == 40 and est["n_llm"] == len(golden.queries)
    # its false positives outweigh its misses here: the LLM's labels move recall measurably
    assert abs(est["llm_only"]["bias"]) > 0.01
    assert est["ci_low"] <= report["metrics"]["recall@5"] <= est["ci_high"]

    # the TREC files of the same run give the same estimates
    qrels = {}
    for line in (ppi / "qrels.trec").read_text().splitlines():
        qrels.setdefault(line.split()[0], []).append(line)
    gold = make_run(tmp_path, model_dir, tmp_path / "gold", judgements=str(judgements), **kw)
    human = [
        line
        for line in (gold / "qrels.trec").read_text().splitlines()
        if line.split()[0] in sample.queries
    ]
    (tmp_path / "human.qrels").write_text("\n".join(human) + "\n")
    code = main(
        ["score", str(tmp_path / "human.qrels"), str(ppi / "run.trec"), "--llm-qrels"]
        + [str(ppi / "qrels.trec"), "--k", "5", "--json", "-c"]
    )
    assert code == 0
    scored = json.loads(capsys.readouterr().out)
    for name in ("recall@5", "ndcg@5", "precision@5"):
        want = report["ppi"]["metrics"][name]
        got = scored["metrics"][name]
        assert got["estimate"] == pytest.approx(want["estimate"], abs=1e-9), name
        assert (got["ci_low"], got["ci_high"]) == pytest.approx(
            (want["ci_low"], want["ci_high"]), abs=1e-9
        )

    # the gate: the run against its own baseline passes; another judge is a label change
    baseline = write_baseline(report, tmp_path / "baseline.json", {"run_id": "demo"})
    loaded = read_baseline(baseline).report
    assert compare(loaded, report, ["recall@5", "ndcg@5"]).status == PASS
    other = json.loads(json.dumps(report))
    other["ppi"]["sample"]["judge"] = "llm:other"
    assert compare(loaded, other, ["recall@5"]).status == LABELS_CHANGED
