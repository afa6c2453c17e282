"""The one place an override line (``key=value``, ``+key=v``, ``~key``, ``key=a,b``) is parsed.

:func:`parse` reads a line once, with Hydra's own parser, into an :class:`Override`: its key,
its prefix (``+``, ``++``, ``~`` or none), its value text, the values of a sweep and whether it
carries a secret (rageval.formats.redact's rules). The rest of rageval/app asks this value instead
of splitting the text again; the core reads stored lines back with
:func:`rageval.config_schema.override_key`. :func:`apply_to_config` lays parsed overrides on a
composed config with OmegaConf's public API, as Hydra does when it composes.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from rageval.formats.redact import override_secrets

PREFIXES = ("++", "+", "~")


def prefix_of(text: str) -> str:
    """The prefix an override line is written with: ``++``, ``+``, ``~`` or ``""``."""
    return text[: len(text) - len(text.lstrip("+~"))]


def is_override(arg: str) -> bool:
    """A command-line argument that is an override line (not a flag such as ``-m``)."""
    return not arg.startswith("-") and "=" in arg


@dataclass(frozen=True)
class Override:
    """One override line, parsed."""

    line: str  # as given
    key: str  # the config key or group, without prefix or package (``search``, ``hydra/sweeper``)
    prefix: str  # "", "+", "++" or "~"
    value: str | None  # the value text as written (None for ``~key``)
    values: tuple[str, ...]  # each value of a sweep (the first of an optimiser's interval)
    is_sweep: bool
    is_secret: bool
    # Hydra's own parse (for its typed value and sweep iterators); not part of the value
    hydra: Any = field(default=None, compare=False, repr=False)

    @property
    def is_interval(self) -> bool:
        """An optimiser's search range (``interval(0.1, 1)``): its values cannot be listed."""
        return self.hydra is not None and self.hydra.is_interval_sweep()

    def with_value(self, value: str) -> str:
        """This override's line with another value (one of a sweep's): ``{prefix}{key}=value``
        (a package, ``key@pkg``, kept)."""
        element = self.hydra.get_key_element() if self.hydra is not None else self.prefix + self.key
        return f"{element}={value}"


def parse(text: str) -> Override:
    """``text`` parsed by Hydra's override grammar; hydra.errors.HydraException when it is not
    an override Hydra can read."""
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.errors import HydraException

    o = OverridesParser.create().parse_override(text)
    values: tuple[str, ...]
    if o.is_sweep_override():
        try:
            values = tuple(o.sweep_string_iterator())
        except HydraException:  # an interval (hydra/sweeper=optuna): checked at its lower end
            values = (str(o.value().start),)
    else:
        values = (o.get_value_element_as_str(),) if o.value() is not None else ()
    _, sep, value = text.partition("=")
    return Override(
        line=text,
        key=o.key_or_group,
        prefix=prefix_of(text),
        value=value if sep else None,
        values=values,
        is_sweep=o.is_sweep_override(),
        is_secret=bool(override_secrets([text])),
        hydra=o,
    )


def parse_all(lines: Iterable[str]) -> list[Override]:
    """Every line of ``lines`` parsed (:func:`parse`)."""
    return [parse(line) for line in lines]


def apply_to_config(overrides: Iterable[Override], cfg) -> None:
    """Lay ``overrides`` (no sweeps, no groups) on the composed config ``cfg`` in place, with
    Hydra's rules and messages for each prefix (hydra.errors.ConfigCompositionException on a
    key that cannot be set, added or deleted)."""
    import sys
    from textwrap import dedent

    from hydra.errors import ConfigCompositionException
    from omegaconf import OmegaConf, open_dict
    from omegaconf.errors import ConfigAttributeError, ConfigKeyError, OmegaConfBaseException

    for override in overrides:
        o = override.hydra
        if o.package is not None:
            raise ConfigCompositionException(
                f"Override {o.input_line} looks like a config group override, but config group "
                f"'{o.key_or_group}' does not exist."
            )
        key, value = o.key_or_group, o.value()
        try:
            if o.is_delete():
                config_val = OmegaConf.select(cfg, key, throw_on_missing=False)
                if config_val is None:
                    raise ConfigCompositionException(
                        f"Could not delete from config. '{key}' does not exist."
                    )
                if value is not None and value != config_val:
                    raise ConfigCompositionException(
                        f"Could not delete from config. The value of '{key}' is {config_val} "
                        f"and not {value}."
                    )
                parent, _, leaf = key.rpartition(".")
                with open_dict(cfg):
                    del (OmegaConf.select(cfg, parent) if parent else cfg)[leaf]
            elif o.is_add():
                if OmegaConf.select(cfg, key, throw_on_missing=False) is None or isinstance(
                    value, dict | list
                ):
                    OmegaConf.update(cfg, key, value, merge=True, force_add=True)
                else:
                    raise ConfigCompositionException(
                        dedent(
                            f"""\
                        Could not append to config. An item is already at '{key}'.
                        Either remove + prefix: '{o.input_line[1:]}'
                        Or add a second + to add or override '{key}': '+{o.input_line}'
                        """
                        )
                    )
            elif o.is_force_add():
                OmegaConf.update(cfg, key, value, merge=True, force_add=True)
            else:
                try:
                    OmegaConf.update(cfg, key, value, merge=True)
                except (ConfigAttributeError, ConfigKeyError) as ex:
                    raise ConfigCompositionException(
                        f"Could not override '{key}'.\nTo append to your config use +{o.input_line}"
                    ) from ex
        except OmegaConfBaseException as ex:
            raise ConfigCompositionException(
                f"Error merging override {o.input_line}"
            ).with_traceback(sys.exc_info()[2]) from ex
