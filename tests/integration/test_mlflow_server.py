"""Integration: log to a real `mlflow server` on 127.0.0.1 and read the runs back over REST."""

import json
import urllib.request

import pytest
from mlflow_server import mlflow_server as running_server

from rageval.app.main import run_app

pytestmark = pytest.mark.integration


@pytest.fixture
def mlflow_server(tmp_path):
    with running_server(tmp_path) as url:
        yield url


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
