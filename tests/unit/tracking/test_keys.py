"""What MLflow shows of rageval runs: metric sections, params without repeats, run names."""

from __future__ import annotations

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
        "headline/ndcg_at_5": 0.5,
        "headline/ndcg_at_5_ci_low": 0.4,
        "headline/ndcg_at_5_ci_high": 0.6,
        "cutoffs/ndcg_at_10": 0.6,
        # a report written before the costs block: its latency and timings are the costs
        "costs/latency_p95_ms": 3.0,
        "costs/index_s": 1.5,
    }


def test_costs_and_stages_get_their_own_sections():
    report = SimpleNamespace(
        k=5,
        metrics={"ndcg@5": 0.5},
        ci={},
        latency={"p95_ms": 3.0},
        timings={"index_s": 1.5},
        costs={"latency_p95_ms": 2.5, "embed_s": 4.0, "index_disk_bytes": 1000},
        stages={
            "stages": {
                "retrieval": {"inputs": [], "depth": 20, "recall@depth": 0.9, "ndcg@5": 0.4},
                "rerank": {"inputs": ["retrieval"], "depth": 10, "recall@depth": None},
            },
            "lift": [
                {
                    "stage": "rerank",
                    "over": "retrieval",
                    "metric": "ndcg@5",
                    "delta": 0.1,
                    "p_value": 0.02,
                },
            ],
        },
    )
    entries = dict(metric_entries(report))
    assert {k: v for k, v in entries.items() if k.startswith("costs/")} == {
        "costs/latency_p95_ms": 2.5,
        "costs/embed_s": 4.0,
        "costs/index_disk_bytes": 1000.0,
    }
    assert {k: v for k, v in entries.items() if k.startswith("stages/")} == {
        "stages/retrieval/depth": 20.0,
        "stages/retrieval/recall_at_depth": 0.9,
        "stages/retrieval/ndcg_at_5": 0.4,
        "stages/rerank/depth": 10.0,
        "stages/lift/rerank_over_retrieval/ndcg_at_5": 0.1,
        "stages/lift/rerank_over_retrieval/ndcg_at_5_p_value": 0.02,
    }


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
    choices = {
        "dataset": "demo",
        "embedding": "minilm",
        "backend": "faiss",
        "search": search,
        "rerank": "none",
    }
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
    assert params["split"] == "all" and "holdout_fraction" not in params
    tuned = run_params({**config, "split": "tune"}, choices)
    assert (tuned["split"], tuned["holdout_fraction"], tuned["split_seed"]) == ("tune", "0.3", "0")
    hnsw = run_params(composed("backend.faiss.index_type=hnsw"), choices)
    assert hnsw["backend.faiss.hnsw_m"] == "32" and "backend.faiss.ivf_nprobe" not in hnsw
    assert not [k for k in hnsw if "ivfpq" in k]
    pq = run_params(composed("backend.faiss.index_type=ivfpq"), choices)
    assert pq["backend.faiss.ivfpq_bits"] == "8" and pq["backend.faiss.ivf_nprobe"] == "16"
    assert not [k for k in pq if "hnsw" in k]


def test_run_names_come_from_swept_values_and_the_job_number():
    jobs = [
        ["chunk=256", "search=vector", "k=10"],
        ["chunk=512", "search=vector", "k=10"],
        ["chunk=256", "search=bm25", "k=10"],
    ]
    assert swept_keys(jobs) == ["chunk", "search"]
    assert run_name(jobs[1], 1, keys=swept_keys(jobs)) == "chunk=512 search=vector #1"
    assert run_name(["cache_dir=/tmp/c", "search=bm25", "hydra.run.dir=/x"]) == "search=bm25"
    assert (
        run_name([], config={"chunk": 256, "search": {"mode": "vector"}})
        == "chunk=256 search=vector"
    )


def test_slice_metrics_get_mlflow_safe_keys_in_their_own_section():
    from rageval.tracking.keys import slice_entries

    rows = [
        {"field": "source", "value": "ticket", "metrics": {"recall@5": 0.5, "ndcg@5": None}},
        {"field": "tags", "value": "multi hop/2", "metrics": {"recall@1024t": 0.25}},
    ]
    entries = dict(slice_entries(SimpleNamespace(slices={"rows": rows})))
    assert entries.pop("slice/source.ticket.recall_at_5") == 0.5
    ((key, value),) = entries.items()  # the undefined ndcg@5 is not logged
    assert key.startswith("slice/tags.multi_hop_2_") and key.endswith(".recall_at_1024t")
    assert value == 0.25
    assert slice_entries(SimpleNamespace(slices={"source:ticket": {"n": 3}})) == []  # old report


def full_report():
    """A run's report as the demo writes it: every family at every cutoff, CIs, costs, slices."""
    families = [
        "precision", "recall", "hit_rate", "mrr", "ndcg", "map", "quote_recall", "quote_ndcg",
        "evidence_recall", "evidence_precision", "evidence_iou", "judged", "tokens",
        "precision_cond", "recall_cond", "hit_rate_cond", "mrr_cond", "ndcg_cond", "map_cond",
    ]  # fmt: skip
    metrics = {f"{f}@{k}": 0.1 * (i % 9) for i, f in enumerate(families) for k in (1, 3, 5, 10, 20)}
    metrics.update({f"{f}@{b}t": 0.5 for f in ("recall", "evidence_recall") for b in (512, 1024)})
    ci = {name: [v - 0.05, v + 0.05] for name, v in metrics.items()}
    slices = {
        "rows": [
            {"field": "source", "value": s, "metrics": {"recall@5": 0.4, "ndcg@5": 0.3}}
            for s in ("ticket", "synthetic", "adversarial")
        ]
    }
    costs = {"latency_p50_ms": 1.0, "latency_p95_ms": 2.0, "embed_s": 3.0, "total_s": 4.0}
    costs |= {"index_disk_bytes": 10, "index_memory_bytes": 20, "chunk_s": 0.5, "score_s": 0.1}
    return SimpleNamespace(
        k=5, metrics=metrics, ci=ci, costs=costs, latency={}, timings={}, slices=slices, stages={}
    )


GATED = ("precision", "recall", "hit_rate", "mrr", "ndcg", "map")
GATE = {"gate": {"metrics": [f"{m}@5" for m in GATED]}}


def test_a_run_logs_its_headline_in_the_keys_older_runs_used_and_at_most_forty():
    from rageval.tracking.keys import RUN_METRIC_LIMIT, headline_entries, metric_entries

    report = full_report()
    entries = headline_entries(report, GATE)
    keys = [k for k, _ in entries]
    assert len(keys) == len(set(keys)) <= RUN_METRIC_LIMIT
    # the sweep's default deciding metric first, then the gate's metrics at k, each with its CI
    assert keys[:6] == [
        "span/evidence_recall_at_1024t",
        "span/evidence_recall_at_1024t_ci_low",
        "span/evidence_recall_at_1024t_ci_high",
        "headline/precision_at_5",
        "headline/precision_at_5_ci_low",
        "headline/precision_at_5_ci_high",
    ]
    for m in GATED:
        assert {f"headline/{m}_at_5", f"headline/{m}_at_5_ci_high"} <= set(keys)
    assert {"costs/tokens_at_5", "costs/latency_p95_ms", "costs/index_disk_bytes"} <= set(keys)
    assert "judged/judged_at_5" in keys and "judged/judged_at_5_ci_low" not in keys
    # the same key and value as when every number was a metric
    every = dict(metric_entries(report))
    assert all(every[k] == v for k, v in entries)
    assert not [k for k in keys if k.startswith(("cutoffs/", "slice/")) or "_cond_" in k]


def test_the_sweeps_compare_metric_leads_the_headline():
    from rageval.tracking.keys import headline_entries

    config = {**GATE, "sweep": {"compare_metric": "ndcg_at_10"}}
    keys = [k for k, _ in headline_entries(full_report(), config)]
    decided = "cutoffs/ndcg_at_10"
    assert keys[:3] == [decided, f"{decided}_ci_low", f"{decided}_ci_high"]
    assert "span/evidence_recall_at_1024t" not in keys


def test_the_metrics_table_holds_every_number_of_the_run():
    from rageval.tracking.keys import metric_entries, metric_table, slice_entries

    report = full_report()
    table = metric_table(report)
    assert set(table) == {"key", "metric", "value", "ci_low", "ci_high"}
    rows = {k: i for i, k in enumerate(table["key"])}
    assert len(rows) == len(table["key"])  # one row per key
    # every key a run logged when every number was a metric (CIs as columns, not rows)
    every = {k for k, _ in [*metric_entries(report), *slice_entries(report)] if "_ci_" not in k}
    assert every == set(rows)
    at = rows["cutoffs/ndcg_at_10"]
    assert table["metric"][at] == "ndcg@10" and table["value"][at] == report.metrics["ndcg@10"]
    assert [table["ci_low"][at], table["ci_high"][at]] == report.ci["ndcg@10"]
    at = rows["slice/source.ticket.recall_at_5"]
    assert table["value"][at] == 0.4 and table["ci_low"][at] is None
