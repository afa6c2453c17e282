"""Integration: promote a real run, then gate re-runs of it with `rageval check`."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from mlflow_store import store_uri

from rageval.app.check import run_check
from rageval.app.main import run_app
from rageval.app.promote import promote
from rageval.errors import ConfigError, InputError
from rageval.gate.baseline import portable, read_baseline, stored_config
from rageval.testing import assert_no_regression
from rageval.tracking.lookups import BASELINE_TAG

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def store(tmp_path_factory, mini, shared_cache):
    """Two runs of the fixture (chunk 64 and 32) and one of a 2-query toy golden set (which
    scores higher) logged to one SQLite store."""
    d = tmp_path_factory.mktemp("gate")
    uri = store_uri(d / "mlflow.db")
    toy = d / "toy.jsonl"
    toy.write_text("".join((mini / "golden.jsonl").read_text().splitlines(keepends=True)[:2]))
    reports = {}
    for name, chunk, golden in (
        (64, 64, mini / "golden.jsonl"),
        (32, 32, mini / "golden.jsonl"),
        ("toy", 64, toy),
    ):
        out = d / f"run{name}"
        assert (
            run_app(
                [
                    "dataset=custom",
                    f"dataset.corpus={mini / 'corpus'}",
                    f"dataset.golden={golden}",
                    f"cache_dir={shared_cache}",
                    f"mlflow.tracking_uri={uri}",
                    f"chunk={chunk}",
                    "latency_sample=0",
                    f"hydra.run.dir={out}",
                ]
            )
            == 0
        )
        reports[name] = json.loads((out / "report.json").read_text())
    return {"dir": d, "uri": uri, "reports": reports, "golden": mini / "golden.jsonl"}


@pytest.fixture(autouse=True)
def _cache_env(monkeypatch, shared_cache):
    monkeypatch.setenv("RAGEVAL_CACHE_DIR", str(shared_cache))


def tagged(uri, run_id):
    from mlflow.tracking import MlflowClient

    return MlflowClient(tracking_uri=uri).get_run(run_id).data.tags.get(BASELINE_TAG)


def test_promote_by_run_id_writes_the_report_and_moves_the_mlflow_tag(store, tmp_path):
    r64, r32 = store["reports"][64], store["reports"][32]
    done = promote(
        r64["mlflow_run_id"],
        str(tmp_path / "baseline.json"),
        uri=store["uri"],
        golden=str(store["golden"]),
    )
    path, run_id = done.path, done.run_id
    base = read_baseline(path).report
    assert run_id == r64["mlflow_run_id"] and base["promoted_from"]["run_id"] == run_id
    assert {k: base[k] for k in ("metrics", "digests", "choices")} == {
        k: r64[k] for k in ("metrics", "digests", "choices")
    }
    # paths come back as this checkout's; cache_dir (never replayed) and the keys naming code
    # (the project's config names them) are not kept
    kept = stored_config(portable(r64["config"], tmp_path, project=tmp_path / "x")[0])
    assert base["config"] == kept and "_target_" not in json.dumps(base["config"])
    assert [r["ndcg@5"] for r in base["per_query"]] == [r["ndcg@5"] for r in r64["per_query"]]
    assert f"promoted run {run_id}" in done.summary() and "chunk=64" in done.summary()
    assert tagged(store["uri"], r64["mlflow_run_id"]) == "true"
    promote(
        r32["mlflow_run_id"], str(tmp_path / "baseline.json"), uri=store["uri"]
    )  # the baseline's golden
    assert tagged(store["uri"], r32["mlflow_run_id"]) == "true"
    assert tagged(store["uri"], r64["mlflow_run_id"]) is None


def test_promote_best_only_considers_runs_on_the_project_golden_set(store, tmp_path):
    reports = store["reports"]
    assert reports["toy"]["metrics"]["ndcg@5"] > max(
        reports[c]["metrics"]["ndcg@5"] for c in (64, 32)
    )
    best = max((reports[64], reports[32]), key=lambda r: r["metrics"]["ndcg@5"])
    path = tmp_path / "b.json"
    done = promote(None, str(path), best="ndcg@5", uri=store["uri"], golden=str(store["golden"]))
    assert (
        done.run_id == best["mlflow_run_id"]
        and f"ndcg@5 = {best['metrics']['ndcg@5']:.4f}" in done.summary()
    )
    # with a baseline in place, the project's golden set is the baseline's: the toy run is never
    # picked
    again = promote(None, str(path), best="ndcg_at_5", uri=store["uri"])
    assert again.run_id == best["mlflow_run_id"]
    # the metric it won by is recorded: the check gates it too (gate.promoted_metric)
    assert json.loads(path.read_text())["promoted_from"]["metric"] == "ndcg@5"
    with pytest.raises(InputError, match="measured on another golden set"):
        promote(reports["toy"]["mlflow_run_id"], str(path), uri=store["uri"])


def test_best_needs_a_cutoff(store, tmp_path):
    with pytest.raises(ConfigError, match=r"must name a cutoff: name@k \(e.g. ndcg@5\)"):
        promote(
            None,
            str(tmp_path / "b.json"),
            best="ndcg",
            uri=store["uri"],
            golden=str(store["golden"]),
        )


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
    done = promote(
        str(store["dir"] / "run64" / "report.json"),
        str(tmp_path / "baseline.json"),
        golden=str(store["golden"]),
    )
    return done.path


def test_a_fresh_baseline_passes_in_process_and_with_the_helper(baseline, tmp_path):
    cmp, out = run_check(baseline, out=tmp_path / "check", quiet=True)
    assert cmp.status == "pass" and cmp.exit_code == 0
    assert all(abs(r.delta) < 1e-9 for r in cmp.rows)
    assert (out / "gate.json").is_file() and "No retrieval regression" in (
        out / "gate.md"
    ).read_text()
    page = (out / "gate.html").read_text()  # the per-query diff page, baseline vs the re-run
    assert page.lower().startswith("<!doctype html>") and "baseline vs candidate" in page
    assert "<h2>Verdict</h2>" in page and "detects a drop of" in page
    assert assert_no_regression(baseline, out=tmp_path / "helper").status == "pass"


def test_check_with_mlflow_logs_its_verdict_on_the_re_run(baseline, store, tmp_path):
    from mlflow.tracking import MlflowClient

    over = [f"mlflow.tracking_uri={store_uri(tmp_path / 'own.db')}"]  # not the shared store
    cmp, out = run_check(baseline, over, out=tmp_path / "logged", mlflow=True, quiet=True)
    run_id = json.loads((out / "report.json").read_text())["mlflow_run_id"]
    run = MlflowClient(store_uri(tmp_path / "own.db")).get_run(run_id)
    assert run.data.tags["rageval.gate.status"] == cmp.status == "pass"
    assert run.data.tags["rageval.gate.ndcg_at_5"] == "ok"
    row = next(r for r in cmp.rows if r.metric == "ndcg@5")
    assert run.data.metrics["gate/ndcg_at_5/delta"] == pytest.approx(row.delta)
    assert len(run.data.metrics) <= 40  # the headline and the deltas; the rest in gate.json
    from rageval.tracking.log import read_table

    table = read_table(MlflowClient(store_uri(tmp_path / "own.db")), run_id, "gate.json")
    at = table["metric"].index("ndcg@5")
    assert table["detects"][at] == pytest.approx(row.detects) and table["low"][at] == 0.0


def check_cli(baseline, tmp_path, *overrides):
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "rageval",
            "check",
            "--baseline",
            str(baseline),
            "--out",
            str(tmp_path / "cli"),
            *overrides,
        ],
        capture_output=True,
        text=True,
        env=env,
        # the checkout holds the dataset the baseline names: a baseline's data paths stay inside
        # the project, or the working directory outside one (docs/reliability.md)
        cwd=Path(__file__).resolve().parents[2],
        timeout=600,
    )


def test_raised_baseline_numbers_fail_with_exit_1_naming_the_metric(baseline, tmp_path):
    data = json.loads(baseline.read_text())
    data["metrics"]["recall@5"] += 0.2
    baseline.write_text(json.dumps(data))
    proc = check_cli(baseline, tmp_path)
    assert proc.returncode == 1, proc.stderr[-1500:]
    assert "FAIL: recall@5 regressed" in proc.stdout
    assert (tmp_path / "cli" / "gate.md").is_file()
    # the documented per-metric tolerance, in both spellings, lets this drop pass
    for spelling in ("recall_at_5", "recall@5"):
        proc = check_cli(baseline, tmp_path, f"gate.tolerances.{spelling}=0.5")
        assert proc.returncode == 0, proc.stdout[-1500:] + proc.stderr[-1500:]
        assert "| recall@5 |" in (tmp_path / "cli" / "gate.md").read_text()
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


def test_a_baseline_promoted_from_a_check_report_rebuilds_its_own_config(store, tmp_path):
    """A check at chunk=32 writes a report; promoted, the next check re-runs chunk 32, not 64."""
    first = promote(
        str(store["dir"] / "run64" / "report.json"),
        str(tmp_path / "b.json"),
        golden=str(store["golden"]),
    )
    _, out = run_check(first.path, ["chunk=32"], out=tmp_path / "check32", quiet=True)
    promote(str(out / "report.json"), str(tmp_path / "b.json"))
    assert read_baseline(tmp_path / "b.json").report["config"]["chunk"] == 32
    cmp, out2 = run_check(tmp_path / "b.json", out=tmp_path / "again", quiet=True)
    assert cmp.status == "pass" and all(abs(r.delta) < 1e-9 for r in cmp.rows)
    assert json.loads((out2 / "report.json").read_text())["config"]["chunk"] == 32


def test_check_override_mistakes_exit_2_with_one_line(baseline, tmp_path):
    proc = check_cli(baseline, tmp_path, "chunks=32")
    assert proc.returncode == 2 and "did you mean chunk" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


def test_a_slice_regression_fails_the_check_while_every_mean_passes(baseline, tmp_path):
    from rageval.gate.baseline import write_baseline

    data = read_baseline(baseline).report
    assert {r["source"] for r in data["per_query"]} >= {"ticket"}  # the CSV carries the slices
    # the ticket queries did better at baseline; the baseline's means stay as they were
    for r in data["per_query"]:
        if r["source"] == "ticket":
            r["precision@5"] = 0.6
    write_baseline(data, baseline, data["promoted_from"])
    cmp, out = run_check(
        baseline, ["gate.slices.source=ticket.precision@5=0.05"], out=tmp_path / "c", quiet=True
    )
    assert all(r.verdict != "regressed" for r in cmp.rows)
    assert cmp.status == "regressed" and cmp.exit_code == 1
    (row,) = cmp.slices
    assert (row.slice, row.metric, row.baseline, row.verdict) == (
        "source=ticket",
        "precision@5",
        0.6,
        "regressed",
    )
    assert "FAIL: precision@5 on source=ticket regressed" in cmp.console()
    assert json.loads((out / "gate.json").read_text())["slices"][0]["slice"] == "source=ticket"
    assert "| source=ticket |" in (out / "gate.md").read_text()
    assert "<h2>Slices</h2>" in (out / "gate.html").read_text()


def test_the_gate_names_the_baselines_tuned_keys_for_both_sides(store, tmp_path):
    """A baseline promoted from a run with tuned keys inside a group (search.bm25.k1): the gate's
    Baseline and Current lines both name them, Current with the user's override on top."""
    first = promote(
        str(store["dir"] / "run64" / "report.json"),
        str(tmp_path / "b.json"),
        golden=str(store["golden"]),
    )
    _, out = run_check(
        first.path, ["search=bm25", "search.bm25.k1=1.1"], out=tmp_path / "tuned", quiet=True
    )
    promote(str(out / "report.json"), str(tmp_path / "b.json"))
    cmp, out2 = run_check(
        tmp_path / "b.json", ["search.bm25.b=0.5"], out=tmp_path / "c", quiet=True
    )
    base, current = cmp.baseline_info["config"], cmp.current_info["config"]
    assert "search=bm25" in base and "search.bm25.k1=1.1" in base and "bm25.b" not in base
    assert "search=bm25" in current and "search.bm25.k1=1.1" in current
    assert "search.bm25.b=0.5" in current
    assert f"Current: {current}" in (out2 / "gate.md").read_text()
    # the change is listed once, where it was made, not again as backend.bm25.b (${search.bm25})
    assert cmp.config_diff == ["search.bm25.b: 0.75 -> 0.5"]
