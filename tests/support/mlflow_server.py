"""A real ``mlflow server`` on 127.0.0.1 for a test: its own process group on a free port,
stopped as a group at the end."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from mlflow_store import store_uri

# MLflow 3's server starts a job runner and six huey consumers beside uvicorn (each a Python
# process importing mlflow) for its asynchronous GenAI jobs, which rageval never submits: off, a
# server start is one process group of uvicorn alone. Tracking, artifacts, REST and the UI are the
# same with or without them.
SERVER_ENV = {"MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def stop(proc: subprocess.Popen) -> None:
    """Stop the server's whole process group (uvicorn's workers too)."""
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


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


@contextlib.contextmanager
def mlflow_server(folder: Path):
    """The URL of an ``mlflow server`` storing in ``folder`` (SQLite and artifacts)."""
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
                store_uri(folder / f"server{attempt}.db"),
                "--artifacts-destination",
                str(folder / "artifacts"),
                "--workers",
                "1",
            ],
            env={**os.environ, **SERVER_ENV},
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
