"""The project's config folder, searched before rageval's packaged configs.

Hydra asks every installed search-path plugin; this one acts only when the primary config folder
is rageval's own (so another Hydra application in the same environment is left alone). The
project's ``config.yaml``, when it has one, is then found first and starts from ``rageval`` (the
packaged defaults); its group folders add options beside the packaged ones.
"""

from __future__ import annotations

from hydra.core.config_search_path import ConfigSearchPath, SearchPathQuery
from hydra.plugins.search_path_plugin import SearchPathPlugin


class RagevalProjectSearchPath(SearchPathPlugin):
    def manipulate_search_path(self, search_path: ConfigSearchPath) -> None:
        from pathlib import Path

        from rageval.app.config import CONF_DIR, project_config_dir

        main = [e for e in search_path.get_path() if e.provider == "main"]
        if not main or main[0].path is None:
            return
        path = main[0].path.removeprefix("file://")
        if path.startswith("pkg://") or Path(path).resolve() != CONF_DIR:
            return
        config_dir = project_config_dir()
        if config_dir is not None:
            search_path.prepend(
                "rageval-project",
                f"file://{config_dir}",
                anchor=SearchPathQuery(provider="main"),
            )
