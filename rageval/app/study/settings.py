"""A tuning study's settings (``hydra.sweeper``, conf/hydra/sweeper/optuna.yaml, read as
:class:`StudySettings`), the Optuna samplers it may name, and the names the study, the sweep's
parent run and ``rageval promote`` share (the outcome file, the final runs' folders)."""

from __future__ import annotations

from dataclasses import dataclass, field
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
