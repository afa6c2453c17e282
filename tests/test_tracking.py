"""What MLflow shows of rageval runs: metric sections, params, run names, and (integration) a
sweep read back through the client: run names, the parent's summary, dataset inputs, source tags."""

from __future__ import annotations

import subprocess
from types import SimpleNamespace

import pytest

from rageval.tracking.keys import (
    find_metric,
    metric_entries,
    metric_key,
    run_name,
    run_params,
    swept_keys,
)


def test_metric_keys_section_the_ui_and_read_back_in_either_spelling():
    assert metric_key("ndcg@5", 5) == "headline/ndcg_at_5"
    assert metric_key("ndcg@10", 5) == "cutoffs/ndcg_at_10"
    assert metric_key("evidence_recall@5", 5) == "span/evidence_recall_at_5"
    assert metric_key("evidence_recall@1024t", 5) == "span/evidence_recall_at_1024t"
    metrics = {"headline/ndcg_at_5": 0.5, "cutoffs/ndcg_at_10": 0.6, "recall_at_5": 0.7}
    assert find_metric(metrics, "ndcg@5") == ("headline/ndcg_at_5", 0.5)
    assert find_metric(metrics, "NDCG_at_10") == ("cutoffs/ndcg_at_10", 0.6)
    assert find_metric(metrics, "recall@5") == ("recall_at_5", 0.7)  # a run logged before sections
    assert find_metric(metrics, "mrr@5") is None


def test_metric_entries_carry_cis_at_k_only_and_skip_nan():
    report = SimpleNamespace(
        k=5,
        metrics={"ndcg@5": 0.5, "ndcg@10": 0.6, "mrr@5": float("nan")},
        ci={"ndcg@5": [0.4, 0.6], "ndcg@10": [0.5, 0.7]},
        latency={"p95_ms": 3.0},
        timings={"index_s": 1.5},
    )
    assert dict(metric_entries(report)) == {
        "headline/ndcg_at_5": 0.5, "headline/ndcg_at_5_ci_low": 0.4,
        "headline/ndcg_at_5_ci_high": 0.6, "cutoffs/ndcg_at_10": 0.6,
        "latency/p95_ms": 3.0, "time/index_s": 1.5,
    }  # fmt: skip


def composed(*overrides):
    from hydra import compose, initialize_config_dir
    from omegaconf import OmegaConf

    from rageval.app.main import CONF_DIR, register_resolvers

    register_resolvers()
    with initialize_config_dir(str(CONF_DIR), version_base="1.3"):
        cfg = compose("config", overrides=list(overrides))
    return OmegaConf.to_container(cfg, resolve=True)


@pytest.mark.parametrize("search", ["vector", "bm25", "hybrid"])
def test_params_are_what_a_user_varies_without_repeats_or_plumbing(search):
    config = composed(f"search={search}")
    choices = {"dataset": "demo", "embedding": "minilm", "backend": "faiss", "search": search,
               "rerank": "none"}  # fmt: skip
    params = run_params(config, choices)
    assert params["search"] == search and params["search.mode"] == search
    assert params["chunk"] == "256" and params["embedding.model"] == "all-MiniLM-L6-v2"
    assert params["backend.faiss.index_type"] == "flat"
    assert not [k for k in params if k.startswith(("mlflow", "gate", "hydra"))]
    assert not [k for k in params if k.endswith(("_target_", "cache_dir", "batch_size"))]
    assert not [
        k for k in params if k.startswith("backend.") and k.split(".", 1)[1] in config["search"]
    ]
    assert not [k for k in params if "hnsw" in k or "ivf" in k]  # a flat index reads neither
    assert all(v not in ("", "None") for v in params.values())
    assert ("search.bm25.k1" in params) == (search != "vector")
    assert ("search.rrf_k" in params) == (search == "hybrid")
    assert len(params) <= 30
    hnsw = run_params(composed("backend.faiss.index_type=hnsw"), choices)
    assert hnsw["backend.faiss.hnsw_m"] == "32" and "backend.faiss.ivf_nprobe" not in hnsw


def test_run_names_come_from_swept_values_and_the_job_number():
    jobs = [["chunk=256", "search=vector", "k=10"], ["chunk=512", "search=vector", "k=10"],
            ["chunk=256", "search=bm25", "k=10"]]  # fmt: skip
    assert swept_keys(jobs) == ["chunk", "search"]
    assert run_name(jobs[1], 1, keys=swept_keys(jobs)) == "chunk=512 search=vector #1"
    assert run_name(["cache_dir=/tmp/c", "search=bm25", "hydra.run.dir=/x"]) == "search=bm25"
    assert (
        run_name([], config={"chunk": 256, "search": {"mode": "vector"}})
        == "chunk=256 search=vector"
    )


@pytest.mark.integration
def test_a_sweep_reads_in_mlflow_like_its_comparison(
    mini, shared_cache, tmp_path, monkeypatch, capsys
):
    from mlflow.tracking import MlflowClient

    from rageval.app.main import run_app

    repo = tmp_path / "project"  # the user's project: a git checkout, where the sweep starts
    repo.mkdir()
    for cmd in (["init", "-q"], ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q",
                                 "--allow-empty", "-m", "init"]):  # fmt: skip
        subprocess.run(["git", *cmd], cwd=repo, check=True)
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True,
                            text=True).stdout.strip()  # fmt: skip
    monkeypatch.chdir(repo)
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    code = run_app(["-m", "dataset=custom", f"dataset.corpus={mini / 'corpus'}",
                    f"dataset.golden={mini / 'golden.jsonl'}", f"cache_dir={shared_cache}",
                    f"mlflow.tracking_uri={uri}", "latency_sample=0", "search=bm25",
                    f"hydra.sweep.dir={tmp_path / 'sweep'}", "chunk=32,64,128"])  # fmt: skip
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

    # the parent carries the verdict: the best child by ndcg@5, its metrics and swept value
    from rageval.tracking.lookup import best_run_id

    top = max(r.data.metrics["headline/ndcg_at_5"] for r in children)
    tags = parent.data.tags
    (best,) = [r for r in children if r.info.run_id == tags["rageval.best_run_id"]]
    assert best.data.metrics["headline/ndcg_at_5"] == top  # ties: any of the tied jobs
    for sweep in (parent.info.run_id, None):  # `promote --best`: a child, never the parent's copy
        found = best_run_id(c, "rageval", "ndcg@5", sweep)
        assert found != parent.info.run_id
        assert c.get_run(found).data.metrics["headline/ndcg_at_5"] == top
    assert tags["rageval.best_run_url"].endswith(f"/runs/{best.info.run_id}")
    assert (
        best.info.run_id in tags["mlflow.note.content"] and "ndcg@5" in tags["mlflow.note.content"]
    )
    assert parent.data.metrics == best.data.metrics
    assert parent.data.params == {"chunk": best.data.params["chunk"]}
    assert {"comparison.md", "comparison.csv"} <= {
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
