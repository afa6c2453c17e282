"""Judgements in a run: which label set counts which judges, judged@k and the condensed metrics in
the report, the low-judged warning, and that no LLM label reaches a gated metric unless
``labels=all``."""

from __future__ import annotations

import json
import shutil
import warnings

import pytest
from fakes.overlap import WordOverlap

from rageval.errors import ConfigError
from rageval.gate.baseline import read_baseline, write_baseline
from rageval.inputs.chunking import ChunkingSpec
from rageval.inputs.corpus import load_corpus
from rageval.run.evaluation import evaluate
from rageval.run.spec import RunSpec

# what the gate checks by default (conf/config.yaml gate.metrics), at the run's k
GATED = ("precision", "recall", "hit_rate", "mrr", "ndcg", "map")
K = 3


@pytest.fixture
def project(tmp_path, mini):
    """The mini corpus and a copy of its golden set in a folder of its own (judgements land
    next to it)."""
    (tmp_path / "golden").mkdir()
    shutil.copy(mini / "golden.jsonl", tmp_path / "golden" / "retriever.jsonl")
    return str(mini / "corpus"), str(tmp_path / "golden" / "retriever.jsonl")


def run(project, model_dir, **kw):
    spec = RunSpec(
        corpus=project[0],
        golden=project[1],
        tokenizer_dir=model_dir,
        chunking=ChunkingSpec(32),
        k=K,
        ks=(1, K, 10),
        latency_sample=0,
        budgets=(),
        **kw,
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        report = evaluate(spec, WordOverlap(), None)
    return report, [str(w.message) for w in caught]


def unlabelled_top(report, corpus, n):
    """Judgement records for ``n`` top-k results that no golden label covers: the chunk's text as
    the quote, so the passage resolves back to that chunk."""
    text = {d.id: d.text for d in load_corpus(corpus)}
    chunk = {c["id"]: c for c in report.chunks}
    out = []
    for row, ranking in zip(report.per_query, report.rankings, strict=True):
        for cid in ranking.ids[:K]:
            if cid not in report.qrels.get(row["id"], {}) and len(out) < n:
                c = chunk[cid]
                quote = text[c["doc_id"]][c["start"] : c["end"]].strip()
                out.append({"query_id": row["id"], "doc": c["doc_id"], "quote": quote})
    assert len(out) == n
    return out


def write_judgements(project, records, judge, grade=3):
    path = project[1].replace("retriever.jsonl", "judgements.jsonl")
    with open(path, "a", encoding="utf-8") as fh:
        for r in records:
            line = {**r, "grade": grade, "judge": judge, "at": "2026-12-01T06:00:00Z"}
            fh.write(json.dumps(line) + "\n")
    return path


def gated(report):
    return {f"{m}@{K}": report.metrics[f"{m}@{K}"] for m in GATED}


def test_llm_labels_never_reach_a_gated_metric_unless_labels_all(project, model_dir):
    before, _ = run(project, model_dir)
    write_judgements(project, unlabelled_top(before, project[0], 4), "llm:judge-model", grade=3)

    gold, _ = run(project, model_dir)
    assert gold.label_set == "gold"
    assert gold.qrels == before.qrels  # not one LLM label in the qrels (qrels.trec)
    assert gold.metrics == before.metrics  # every metric, gated or not, unchanged
    assert gold.judgements["counted"] == 0 and gold.judgements["not_counted"] == 4
    assert gold.digests["judgements"] == before.digests["judgements"]
    assert "4 LLM judgements not counted: labels=all counts them)" in gold.table()

    uncalibrated, _ = run(project, model_dir, labels="all")  # no accepted calibration yet
    assert uncalibrated.judgements["llm"] == 0 and uncalibrated.metrics == before.metrics
    assert "4 LLM judgements not counted: no accepted calibration" in uncalibrated.table()
    from rageval.inputs.judgements import calibration_path

    calibration = calibration_path(
        project[1].replace("retriever.jsonl", "judgements.jsonl"), "judge-model"
    )
    calibration.write_text(json.dumps({"verdict": "accepted", "judge": "llm:judge-model"}))
    everything, _ = run(project, model_dir, labels="all")
    assert everything.label_set == "all" and everything.judgements["llm"] == 4
    assert everything.digests["judgements"] != gold.digests["judgements"]
    added = {
        (q, c)
        for q, rel in everything.qrels.items()
        for c in rel
        if c not in before.qrels.get(q, {})
    }
    assert len(added) >= 4
    assert gated(everything)[f"precision@{K}"] > gated(before)[f"precision@{K}"]
    assert "labels: all (golden set + 4 LLM judgements" in everything.table()


def test_human_judgements_count_by_default_and_grade_zero_is_judged(project, model_dir):
    before, _ = run(project, model_dir)
    found = unlabelled_top(before, project[0], 3)
    write_judgements(project, found[:1], "human:ana", grade=2)
    write_judgements(project, found[1:], "human:ana", grade=0)
    after, _ = run(project, model_dir)
    assert after.judgements["human"] == 3 and after.judgements["counted"] == 3
    k = f"judged@{K}"
    assert after.metrics[k] > before.metrics[k]
    # one new relevant chunk: precision rises; two judged 0: judged, not relevant
    assert after.metrics[f"precision@{K}"] > before.metrics[f"precision@{K}"]
    grades = sorted(
        g for q, rel in after.qrels.items() for c, g in rel.items() if c not in before.qrels[q]
    )
    assert grades[:2] == [0, 0] and grades[-1] == 2


def test_judged_and_condensed_metrics_are_reported_and_a_low_judged_run_warns(project, model_dir):
    report, messages = run(project, model_dir, judged_warn_below=1.0)
    for name in (f"judged@{K}", *(f"{m}_cond@{K}" for m in GATED)):
        assert name in report.metrics and name in report.ci and name in report.per_query[0]
    assert report.metrics[f"judged@{K}"] < 1.0  # the mini golden set labels few chunks
    # removing unjudged results can only move judged relevant ones up
    assert report.metrics[f"ndcg_cond@{K}"] >= report.metrics[f"ndcg@{K}"]
    warning = next(m for m in messages if "judged_warn_below" in m)
    assert f"judged@{K} = " in warning and "understate" in warning
    assert project[1].replace("retriever.jsonl", "judgements.jsonl") in warning
    assert report.warnings == [warning] and f"warning: {warning}" in report.table()
    table = report.table()
    assert "condensed" in table.splitlines()[0] and f"judged@{K}" in table
    data = report.to_dict()
    assert data["label_set"] == "gold" and data["judgements"]["counted"] == 0

    quiet, messages = run(project, model_dir, judged_warn_below=0.0)
    assert quiet.warnings == [] and not any("judged_warn_below" in m for m in messages)


def test_the_baseline_keeps_the_label_set_and_reads_old_files_as_gold(project, model_dir, tmp_path):
    report, _ = run(project, model_dir, labels="all", judged_warn_below=0.0)
    path = write_baseline(report.to_dict(), tmp_path / "baseline.json", {"file": "report.json"})
    loaded = read_baseline(path).report
    assert loaded["label_set"] == "all" and loaded["judgements"] == report.judgements


@pytest.mark.parametrize(
    "kw, expect",
    [
        ({"labels": "llm"}, "labels must be one of gold, all"),
        ({"judged_warn_below": 2}, "judged_warn_below must be a share between 0 and 1"),
    ],
)
def test_bad_label_settings_are_config_errors(project, model_dir, kw, expect):
    with pytest.raises(ConfigError, match=expect):
        RunSpec(corpus=project[0], golden=project[1], tokenizer_dir=model_dir, **kw)


def test_a_judgements_file_elsewhere_and_its_errors_name_file_and_line(
    project, model_dir, tmp_path
):
    path = tmp_path / "elsewhere.jsonl"
    path.write_text(json.dumps({"query_id": "q01", "doc": "faq", "quote": "x", "grade": 9}) + "\n")
    from rageval.errors import InputError

    with pytest.raises(InputError, match=rf"{path}:1: .*missing 'judge'"):
        run(project, model_dir, judgements=str(path))
    # a path given explicitly must exist: a typo never turns judgements off without a word
    with pytest.raises(ConfigError, match="judgements file .*typo.jsonl' not found"):
        run(project, model_dir, judgements=str(tmp_path / "typo.jsonl"))


def test_the_judged_warning_counts_empty_places_when_a_ranking_is_short():
    from types import SimpleNamespace

    from rageval.run.labels import judged_warnings

    def report(lengths):
        rows = [{"retrieved": [f"d{i}" for i in range(n)]} for n in lengths]
        return SimpleNamespace(metrics={"judged@5": 0.2}, k=5, judgements={}, per_query=rows)

    (full,) = judged_warnings(report([5, 5]), 0.5)
    assert "80% of the top 5 results carry no label and count as misses" in full
    (short,) = judged_warnings(report([5, 2]), 0.5)
    assert "80% of the top 5 places hold a result without a label (a miss) or nothing" in short
    assert "(1 query retrieved fewer than 5)" in short
    assert judged_warnings(report([2]), 0.1) == []  # above the threshold: no warning
