"""The tracking names other modules import from here, kept for callers of the old single module.

The MLflow code lives beside it: :mod:`rageval.tracking.client` (client, URI, experiment, git),
:mod:`rageval.tracking.keys` (metric keys, params, run names), :mod:`rageval.tracking.log`
(logging one run), :mod:`rageval.tracking.sweep` (the sweep's parent run),
:mod:`rageval.tracking.lookup` (finding runs again) and :mod:`rageval.tracking.later` (logging a
run folder later).
"""

from __future__ import annotations

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

__all__ = [
    "HTTP_DEFAULTS",
    "client_for",
    "ensure_experiment",
    "git_info",
    "log_run",
    "metric_key",
    "mlflow_key",
    "tracking_uri",
]
