"""Integration: a joblib sweep whose job fails (raises) or crashes (its worker exits) keeps the
other job's results, and the summary, leaderboard and MLflow say why."""

import subprocess
import sys
from pathlib import Path

import pytest
from mlflow_store import store_uri
from sweep_processes import SUPPORT, run_group, runs_of, sweep_args

pytestmark = pytest.mark.integration


def joblib_sweep(mini, cache, tmp_path, how: str) -> tuple[subprocess.CompletedProcess, Path, str]:
    sweep, uri = tmp_path / "sweep", store_uri(tmp_path / "mlflow.db")
    args = sweep_args(
        mini / "corpus",
        mini / "golden.jsonl",
        cache,
        uri,
        f"hydra.sweep.dir={sweep}",
        f"hydra.searchpath=[file://{SUPPORT / 'conf'}]",
        "hydra/launcher=joblib",
        "hydra.launcher.n_jobs=2",
        "chunk=48",
        "backend=faiss,crash",
    )
    env = {"RAGEVAL_TEST_CRASH": how}
    return run_group([sys.executable, "-m", "rageval", *args], tmp_path, env), sweep, uri


@pytest.mark.parametrize("how", ["raise", "exit"])
def test_a_failing_or_crashing_job_keeps_the_other_results_and_the_summary_says_why(
    mini, shared_cache, tmp_path, how
):
    proc, sweep, uri = joblib_sweep(mini, shared_cache, tmp_path, how)
    assert proc.returncode == 2, proc.stderr[-3000:]
    reason = "RuntimeError: boom" if how == "raise" else "the job left no report; the sweep stopped"
    assert "Sweep of 2 jobs (1 failed)" in proc.stdout
    assert "job 1 (" in proc.stderr and reason in proc.stderr
    table = (sweep / "leaderboard.md").read_text()
    assert "| ok |" in table or "| best |" in table
    assert f"FAILED: {reason}" in table
    assert (sweep / "0" / "report.json").is_file()
    c, parent, children = runs_of(uri, "rageval")
    assert len(children) == 1 and children[0].info.status == "FINISHED"
    assert parent.info.status == "FAILED" and parent.data.tags["rageval.jobs_failed"] == "1"
