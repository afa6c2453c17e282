"""Running a sweep as a process group of its own and reading its MLflow runs back: shared by the
Ray and joblib sweep tests."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

SUPPORT = Path(__file__).resolve().parent


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
