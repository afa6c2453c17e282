"""Run a rageval sweep inside a fresh network namespace that has only a loopback interface.

Ray binds some of its services to the machine's own address even when told 127.0.0.1; inside a
namespace of our own whose only interface is ``lo``, everything it opens is on 127.0.0.1. This
script is started by tests/integration/test_scale_out.py under ``unshare --net``: it brings ``lo``
up, starts a real ``mlflow server`` on 127.0.0.1 (and, with --ray-head, a Ray head node), runs the
sweep, reads the runs back, stops every process it started, and prints one JSON document.

    unshare --net python tests/support/loopback_sweep.py --cwd DIR [--ray-head] -- rageval-args...
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

BIN = Path(sys.executable).parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def stop(proc: subprocess.Popen) -> None:
    for sig, wait in ((signal.SIGTERM, 10), (signal.SIGKILL, 5)):
        try:
            os.killpg(proc.pid, sig)
            proc.wait(timeout=wait)
            return
        except ProcessLookupError:
            return
        except subprocess.TimeoutExpired:
            continue


def start_mlflow(workdir: Path) -> tuple[subprocess.Popen, str]:
    port = free_port()
    proc = subprocess.Popen(
        [
            str(BIN / "mlflow"),
            "server",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--workers",
            "1",
            "--backend-store-uri",
            f"sqlite:///{workdir / 'server.db'}",
            "--artifacts-destination",
            str(workdir / "artifacts"),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.time() + 90
    while True:
        try:
            with urllib.request.urlopen(f"{url}/health", timeout=2):
                return proc, url
        except OSError:
            if proc.poll() is not None or time.time() > deadline:
                stop(proc)
                raise SystemExit("mlflow server did not start") from None
            time.sleep(0.5)


def wait_for_port(port: int, proc: subprocess.Popen, timeout: float = 120) -> None:
    """Until something listens on 127.0.0.1:port (the Ray head's GCS: ``ray.init`` then waits
    for the node itself), or fail if ``proc`` died or the deadline passed."""
    deadline = time.time() + timeout
    while True:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        if proc.poll() is not None or time.time() > deadline:
            raise SystemExit(f"the Ray head did not listen on port {port}")
        time.sleep(0.2)


def dump_runs(url: str) -> list[dict]:
    from mlflow.tracking import MlflowClient

    c = MlflowClient(tracking_uri=url)
    out = []
    for exp in c.search_experiments():
        for r in c.search_runs([exp.experiment_id]):
            out.append(
                {
                    "experiment": exp.name,
                    "run_id": r.info.run_id,
                    "status": r.info.status,
                    "tags": r.data.tags,
                    "params": r.data.params,
                    "artifacts": [a.path for a in c.list_artifacts(r.info.run_id)],
                }
            )
    return out


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--cwd", required=True)
    p.add_argument(
        "--ray-head", action="store_true", help="start a Ray head node first, in another folder"
    )
    p.add_argument("args", nargs=argparse.REMAINDER)
    a = p.parse_args()
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    cwd = Path(a.cwd)
    workdir = cwd / "_loopback"
    workdir.mkdir(parents=True, exist_ok=True)
    env = {
        **os.environ,
        "RAY_USAGE_STATS_ENABLED": "0",
        "RAY_AUTH_MODE": "disabled",
        "HF_HUB_OFFLINE": "1",
    }
    server, url = start_mlflow(workdir)
    head = None
    try:
        if a.ray_head:
            port = free_port()
            (workdir / "head").mkdir(exist_ok=True)
            head = subprocess.Popen(
                [
                    str(BIN / "ray"),
                    "start",
                    "--head",
                    "--node-ip-address=127.0.0.1",
                    f"--port={port}",
                    "--num-cpus=2",
                    "--include-dashboard=false",
                    "--disable-usage-stats",
                    "--block",
                ],
                cwd=workdir / "head",
                env=env,
                start_new_session=True,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            env["RAY_ADDRESS"] = f"127.0.0.1:{port}"
            wait_for_port(port, head)
        args = [arg.replace("{MLFLOW}", url) for arg in a.args if arg != "--"]
        sweep = subprocess.Popen(
            [sys.executable, "-m", "rageval", *args],
            cwd=cwd,
            env=env,
            text=True,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        try:
            out, err = sweep.communicate(timeout=600)
        finally:
            stop(sweep)
        result = {
            "returncode": sweep.returncode,
            "stdout": out,
            "stderr": err,
            "runs": dump_runs(url),
        }
    finally:
        if head is not None:
            stop(head)
        stop(server)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
