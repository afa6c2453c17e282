"""Where a study lives: in SQLite beside the MLflow store (``optuna.db``), named after the dataset
and the search space unless ``hydra.sweeper.study_name`` is set; its lock, held while a command
runs it; opening (or resuming) it, and finding the parent run an earlier part ran under."""

from __future__ import annotations

import contextlib
import hashlib
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from rageval.app.study.settings import PARENT_ATTR, SPLIT_KEYS, StudySettings, is_study
from rageval.app.study.space import search_space
from rageval.errors import ConfigError
from rageval.tracking.client import sqlite_file


def study_name(config, space: Mapping[str, Any], fixed: Sequence[str], s: StudySettings) -> str:
    """``hydra.sweeper.study_name``, else ``<dataset>-<hash of the space, fixed overrides,
    sampler and split>``: the same command resumes its study, another search space starts anew."""
    if s.study_name:
        return str(s.study_name)
    from omegaconf import OmegaConf

    ident = {
        "space": {k: repr(v) for k, v in sorted(space.items())},
        "fixed": sorted(fixed),
        "sampler": s.sampler,
        "split": [OmegaConf.select(config, k, default=None) for k in SPLIT_KEYS[1:]],
    }
    digest = hashlib.sha256(json.dumps(ident, sort_keys=True, default=str).encode()).hexdigest()
    dataset = OmegaConf.select(config, "dataset.name", default=None) or "rageval"
    return f"{dataset}-{digest[:10]}"


def default_storage(uri: str) -> str:
    """SQLite beside the MLflow store: ``sqlite:///.../mlflow.db`` -> ``.../optuna.db``; a file
    store's folder -> ``optuna.db`` beside it; a tracking server -> ``optuna.db`` at the
    project root."""
    db = sqlite_file(uri)
    if db is not None:
        return f"sqlite:///{db.with_name('optuna.db')}"
    if uri.startswith("file:") or "://" not in uri:
        folder = Path(uri.removeprefix("file://").removeprefix("file:"))
        return f"sqlite:///{folder.parent / 'optuna.db'}"
    from rageval.project import output_root

    return f"sqlite:///{output_root() / 'optuna.db'}"


def storage_of(config, s: StudySettings) -> str:
    """``hydra.sweeper.storage``, else :func:`default_storage` of the tracking URI."""
    from rageval.tracking.client import tracking_uri

    return (
        str(s.storage) if s.storage else default_storage(tracking_uri(config.mlflow.tracking_uri))
    )


def readable_storage(storage: str) -> None:
    """ConfigError (one line) when ``storage`` is not a database Optuna can read (a truncated or
    corrupt optuna.db): found before any trial or MLflow run starts."""
    import optuna

    from rageval.formats.redact import mask_url

    if (db := sqlite_file(storage)) is not None and not db.exists():
        return  # a new study's storage: Optuna creates it
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    try:
        optuna.get_all_study_summaries(storage)
    except Exception as err:  # SQLAlchemy's DatabaseError and kin: the file is not readable
        reason = str(err).splitlines()[0][:200]
        raise ConfigError(
            f"the study storage {mask_url(storage)} cannot be read ({type(err).__name__}: "
            f"{reason}); move it aside to start the study anew, or restore it from a backup, "
            "or give another one with hydra.sweeper.storage"
        ) from None


def existing_study(config, s: StudySettings, space, fixed):
    """The study this config would resume, or None when there is none yet."""
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    try:
        return optuna.load_study(
            study_name=study_name(config, space, fixed, s), storage=storage_of(config, s)
        )
    except KeyError:
        return None


def study_parent_id(config) -> str | None:
    """The parent run of an earlier part of this study, to carry on under (None: no study, or a
    new one; rageval.tracking.study.reopen_run checks the run is still there)."""
    if not is_study(config):
        return None
    try:
        s = StudySettings.of(config)
        space, fixed = search_space(s.params, list(config.hydra.overrides.task))
        study = existing_study(config, s, space, fixed)
    except Exception:  # a bad space is reported by the sweeper itself, with its message
        return None
    run_id = study.user_attrs.get(PARENT_ATTR) if study is not None else None
    return str(run_id) if run_id else None


def study_lock_path(storage: str, name: str) -> Path:
    """The lock file of study ``name`` in ``storage``: beside a SQLite file, else in the cache."""
    import hashlib

    safe = "".join(c if c.isalnum() or c in "._-" else "_" for c in name)
    db = sqlite_file(storage)
    if db is not None:
        return db.with_name(f"{db.name}.{safe}.lock")
    from rageval.app.config import default_cache_dir

    digest = hashlib.sha256(f"{storage}\n{name}".encode()).hexdigest()[:16]
    return Path(default_cache_dir()) / "locks" / f"study-{safe}-{digest}.lock"


@contextlib.contextmanager
def study_lock(storage: str, name: str):
    """Hold study ``name``'s lock while the block runs: a second command running the same study
    stops at once (ConfigError, exit 2) instead of failing the first one's live trials."""
    from filelock import FileLock, Timeout

    from rageval.formats.redact import mask_url

    path = study_lock_path(storage, name)
    path.parent.mkdir(parents=True, exist_ok=True)
    lock = FileLock(str(path), timeout=0)
    try:
        lock.acquire()
    except Timeout:
        raise ConfigError(
            f"study {name!r} in {mask_url(storage)} is being run by another command (it holds "
            f"{path}); wait for it to finish, or start another study with "
            "hydra.sweeper.study_name=NAME"
        ) from None
    try:
        yield path
    finally:
        lock.release()
