"""A retriever that fails on purpose, for sweep tests: ``raise`` throws an ordinary exception (a
bug), ``exit`` kills its worker process once job 0 of the sweep has logged its run."""

from __future__ import annotations

import os
import time
from pathlib import Path


class CrashingRetriever:
    def __init__(self, how: str = "raise", sweep_dir: str = "", **_: object):
        self.how = how
        self.sweep_dir = sweep_dir

    def index(self, chunks, encoder) -> None:
        if self.how == "exit":
            # wait until job 0 has logged its MLflow run (its report then holds the run id)
            report, deadline = Path(self.sweep_dir) / "0" / "report.json", time.time() + 120
            while time.time() < deadline:
                if report.is_file() and '"mlflow_run_id": "' in report.read_text():
                    break
                time.sleep(0.2)
            time.sleep(0.5)
            os._exit(3)
        raise RuntimeError("boom: the retriever fell over")

    def search(self, queries, depth):
        raise AssertionError("never reached")
