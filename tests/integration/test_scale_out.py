"""Integration: sweeps on Ray (a local cluster, and a running one by address) with a real MLflow
server (the joblib launcher's failing and crashing jobs: test_sweep_failures.py)."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from sweep_processes import run_group, sweep_args

# a network namespace, an MLflow server and two Ray clusters: about 1.5 minutes
pytestmark = [pytest.mark.integration, pytest.mark.long_module]
SUPPORT = Path(__file__).resolve().parents[1] / "support"
RAY_ENV = {"RAY_USAGE_STATS_ENABLED": "0", "RAY_AUTH_MODE": "disabled"}


@pytest.fixture(scope="module")
def ray_sweeps(mini, shared_cache, tmp_path_factory) -> dict:
    """Both Ray sweeps, run once for the module in one network namespace of their own with only
    ``lo`` (tests/support/loopback_sweep.py): Ray then opens nothing but 127.0.0.1, and one real
    MLflow server runs beside them. First two jobs on a local cluster (two CPUs: one wave of
    workers), then two on a running head node started in another folder. Each test below checks
    one of the two sweeps; neither changes what the other reads."""
    if subprocess.run(["unshare", "--net", "true"], capture_output=True).returncode != 0:
        pytest.skip(
            "needs `unshare --net` (root) to keep Ray's traffic on a loopback-only namespace"
        )
    base = tmp_path_factory.mktemp("ray")
    local, launch = base / "local", base / "launch"
    local.mkdir()
    # The cluster's workers start in the head node's folder, inherit no variable of the sweep, and
    # must still nest their runs under the parent (read from the sweep folder), write their job
    # folders where the launching process reads them, and resolve the relative corpus path from
    # the launch folder.
    shutil.copytree(mini, launch / "mini")
    sweeps = [
        {
            "name": "local",
            "cwd": str(local),
            "ray_head": False,
            "args": sweep_args(
                mini / "corpus",
                mini / "golden.jsonl",
                shared_cache,
                "{MLFLOW}",
                "mlflow.experiment=ray-local",
                f"hydra.sweep.dir={local / 'sweep'}",
                "hydra/launcher=ray",
                "hydra.launcher.ray.init.address=local",
                "+hydra.launcher.ray.init.num_cpus=2",
                "+hydra.launcher.ray.init.include_dashboard=false",
                "chunk=32,64",
                "search=vector",
            ),
        },
        {
            "name": "cluster",
            "cwd": str(launch),
            "ray_head": True,
            "args": sweep_args(
                "mini/corpus",
                "mini/golden.jsonl",
                shared_cache,
                "{MLFLOW}",
                "mlflow.experiment=ray-cluster",
                "hydra/launcher=ray_cluster",
                # the local sweep's chunking: its vectors are in the cache by now, so this sweep's
                # jobs never load the model (~5 s of CPU a job that does)
                "chunk=64",
                "search=vector,bm25",
            ),
        },
    ]
    plan = base / "plan.json"
    plan.write_text(json.dumps({"workdir": str(base / "_loopback"), "sweeps": sweeps}, default=str))
    cmd = ["unshare", "--net", "--", sys.executable, str(SUPPORT / "loopback_sweep.py"), str(plan)]
    proc = run_group(cmd, base, RAY_ENV, timeout=1500)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    return {**out, "local": local, "launch": launch}


def parent_and_children(runs, experiment):
    runs = [r for r in runs if r["experiment"] == experiment]
    parents = [r for r in runs if r["tags"].get("rageval.sweep") == "parent"]
    assert len(parents) == 1, [r["tags"] for r in runs]
    children = [r for r in runs if r["tags"].get("mlflow.parentRunId") == parents[0]["run_id"]]
    assert len(runs) == 1 + len(children)
    return parents[0], children


def test_a_sweep_on_a_local_ray_cluster_logs_every_run_under_the_parent(ray_sweeps):
    sweep = ray_sweeps["local"] / "sweep"
    res = ray_sweeps["sweeps"]["local"]
    assert res["returncode"] == 0, res["stderr"][-3000:]
    assert "Sweep of 2 jobs (0 failed)" in res["stdout"]
    parent, children = parent_and_children(ray_sweeps["runs"], "ray-local")
    assert {(r["params"]["chunk"], r["params"]["search"]) for r in children} == {
        ("32", "vector"),
        ("64", "vector"),
    }
    # (name, status) of every run: a job run twice (a retried Ray task) shows up twice
    statuses = [(r["tags"].get("mlflow.runName"), r["status"]) for r in [parent, *children]]
    assert {status for _, status in statuses} == {"FINISHED"}, (statuses, res["stderr"][-3000:])
    assert {r["tags"]["rageval.sweep_id"] for r in children} == {str(sweep)}
    assert "leaderboard.md" in parent["artifacts"]
    assert all((sweep / str(i) / "report.json").is_file() for i in range(2))


def test_a_sweep_on_a_running_ray_cluster_from_another_folder(ray_sweeps):
    launch = ray_sweeps["launch"]
    res = ray_sweeps["sweeps"]["cluster"]
    assert res["returncode"] == 0, res["stderr"][-3000:]
    assert "Sweep of 2 jobs (0 failed)" in res["stdout"]
    parent, children = parent_and_children(ray_sweeps["runs"], "ray-cluster")
    assert len(children) == 2, [r["tags"] for r in children]
    assert parent["status"] == "FINISHED", (parent["status"], res["stderr"][-3000:])
    reports = list((launch / "multirun").rglob("report.json"))
    assert len(reports) == 2 and not (Path(ray_sweeps["head"]) / "multirun").exists()
