"""The Hydra callback around a multirun, and the tracking names other modules import from here.

The MLflow code lives beside it: :mod:`rageval.tracking.client` (client, URI, experiment, git),
:mod:`rageval.tracking.keys` (metric keys, params, run names), :mod:`rageval.tracking.log`
(logging one run), :mod:`rageval.tracking.sweep` (the sweep's parent run) and
:mod:`rageval.tracking.lookup` (finding runs again).
"""

from __future__ import annotations

from hydra.experimental.callback import Callback

from rageval.scoring.spec import mlflow_key
from rageval.tracking.client import (
    HTTP_DEFAULTS,
    client_for,
    ensure_experiment,
    git_info,
    tracking_uri,
)
from rageval.tracking.keys import metric_key
from rageval.tracking.log import log_run

PARENT_ENV = "RAGEVAL_PARENT_RUN_ID"
# The sweep that PARENT_ENV belongs to: a reused worker process (Ray, joblib) may still hold the
# variables of an earlier sweep launched from the same process.
SWEEP_ENV = "RAGEVAL_SWEEP_DIR"
PARENT_FILE = ".rageval_parent_run"

__all__ = ["HTTP_DEFAULTS", "PARENT_ENV", "PARENT_FILE", "SWEEP_ENV", "SweepCallback", "client_for",
           "ensure_experiment", "git_info", "log_run", "metric_key", "mlflow_key", "tracking_uri"]  # fmt: skip


class SweepCallback(Callback):
    """Hydra callback: a parent MLflow run around a multirun, and the comparison table at its end."""

    def on_multirun_start(self, config, **kwargs) -> None:
        from rageval.app.main import register_resolvers
        from rageval.app.sweep import start_sweep

        register_resolvers()
        start_sweep(config)

    def on_multirun_end(self, config, **kwargs) -> None:
        from rageval.app.sweep import finish_sweep

        finish_sweep(config)
