"""The sweep's leaderboard on hand-made job folders (no model): deciding metric, best and tied."""

import csv
import io
import json

import numpy as np
import pytest
from omegaconf import OmegaConf

from rageval.app.sweep import compare_settings
from rageval.config_schema import GateConfig, SweepConfig
from rageval.errors import ConfigError
from rageval.report.leaderboard import deciding_metric, load_jobs, rank

METRIC = "evidence_recall@1024t"


def _job(root, n, overrides, values, evidence=True, run_id=None, config=None, choices=None):
    d = root / str(n)
    d.mkdir(parents=True)
    values = np.asarray(values, dtype=float)
    names = {METRIC: values, "ndcg@5": values / 2, "recall@1024t": values, "tokens@5": values * 100}
    if evidence:
        names["evidence_precision@5"] = values / 10
    rows = [
        {"id": f"q{i}", **{m: float(v[i]) for m, v in names.items()}} for i in range(len(values))
    ]
    rep = {
        "metrics": {m: float(v.mean()) for m, v in names.items()},
        "ci": {m: [float(v.mean()) - 0.1, float(v.mean()) + 0.1] for m, v in names.items()},
        "per_query": rows,
        "overrides": overrides,
        "k": 5,
        "mlflow_run_id": run_id,
    }
    if config is not None:  # what a run writes: its resolved config and group choices
        rep.update(config=config, choices=choices or {})
    if not evidence:
        del rep["metrics"]["evidence_recall@1024t"]
    (d / "report.json").write_text(json.dumps(rep))


@pytest.fixture
def sweep(tmp_path):
    rng = np.random.default_rng(0)
    base = rng.uniform(0.5, 1.0, 40)
    _job(tmp_path, 0, ["chunk=128", "chunk_overlap=0", "search=vector"], base, run_id="r0")
    # job 1 differs from job 0 by noise; job 2 is clearly worse on every query
    noise = base + rng.choice([-0.01, 0.01], 40)
    _job(tmp_path, 1, ["chunk=256", "chunk_overlap=0", "search=vector"], noise - 0.001)
    _job(tmp_path, 2, ["chunk=512", "chunk_overlap=64", "search=hybrid"], base - 0.3)
    (tmp_path / "3").mkdir()
    (tmp_path / "3" / "error.json").write_text(
        json.dumps({"error": "boom", "overrides": ["chunk=1024", "chunk_overlap=0", "search=bm25"]})
    )
    return tmp_path


def _resolved(overrides):
    """The config a run resolves from ``overrides`` (as Hydra composes them): interpolations
    resolved, ``+key=value`` added, values read as YAML."""
    base = {"chunk": 256, "chunk_overlap": 0, "search": {"mode": "vector", "bm25": {}}}
    lines = [o.removeprefix("+") for o in overrides if not o.startswith("search=")]
    cfg = OmegaConf.merge(base, OmegaConf.from_dotlist(lines))
    mode = next((o.split("=")[1] for o in overrides if o.startswith("search=")), "vector")
    cfg.search.mode = mode
    return OmegaConf.to_container(cfg, resolve=True)


def test_the_swept_values_are_the_ones_each_run_resolved(tmp_path):
    rng = np.random.default_rng(1)
    base = rng.uniform(0.5, 1.0, 30)
    jobs = [
        ["chunk=128", "chunk_overlap=${chunk}", "+search.bm25.k1=1.50", "search=hybrid"],
        ["chunk=256", "chunk_overlap=${chunk}", "+search.bm25.k1=0.90", "search=vector"],
    ]
    for n, (overrides, shift) in enumerate(zip(jobs, (0.0, -0.3), strict=True)):
        choices = {"search": overrides[-1].split("=")[1]}
        _job(tmp_path, n, overrides, base + shift, config=_resolved(overrides), choices=choices)
    (tmp_path / "2").mkdir()  # failed: no resolved config, its override text is all there is
    failed = ["chunk=512", "chunk_overlap=${chunk}", "+search.bm25.k1=2.0", "search=bm25"]
    (tmp_path / "2" / "error.json").write_text(json.dumps({"error": "boom", "overrides": failed}))
    board = rank(load_jobs(tmp_path))
    # the interpolation resolves to a different overlap per job: swept, though its text is not
    assert board.keys == ["chunk", "chunk_overlap", "search.bm25.k1", "search"]
    assert [j.values for j in board.jobs] == [
        {"chunk": "128", "chunk_overlap": "128", "search.bm25.k1": "1.5", "search": "hybrid"},
        {"chunk": "256", "chunk_overlap": "256", "search.bm25.k1": "0.9", "search": "vector"},
        {"chunk": "512", "chunk_overlap": "${chunk}", "search.bm25.k1": "2.0", "search": "bm25"},
    ]
    md = board.markdown()
    assert "| job | chunk | chunk_overlap | search.bm25.k1 | search |" in md
    assert "| 0 | 128 | 128 | 1.5 | hybrid |" in md and "| 1 | 256 | 256 | 0.9 | vector |" in md
    rows = list(csv.DictReader(io.StringIO(board.csv())))
    assert [r["chunk_overlap"] for r in rows] == ["128", "256", "${chunk}"]


def test_best_tied_and_worse_jobs_by_the_paired_test(sweep):
    board = rank(load_jobs(sweep))
    assert board.metric == METRIC and "evidence quotes" in board.why
    assert board.verdict == {0: "best", 1: "tied", 2: "", 3: "failed"}
    assert board.pvalues[1] >= 0.05 > board.pvalues[2]
    assert board.columns[0] == METRIC and "tokens@5" in board.columns
    assert board.keys == ["chunk", "chunk_overlap", "search"]


def test_leaderboard_files_and_console(sweep):
    board = rank(load_jobs(sweep))
    md = board.markdown()
    assert md.startswith("Sweep of 4 jobs (1 failed), decided by evidence_recall@1024t")
    assert "| job | chunk | chunk_overlap | search | evidence_recall@1024t |" in md
    assert md.count("| best |") == 1 and md.count("| tied |") == 1 and "FAILED: boom" in md
    rows = list(csv.DictReader(io.StringIO(board.csv())))
    assert [r["verdict"] for r in rows] == ["best", "tied", "", "failed"]
    mean = json.loads((sweep / "0" / "report.json").read_text())["metrics"][METRIC]
    assert float(rows[0][METRIC]) == mean and float(rows[0][f"{METRIC}_low"]) == mean - 0.1
    assert rows[0]["mlflow_run_id"] == "r0" and rows[1]["mlflow_run_id"] == ""
    assert rows[3][METRIC] == "" and rows[3]["error"] == "boom"
    text = board.console()
    assert max(map(len, text.splitlines())) <= 120
    assert "best" in text and "tied" in text and "FAILED" in text and "tokens@5" in text


def test_default_deciding_metric(tmp_path):
    v = [0.5, 0.6]
    for name, overrides, evidence, want in [
        ("a", [["chunk=128"], ["chunk=256"]], False, "recall@1024t"),
        ("b", [["search=vector"], ["search=bm25"]], False, "ndcg@5"),
        ("c", [["search=vector"], ["search=bm25"]], True, METRIC),
        ("d", [["chunk_overlap=0"], ["chunk_overlap=32"]], True, METRIC),
    ]:
        for i, o in enumerate(overrides):
            _job(tmp_path / name, i, o, [x + 0.1 * i for x in v], evidence=evidence)
        assert deciding_metric(load_jobs(tmp_path / name))[0] == want, name
    assert deciding_metric(load_jobs(tmp_path / "b"), "NDCG_at_3")[0] == "ndcg@3"
    with pytest.raises(ConfigError, match="valid metrics"):
        deciding_metric(load_jobs(tmp_path / "b"), "ndgc@5")
    assert rank(load_jobs(tmp_path / "b"), "ndcg@5").best == 1
    assert rank(load_jobs(tmp_path / "b"), "tokens@5").best == 0  # a cost: the fewest tokens win
    board = rank(load_jobs(tmp_path / "b"), "quote_recall@5")
    assert board.best is None and "No job measured quote_recall@5" in board.header()
    assert "quote_recall@5" not in board.header().split("compare_metric=...:")[1]


def test_a_document_labelled_sweep_is_not_decided_by_its_nan_evidence_metrics(tmp_path):
    """A BEIR run reports evidence metrics as NaN (document labels carry no quotes): a sweep
    over chunkings decides by recall@1024t, not by the empty evidence_recall@1024t."""
    for i, o in enumerate([["chunk=128"], ["chunk=256"]]):
        _job(tmp_path, i, o, [0.5 + 0.1 * i, 0.6 + 0.1 * i], evidence=False)
        f = tmp_path / str(i) / "report.json"
        rep = json.loads(f.read_text())
        rep["metrics"][METRIC] = float("nan")  # as json.dumps writes a NaN mean
        f.write_text(json.dumps(rep))
    jobs = load_jobs(tmp_path)
    assert deciding_metric(jobs)[0] == "recall@1024t"
    board = rank(jobs)
    assert board.best == 1 and "No job measured" not in board.header()


def test_compare_metric_from_the_sweep_block():
    cfg = OmegaConf.create({"sweep": SweepConfig()})
    assert compare_settings(cfg) == (None, GateConfig.alpha, GateConfig.resamples)
    cfg.sweep.compare_metric = "mrr@5"
    assert compare_settings(cfg)[0] == "mrr@5"
    cfg = OmegaConf.create({"sweep": SweepConfig(alpha=0.01)})
    assert compare_settings(cfg) == (None, 0.01, GateConfig.resamples)


def test_a_saturated_deciding_metric_names_no_best(tmp_path):
    ones = np.ones(30)
    _job(tmp_path, 0, ["chunk=128"], ones)
    _job(tmp_path, 1, ["chunk=256"], ones)
    board = rank(load_jobs(tmp_path))
    assert board.best is None and set(board.verdict.values()) == {""}
    assert f"Saturated: every job scores 1.000 on {METRIC}" in board.header()
    assert "sweep.compare_metric=METRIC" in board.header() and "best: job" not in board.header()


def test_the_metric_a_baseline_was_promoted_by_is_gated_too():
    from rageval.app.check import gated_metrics

    gate = OmegaConf.create({"promoted_metric": True})
    base = {
        "promoted_from": {"metric": "evidence_recall@1024t"},
        "metrics": {"ndcg@5": 0.5, "evidence_recall@1024t": 0.6},
    }
    cur = {"metrics": {"ndcg@5": 0.5, "evidence_recall@1024t": 0.6}}
    assert gated_metrics(base, cur, ["ndcg@5"], gate) == ["ndcg@5", "evidence_recall@1024t"]
    assert gated_metrics(base, cur, ["evidence_recall@1024t"], gate) == ["evidence_recall@1024t"]
    assert gated_metrics(base, cur, ["ndcg@5"], OmegaConf.create({"promoted_metric": False})) == [
        "ndcg@5"
    ]
    assert gated_metrics(base, {"metrics": {"ndcg@5": 0.5}}, ["ndcg@5"], gate) == ["ndcg@5"]
    assert gated_metrics({"metrics": {}}, cur, ["ndcg@5"], gate) == ["ndcg@5"]
