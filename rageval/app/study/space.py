"""A study's search space: ``hydra.sweeper.params`` then the command line's sweeps, in Hydra's
syntax (``choice``, ``range`` (stop excluded, as everywhere in Hydra), ``interval``,
``tag(log, interval(...))``), as Optuna distributions; plain overrides are fixed for every
trial."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rageval.app.study.settings import SPLIT_KEYS
from rageval.errors import ConfigError


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
