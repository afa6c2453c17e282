"""The Hydra Sweeper behind ``hydra/sweeper=optuna`` (conf/hydra/sweeper/optuna.yaml).

A thin adapter: Hydra finds plugins only under the ``hydra_plugins`` package, and imports every
module there on each start, so this one imports nothing heavy; the study itself (Optuna, the
golden-set split, the holdout verdict) lives in :mod:`rageval.app.study`.

Why rageval's own sweeper and not the ``hydra-optuna-sweeper`` package: its latest release pins
``optuna<3``, and Optuna 2.10's SQLite storage fails on SQLAlchemy 2 (which MLflow 3 requires),
so a study could not be persisted beside the MLflow store. This one runs on current Optuna and
reads the same ``hydra.sweeper.params`` search-space syntax (``choice``, ``range``,
``interval``, ``tag(log, ...)``, and sweeps on the command line).
"""

from __future__ import annotations

from typing import Any

from hydra.plugins.sweeper import Sweeper


class OptunaSweeper(Sweeper):
    """Tunes on the tune side of the golden-set split, then proves the best on the holdout."""

    def __init__(self, **settings: Any) -> None:
        self.settings = settings
        self.config = None
        self.hydra_context = None
        self.launcher = None

    def setup(self, *, hydra_context, task_function, config) -> None:
        """Keep Hydra's context and build the launcher (basic, joblib, Ray) the trials run on."""
        from hydra.core.plugins import Plugins

        self.config = config
        self.hydra_context = hydra_context
        self.launcher = Plugins.instance().instantiate_launcher(
            config=config, hydra_context=hydra_context, task_function=task_function
        )

    def sweep(self, arguments: list[str]) -> Any:
        """Run (or resume) the study; see :func:`rageval.app.study.loop.run_study`."""
        from rageval.app.study.loop import run_study

        return run_study(self, list(arguments))
