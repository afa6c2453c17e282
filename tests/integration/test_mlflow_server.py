"""Integration: log to a real `mlflow server` on 127.0.0.1 and read the runs back over REST."""

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from mlflow_store import store_uri

from rageval.app.main import run_app

pytestmark = pytest.mark.integration


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def stop(proc: subprocess.Popen) -> None:
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)


def healthy(url: str, proc: subprocess.Popen, seconds: float) -> bool:
    """True once the server answers /health; False if it exited first (its port was taken between
    free_port() and its bind, by another test run on the machine)."""
    deadline = time.monotonic() + seconds  # generous: start-up takes seconds on a busy machine
    while proc.poll() is None:
        try:
            with urllib.request.urlopen(f"{url}/health", timeout=5) as r:
                if r.status == 200 and proc.poll() is None:
                    return True
        except OSError:
            pass
        if time.monotonic() > deadline:
            raise RuntimeError(f"mlflow server on {url} did not answer within {seconds:.0f} s")
        time.sleep(0.5)
    return False


@pytest.fixture
def mlflow_server(tmp_path):
    mlflow_bin = Path(sys.executable).with_name("mlflow")
    for attempt in range(3):
        port = free_port()
        proc = subprocess.Popen(
            [
                str(mlflow_bin),
                "server",
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "--backend-store-uri",
                store_uri(tmp_path / f"server{attempt}.db"),
                "--artifacts-destination",
                str(tmp_path / "artifacts"),
                "--workers",
                "1",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        url = f"http://127.0.0.1:{port}"
        try:
            if healthy(url, proc, 240):
                break
        except BaseException:
            stop(proc)
            raise
        stop(proc)
    else:
        raise RuntimeError("mlflow server exited before answering, three times")
    try:
        yield url
    finally:
        stop(proc)


def rest(url, path, body):
    req = urllib.request.Request(
        f"{url}/api/2.0/mlflow/{path}",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(req, timeout=30) as r:
        return json.loads(r.read())


def test_runs_logged_to_a_real_tracking_server_read_back_over_rest(
    mlflow_server, mini, shared_cache, tmp_path
):
    code = run_app(
        [
            "-m",
            "dataset=custom",
            f"dataset.corpus={mini / 'corpus'}",
            f"dataset.golden={mini / 'golden.jsonl'}",
            f"cache_dir={shared_cache}",
            f"mlflow.tracking_uri={mlflow_server}",
            "mlflow.experiment=server-test",
            f"hydra.sweep.dir={tmp_path / 'sweep'}",
            "latency_sample=0",
            "chunk=32,64",
            "search=vector",
        ]
    )
    assert code == 0
    with urllib.request.urlopen(
        f"{mlflow_server}/api/2.0/mlflow/experiments/get-by-name?experiment_name=server-test",
        timeout=30,
    ) as r:
        exp = json.loads(r.read())
    exp_id = exp["experiment"]["experiment_id"]
    runs = rest(mlflow_server, "runs/search", {"experiment_ids": [exp_id], "max_results": 100})[
        "runs"
    ]
    assert len(runs) == 3
    tags = [{t["key"]: t["value"] for t in r["data"].get("tags", [])} for r in runs]
    parent = next(
        r["info"]["run_id"]
        for r, t in zip(runs, tags, strict=True)
        if t.get("rageval.sweep") == "parent"
    )
    children = [r for r, t in zip(runs, tags, strict=True) if t.get("mlflow.parentRunId") == parent]
    assert len(children) == 2
    for r in children:
        metrics = {m["key"]: m["value"] for m in r["data"]["metrics"]}
        params = {p["key"]: p["value"] for p in r["data"]["params"]}
        assert 0 <= metrics["headline/ndcg_at_5"] <= 1 and params["chunk"] in ("32", "64")
        assert r["info"]["status"] == "FINISHED"
    # artifacts went through the server's artifact proxy
    with urllib.request.urlopen(
        f"{mlflow_server}/api/2.0/mlflow/artifacts/list?run_id={parent}", timeout=30
    ) as r:
        files = {f["path"] for f in json.loads(r.read()).get("files", [])}
    assert {"leaderboard.md", "leaderboard.csv"} <= files
