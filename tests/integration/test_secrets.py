"""Secrets from config, environment and URLs never reach params, tags, artifacts, logs or error
messages: a plug-in backend that logs and raises with its credentials is the hostile case."""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path

import pytest
from fakes.leaky import LeakyRetriever
from mlflow_store import store_uri

from rageval.app.main import run_app
from rageval.cli.main import main
from rageval.errors import ConfigError
from rageval.tracking import client as tracking

TOKEN, PASSWORD, SIG, ENV_KEY, URL_PW = (
    "sk-cfg-7a6b5c4d",
    "pw-nested-1f2e3d",
    "sig-9z8y7x6w",
    "env-5e4d3c2b1a",
    "url-pw-0q9w8e",
)
ENDPOINT = f"https://search.example.com/indexes?api-version=2024&api-key={SIG}"
ALL = (TOKEN, PASSWORD, SIG, ENV_KEY, URL_PW)


def app_args(mini, cache, out, *extra) -> list[str]:
    return [
        "dataset=custom",
        f"dataset.corpus={mini / 'corpus'}",
        f"dataset.golden={mini / 'golden.jsonl'}",
        f"cache_dir={cache}",
        "latency_sample=0",
        "retries=0",
        f"hydra.run.dir={out}",
        "backend._target_=fakes.leaky.LeakyRetriever",
        f"+backend.api_token={TOKEN}",
        f"+backend.endpoint='{ENDPOINT}'",
        f"+backend.credentials={{user:bob,pass:{PASSWORD}}}",
        *extra,
    ]


def text_of(*roots: Path) -> str:
    return "".join(
        f.read_bytes().decode("utf-8", "replace")
        for r in roots
        for f in r.rglob("*")
        if f.is_file()
    )


@pytest.fixture
def env(monkeypatch):
    monkeypatch.setenv("RAGEVAL_TEST_SEARCH_KEY", ENV_KEY)
    for name in tracking.HTTP_DEFAULTS:  # rageval sets them when MLflow is used
        monkeypatch.setenv(name, os.environ.get(name, tracking.HTTP_DEFAULTS[name]))
    LeakyRetriever.fail = False


def test_no_secret_reaches_mlflow_the_run_folder_the_log_file_or_the_console(
    mini, shared_cache, tmp_path, capsys, env
):
    from mlflow.tracking import MlflowClient

    out, db = tmp_path / "run", tmp_path / "mlflow.db"
    assert run_app(app_args(mini, shared_cache, out, f"mlflow.tracking_uri={store_uri(db)}")) == 0
    printed = capsys.readouterr()
    client = MlflowClient(tracking_uri=f"sqlite:///{db}")
    run = client.get_run(json.loads((out / "report.json").read_text())["mlflow_run_id"])
    params = run.data.params
    assert params["backend.api_token"] == params["backend.credentials.pass"] == "***"
    assert params["backend.endpoint"].endswith("api-key=***")
    artifacts = Path(client.download_artifacts(run.info.run_id, "", str(tmp_path / "artifacts")))
    logged = next(out.glob("*.log")).read_text()
    assert (
        "connected to https://search.example.com/indexes?api-version=2024&api-key=*** as ***"
        in logged
    )
    everything = (
        json.dumps([params, run.data.tags]) + text_of(artifacts, out) + printed.out + printed.err
    )
    assert not [s for s in ALL if s in everything]


def test_no_secret_in_the_error_of_a_failing_backend_or_an_unreachable_server(
    mini, shared_cache, tmp_path, capsys, env
):
    LeakyRetriever.fail = True
    out = tmp_path / "failed"
    with pytest.raises(SystemExit):
        run_app(app_args(mini, shared_cache, out, "mlflow.enabled=false"))
    err = capsys.readouterr().err
    assert "refused token ***" in err and "api-key=***" in err
    assert not [s for s in ALL if s in err + text_of(out)]

    LeakyRetriever.fail = False
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        down = f"'http://bob:{URL_PW}@127.0.0.1:{s.getsockname()[1]}/?token={SIG}'"
    out = tmp_path / "down"
    with pytest.warns(UserWarning, match="MLflow logging to") as caught:
        assert run_app(app_args(mini, shared_cache, out, f"mlflow.tracking_uri={down}")) == 0
    printed = capsys.readouterr()
    everything = text_of(out) + printed.out + printed.err + "".join(str(w.message) for w in caught)
    assert "bob:***@127.0.0.1" in everything and "Retrying" in text_of(out)  # MLflow's HTTP log
    assert not [s for s in ALL if s in everything]


def test_no_secret_in_configuration_errors(mini, tmp_path, capsys, env):
    # Hydra's own message quotes the override it cannot apply
    with pytest.raises(ConfigError) as refused:
        run_app(["dataset=custom", f"dataset.api_token={TOKEN}", f"hydra.run.dir={tmp_path}"])
    assert "dataset.api_token=***" in str(refused.value) and TOKEN not in str(refused.value)
    assert main(["dataset=custom", f"dataset.api_token={TOKEN}", f"hydra.run.dir={tmp_path}"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("rageval: error: ") and "dataset.api_token=***" in err
    assert TOKEN not in err and len(err.strip().splitlines()) == 1
    baseline = tmp_path / "baseline.json"
    baseline.write_text(json.dumps({"metrics": {}, "per_query": [], "digests": {}, "k": 5}))
    assert main(["check", f"backend.api_key={PASSWORD}", "--baseline", str(baseline)]) == 2
    err = capsys.readouterr().err
    assert (
        err.startswith("rageval: error: ")
        and "backend.api_key" in err
        and PASSWORD not in err
        and "***" in err
    )
