"""Run rageval sweeps inside a fresh network namespace that has only a loopback interface.

Ray binds some of its services to the machine's own address even when told 127.0.0.1; inside a
namespace of our own whose only interface is ``lo``, everything it opens is on 127.0.0.1. This
script is started by tests/integration/test_scale_out.py under ``unshare --net``: it brings ``lo``
up, starts one real ``mlflow server`` on 127.0.0.1, runs the plan's sweeps one after the other
(starting a Ray head node, in a folder of its own, before the first sweep that asks for one), reads
the runs back, stops every process it started, and prints one JSON document.

    unshare --net python tests/support/loopback_sweep.py PLAN.json

PLAN.json holds ``{"workdir": DIR, "sweeps": [SWEEP, ...]}``, each SWEEP
``{"name": N, "cwd": DIR, "ray_head": BOOL, "args": [...]}`` (``{MLFLOW}`` in an argument becomes
the server's URL). The output: ``{"sweeps": {N: {"returncode", "stdout", "stderr"}}, "runs": [...],
"head": DIR}``.
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

from mlflow_server import SERVER_ENV
from mlflow_store import store_uri

BIN = Path(sys.executable).parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def stop(proc: subprocess.Popen, first: signal.Signals = signal.SIGTERM) -> None:
    """Stop ``proc``'s process group: ``first``, then SIGKILL if it is still up 10 s later."""
    for sig, wait in ((first, 10), (signal.SIGKILL, 5)):
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
            store_uri(workdir / "server.db"),
            "--artifacts-destination",
            str(workdir / "artifacts"),
        ],
        env={**os.environ, **SERVER_ENV},
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


def start_head(workdir: Path, env: dict) -> tuple[subprocess.Popen, str]:
    """A Ray head node started in ``workdir/head`` (not the sweep's folder); returns its address."""
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
    try:
        wait_for_port(port, head)
    except BaseException:
        stop_head(head)
        raise
    return head, f"127.0.0.1:{port}"


def stop_head(head: subprocess.Popen) -> None:
    """Stop a head node started by :func:`start_head`. ``ray start --block`` stops its node's
    processes on SIGINT (Ctrl-C) in about 2 s; SIGTERM it ignores, so stop() would wait out its
    10 s before the SIGKILL."""
    stop(head, signal.SIGINT)


def run_sweep(args: list[str], cwd: Path, env: dict) -> dict:
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
    return {"returncode": sweep.returncode, "stdout": out, "stderr": err}


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("plan", type=Path)
    plan = json.loads(p.parse_args().plan.read_text())
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    workdir = Path(plan["workdir"])
    workdir.mkdir(parents=True, exist_ok=True)
    env = {
        **os.environ,
        "RAY_USAGE_STATS_ENABLED": "0",
        "RAY_AUTH_MODE": "disabled",
        "HF_HUB_OFFLINE": "1",
    }
    env.pop("RAY_ADDRESS", None)
    server, url = start_mlflow(workdir)
    head = address = None
    results = {}
    try:
        for sweep in plan["sweeps"]:
            if sweep.get("ray_head") and head is None:
                head, address = start_head(workdir, env)
            sweep_env = {**env, **({"RAY_ADDRESS": address} if sweep.get("ray_head") else {})}
            args = [arg.replace("{MLFLOW}", url) for arg in sweep["args"]]
            results[sweep["name"]] = run_sweep(args, Path(sweep["cwd"]), sweep_env)
        result = {"sweeps": results, "runs": dump_runs(url), "head": str(workdir / "head")}
    finally:
        if head is not None:
            stop_head(head)
        stop(server)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
