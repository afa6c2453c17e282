"""Integration: sweeps on Ray (a local cluster, and a running one by address) and on joblib, with a
real MLflow server; a failing or crashing job does not lose the sweep's other results."""

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration
SUPPORT = Path(__file__).resolve().parents[1] / "support"
RAY_ENV = {"RAY_USAGE_STATS_ENABLED": "0", "RAY_AUTH_MODE": "disabled"}


def sweep_args(corpus, golden, cache, uri, *extra):
    return [
        "-m",
        "dataset=custom",
        f"dataset.corpus={corpus}",
        f"dataset.golden={golden}",
        f"cache_dir={cache}",
        f"mlflow.tracking_uri={uri}",
        "latency_sample=0",
        *extra,
    ]


def run_group(args, cwd, env_extra=None, timeout=300) -> subprocess.CompletedProcess:
    """``args`` in its own process group, which is killed whole at the end (Ray's leftovers too)."""
    path = os.pathsep.join(filter(None, [str(SUPPORT), os.environ.get("PYTHONPATH")]))
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": path, **(env_extra or {})}
    proc = subprocess.Popen(
        args,
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        out, err = proc.communicate(timeout=timeout)
    finally:
        stop_group(proc.pid)
    return subprocess.CompletedProcess(args, proc.returncode, out, err)


def stop_group(pgid: int) -> None:
    """SIGTERM the group, then SIGKILL whatever is left of it after 5 s (waiting only as long as
    some process of the group lives)."""
    for sig, wait in ((signal.SIGTERM, 5.0), (signal.SIGKILL, 0.0)):
        try:
            os.killpg(pgid, sig)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            try:
                os.killpg(pgid, 0)  # anyone left?
            except ProcessLookupError:
                return
            time.sleep(0.1)


def runs_of(uri, experiment):
    from mlflow.tracking import MlflowClient

    c = MlflowClient(tracking_uri=uri)
    exp = c.get_experiment_by_name(experiment)
    runs = c.search_runs([exp.experiment_id]) if exp else []
    parents = [r for r in runs if r.data.tags.get("rageval.sweep") == "parent"]
    assert len(parents) == 1, [r.data.tags for r in runs]
    parent = parents[0]
    children = [r for r in runs if r.data.tags.get("mlflow.parentRunId") == parent.info.run_id]
    assert len(runs) == 1 + len(children)
    return c, parent, children


def loopback_sweep(args, cwd, ray_head=False) -> dict:
    """Run the sweep in a network namespace of its own with only ``lo``
    (tests/support/loopback_sweep.py): Ray then opens nothing but 127.0.0.1, and a real MLflow
    server runs beside it."""
    if subprocess.run(["unshare", "--net", "true"], capture_output=True).returncode != 0:
        pytest.skip(
            "needs `unshare --net` (root) to keep Ray's traffic on a loopback-only namespace"
        )
    cmd = [
        "unshare",
        "--net",
        "--",
        sys.executable,
        str(SUPPORT / "loopback_sweep.py"),
        "--cwd",
        str(cwd),
        *(["--ray-head"] if ray_head else []),
        "--",
        *args,
    ]
    proc = run_group(cmd, cwd, RAY_ENV, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def parent_and_children(runs, experiment):
    runs = [r for r in runs if r["experiment"] == experiment]
    parents = [r for r in runs if r["tags"].get("rageval.sweep") == "parent"]
    assert len(parents) == 1, [r["tags"] for r in runs]
    children = [r for r in runs if r["tags"].get("mlflow.parentRunId") == parents[0]["run_id"]]
    assert len(runs) == 1 + len(children)
    return parents[0], children


def test_a_sweep_on_a_local_ray_cluster_logs_every_run_under_the_parent(
    mini, shared_cache, tmp_path
):
    # two jobs on two CPUs: one wave of workers (the ray_cluster test below runs two more)
    sweep = tmp_path / "sweep"
    args = sweep_args(
        mini / "corpus",
        mini / "golden.jsonl",
        shared_cache,
        "{MLFLOW}",
        "mlflow.experiment=ray-local",
        f"hydra.sweep.dir={sweep}",
        "hydra/launcher=ray",
        "hydra.launcher.ray.init.address=local",
        "+hydra.launcher.ray.init.num_cpus=2",
        "+hydra.launcher.ray.init.include_dashboard=false",
        "chunk=32,64",
        "search=vector",
    )
    res = loopback_sweep(args, tmp_path)
    assert res["returncode"] == 0, res["stderr"][-3000:]
    assert "Sweep of 2 jobs (0 failed)" in res["stdout"]
    parent, children = parent_and_children(res["runs"], "ray-local")
    assert {(r["params"]["chunk"], r["params"]["search"]) for r in children} == {
        ("32", "vector"),
        ("64", "vector"),
    }
    assert all(r["status"] == "FINISHED" for r in [parent, *children])
    assert {r["tags"]["rageval.sweep_id"] for r in children} == {str(sweep)}
    assert "leaderboard.md" in parent["artifacts"]
    assert all((sweep / str(i) / "report.json").is_file() for i in range(2))


def test_a_sweep_on_a_running_ray_cluster_from_another_folder(mini, shared_cache, tmp_path):
    # The cluster's workers start in the head node's folder, inherit no variable of the sweep, and
    # must still nest their runs under the parent (read from the sweep folder), write their job
    # folders where the launching process reads them, and resolve the relative corpus path from
    # the launch folder.
    launch = tmp_path / "launch"
    shutil.copytree(mini, launch / "mini")
    args = sweep_args(
        "mini/corpus",
        "mini/golden.jsonl",
        shared_cache,
        "{MLFLOW}",
        "mlflow.experiment=ray-cluster",
        "hydra/launcher=ray_cluster",
        "chunk=48",
        "search=vector,bm25",
    )
    res = loopback_sweep(args, launch, ray_head=True)
    assert res["returncode"] == 0, res["stderr"][-3000:]
    assert "Sweep of 2 jobs (0 failed)" in res["stdout"]
    parent, children = parent_and_children(res["runs"], "ray-cluster")
    assert len(children) == 2 and parent["status"] == "FINISHED"
    reports = list((launch / "multirun").rglob("report.json"))
    assert len(reports) == 2 and not (launch / "_loopback" / "head" / "multirun").exists()


def joblib_sweep(mini, cache, tmp_path, how: str) -> tuple[subprocess.CompletedProcess, Path, str]:
    sweep, uri = tmp_path / "sweep", f"sqlite:///{tmp_path / 'mlflow.db'}"
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
