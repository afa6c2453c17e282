"""New SQLite MLflow stores for tests, copied from one made once per test session.

MLflow builds a new SQLite store by running every schema migration, about 1.5-2.5 s of CPU each
time; the suite makes a few dozen. The first call makes one store with this MLflow (so its schema
is always this version's) in the session's shared folder, under a lock (pytest-xdist workers share
the folder), and every call copies it: the same empty store, with the default experiment, that
MLflow would have made.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import tempfile
from pathlib import Path

_TEMPLATE = "mlflow-template.db"


def _template() -> Path:
    folder = Path(os.environ.get("RAGEVAL_TEST_SESSION_CACHE") or tempfile.gettempdir())
    path = folder / _TEMPLATE
    if path.is_file():
        return path
    with open(folder / f"{_TEMPLATE}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not path.is_file():
            from mlflow.tracking import MlflowClient

            tmp = folder / f".{_TEMPLATE}.{os.getpid()}.tmp"
            MlflowClient(tracking_uri=f"sqlite:///{tmp}").search_experiments()
            os.replace(tmp, path)
    return path


def new_store(path: Path) -> Path:
    """An empty MLflow store at ``path`` (left as it is if one is there already)."""
    path = Path(path)
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(_template(), path)
    return path


def store_uri(path: Path) -> str:
    """``sqlite:///path``, with an empty store made there first if there is none."""
    return f"sqlite:///{new_store(path)}"
