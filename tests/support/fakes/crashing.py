"""A retriever that fails on purpose, for sweep tests: ``raise`` throws an ordinary exception (a
bug), ``exit`` kills its worker process once job 0 of the sweep has logged its run."""

from __future__ import annotations

import os
import time
from pathlib import Path


class CrashingRetriever:
    def __init__(
        self, how: str = "raise", sweep_dir: str = "", tracking_uri: str | None = None, **_: object
    ):
        self.how = how
        self.sweep_dir = sweep_dir
        self.tracking_uri = tracking_uri

    def index(self, chunks, encoder) -> None:
        if self.how == "exit":
            # wait until job 0 has finished logging its MLflow run, then die without a word
            report, deadline = Path(self.sweep_dir) / "0" / "report.json", time.time() + 120
            while time.time() < deadline and not self._job0_finished(report):
                time.sleep(0.2)
            os._exit(3)
        raise RuntimeError("boom: the retriever fell over")

    def _job0_finished(self, report: Path) -> bool:
        import json

        try:
            run_id = json.loads(report.read_text()).get("mlflow_run_id")
        except (OSError, ValueError):
            return False
        if not run_id:
            return False
        from mlflow.tracking import MlflowClient

        return (
            MlflowClient(tracking_uri=self.tracking_uri).get_run(run_id).info.status == "FINISHED"
        )

    def search(self, queries, depth):
        raise AssertionError("never reached")
