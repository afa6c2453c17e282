"""The build step that makes the repository's ``conf/`` and ``golden/`` package data
(pyproject.toml's ``[tool.setuptools] cmdclass`` names it).

They are the single sources of the packaged configs and the bundled demo, at the repository's top
level where a rageval project keeps them (rageval.yaml beside them); a wheel carries them inside
the package as ``rageval/conf`` and ``rageval/demo``, so an installed rageval runs the demo from any
folder. An editable install reads them where they are (rageval.app.config.packaged). The sdist
holds both folders and this file (setuptools-scm adds every file git tracks).
"""

import shutil
from pathlib import Path

from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parents[1]
# the repository's folder -> its place in the package
DATA = {"conf": "conf", "golden": "demo"}


class BuildWithData(build_py):
    """setuptools' build_py, then the data folders copied into the built package."""

    def run(self) -> None:
        super().run()
        if self.editable_mode:  # the package is the source tree: packaged() finds them there
            return
        for source, name in DATA.items():
            target = Path(self.build_lib, "rageval", name)
            shutil.rmtree(target, ignore_errors=True)
            shutil.copytree(
                ROOT / source, target, ignore=shutil.ignore_patterns("__pycache__", "*.pyc")
            )
