"""labels=ppi end to end on the fixture corpus: pool a run, draw the human sample with
``rageval judge --review --sample``, import people's grades for it, let the LLM judge (the
chat-completions stand-in) grade the whole pool, and run with labels=ppi."""

from __future__ import annotations

import json
import re
import zlib

from fakes.chat_server import JUDGE_KEY, ChatServer
from run_folders import make_run

from rageval.cli.main import main
from rageval.gate.compare import PASS, compare
from rageval.inputs.golden import load_golden
from rageval.inputs.ppi_sample import load_sample

KEY = JUDGE_KEY


def _fold(s):
    return " ".join(s.lower().split())


def sloppy(golden):
    """Relevant when the passage holds an evidence quote, but misses a third of those."""
    quotes = {q.query: [_fold(e.quote) for e in q.evidence] for q in golden.queries}

    def answer(body):
        text = body["messages"][-1]["content"]
        question = re.search(r"<question>\n(.*)\n</question>", text, re.S).group(1)
        passage = re.search(r"<passage>\n(.*)\n</passage>", text, re.S).group(1)
        hit = any(qt in _fold(passage) for qt in quotes.get(question, []))
        missed = zlib.crc32(passage.encode()) % 3 == 0
        return json.dumps({"grade": 2 if hit and not missed else 0, "reason": "checked"})

    return answer


def test_sample_grade_judge_and_run_with_labels_ppi(llm_env, tmp_path, mini, model_dir, capsys):
    judgements = tmp_path / "judgements.jsonl"
    run = make_run(mini, model_dir, tmp_path / "run", chunk=32)
    pool = tmp_path / "pool.jsonl"
    where = ["--judgements", str(judgements)]
    assert main(["pool", str(run), "--depth", "5", "--out", str(pool), *where]) == 0
    review = tmp_path / "review.html"
    argv = ["judge", str(pool), "--review", str(review), "--sample", "4", "--model", "judge-1"]
    assert main([*argv, "--seed", "3", *where]) == 0
    out = capsys.readouterr().out
    sample = load_sample(tmp_path / "judgements.sample.json")
    assert sample.judge == "llm:judge-1" and len(sample.queries) == 4 and sample.seed == 3
    assert sample.strata == "source" and "stratified by source" in out
    page = review.read_text()
    pooled = [json.loads(line) for line in pool.read_text().splitlines()]
    for q in pooled:  # the page holds the sampled queries only
        assert (json.dumps(q["query_id"])[1:-1] in page) == (q["query_id"] in sample.queries)
    # the same command again keeps the sample; another seed is refused
    assert main([*argv, "--seed", "3", *where]) == 0 and "unchanged" in capsys.readouterr().out
    assert main([*argv, "--seed", "4", *where]) == 2
    assert "a human sample is recorded already" in capsys.readouterr().err

    golden = load_golden(mini / "golden.jsonl")
    quotes = {q.id: [_fold(e.quote) for e in q.evidence] for q in golden.queries}
    grades = tmp_path / "grades.jsonl"
    with grades.open("w") as fh:  # people grade every pooled passage of the sampled queries
        for q in pooled:
            if q["query_id"] not in sample.queries:
                continue
            for p in q["passages"]:
                hit = any(qt in _fold(p["text"]) for qt in quotes[q["query_id"]])
                record = {"query_id": q["query_id"], "doc": p["doc"], "quote": p["text"]}
                record |= {"start": p["start"], "grade": 2 if hit else 0}
                record |= {"judge": "human:ana", "at": "2026-12-04T10:00:00Z"}
                fh.write(json.dumps(record) + "\n")
    assert (
        main(["judge", "--import", str(grades), *where, "--golden", str(mini / "golden.jsonl")])
        == 0
    )
    with ChatServer(key=KEY, responder=sloppy(golden)) as srv:
        code = main(
            ["judge", str(pool), "--llm", "--model", "judge-1", "--base-url", srv.base_url]
            + [*where, "--no-progress", "--complete", "all", "--min-kappa", "0.3"]
            + ["--calibration-size", "16", "--min-calibration", "12"]
        )
    assert code == 0, capsys.readouterr().err
    capsys.readouterr()

    ppi = make_run(
        mini, model_dir, tmp_path / "ppi", chunk=32, judgements=str(judgements), labels="ppi"
    )
    report = json.loads((ppi / "report.json").read_text())
    assert report["label_set"] == "ppi"
    assert report["ppi"]["sample"]["judge"] == "llm:judge-1"
    est = report["ppi"]["metrics"]["recall@5"]
    assert report["metrics"]["recall@5"] == est["estimate"]
    assert est["n_human"] == 4 and est["n_llm"] == len(golden.queries)
    assert est["ci_low"] <= est["estimate"] <= est["ci_high"]
    rows = {r["id"]: r for r in report["per_query"]}
    assert all(("human:recall@5" in rows[q]) == (q in sample.queries) for q in rows)
    assert compare(report, report, ["recall@5", "ndcg@5"]).status == PASS
    # how many human-graded queries an interval 0.5 wide needs, from this judge's agreement
    assert main(["plan", str(ppi), "--width", "0.5", "--metric", "recall@5", "--json"]) == 0
    plan = json.loads(capsys.readouterr().out)
    row = plan["rows"][0]
    assert plan["queries"] == len(golden.queries) and row["n_human"] == 4
    assert row["width_now"] > 0
    # the tuned weight never makes the interval wider than the humans' alone
    if row["needed_human_only"] is not None:
        assert row["needed"] is not None and row["needed"] <= row["needed_human_only"]
    assert main(["plan", str(ppi), "--width", "0.5"]) == 0
    assert "graded for PPI" in capsys.readouterr().out
    assert main(["plan", str(run), "--width", "0.5"]) == 2
    assert "not a labels=ppi run" in capsys.readouterr().err
