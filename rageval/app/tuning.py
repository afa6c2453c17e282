"""A tuning study's settings, search space, storage and outcome: what the sweep's parent run,
``rageval promote`` and the study itself (:mod:`rageval.app.study`) share.

``hydra.sweeper`` (conf/hydra/sweeper/optuna.yaml) is read as :class:`StudySettings`; the search
space is ``hydra.sweeper.params`` then the command line's sweeps, in Hydra's syntax; the study
lives in SQLite beside the MLflow store; ``study.json`` in the sweep folder is its outcome, printed
after the leaderboard and logged on the parent run.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rageval.errors import ConfigError, did_you_mean

SWEEPER_TARGET = "hydra_plugins.rageval_optuna.sweeper.OptunaSweeper"
STUDY_FILE = "study.json"
# Where the final runs (best and baseline on every golden query) are written in the sweep folder.
FINAL_DIRS = {"best": "final-best", "baseline": "final-baseline"}
SPLIT_KEYS = ("split", "holdout_fraction", "split_seed")
# hydra.sweeper.sampler.name -> the optuna.samplers class; the node's other keys are its arguments
SAMPLERS = {
    "tpe": "TPESampler",
    "random": "RandomSampler",
    "grid": "GridSampler",
    "cmaes": "CmaEsSampler",
    "qmc": "QMCSampler",
    "gp": "GPSampler",
    "bruteforce": "BruteForceSampler",
}
PARENT_ATTR = "mlflow_parent_run_id"


@dataclass(frozen=True)
class StudySettings:
    """``hydra.sweeper`` as plain data (conf/hydra/sweeper/optuna.yaml documents each key)."""

    n_trials: int = 20
    n_jobs: int = 1
    storage: str | None = None
    study_name: str | None = None
    sampler: dict[str, Any] = field(default_factory=lambda: {"name": "tpe"})
    params: dict[str, str] = field(default_factory=dict)
    baseline: str = "golden/baseline.json"

    @classmethod
    def of(cls, config) -> StudySettings:
        """The settings of ``config.hydra.sweeper``, checked."""
        from omegaconf import OmegaConf

        node = OmegaConf.to_container(config.hydra.sweeper, resolve=True)
        node.pop("_target_", None)
        known = {f for f in cls.__dataclass_fields__}
        unknown = sorted(set(node) - known)
        if unknown:
            raise ConfigError(
                f"hydra.sweeper has no key {unknown[0]!r} (keys: {', '.join(sorted(known))})"
            )
        s = cls(
            **{k: v for k, v in node.items() if v is not None or k in ("storage", "study_name")}
        )
        for key in ("n_trials", "n_jobs"):
            v = getattr(s, key)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ConfigError(f"hydra.sweeper.{key} must be an integer >= 1, got {v!r}")
        name = (s.sampler or {}).get("name", "tpe")
        if name not in SAMPLERS:
            raise ConfigError(
                f"hydra.sweeper.sampler.name must be one of {', '.join(SAMPLERS)}, got {name!r}"
            )
        return s


def readable_storage(storage: str) -> None:
    """ConfigError (one line) when ``storage`` is not a database Optuna can read (a truncated or
    corrupt optuna.db): found before any trial or MLflow run starts."""
    import optuna

    from rageval.formats.redact import mask_url

    if storage.startswith("sqlite:///") and not Path(storage[len("sqlite:///") :]).exists():
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


def sampler_args(name: str) -> list[str]:
    """The keyword arguments of the Optuna sampler ``name`` (grid's space is built from ours)."""
    import inspect

    import optuna

    cls = getattr(optuna.samplers, SAMPLERS[name])
    skip = {"self", "search_space"} if name == "grid" else {"self"}
    return [p for p in inspect.signature(cls.__init__).parameters if p not in skip]


def check_sampler(s: StudySettings) -> None:
    """The sampler's arguments (``hydra.sweeper.sampler`` minus ``name``) against the Optuna
    sampler's own: a misspelt one is a ConfigError naming the closest, before any trial runs."""
    args = dict(s.sampler or {})
    name = args.pop("name", "tpe")
    accepted = sampler_args(name)
    for arg in args:
        if arg not in accepted:
            raise ConfigError(
                f"hydra.sweeper.sampler.{arg}: the {name} sampler ({SAMPLERS[name]}) has no "
                f"argument {arg!r}{did_you_mean(arg, accepted, n=2, clause=True)} (its arguments: "
                f"{', '.join(accepted)}); drop it (a conf file's key: ~hydra.sweeper.sampler.{arg})"
            )


def is_study(config) -> bool:
    """True when ``config`` runs rageval's Optuna sweeper (hydra/sweeper=optuna...)."""
    from omegaconf import OmegaConf

    return OmegaConf.select(config, "hydra.sweeper._target_", default=None) == SWEEPER_TARGET


# ---------------------------------------------------------------------------- the search space


def _distribution(override):
    """The Optuna distribution of a sweep override, or None for a plain (fixed) value."""
    from hydra.core.override_parser.types import ChoiceSweep, IntervalSweep, RangeSweep, Transformer
    from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution

    if not override.is_sweep_override():
        return None
    value = override.value()
    key = override.get_key_element()
    if isinstance(value, ChoiceSweep) or (isinstance(value, RangeSweep) and value.shuffle):
        choices = list(override.sweep_iterator(transformer=Transformer.encode))
        return CategoricalDistribution(choices)
    if isinstance(value, RangeSweep):
        start, stop, step = value.start, value.stop, value.step
        values = list(override.sweep_iterator())
        if not values:
            raise ConfigError(
                f"search space {override.input_line!r}: range({start}, {stop}, {step}) is empty "
                "(it counts from start by step and stops below stop, as everywhere in Hydra)"
            )
        if all(isinstance(x, int) for x in (start, stop, step)):
            return IntDistribution(int(values[0]), int(values[-1]), step=int(step))
        return FloatDistribution(float(values[0]), float(values[-1]), step=float(step))
    if isinstance(value, IntervalSweep):
        log = "log" in value.tags
        if not value.start < value.end:
            raise ConfigError(
                f"search space {override.input_line!r}: an interval needs its low end first and "
                f"below its high end, got interval({value.start}, {value.end}); write "
                f"interval({min(value.start, value.end)}, {max(value.start, value.end)})"
            )
        if log and value.start <= 0:
            raise ConfigError(
                f"search space {override.input_line!r}: a log-uniform interval needs a low end "
                f"above 0, got {value.start}"
            )
        if isinstance(value.start, int) and isinstance(value.end, int):
            return IntDistribution(int(value.start), int(value.end), log=log)
        return FloatDistribution(float(value.start), float(value.end), log=log)
    raise ConfigError(f"search space {key}: {override.input_line!r} is not a sweep Optuna can use")


def search_space(
    params: Mapping[str, Any], arguments: Sequence[str]
) -> tuple[dict[str, Any], list[str]]:
    """``hydra.sweeper.params`` then the command line's overrides (a later one replaces an
    earlier one of the same key): the distributions by key, and the fixed override lines."""
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.errors import HydraException

    lines = [f"{k}={v}" for k, v in params.items() if v is not None] + list(arguments)
    parser = OverridesParser.create()
    space: dict[str, Any] = {}
    fixed: dict[str, str] = {}
    for line in lines:
        try:
            o = parser.parse_override(line)
        except HydraException as err:
            raise ConfigError(
                f"search space: cannot parse {line!r}: {str(err).splitlines()[0]}"
            ) from None
        key = o.get_key_element()
        dist = _distribution(o)
        space.pop(key, None)
        fixed.pop(key, None)
        if dist is None:
            fixed[key] = line
        else:
            space[key] = dist
    for key in SPLIT_KEYS:
        if key in space:
            raise ConfigError(
                f"search space: {key} cannot be searched; a study tunes on split=tune and proves "
                "its best on the holdout (set holdout_fraction and split_seed to one value)"
            )
    if "split" in fixed and fixed["split"].split("=", 1)[1].strip() != "tune":
        raise ConfigError(
            f"{fixed['split']}: a study tunes on split=tune and scores its best configuration on "
            "the holdout itself; leave split out"
        )
    fixed.pop("split", None)
    _check_bounds(space)
    if not space:
        raise ConfigError(
            "the study has an empty search space: set hydra.sweeper.params (see "
            "conf/hydra/sweeper/optuna.yaml) or give sweeps like chunk=choice(128,256,512)"
        )
    return space, list(fixed.values())


def _check_bounds(space: Mapping[str, Any]) -> None:
    """A searched knob whose range leaves what it can take (BM25's b above 1) fails here, not in
    every trial that draws such a value."""
    from rageval.retrieval.local.lexical import BM25_BOUNDS, check_bm25_param

    for name in BM25_BOUNDS:
        dist = space.get(f"search.bm25.{name}")
        ends = (getattr(dist, "choices", None) or (dist.low, dist.high)) if dist else ()
        for value in ends:
            try:
                check_bm25_param(name, value)
            except ConfigError as err:
                raise ConfigError(f"search space: {err}") from None


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
    if uri.startswith("sqlite:///"):
        return f"sqlite:///{Path(uri[len('sqlite:///') :]).with_name('optuna.db')}"
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


def study_lock_path(storage: str, name: str) -> Path:
    """The lock file of study ``name`` in ``storage``: beside a SQLite file, else in the cache."""
    import hashlib

    safe = "".join(c if c.isalnum() or c in "._-" else "_" for c in name)
    if storage.startswith("sqlite:///"):
        db = Path(storage[len("sqlite:///") :])
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


# ---------------------------------------------------------------------------- after the sweep


def load_outcome(sweep_dir: Path) -> dict[str, Any] | None:
    """study.json of a sweep folder (None: the sweep was no study)."""
    f = Path(sweep_dir) / STUDY_FILE
    return json.loads(f.read_text()) if f.is_file() else None


def print_outcome(outcome: Mapping[str, Any]) -> None:
    """The study's block after the leaderboard."""
    from rageval.report.study import StudySummary

    print()
    if outcome.get("error"):
        print(f"rageval: error: {outcome['error']}", file=sys.stderr)
        return
    print(StudySummary.from_dict(outcome["summary"]).console())
    print(f"study {outcome['study']!r} in {outcome['storage']} (run the same command to resume)")
