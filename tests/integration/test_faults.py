"""Faults mid-run: backends that fail or time out on some queries, MLflow down or failing half-way,
and a process killed while it writes the embedding cache or the baseline."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import textwrap
import threading
import time
import warnings
from pathlib import Path

import numpy as np
import pytest
from fakes.azure_search import FakeAzureSearch
from fakes.plugin_retrievers import FlakyRetriever
from mlflow_store import store_uri

from rageval.app.main import run_app, run_job
from rageval.app.replay import compose_for_run as compose
from rageval.cli.main import main
from rageval.embedding import EmbeddingCache, SentenceTransformerEncoder
from rageval.embedding.cache import text_key
from rageval.errors import BackendError
from rageval.gate.baseline import load_report, write_baseline
from rageval.tracking import client as tracking

pytestmark = pytest.mark.integration
PAYMENTS = [
    "Which regions is the payments service deployed to?",
    "When does the error alert fire for payments?",
]


def mini_args(mini, cache, *extra) -> list[str]:
    return [
        "dataset=custom",
        f"dataset.corpus={mini / 'corpus'}",
        f"dataset.golden={mini / 'golden.jsonl'}",
        f"cache_dir={cache}",
        "latency_sample=0",
        "retry_backoff=0",
        *extra,
    ]


def store_runs(db: Path) -> list:
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=f"sqlite:///{db}")
    return (
        client.search_runs([e.experiment_id for e in client.search_experiments()])
        if db.exists()
        else []
    )


@pytest.fixture
def mlflow_env():
    """rageval sets MLflow's HTTP retry defaults in os.environ: keep them out of other tests."""
    saved = {k: os.environ.pop(k, None) for k in tracking.HTTP_DEFAULTS}
    yield
    for k, v in saved.items():
        os.environ.pop(k, None)
        if v is not None:
            os.environ[k] = v


def test_mlflow_down_keeps_the_report_and_rageval_log_sends_it_later(
    mini, shared_cache, tmp_path, mlflow_env
):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        down = f"http://127.0.0.1:{s.getsockname()[1]}"  # nothing listens once the socket is closed
    out, db = tmp_path / "run", tmp_path / "mlflow.db"
    start = time.monotonic()
    with pytest.warns(UserWarning, match="MLflow logging to") as caught:
        code = run_app(
            mini_args(mini, shared_cache, f"mlflow.tracking_uri={down}", f"hydra.run.dir={out}")
        )
    # and not after MLflow's default of four minutes of retries
    assert code == 0 and time.monotonic() - start < 60
    message = next(str(w.message) for w in caught if "MLflow" in str(w.message))
    assert f"the report is at {out / 'report.json'}" in message
    assert (
        f"log it later with: rageval log {out} --tracking-uri {down} --experiment rageval"
        in message
    )
    rep = json.loads((out / "report.json").read_text())
    assert rep["mlflow_run_id"] is None and rep["metrics"]["ndcg@5"] >= 0

    assert main(["log", str(out), "--tracking-uri", store_uri(db)]) == 0  # the server is back
    (run,) = store_runs(db)
    assert (
        run.info.status == "FINISHED"
        and run.info.run_id == json.loads((out / "report.json").read_text())["mlflow_run_id"]
    )
    assert (
        run.data.metrics["headline/ndcg_at_5"] == rep["metrics"]["ndcg@5"]
        and run.data.params["chunk"] == "256"
    )
    assert (
        run.data.tags["rageval.logged_later"] == "true"
        and "mlflow.source.git.commit" not in run.data.tags
    )
    assert main(["log", str(out), "--tracking-uri", store_uri(db)]) == 2  # already logged


def test_a_sweep_runs_every_job_while_mlflow_is_down(mini, shared_cache, tmp_path, monkeypatch):
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "0")  # the timing is tested above
    sweep = tmp_path / "sweep"
    with pytest.warns(UserWarning) as caught:
        code = run_app(
            [
                "-m",
                *mini_args(
                    mini,
                    shared_cache,
                    "mlflow.tracking_uri=http://127.0.0.1:9",
                    f"hydra.sweep.dir={sweep}",
                ),
                "chunk=32,64",
            ]
        )
    messages = [str(w.message) for w in caught]
    assert code == 0 and len(list(sweep.glob("*/report.json"))) == 2
    assert any("failed starting the sweep's parent run" in m for m in messages)
    for job in ("0", "1"):  # each job says how to log its folder
        assert any(f"log it later with: rageval log {sweep / job} " in m for m in messages)
    board = (sweep / "leaderboard.md").read_text()
    assert "| 0 | 32 |" in board and "| 1 | 64 |" in board  # both jobs ranked (saturated here)
    # the sweep's verdict says which results the MLflow comparison lacks
    assert "2 of 2 finished jobs are not in MLflow (their logging failed): job 0, 1" in board


def test_mlflow_failing_half_way_leaves_a_failed_run_never_a_running_one(
    mini, shared_cache, tmp_path, monkeypatch
):
    out, db = tmp_path / "run", tmp_path / "mlflow.db"

    def disk_full(*args, **kwargs):
        raise OSError(28, "No space left on device")

    from rageval.tracking import log as tracking_log

    monkeypatch.setattr(tracking_log, "log_artifacts", disk_full)
    with pytest.warns(UserWarning, match=re.escape(f"log it later with: rageval log {out}")):
        code = run_app(
            mini_args(
                mini, shared_cache, f"mlflow.tracking_uri={store_uri(db)}", f"hydra.run.dir={out}"
            )
        )
    assert code == 0
    (failed,) = store_runs(db)
    assert failed.info.status == "FAILED"  # not RUNNING, though its params and metrics arrived
    assert json.loads((out / "report.json").read_text())["mlflow_run_id"] is None
    monkeypatch.undo()
    assert main(["log", str(out), "--tracking-uri", store_uri(db)]) == 0
    assert sorted(r.info.status for r in store_runs(db)) == ["FAILED", "FINISHED"]


def test_azure_failing_and_timing_out_on_some_queries_fails_the_run_naming_them(
    mini, shared_cache, tmp_path, monkeypatch, capsys
):
    monkeypatch.setenv("RAGEVAL_FAULTS_AZURE_KEY", "fault-key-123456")
    out, db = tmp_path / "run", tmp_path / "mlflow.db"
    with FakeAzureSearch(api_key="fault-key-123456") as fake:
        fake.fail(503, times=None, search_contains="payments", retry_after=None)  # down for these
        fake.fail(503, times=None, search_contains="password", retry_after=None, delay=3.0)  # hangs
        fake.fail(429, times=2, search_contains="contractors", retry_after="0")  # recovers
        args = mini_args(
            mini,
            shared_cache,
            "backend=azure",
            f"backend.endpoint={fake.endpoint}",
            "search=bm25",
            "backend.api_key_env=RAGEVAL_FAULTS_AZURE_KEY",
            "backend.max_retries=2",
            "backend.retry_backoff=0.01",
            "backend.timeout=0.5",
            f"mlflow.tracking_uri={store_uri(db)}",
            f"hydra.run.dir={out}",
        )
        with pytest.raises(SystemExit) as exit_:
            run_app(args)
        # a timed-out request is recorded when the stand-in answers it, after its delay
        deadline = time.monotonic() + 10
        while len(fake.seen("search")) < 20 and time.monotonic() < deadline:
            time.sleep(0.1)
        searches = [r.body["search"] for r in fake.seen("search")]
        assert fake.indexes == {}  # the throwaway index was deleted
    stderr = capsys.readouterr().err
    assert exit_.value.code == 2 and "Traceback" not in stderr and "failed 4 of 8 queries" in stderr
    for query in [*PAYMENTS, "rotate the invoicing db password", "how do I get my password reset"]:
        assert repr(query) in stderr and searches.count(query) == 3  # tried, then retried twice
    assert searches.count("Do contractors get parental leave?") == 3  # 429, 429, then answered
    # nothing written or logged as if the run were complete
    assert not (out / "report.json").exists() and store_runs(db) == []
    assert "payments" in json.loads((out / "error.json").read_text())["error"]


def flaky_job(mini, cache, out, db=None, **behaviour):
    for k, v in {"transient": 0, "fail_on": "", "nan_on": "", "calls": [], **behaviour}.items():
        setattr(FlakyRetriever, k, v)
    mlflow = [f"mlflow.tracking_uri={store_uri(db)}"] if db else ["mlflow.enabled=false"]
    cfg = compose(
        mini_args(mini, cache, "backend._target_=fakes.plugin_retrievers.FlakyRetriever", *mlflow)
    )
    return run_job(cfg, out, quiet=True)


def test_a_plug_in_backend_is_retried_and_a_failure_names_its_queries(mini, shared_cache, tmp_path):
    clean = flaky_job(mini, shared_cache, tmp_path / "clean")
    flaky = flaky_job(mini, shared_cache, tmp_path / "flaky", transient=2)
    assert FlakyRetriever.calls[:3] == [8, 8, 8] and flaky.metrics == clean.metrics  # 2 retries
    db = tmp_path / "mlflow.db"
    with pytest.raises(BackendError) as err:
        flaky_job(mini, shared_cache, tmp_path / "down", db=db, transient=1, fail_on="payments")
    assert sorted(err.value.failed_queries) == sorted(PAYMENTS) and err.value.exit_code == 2
    message = str(err.value)
    assert "failed 2 of 8 queries after 2 retries" in message and "TimeoutError" in message
    assert not (tmp_path / "down" / "report.json").exists() and store_runs(db) == []
    with pytest.raises(BackendError, match="not finite numbers") as err:
        flaky_job(mini, shared_cache, tmp_path / "nan", nan_on="payments")
    assert sorted(err.value.failed_queries) == sorted(PAYMENTS)


SLOW_WRITE = """
    import io, os, sys, time
    TARGET, NTH = sys.argv[1], int(sys.argv[2])  # write half of the NTH file opened under \
TARGET, then hang
    opened = [0]
    class Slow:
        def __init__(self, fh): self.fh = fh
        def __enter__(self): return self
        def __exit__(self, *exc): return self.fh.__exit__(*exc)
        def __getattr__(self, name): return getattr(self.fh, name)
        def write(self, data):
            self.fh.write(data[: len(data) // 2]); self.fh.flush(); os.fsync(self.fh.fileno())
            print("WRITING", flush=True); time.sleep(600)
    def slow_open(file, mode="r", *args, _open=io.open, **kwargs):
        fh = _open(file, mode, *args, **kwargs)
        path = os.readlink(f"/proc/self/fd/{file}") if isinstance(file, int) else \
os.path.abspath(file)
        if set(mode) & set("wax") and path.startswith(TARGET):
            opened[0] += 1
            if opened[0] == NTH:
                return Slow(fh)
        return fh
    import builtins; builtins.open = io.open = slow_open  # os.fdopen and Path.write_* go \
through io.open
"""


def kill_mid_write(script: str, *args: str) -> None:
    """Run ``script`` in a subprocess, wait until it is half-way through a write, SIGKILL it."""
    code = textwrap.dedent(SLOW_WRITE) + textwrap.dedent(script)
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    proc = subprocess.Popen(
        [sys.executable, "-c", code, *args], stdout=subprocess.PIPE, text=True, env=env
    )
    watchdog = threading.Timer(300, proc.kill)
    watchdog.start()
    try:
        started = proc.stdout.readline() if proc.stdout else ""
        assert "WRITING" in started, "the write never started"
        proc.send_signal(signal.SIGKILL)
        assert proc.wait() == -signal.SIGKILL
    finally:
        watchdog.cancel()
        proc.kill()


TEXTS = [
    f"note {i}: {' '.join(['payments', 'leave', 'vault', 'region'][: 1 + i % 4])} {'x' * (i % 7)}"
    for i in range(48)
]


def test_killed_mid_embedding_the_cache_stays_readable_and_the_next_run_completes(tmp_path):
    cache = tmp_path / "cache"
    kill_mid_write(
        f"""
        from rageval.embedding import SentenceTransformerEncoder
        SentenceTransformerEncoder(cache_dir=sys.argv[3], write_every=8, progress=False)\
.encode_documents({TEXTS!r})
    """,
        str(cache / "embeddings"),
        "6",  # the 6th file written there: the third segment's .keys
        str(cache),
    )
    encoder = SentenceTransformerEncoder(cache_dir=str(cache), progress=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # an unreadable segment would warn
        _, missing = EmbeddingCache(cache, encoder.fingerprint).lookup([text_key(t) for t in TEXTS])
    assert len(missing) == 32  # two complete segments of 8; the third never became visible
    assert list(encoder.cache.dir.glob(".seg-*.tmp"))  # all the kill left: a temp file nobody reads
    resumed = encoder.encode_documents(TEXTS)
    assert encoder.texts_encoded == 32
    fresh = SentenceTransformerEncoder(cache_dir=str(tmp_path / "fresh"), progress=False)
    assert np.array_equal(resumed, fresh.encode_documents(TEXTS))


def test_killed_mid_promote_the_old_baseline_stays_whole_and_promote_then_works(tmp_path):
    base = {
        "metrics": {"ndcg@5": 0.5},
        "per_query": [{"id": "q1", "query": "x" * 5000}],
        "digests": {},
        "k": 5,
    }
    baseline, report = tmp_path / "golden" / "baseline.json", tmp_path / "report.json"
    write_baseline(base, baseline, {"run_id": "old"})
    old = baseline.read_bytes()
    report.write_text(json.dumps({**base, "metrics": {"ndcg@5": 0.7}}))
    kill_mid_write(
        """
        from rageval.cli.main import main
        main(["promote", sys.argv[3], "--baseline", sys.argv[4]])
    """,
        str(baseline.parent),
        "1",
        str(report),
        str(baseline),
    )
    assert baseline.read_bytes() == old and load_report(baseline)["metrics"] == {"ndcg@5": 0.5}
    assert main(["promote", str(report), "--baseline", str(baseline)]) == 0
    assert load_report(baseline)["metrics"] == {"ndcg@5": 0.7}
