"""labels=ppi in a run: the ranking metrics are the PPI++ estimates from the people's labels on
the human sample and the sample's LLM judge on every query, equal to rageval.scoring.ppi on the
per-query values of a labels=gold run (people) and of a run that counts only that judge."""

from __future__ import annotations

import json
import shutil
import warnings
from pathlib import Path

import pytest
from fakes.overlap import WordOverlap

from rageval.errors import ConfigError
from rageval.inputs.chunking import ChunkingSpec
from rageval.inputs.corpus import load_corpus
from rageval.inputs.judgements import calibration_path
from rageval.run.evaluation import evaluate
from rageval.run.spec import RunSpec
from rageval.scoring.ppi import ppi_mean

K = 3
SAMPLE = ["q01", "q03", "q05", "q07"]


@pytest.fixture
def project(tmp_path, mini):
    (tmp_path / "golden").mkdir()
    shutil.copy(mini / "golden.jsonl", tmp_path / "golden" / "retriever.jsonl")
    return str(mini / "corpus"), tmp_path / "golden"


def run(project, model_dir, **kw):
    spec = RunSpec(
        corpus=project[0],
        golden=str(project[1] / "retriever.jsonl"),
        tokenizer_dir=model_dir,
        chunking=ChunkingSpec(32),
        k=K,
        ks=(1, K, 10),
        latency_sample=0,
        budgets=(),
        **kw,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return evaluate(spec, WordOverlap(), None)


def pooled(report, corpus):
    """Every top-10 result no golden label covers, as a passage to judge."""
    text = {d.id: d.text for d in load_corpus(corpus)}
    chunk = {c["id"]: c for c in report.chunks}
    out = []
    for row, ranking in zip(report.per_query, report.rankings, strict=True):
        for cid in ranking.ids[:10]:
            if cid not in report.qrels.get(row["id"], {}):
                c = chunk[cid]
                quote = text[c["doc_id"]][c["start"] : c["end"]].strip()
                out.append({"query_id": row["id"], "doc": c["doc_id"], "quote": quote})
    return out


def write(path: Path, records, judge, grade_of):
    with path.open("a", encoding="utf-8") as fh:
        for i, r in enumerate(records):
            line = {**r, "grade": grade_of(i), "judge": judge, "at": "2026-12-01T06:00:00Z"}
            fh.write(json.dumps(line) + "\n")


def judged_project(project, model_dir, with_people=True):
    """The LLM judge grades every query's pool (every third passage relevant); people grade the
    sampled queries' pools (every second relevant): the two disagree."""
    passages = pooled(run(project, model_dir), project[0])
    path = project[1] / "judgements.jsonl"
    path.unlink(missing_ok=True)
    write(path, passages, "llm:fake", lambda i: 2 if i % 3 == 0 else 0)
    if with_people:
        mine = [p for p in passages if p["query_id"] in SAMPLE]
        write(path, mine, "human:ana", lambda i: 1 if i % 2 == 0 else 0)
    calibration_path(path, "fake").write_text(
        json.dumps({"verdict": "accepted", "judge": "llm:fake"})
    )
    sample = {"judge": "llm:fake", "seed": 0, "strata": None, "population": 8, "queries": SAMPLE}
    (project[1] / "judgements.sample.json").write_text(json.dumps(sample))
    return path


def test_ppi_metrics_equal_the_estimator_on_both_label_sources(project, model_dir):
    judged_project(project, model_dir, with_people=False)
    llm = run(project, model_dir, labels="all")  # gold + the judge (no human judgement yet)
    judged_project(project, model_dir)
    people = run(project, model_dir)  # labels=gold: gold + human judgements
    report = run(project, model_dir, labels="ppi")
    assert report.label_set == "ppi"
    for name in (f"ndcg@{K}", f"recall@{K}", "precision@10", f"mrr@{K}"):
        y = [r[name] for r in people.per_query if r["id"] in SAMPLE]
        yhat = [r[name] for r in llm.per_query if r["id"] in SAMPLE]
        others = [r[name] for r in llm.per_query if r["id"] not in SAMPLE]
        want = ppi_mean(y, yhat, others)
        assert report.metrics[name] == pytest.approx(want.ppi.estimate, abs=1e-12), name
        assert report.ci[name] == pytest.approx([want.ppi.low, want.ppi.high], abs=1e-12)
        assert report.ppi["metrics"][name]["human_only"]["estimate"] == pytest.approx(
            sum(y) / len(y)
        )
        for row, llm_row in zip(report.per_query, llm.per_query, strict=True):
            assert row[name] == llm_row[name]  # the rows keep the LLM-label values
            assert (f"human:{name}" in row) == (row["id"] in SAMPLE)
    assert report.qrels == llm.qrels  # qrels.trec: the LLM side
    assert report.metrics[f"ndcg@{K}"] != llm.metrics[f"ndcg@{K}"]
    assert report.ppi["sample"]["judge"] == "llm:fake" and report.ppi["sample"]["size"] == 4
    assert "prediction-powered estimates: llm:fake labels every query, people the 4" in (
        report.table()
    )
    assert report.judgements["human"] > 0 and report.judgements["llm"] > 0
    assert any(w.startswith("only 4 human-graded queries") for w in report.warnings)
    assert "warning: only 4 human-graded queries" in report.table()
    assert not any("human-graded" in w for w in llm.warnings)
    assert report.ppi["interval"] == "t" and "Student-t" in report.ppi["method"]
    # ppi_interval=z: ppi_py's normal interval around the same estimate
    z = run(project, model_dir, labels="ppi", ppi_interval="z")
    name = f"ndcg@{K}"
    y = [r[name] for r in people.per_query if r["id"] in SAMPLE]
    yhat = [r[name] for r in llm.per_query if r["id"] in SAMPLE]
    others = [r[name] for r in llm.per_query if r["id"] not in SAMPLE]
    want = ppi_mean(y, yhat, others, interval="z")
    assert z.ci[name] == pytest.approx([want.ppi.low, want.ppi.high], abs=1e-12)
    assert z.metrics[name] == report.metrics[name] and z.ppi["interval"] == "z"
    with pytest.raises(ConfigError, match="one of t, z"):
        run(project, model_dir, labels="ppi", ppi_interval="normal")


def test_the_digest_changes_with_the_sample(project, model_dir):
    judged_project(project, model_dir)
    first = run(project, model_dir, labels="ppi")
    sample_file = project[1] / "judgements.sample.json"
    data = json.loads(sample_file.read_text())
    sample_file.write_text(json.dumps({**data, "queries": [*SAMPLE[:3], "q02"]}))
    second = run(project, model_dir, labels="ppi")
    assert first.digests["judgements"] != second.digests["judgements"]
    assert first.ppi["sample"]["digest"] != second.ppi["sample"]["digest"]


def test_labels_ppi_without_a_sample_or_calibration_stops_before_indexing(project, model_dir):
    path = judged_project(project, model_dir)
    (project[1] / "judgements.sample.json").unlink()
    with pytest.raises(ConfigError, match="labels=ppi needs the random human sample"):
        run(project, model_dir, labels="ppi")
    judged_project(project, model_dir)
    calibration_path(path, "fake").unlink()
    with pytest.raises(ConfigError, match="llm:fake has no accepted calibration"):
        run(project, model_dir, labels="ppi")
