"""Hydra callbacks: thin adapters that import the sweep logic only when a multirun starts.

Hydra instantiates ``SweepCallback`` from ``hydra.callbacks.rageval`` in conf/config.yaml, in the
process that launches the sweep (never in a job). It hands the sweep's outcome back to
``rageval.app.main.run_app`` through the file named by ``$RAGEVAL_SWEEP_OUTCOME`` (run_app sets it
for the length of one Hydra call): ``{"state": "started", "config": ...}`` when the sweep starts,
``{"state": "finished", "exit_code": N}`` when it ends.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from hydra.experimental.callback import Callback

# The file run_app reads the sweep's outcome from (unset: nobody is waiting for it).
OUTCOME_ENV = "RAGEVAL_SWEEP_OUTCOME"


def read_outcome(path: str | Path) -> dict[str, Any] | None:
    """The outcome a SweepCallback wrote to ``path``, or None if no sweep started."""
    p = Path(path)
    if not p.is_file():
        return None
    return json.loads(p.read_text())


class SweepCallback(Callback):
    """A parent MLflow run around a multirun and the leaderboard of its jobs at the end."""

    def __init__(self, outcome_file: str | None = None) -> None:
        self.outcome_file = outcome_file

    def on_multirun_start(self, config, **kwargs) -> None:
        """Create the sweep folder and the parent run before any job starts."""
        from rageval.app.config import register_resolvers
        from rageval.app.sweep import start_sweep

        register_resolvers()
        settings = start_sweep(config)
        self._report({"state": "started", "config": settings})

    def on_multirun_end(self, config, **kwargs) -> None:
        """Compare the jobs, close the parent run and report the sweep's exit code."""
        from rageval.app.sweep import finish_sweep
        from rageval.formats.redact import redact_yaml_file

        redact_yaml_file(
            Path(config.hydra.sweep.dir) / "multirun.yaml", config.hydra.overrides.task
        )
        code = finish_sweep(config)
        self._report({"state": "finished", "exit_code": code})

    def _report(self, outcome: dict[str, Any]) -> None:
        target = self.outcome_file or os.environ.get(OUTCOME_ENV)
        if target:
            from rageval.formats.atomic import atomic_write_text

            atomic_write_text(Path(target), json.dumps(outcome))
