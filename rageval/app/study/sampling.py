"""What a trial draws: the Optuna sampler of the settings, and the keys a trial samples, only those
its own search mode reads (a vector trial draws no BM25 k1/b or rrf_k)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rageval.app.study.settings import SAMPLERS, StudySettings
from rageval.config_schema import override_key
from rageval.errors import ConfigError


def build_sampler(s: StudySettings, space: Mapping[str, Any], done: int = 0):
    """The sampler of ``s``; ``done`` trials already in the study shift its seed, so a resumed
    study does not draw its first trials again. Not the grid sampler's: its seed shuffles the
    grid, and a trial's stored grid id means a point only under the same shuffle (a shifted
    seed made a resumed grid study run a visited point and skip a missing one)."""
    import optuna

    args = dict(s.sampler or {})
    name = args.pop("name", "tpe")
    if done and isinstance(args.get("seed"), int) and name != "grid":
        args["seed"] += done
    cls = getattr(optuna.samplers, SAMPLERS[name])
    if name == "grid":
        from optuna.distributions import CategoricalDistribution

        grid = {}
        for key, dist in space.items():
            if isinstance(dist, CategoricalDistribution):
                grid[key] = list(dist.choices)
            elif getattr(dist, "step", None):
                n = int(round((dist.high - dist.low) / dist.step))
                grid[key] = [dist.low + i * dist.step for i in range(n + 1)]
            else:
                raise ConfigError(
                    f"search space {key}: the grid sampler needs choice() or range(), not an "
                    "interval"
                )
        return cls(grid, **args)
    try:
        return cls(**args)
    except TypeError as err:
        raise ConfigError(f"hydra.sweeper.sampler ({name}): {err}") from None


def grid_size(space: Mapping[str, Any]) -> int:
    """How many points a grid over ``space`` has: a grid study's budget (each point once)."""
    n = 1
    for dist in space.values():
        choices = getattr(dist, "choices", None)
        n *= len(choices) if choices else int(round((dist.high - dist.low) / dist.step)) + 1
    return n


# the search modes whose reading of the search keys rageval knows (the local and Qdrant
# backends); another mode (Azure's semantic, a plug-in's) is taken to read every key
KNOWN_MODES = ("vector", "bm25", "hybrid")


def reads(key: str, mode: str | None, fusion: str | None) -> bool:
    """Whether a trial whose search ``mode`` fuses with ``fusion`` reads ``key``: fusion and
    candidate depth only in hybrid search (rrf_k with rrf fusion, weights with weighted), BM25's
    knobs only in bm25 and hybrid search; every other key, and every key of a mode outside
    :data:`KNOWN_MODES`, is read."""
    if mode not in KNOWN_MODES:
        return True
    if key in ("search.fusion", "search.candidate_depth"):
        return mode == "hybrid"
    if key == "search.rrf_k":
        return mode == "hybrid" and fusion in (None, "rrf")
    if key == "search.weights":
        return mode == "hybrid" and fusion in (None, "weighted")
    if key.startswith("search.bm25."):
        return mode in ("bm25", "hybrid")
    return True


def _first(key: str) -> int:
    """Sampling order: the mode first, then the fusion, then the keys they decide on."""
    return {"search": 0, "search.mode": 0, "search.fusion": 1}.get(key, 2)


def fixed_values(fixed: Sequence[str], config=None) -> dict[str, str | None]:
    """What a trial's mode and fusion are when the space does not draw them: the fixed
    overrides (``search=bm25``, ``search.mode=...``, ``search.fusion=...``), else the config's
    own ``search.mode`` and ``search.fusion``."""
    from omegaconf import OmegaConf

    lines = {}
    for line in fixed:
        key, value = override_key(line), line.partition("=")[2]
        lines[key.strip()] = value.strip()

    def default(key: str) -> str | None:
        found = OmegaConf.select(config, key, default=None) if config is not None else None
        return None if found is None else str(found)

    mode = lines.get("search.mode") or lines.get("search") or default("search.mode")
    return {
        "search.mode": mode,
        "search.fusion": lines.get("search.fusion") or default("search.fusion"),
    }


def ask(study, space: Mapping[str, Any], fixed: Mapping[str, str | None]):
    """A new trial that samples only the keys its own search mode reads (:func:`reads`; ``fixed``:
    :func:`fixed_values`): a vector trial draws no BM25 k1/b or rrf_k, so two trials that differ
    only in keys their mode ignores are one configuration, and the second is not run again."""
    trial = study.ask()
    drawn: dict[str, Any] = {}
    for key in sorted(space, key=_first):  # stable: the space's order otherwise
        mode = drawn.get("search.mode", drawn.get("search", fixed.get("search.mode")))
        fusion = drawn.get("search.fusion", fixed.get("search.fusion"))
        if reads(key, None if mode is None else str(mode), fusion):
            drawn[key] = _suggest(trial, key, space[key])
    return trial


def unread(space: Mapping[str, Any], fixed: Mapping[str, str | None]) -> list[str]:
    """The searched keys no trial can read, whatever it draws (``search.rrf_k`` with
    ``search=bm25`` fixed): no trial draws them, so searching them is a mistake to name."""

    def options(keys: Sequence[str], otherwise: str | None) -> list:
        for key in keys:  # drawn: any of its choices (a non-categorical draw: anything)
            if key in space:
                return list(getattr(space[key], "choices", None) or [None])
        return [otherwise]

    modes = options(("search.mode", "search"), fixed.get("search.mode"))
    fusions = options(("search.fusion",), fixed.get("search.fusion"))
    return [
        k
        for k in space
        if not any(reads(k, None if m is None else str(m), f) for m in modes for f in fusions)
    ]


def unread_lines(space: Mapping[str, Any], fixed: Mapping[str, str | None]) -> list[str]:
    """One line per searched key no trial reads (:func:`unread`), naming the modes it can draw."""
    drawn = next((k for k in ("search.mode", "search") if k in space), None)
    modes = (
        "search modes " + ", ".join(map(str, space[drawn].choices))
        if drawn
        else f"search mode {fixed['search.mode']}"
    )
    fusion = "drawn" if "search.fusion" in space else fixed["search.fusion"]
    return [
        f"search space: {key} is read by no trial ({modes}; fusion {fusion}); it is not searched"
        for key in unread(space, fixed)
    ]


def _suggest(trial, key: str, dist):
    from optuna.distributions import CategoricalDistribution, IntDistribution

    if isinstance(dist, CategoricalDistribution):
        return trial.suggest_categorical(key, list(dist.choices))
    if isinstance(dist, IntDistribution):
        return trial.suggest_int(key, dist.low, dist.high, step=dist.step, log=dist.log)
    return trial.suggest_float(key, dist.low, dist.high, step=dist.step, log=dist.log)
