"""Every secret shape x every output: no secret value reaches a file rageval or Hydra writes
(config.yaml, report.json, error.json, Hydra's multirun.yaml), an MLflow param, tag or artifact,
or a line on the console, in a sweep, a failed run and a crashed run.

The runs use BM25 on the mini corpus (no embedding model) and a throwaway MLflow store."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from mlflow_store import store_uri

TESTS = Path(__file__).resolve().parents[1]
ROOT = TESTS.parent
SUPPORT = TESTS / "support"

# shape -> (override or environment variable, the secret values, a non-secret part that must stay)
SHAPES = {
    "secret key": ("+extra.api_key=sk-live-KEY0a1b2c", ["sk-live-KEY0a1b2c"], None),
    "swept secret key": (
        "+extra.auth_token=tok-SWEEP-aaaa1,tok-SWEEP-bbbb2",
        ["tok-SWEEP-aaaa1", "tok-SWEEP-bbbb2"],
        None,
    ),
    "dict value": (
        "+extra.creds={user: bobuser, password: pw-DICT-77x}",
        ["pw-DICT-77x"],
        "bobuser",
    ),
    "list value": (
        "+extra.hooks=[{name: slack, token: xoxb-LIST-5566}]",
        ["xoxb-LIST-5566"],
        "slack",
    ),
    "url userinfo token": (
        "+extra.repo='https://ghp-TOKEN-9988@github.com/acme/docs.git'",
        ["ghp-TOKEN-9988"],
        "github.com/acme/docs.git",
    ),
    "url user:password": (
        "+extra.db='postgres://admin:pg-PASS-4433@db.internal:5432/x'",
        ["pg-PASS-4433"],
        "db.internal",
    ),
    "signed url (AWS)": (
        "+extra.dump='https://b.s3.amazonaws.com/k?X-Amz-Credential=AKIA-CRED-11&X-Amz-Signature=amz-SIG-2233&X-Amz-Date=20240101'",
        ["AKIA-CRED-11", "amz-SIG-2233"],
        "X-Amz-Date=20240101",
    ),
    "signed url (Azure SAS)": (
        "+extra.blob='https://a.blob.core.windows.net/c?sv=2024&sig=sas-SIG-6655'",
        ["sas-SIG-6655"],
        "sv=2024",
    ),
    "fragment token": (
        "+extra.cb='https://app.example.com/cb#access_token=frag-TOK-3344&state=ok'",
        ["frag-TOK-3344"],
        "state=ok",
    ),
    "environment": ("env:SEARCH_SERVICE_API_KEY=env-KEY-00998877", ["env-KEY-00998877"], None),
}
OUTPUTS = [
    "console",
    "config.yaml",
    "report.json",
    "multirun.yaml",
    "mlflow params",
    "mlflow tags",
    "mlflow artifacts",
    "error.json",
    "crash console",
]


def _args_env(tmp_path: Path, *extra: str) -> tuple[list[str], dict]:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), str(SUPPORT)]),
        "HF_HUB_OFFLINE": "1",
    }
    args = [
        "dataset=custom",
        f"dataset.corpus={SUPPORT / 'data/mini/corpus'}",
        f"dataset.golden={SUPPORT / 'data/mini/golden.jsonl'}",
        f"cache_dir={tmp_path / 'cache'}",
        "search=bm25",
        "latency_sample=0",
        f"mlflow.tracking_uri={store_uri(tmp_path / 'm.db')}",
    ]
    for override, _, _ in SHAPES.values():
        if override.startswith("env:"):
            name, _, value = override[4:].partition("=")
            env[name] = value
        elif "-m" not in extra and "auth_token" in override:  # a single run cannot sweep
            args.append(override.split(",")[0])
        else:
            args.append(override)
    flags = [e for e in extra if e.startswith("-")]
    return [*flags, *args, *(e for e in extra if not e.startswith("-"))], env


def _start(tmp_path: Path, *extra: str) -> subprocess.Popen:
    args, env = _args_env(tmp_path, *extra)
    return subprocess.Popen(
        [sys.executable, "-m", "rageval", *args],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _finish(proc: subprocess.Popen) -> subprocess.CompletedProcess:
    try:
        out, err = proc.communicate(timeout=600)
    except subprocess.TimeoutExpired:
        proc.kill()
        raise
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def _files(folder: Path, name: str) -> str:
    return "".join(p.read_text(errors="replace") for p in sorted(folder.rglob(name)))


@pytest.fixture(scope="module")
def outputs(tmp_path_factory) -> dict[str, str]:
    tmp = tmp_path_factory.mktemp("secrets")
    sweep = tmp / "sweep"
    # three independent processes (the failed and crashed runs log nothing to MLflow), run at once
    started = [
        _start(tmp, "-m", "chunk=40,56", f"hydra.sweep.dir={sweep}"),
        _start(
            tmp,
            f"dataset.golden={tmp / 'missing.jsonl'}",
            "mlflow.enabled=false",
            f"hydra.run.dir={tmp / 'failed'}",
        ),
        _start(
            tmp,
            "backend._target_=fakes.crashing.CrashingRetriever",
            "mlflow.enabled=false",
            f"hydra.run.dir={tmp / 'crashed'}",
        ),
    ]
    proc, failed, crashed = map(_finish, started)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert failed.returncode == 2, failed.stderr[-3000:]
    assert crashed.returncode != 0 and "boom" in crashed.stderr, crashed.stderr[-3000:]

    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=f"sqlite:///{tmp / 'm.db'}")
    exp = client.get_experiment_by_name("rageval")
    runs = client.search_runs([exp.experiment_id])
    assert len(runs) == 5  # the parent and 2 chunkings x 2 swept tokens
    artifacts = ""
    for r in runs:
        dl = Path(client.download_artifacts(r.info.run_id, "", str(tmp / "dl" / r.info.run_id)))
        artifacts += "".join(
            p.read_bytes().decode("utf-8", "replace") for p in dl.rglob("*") if p.is_file()
        )
    return {
        "console": proc.stdout + proc.stderr + failed.stdout + failed.stderr,
        "config.yaml": _files(sweep, "config.yaml"),
        "report.json": _files(sweep, "report.json"),
        "multirun.yaml": _files(sweep, "multirun.yaml"),
        "mlflow params": json.dumps([r.data.params for r in runs]),
        "mlflow tags": json.dumps([r.data.tags for r in runs]),
        "mlflow artifacts": artifacts,
        "error.json": _files(tmp / "failed", "error.json") + _files(tmp / "crashed", "error.json"),
        "crash console": crashed.stdout + crashed.stderr,
    }


@pytest.mark.parametrize("output", OUTPUTS)
@pytest.mark.parametrize("shape", list(SHAPES))
def test_no_secret_in_any_output(outputs, shape, output):
    text = outputs[output]
    assert text.strip(), f"{output} is empty: the matrix would prove nothing"
    override, secrets, kept = SHAPES[shape]
    for secret in secrets:
        assert secret not in text, f"{shape}: {secret!r} leaked into {output}"
    if kept and output in ("config.yaml", "report.json", "multirun.yaml"):
        assert kept in text, f"{shape}: {kept!r} should stay readable in {output}"


def test_the_sweep_really_swept_the_secret(outputs):
    # two values of the swept token, each in two jobs: the jobs' overrides say which, masked
    assert outputs["report.json"].count("+extra.auth_token=***") == 4
    assert "Error executing job" in outputs["crash console"] or "boom" in outputs["crash console"]
