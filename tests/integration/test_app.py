"""Integration: the Hydra app in-process and as a subprocess, with a real MLflow store."""

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from mlflow_store import store_uri

from rageval.app.main import run_app

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]


def mini_args(mini, cache, tmp_path, *extra):
    return [
        "dataset=custom",
        f"dataset.corpus={mini / 'corpus'}",
        f"dataset.golden={mini / 'golden.jsonl'}",
        f"cache_dir={cache}",
        f"mlflow.tracking_uri={store_uri(tmp_path / 'mlflow.db')}",
        "latency_sample=3",
        *extra,
    ]


def client(tmp_path):
    from mlflow.tracking import MlflowClient

    return MlflowClient(tracking_uri=f"sqlite:///{tmp_path / 'mlflow.db'}")


def artifacts(c, run_id):
    return {a.path for a in c.list_artifacts(run_id)}


def test_single_run_writes_report_and_logs_everything_to_mlflow(
    mini, shared_cache, tmp_path, capsys
):
    out = tmp_path / "run"
    code = run_app(
        mini_args(mini, shared_cache, tmp_path, "chunk=64", "search=hybrid", f"hydra.run.dir={out}")
    )
    assert code == 0
    printed = capsys.readouterr().out
    assert (
        "precision@5" in printed
        and "95% CI" in printed
        and f"report: {out / 'report.json'}" in printed
    )
    rep = json.loads((out / "report.json").read_text())
    for key in (
        "metrics",
        "per_query",
        "config",
        "digests",
        "timings",
        "mlflow_run_id",
        "ci",
        "latency",
    ):
        assert key in rep
    for m in ("precision", "recall", "hit_rate", "mrr", "ndcg", "map"):
        for k in (1, 3, 5, 10, 20):
            assert 0.0 <= rep["metrics"][f"{m}@{k}"] <= 1.0
    assert len(rep["per_query"]) == 8 and rep["config"]["chunk"] == 64
    assert set(rep["latency"]) == {"p50_ms", "p95_ms", "queries_sampled", "searches"}

    c = client(tmp_path)
    run = c.get_run(rep["mlflow_run_id"])
    assert run.data.params["search"] == "hybrid" and run.data.params["chunk"] == "64"
    assert run.data.params["search.mode"] == "hybrid" and run.data.params["backend"] == "faiss"
    assert run.data.metrics["headline/precision_at_5"] == pytest.approx(
        rep["metrics"]["precision@5"]
    )
    # the headline as metrics (at most 40), every number in the run's metrics table
    assert "cutoffs/recall_at_20" not in run.data.metrics and len(run.data.metrics) <= 40
    from rageval.tracking.log import read_table

    table = read_table(c, run.info.run_id, "metrics.json")
    at = table["key"].index("cutoffs/recall_at_20")
    assert table["value"][at] == pytest.approx(rep["metrics"]["recall@20"])
    lo, hi = rep["ci"]["ndcg@5"]
    assert run.data.metrics["headline/ndcg_at_5_ci_low"] == pytest.approx(lo)
    assert run.data.metrics["headline/ndcg_at_5_ci_high"] == pytest.approx(hi)
    assert "recall" not in run.data.metrics  # no stepped curve that reads like a headline metric
    assert run.data.metrics["costs/latency_p95_ms"] == pytest.approx(rep["latency"]["p95_ms"])
    assert run.data.metrics["costs/embed_s"] == pytest.approx(rep["costs"]["embed_s"])
    # a hybrid run reports its stages: the dense and lexical candidates and their fusion
    assert rep["stages"]["order"] == ["dense", "lexical", "fusion"]
    lifted = {(x["stage"], x["over"]) for x in rep["stages"]["lift"]}
    assert lifted == {("fusion", "dense"), ("fusion", "lexical")}
    at = table["key"].index("stages/fusion/ndcg_at_5")  # stages: in the metrics table
    assert table["value"][at] == pytest.approx(rep["metrics"]["ndcg@5"])
    tags = run.data.tags
    assert tags["rageval.golden_digest"] == rep["digests"]["golden"]
    assert tags["rageval.corpus_digest"] == rep["digests"]["corpus"]
    assert tags["rageval.model_fingerprint"] == rep["digests"]["model"] != ""
    assert tags["mlflow.source.git.commit"] and tags["rageval.git_dirty"] in ("true", "false")
    assert f"MLflow run {run.info.run_id}" in printed and "mlflow ui --backend-store-uri" in printed
    assert printed.index("precision@5") < printed.index(f"MLflow run {run.info.run_id}")
    assert {
        "report.json",
        "per_query.csv",
        "per_query.json",
        "config.yaml",
        "metrics_at_k.png",
        "run.trec",
        "qrels.trec",
        "report.html",
        "chunk_labels.tsv",
        "chunks.jsonl",
        "metrics.json",
    } <= artifacts(c, run.info.run_id)


def test_sweep_2x2_nests_four_runs_under_a_parent_with_the_leaderboard(
    mini, shared_cache, tmp_path, capsys
):
    sweep = tmp_path / "sweep"
    code = run_app(
        [
            "-m",
            *mini_args(mini, shared_cache, tmp_path, f"hydra.sweep.dir={sweep}"),
            "chunk=32,64",
            "search=vector,bm25",
        ]
    )
    assert code == 0
    c = client(tmp_path)
    exp = c.get_experiment_by_name("rageval")
    runs = c.search_runs([exp.experiment_id])
    parents = [r for r in runs if r.data.tags.get("rageval.sweep") == "parent"]
    assert len(parents) == 1
    parent = parents[0].info.run_id
    children = [r for r in runs if r.data.tags.get("mlflow.parentRunId") == parent]
    assert len(children) == 4
    assert {(r.data.params["chunk"], r.data.params["search"]) for r in children} == {
        ("32", "vector"),
        ("32", "bm25"),
        ("64", "vector"),
        ("64", "bm25"),
    }
    assert {"leaderboard.md", "leaderboard.csv", "pareto.png"} <= artifacts(c, parent)
    on_front = {
        r.data.tags["rageval.job"] for r in children if "rageval.pareto_front" in r.data.tags
    }
    assert parents[0].data.tags["rageval.pareto_cost"] == "latency_p95_ms"
    assert set(parents[0].data.tags["rageval.pareto_front"].split()) == on_front != set()
    # MLflow's shared view: the sweep's jobs only, sorted by the deciding metric, the verdict,
    # the swept params and the deciding metric first among the columns
    key = f"rageval-{parent[:16]}"
    view = json.loads(c.get_experiment(exp.experiment_id).tags[f"mlflow.sharedViewState.{key}"])
    decided = view["orderByKey"]
    assert view["searchFilter"] == f"tags.`mlflow.parentRunId` = '{parent}'"
    assert decided.startswith("metrics.`") and view["orderByAsc"] is False
    assert decided[len("metrics.`") : -1] in children[0].data.metrics  # a key the jobs logged
    assert view["selectedColumns"][:4] == [
        "tags.`rageval.verdict`",
        "params.`chunk`",
        "params.`search`",
        decided,
    ]
    assert "metrics.`costs/latency_p95_ms`" in view["selectedColumns"]
    md = (sweep / "leaderboard.md").read_text()
    table = md.split("\n\n")[1]  # the leaderboard itself (the slices and costs notes follow)
    assert (
        sum(line.startswith("| ") for line in table.splitlines()) == 5
        and "| chunk | search | evidence_recall@1024t |" in md
    )
    out = capsys.readouterr().out
    assert "Sweep of 4 jobs (0 failed), decided by evidence_recall@1024t" in out
    assert f"runs?workflowType=machine_learning&viewStateShareKey={key}" in out
    # the fixture's corpus fits the 1,024-token budget: every job finds all the evidence, so the
    # deciding metric is saturated and no job is named best (by that metric nothing is better)
    assert md.count("| best |") == 0 and "Saturated: every job scores 1.000" in out
    board = out[out.index("Sweep of 4 jobs") : out.index("leaderboard: ")]
    assert max(map(len, board.splitlines())) <= 120 and "tokens@5" in board
    assert "Costs (front: the Pareto front of evidence_recall@1024t against latency_p95_ms" in board
    assert f"Pareto plot: {sweep / 'pareto.png'}" in out
    # every job's own table is labelled with its job number and swept values
    label = next(line for line in out.splitlines() if line.startswith("job 3 ("))
    assert "chunk=64" in label and "search=bm25" in label and "hydra.sweep.dir" not in label
    rows = list(csv.DictReader((sweep / "leaderboard.csv").open()))
    assert [r["job"] for r in rows] == ["0", "1", "2", "3"]
    for r in rows:
        rep = json.loads((sweep / r["job"] / "report.json").read_text())
        m = rep["metrics"]["evidence_recall@1024t"]
        assert float(r["evidence_recall@1024t"]) == m
        assert float(r["evidence_recall@1024t_low"]) <= m <= float(r["evidence_recall@1024t_high"])
        assert r["mlflow_run_id"] == rep["mlflow_run_id"] and r["verdict"] in ("best", "tied", "")
        # the costs are columns: the job's own numbers, the front marked against p95 latency
        assert float(r["latency_p95_ms"]) == rep["costs"]["latency_p95_ms"]
        assert float(r["index_memory_bytes"]) == rep["costs"]["index_memory_bytes"] > 0
        assert r["pareto_front"] in ("0", "1")
        chunks = [json.loads(x) for x in (sweep / r["job"] / "chunks.jsonl").open()]
        assert len(chunks) == rep["counts"]["chunks"]
        assert {
            "id",
            "doc_id",
            "ordinal",
            "start",
            "end",
            "span_start",
            "span_end",
            "tokens",
            "label",
        } <= set(chunks[0])
        assert all(c["label"] == f"{c['doc_id']}:{c['ordinal']}" for c in chunks)
        # the text of every chunk a query retrieved rides along, for the per-query page
        shown = {u for q in rep["per_query"] for u in q["retrieved"]}
        assert all("text" in c for c in chunks if c["id"] in shown)
    child = next(r for r in children if r.data.params["chunk"] == "32")
    from rageval.tracking.keys import find_metric

    assert find_metric(child.data.metrics, "evidence_recall@1024t")
    assert find_metric(child.data.metrics, "tokens@5")
    assert "chunks.jsonl" in artifacts(c, child.info.run_id)


def run_cli(args, cwd, env_extra=None):
    env = {**os.environ, "HF_HUB_OFFLINE": "1", **(env_extra or {})}
    return subprocess.run(
        [sys.executable, "-m", "rageval", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_joblib_sweep_as_a_subprocess_from_another_directory(mini, shared_cache, tmp_path):
    # the parent's process creates the experiment and parent run before the workers start
    args = mini_args(
        mini,
        shared_cache,
        tmp_path,
        f"hydra.sweep.dir={tmp_path / 'sw'}",
        "hydra/launcher=joblib",
        "hydra.launcher.n_jobs=2",
        "latency_sample=0",
    )
    proc = run_cli(["-m", *args, "chunk=32,64", "search=vector,bm25"], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    c = client(tmp_path)
    runs = c.search_runs([c.get_experiment_by_name("rageval").experiment_id])
    parent = next(r for r in runs if r.data.tags.get("rageval.sweep") == "parent").info.run_id
    assert sum(r.data.tags.get("mlflow.parentRunId") == parent for r in runs) == 4


def run_main(args, cwd, monkeypatch, capfd, env_extra=None):
    """``python -m rageval ARGS`` in this process (what the subprocess would run, without paying
    for a new interpreter and its imports): exit code, and everything written to fds 1 and 2."""
    from rageval.cli.main import main

    monkeypatch.chdir(cwd)
    for name, value in (env_extra or {}).items():
        monkeypatch.setenv(name, value)
    try:
        code = main(args)
    except SystemExit as exit_:  # a failed single run exits, as `python -m rageval` would
        code = exit_.code
    out, err = capfd.readouterr()
    return subprocess.CompletedProcess(args, code, out, err)


def test_bad_override_and_bad_input_exit_2_with_one_line(
    mini, shared_cache, tmp_path, monkeypatch, capfd
):
    bad = tmp_path / "bad.jsonl"
    bad.write_text(
        '{"id": "q1", "query": "x", "evidence": [{"doc": "faq", "quote": "nowhere in the faq"}]}\n'
    )
    args = mini_args(
        mini, shared_cache, tmp_path, f"dataset.golden={bad}", f"hydra.run.dir={tmp_path / 'r'}"
    )
    proc = run_main(args, tmp_path, monkeypatch, capfd)
    assert proc.returncode == 2
    assert f"rageval: error: {bad}:1: query 'q1': evidence[0] quote not found" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert not (tmp_path / "r" / "report.json").exists()
    args = [*mini_args(mini, shared_cache, tmp_path), "chunk=-5"]
    proc = run_main(args, tmp_path, monkeypatch, capfd)
    assert (
        proc.returncode == 2
        and "chunk must be >= 0" in proc.stderr
        and "Traceback" not in proc.stderr
    )


def test_a_secret_on_the_command_line_never_reaches_mlflow_or_the_console(
    mini, shared_cache, tmp_path, monkeypatch, capfd
):
    secret = "sk-live-9f8e7d6c5b4a"
    env_secret = "env-secret-0a1b2c3d4e"
    out = tmp_path / "run"
    args = mini_args(
        mini,
        shared_cache,
        tmp_path,
        f"+dataset.api_token={secret}",
        f"+mlflow.password={secret}",
        f"hydra.run.dir={out}",
    )
    env = {"AZURE_SEARCH_API_KEY": env_secret}
    proc = run_main(args, tmp_path, monkeypatch, capfd, env_extra=env)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert secret not in proc.stdout + proc.stderr
    rep = json.loads((out / "report.json").read_text())
    c = client(tmp_path)
    run = c.get_run(rep["mlflow_run_id"])
    blob = json.dumps([run.data.params, run.data.tags])
    assert run.data.params["dataset.api_token"] == "***"
    dl = Path(c.download_artifacts(run.info.run_id, "", str(tmp_path / "dl")))
    for f in [*dl.rglob("*"), *out.rglob("*")]:
        if f.is_file():
            blob += f.read_bytes().decode("utf-8", "replace")
    assert secret not in blob and env_secret not in blob


def test_rageval_run_is_the_hydra_app_and_chunk_is_a_plain_integer(tmp_path):
    rageval = os.path.join(os.path.dirname(sys.executable), "rageval")
    proc = subprocess.run(
        [rageval, "run", "chunk=512", "search=hybrid", "--cfg", "job"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert "chunk: 512" in proc.stdout and "mode: hybrid" in proc.stdout
