"""Integration: promote a real run, then gate re-runs of it with `rageval check`."""

import json
import os
import subprocess
import sys

import pytest

from rageval.app.main import run_app
from rageval.cli.check import run_check
from rageval.cli.promote import BASELINE_TAG, promote
from rageval.errors import InputError
from rageval.testing import assert_no_regression

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def store(tmp_path_factory, mini, shared_cache):
    """Two runs of the fixture (chunk 64 and 32) logged to one SQLite store."""
    d = tmp_path_factory.mktemp("gate")
    uri = f"sqlite:///{d / 'mlflow.db'}"
    reports = {}
    for chunk in (64, 32):
        out = d / f"run{chunk}"
        assert run_app(["dataset=custom", f"dataset.corpus={mini / 'corpus'}", f"dataset.golden={mini / 'golden.jsonl'}",
                        f"cache_dir={shared_cache}", f"mlflow.tracking_uri={uri}", f"chunk={chunk}",
                        "latency_sample=0", f"hydra.run.dir={out}"]) == 0  # fmt: skip
        reports[chunk] = json.loads((out / "report.json").read_text())
    return {"dir": d, "uri": uri, "reports": reports}


@pytest.fixture(autouse=True)
def _cache_env(monkeypatch, shared_cache):
    monkeypatch.setenv("RAGEVAL_CACHE_DIR", str(shared_cache))


def tagged(uri, run_id):
    from mlflow.tracking import MlflowClient

    return MlflowClient(tracking_uri=uri).get_run(run_id).data.tags.get(BASELINE_TAG)


def test_promote_by_run_id_writes_the_report_and_moves_the_mlflow_tag(store, tmp_path):
    r64, r32 = store["reports"][64], store["reports"][32]
    path, run_id = promote(r64["mlflow_run_id"], str(tmp_path / "baseline.json"), uri=store["uri"])
    base = json.loads(path.read_text())
    assert run_id == r64["mlflow_run_id"] and base["promoted_from"]["run_id"] == run_id
    assert {k: base[k] for k in ("metrics", "per_query", "digests", "config")} == {
        k: r64[k] for k in ("metrics", "per_query", "digests", "config")}  # fmt: skip
    assert tagged(store["uri"], r64["mlflow_run_id"]) == "true"
    promote(r32["mlflow_run_id"], str(tmp_path / "baseline.json"), uri=store["uri"])
    assert tagged(store["uri"], r32["mlflow_run_id"]) == "true"
    assert tagged(store["uri"], r64["mlflow_run_id"]) is None


def test_promote_best_picks_the_highest_metric(store, tmp_path):
    reports = store["reports"]
    best = max(reports.values(), key=lambda r: r["metrics"]["ndcg@5"])
    _, run_id = promote(None, str(tmp_path / "b.json"), best="ndcg@5", uri=store["uri"])
    assert run_id == best["mlflow_run_id"]


def test_promote_refuses_a_run_from_another_golden_set_unless_forced(store, tmp_path, mini):
    other = tmp_path / "golden.jsonl"
    other.write_text(
        (mini / "golden.jsonl").read_text().replace("paid parental leave do I get", "paid leave")
    )
    with pytest.raises(InputError, match="measured on another golden set"):
        promote(
            store["reports"][64]["mlflow_run_id"],
            str(tmp_path / "b.json"),
            golden=str(other),
            uri=store["uri"],
        )
    assert not (tmp_path / "b.json").exists()
    promote(
        store["reports"][64]["mlflow_run_id"],
        str(tmp_path / "b.json"),
        golden=str(other),
        force=True,
        uri=store["uri"],
    )
    assert (tmp_path / "b.json").exists()


@pytest.fixture
def baseline(store, tmp_path):
    path, _ = promote(str(store["dir"] / "run64" / "report.json"), str(tmp_path / "baseline.json"))
    return path


def test_a_fresh_baseline_passes_in_process_and_with_the_helper(baseline, tmp_path):
    cmp, out = run_check(baseline, out=tmp_path / "check", quiet=True)
    assert cmp.status == "pass" and cmp.exit_code == 0
    assert all(abs(r.delta) < 1e-9 for r in cmp.rows)
    assert (out / "comparison.json").is_file() and "No retrieval regression" in (
        out / "comparison.md"
    ).read_text()
    assert assert_no_regression(baseline, out=tmp_path / "helper").status == "pass"


def check_cli(baseline, tmp_path, *overrides):
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    return subprocess.run([sys.executable, "-m", "rageval", "check", "--baseline", str(baseline),
                           "--out", str(tmp_path / "cli"), *overrides], capture_output=True, text=True,
                          env=env, cwd=tmp_path, timeout=600)  # fmt: skip


def test_raised_baseline_numbers_fail_with_exit_1_naming_the_metric(baseline, tmp_path):
    data = json.loads(baseline.read_text())
    data["metrics"]["recall@5"] += 0.2
    baseline.write_text(json.dumps(data))
    proc = check_cli(baseline, tmp_path)
    assert proc.returncode == 1, proc.stderr[-1500:]
    assert "FAIL: recall@5 regressed" in proc.stdout
    assert (tmp_path / "cli" / "comparison.md").is_file()
    with pytest.raises(AssertionError, match="recall@5 regressed"):
        assert_no_regression(baseline, out=tmp_path / "helper")


def test_a_changed_golden_set_is_reported_as_such_with_exit_2(baseline, tmp_path):
    data = json.loads(baseline.read_text())
    data["digests"]["golden"] = "0" * 64
    baseline.write_text(json.dumps(data))
    proc = check_cli(baseline, tmp_path)
    assert proc.returncode == 2 and "GOLDEN SET CHANGED" in proc.stdout


@pytest.fixture(scope="module")
def noisy_model(tmp_path_factory, model_dir):
    """A copy of the packaged model with perturbed weights: a different model, same tokenizer."""
    import torch
    from sentence_transformers import SentenceTransformer

    torch.manual_seed(0)
    m = SentenceTransformer(model_dir, device="cpu")
    with torch.no_grad():
        for p in m.parameters():
            p.add_(torch.randn_like(p) * p.std().clamp(min=1e-3) * 2)
    path = tmp_path_factory.mktemp("noisy-model")
    m.save(str(path))
    return path


def test_queries_from_another_model_are_refused_or_collapse_the_metrics(
    baseline, tmp_path, noisy_model
):
    proc = check_cli(baseline, tmp_path, f"embedding.query_model={noisy_model}")
    assert proc.returncode == 2 and "different model than the index" in proc.stderr
    proc = check_cli(
        baseline, tmp_path, f"embedding.query_model={noisy_model}", "allow_model_mismatch=true"
    )
    assert proc.returncode == 1, proc.stdout[-1500:] + proc.stderr[-1500:]
    assert "MISS " in proc.stdout and "regressed" in proc.stdout
