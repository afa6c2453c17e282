"""A sweep read back from MLflow through its client: run names, the parent's verdict (best child,
its metrics and swept values), params, dataset inputs and source tags; promote --best."""

from __future__ import annotations

import subprocess

from mlflow_store import store_uri


def test_a_sweep_reads_in_mlflow_like_its_comparison(
    mini, shared_cache, tmp_path, monkeypatch, capsys
):
    from mlflow.tracking import MlflowClient

    from rageval.app.main import run_app

    repo = tmp_path / "project"  # the user's project: a git checkout, where the sweep starts
    repo.mkdir()
    for cmd in (
        ["init", "-q"],
        [
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "commit",
            "-q",
            "--allow-empty",
            "-m",
            "init",
        ],
    ):
        subprocess.run(["git", *cmd], cwd=repo, check=True)
    commit = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True, text=True
    ).stdout.strip()
    monkeypatch.chdir(repo)
    uri = store_uri(tmp_path / "mlflow.db")
    code = run_app(
        [
            "-m",
            "dataset=custom",
            f"dataset.corpus={mini / 'corpus'}",
            f"dataset.golden={mini / 'golden.jsonl'}",
            f"cache_dir={shared_cache}",
            f"mlflow.tracking_uri={uri}",
            "latency_sample=0",
            "search=bm25",
            f"hydra.sweep.dir={tmp_path / 'sweep'}",
            "chunk=32,64,128",
        ]
    )
    assert code == 0
    out = capsys.readouterr().out
    c = MlflowClient(uri)
    exp = c.get_experiment_by_name("rageval")
    assert exp.tags["mlflow.experimentKind"] == "custom_model_development"
    runs = c.search_runs([exp.experiment_id])
    (parent,) = [r for r in runs if r.data.tags.get("rageval.sweep") == "parent"]
    children = [r for r in runs if r.data.tags.get("mlflow.parentRunId") == parent.info.run_id]
    assert sorted(r.info.run_name for r in children) == [
        "chunk=128 #2",
        "chunk=32 #0",
        "chunk=64 #1",
    ]
    assert f"MLflow parent run {parent.info.run_id}" in out
    for r in children:
        assert f"MLflow run {r.info.run_id}" in out

    # the parent carries the verdict: the best child by the sweep's deciding metric, its metrics
    # and swept value
    from rageval.tracking.keys import find_metric
    from rageval.tracking.log import read_table
    from rageval.tracking.lookups import best_run

    tags = parent.data.tags
    decide = tags["rageval.compare_metric"]
    top = max(find_metric(r.data.metrics, decide)[1] for r in children)
    (best,) = [r for r in children if r.info.run_id == tags["rageval.best_run_id"]]
    assert find_metric(best.data.metrics, decide)[1] == top  # ties: any of the tied jobs
    top_ndcg = max(r.data.metrics["headline/ndcg_at_5"] for r in children)
    for sweep in (parent.info.run_id, None):  # `promote --best`: a child, never the parent's copy
        found = best_run(c, "rageval", "ndcg_at_5", golden_digest=None, sweep=sweep)
        assert found.info.run_id != parent.info.run_id
        assert found.data.metrics["headline/ndcg_at_5"] == top_ndcg
    assert tags["rageval.best_run_url"].endswith(f"/runs/{best.info.run_id}")
    assert best.info.run_id in tags["mlflow.note.content"] and decide in tags["mlflow.note.content"]
    assert parent.data.metrics == best.data.metrics
    assert parent.data.params == {"chunk": best.data.params["chunk"]}
    assert {"leaderboard.md", "leaderboard.csv"} <= {
        a.path for a in c.list_artifacts(parent.info.run_id)
    }

    for r in children:
        params = r.data.params
        assert 10 <= len(params) <= 30
        assert len({k.lower() for k in params}) == len(params)
        assert not [
            k
            for k in params
            if k.startswith("backend.") and params.get("search." + k[8:]) == params[k]
        ]
        inputs = {d.dataset.name: d for d in r.inputs.dataset_inputs}
        assert set(inputs) == {"custom/golden", "custom/corpus"}
        report = r.data.tags
        assert report["rageval.golden_digest"].startswith(inputs["custom/golden"].dataset.digest)
        assert report["rageval.corpus_digest"].startswith(inputs["custom/corpus"].dataset.digest)
        assert report["mlflow.source.git.commit"] == commit
        assert report["mlflow.source.type"] == "LOCAL"
        assert all("/" in k for k in r.data.metrics)  # every metric sits in a UI section
        # which labels the metrics counted, and how much of the top k they cover
        assert (
            report["rageval.label_set"] == "gold" and len(report["rageval.judgements_digest"]) == 64
        )
        assert "judged/judged_at_5" in r.data.metrics and len(r.data.metrics) <= 40
        assert "judged/ndcg_cond_at_5" in read_table(c, r.info.run_id, "metrics.json")["key"]


def test_promote_best_reads_runs_logged_before_and_after_the_headline(tmp_path):
    """A run logged before the headline holds every cutoff as a metric; a newer one holds the
    other cutoffs in its metrics table only: --best ndcg@10 compares both."""
    from mlflow.tracking import MlflowClient

    from rageval.tracking.client import ensure_experiment
    from rageval.tracking.keys import METRICS_TABLE, METRICS_TABLE_TAG
    from rageval.tracking.log import log_table
    from rageval.tracking.lookups import best_run

    c = MlflowClient(store_uri(tmp_path / "mlflow.db"))
    exp = ensure_experiment(c, "rageval")
    golden = {"rageval.golden_digest": "g1"}

    def old(value):
        run = c.create_run(exp, tags=golden)
        c.log_metric(run.info.run_id, "cutoffs/ndcg_at_10", value)
        c.set_terminated(run.info.run_id)
        return run.info.run_id

    def new(value):
        run = c.create_run(exp, tags={**golden, METRICS_TABLE_TAG: METRICS_TABLE})
        c.log_metric(run.info.run_id, "headline/ndcg_at_5", 0.1)
        table = {"key": ["headline/ndcg_at_5", "cutoffs/ndcg_at_10"], "value": [0.1, value]}
        log_table(c, run.info.run_id, table, METRICS_TABLE)
        c.set_terminated(run.info.run_id)
        return run.info.run_id

    old(0.5)
    newer = new(0.7)
    assert best_run(c, "rageval", "ndcg_at_10", golden_digest="g1").info.run_id == newer
    older = old(0.9)
    assert best_run(c, "rageval", "ndcg_at_10", golden_digest="g1").info.run_id == older
    assert best_run(c, "rageval", "ndcg_at_10", golden_digest="other") is None
