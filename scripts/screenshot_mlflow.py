"""Screenshot of the MLflow runs table after the demo sweep, for the README.

    python scripts/screenshot_mlflow.py [--out docs/img/mlflow-runs.png] [--workdir DIR]

Runs the demo sweep ``chunk=256,512 search=vector,bm25`` into a fresh SQLite store in DIR (skipped
when DIR already holds one), starts ``mlflow ui`` on 127.0.0.1 (a free port; stopped at the end),
opens the sweep's view of the experiment (the link the sweep prints: its runs sorted by the
deciding metric, that column shown) in headless Chromium (Debian's chromium and chromedriver),
unfolds the sweep's parent run and saves the page as a PNG. Embedding the demo costs about a
minute of CPU per chunk size on an empty cache (``cache_dir`` is shared with your other runs).
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SWEEP = ["chunk=256,512", "search=vector,bm25"]
VIEW_TAG = "mlflow.sharedViewState.rageval-"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(url: str, seconds: float = 120) -> None:
    end = time.time() + seconds
    while time.time() < end:
        try:
            with urllib.request.urlopen(url, timeout=5):
                return
        except OSError:
            time.sleep(1)
    sys.exit(f"MLflow UI did not answer at {url} within {seconds:.0f} s")


def browser(width: int, height: int):
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    chrome, driver = shutil.which("chromium"), shutil.which("chromedriver")
    if not (chrome and driver):
        sys.exit(
            "needs Debian's chromium and chromium-driver (scripts/setup.sh installs them as root)"
        )
    opts = webdriver.ChromeOptions()
    opts.binary_location = chrome
    for a in ("--headless=new", "--no-sandbox", "--disable-gpu", f"--window-size={width},{height}"):
        opts.add_argument(a)
    return webdriver.Chrome(service=Service(executable_path=driver), options=opts)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default=str(ROOT / "docs" / "img" / "mlflow-runs.png"))
    p.add_argument(
        "--workdir", help="folder for the sweep and its MLflow store (default: a temp folder)"
    )
    p.add_argument("--size", default="1600x900", help="browser window, WIDTHxHEIGHT")
    a = p.parse_args()
    work = Path(a.workdir or tempfile.mkdtemp(prefix="rageval-shot-")).resolve()
    work.mkdir(parents=True, exist_ok=True)
    db = work / "mlflow.db"
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "MLFLOW_DISABLE_TELEMETRY": "true"}
    if not db.is_file():
        cmd = [
            sys.executable,
            "-m",
            "rageval",
            "-m",
            *SWEEP,
            "latency_sample=0",
            f"mlflow.tracking_uri=sqlite:///{db}",
            f"hydra.sweep.dir={work / 'multirun'}",
        ]
        print("running:", " ".join(cmd[1:]), flush=True)
        subprocess.run(cmd, cwd=work, env=env, check=True)
    from mlflow.tracking import MlflowClient

    exp = MlflowClient(f"sqlite:///{db}").get_experiment_by_name("rageval")
    port = free_port()
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "mlflow",
            "ui",
            "--backend-store-uri",
            f"sqlite:///{db}",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--workers",
            "1",
        ],
        cwd=work,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        base = f"http://127.0.0.1:{port}"
        wait_for(f"{base}/health")
        width, height = (int(x) for x in a.size.split("x"))
        d = browser(width, height)
        try:
            views = [k for k in exp.tags if k.startswith(VIEW_TAG)]  # the sweep's shared view
            query = f"&viewStateShareKey={views[-1][len(VIEW_TAG) :]}" if views else ""
            url = f"{base}/#/experiments/{exp.experiment_id}/runs?workflowType=machine_learning"
            shoot(d, url + query, Path(a.out))
        finally:
            d.quit()
    finally:  # uvicorn shuts down on Ctrl-C; kill it if it does not
        server.send_signal(signal.SIGINT)
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
    print(f"screenshot: {a.out}")


def shoot(d, url: str, out: Path) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    # MLflow 3.17 opens experiments in the GenAI view unless told (the "Model training" toggle at
    # the top left, remembered by the browser, or the workflowType query parameter); the sweep's
    # view (viewStateShareKey) sorts the runs by its deciding metric and shows that column
    d.get(url)
    wait = WebDriverWait(d, 120)
    expander = (By.CSS_SELECTOR, "button[data-component-id*='runnamecellrenderer']")
    if "viewStateShareKey" in url:  # the sweep's view: its jobs sorted by the deciding metric
        wait.until(ec.presence_of_element_located((By.XPATH, "//*[contains(text(), 'Sort:')]")))
        time.sleep(5)
        for close in d.find_elements(By.CSS_SELECTOR, "[aria-label='Close']"):  # the assistant
            if close.is_displayed():
                close.click()
        out.parent.mkdir(parents=True, exist_ok=True)
        d.save_screenshot(str(out))
        return
    wait.until(ec.element_to_be_clickable(expander))
    time.sleep(2)
    for close in d.find_elements(By.CSS_SELECTOR, "[aria-label='Close']"):  # the assistant panel
        if close.is_displayed():
            close.click()
    d.find_element(*expander).click()  # unfold the sweep's jobs under its parent run
    wait.until(ec.presence_of_element_located((By.XPATH, "//span[contains(text(), ' #0')]")))
    time.sleep(3)
    out.parent.mkdir(parents=True, exist_ok=True)
    d.save_screenshot(str(out))


if __name__ == "__main__":
    main()
