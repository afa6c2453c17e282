"""Command-line overrides checked before Hydra runs: every mistake is one line with a suggestion.

Hydra reports a mistyped key (``chunks=256``) or group option (``search=vectr``) with several
lines of its own text and exit code 1, and lists internal options (``base``) among the choices.
:func:`prepare_overrides` composes the config with the overrides first (the first value of each
sweep) and turns any failure into a :class:`~rageval.errors.ConfigError` (exit 2) naming the
override, what was wrong and the closest valid keys or options (difflib).

It also makes per-metric tolerances work as documented: ``gate.tolerances.recall@5=0.05`` and
``gate.tolerances.recall_at_5=0.05`` both become ``++gate.tolerances.recall_at_5=0.05`` (the key
is added to the empty mapping; ``@`` never reaches Hydra's lexer). A metric name that is not one
is an error listing the valid names. Slice tolerances (``gate.slices.source=adversarial.recall@5=
0.05``) become a mapping override Hydra parses (rageval.gate.slices.normalize_slice_override).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Sequence
from pathlib import Path

from rageval.errors import ConfigError

TOLERANCE = re.compile(r"^(\+{0,2})gate\.tolerances\.([^=]+)=(.*)$", re.DOTALL)
# options of a group that only other options build on, never chosen on the command line
INTERNAL_OPTIONS = ("base",)


def normalize_tolerances(overrides: Iterable[str]) -> list[str]:
    """``gate.tolerances.<metric>=x`` in either spelling -> ``++gate.tolerances.<mlflow_key>=x``;
    ``gate.slices.<slice>[.<metric>]=x`` -> a mapping merged into ``gate.slices``."""
    from rageval.gate.slices import normalize_slice_override
    from rageval.scoring.spec import MetricSpec

    out = []
    for text in overrides:
        m = TOLERANCE.match(text)
        if m:
            try:
                key = MetricSpec.parse(m.group(2)).mlflow_key
            except ConfigError as err:
                raise ConfigError(f"override {text!r}: {err}") from None
            text = f"++gate.tolerances.{key}={m.group(3)}"
        out.append(normalize_slice_override(text))
    return out


def group_options(conf_dir: str | Path | Sequence[str | Path], group: str) -> list[str]:
    """The options of a config group a user can choose (internal ones left out), from conf/ and
    any further config folders (a team's own ``hydra.searchpath``)."""
    dirs = [conf_dir] if isinstance(conf_dir, str | Path) else list(conf_dir)
    names = {p.stem for d in dirs for p in (Path(d) / group).glob("*.yaml")}
    return sorted(n for n in names if n not in INTERNAL_OPTIONS and not n.startswith("_"))


def searchpath_override(dirs: Sequence[Path]) -> str:
    """``hydra.searchpath=['file:///abs/dir', ...]``: config folders as one Hydra override."""
    entries = ",".join(repr(f"file://{Path(d).resolve()}") for d in dirs)
    return f"hydra.searchpath=[{entries}]"


def _suggest(word: str, choices: Sequence[str]) -> str:
    close = difflib.get_close_matches(word, list(choices), n=3, cutoff=0.6)
    return f"; did you mean {' or '.join(close)}?" if close else ""


def config_keys(node, prefix: str = "") -> list[str]:
    """Every dotted key of a composed config (mappings only; list items are not keys)."""
    from omegaconf import DictConfig

    out = []
    for key in node.keys() if isinstance(node, DictConfig) else ():
        path = f"{prefix}{key}"
        out.append(path)
        value = node._get_node(key)
        if isinstance(value, DictConfig):
            out += config_keys(value, path + ".")
    return out


def _is_override(arg: str) -> bool:
    return not arg.startswith("-") and "=" in arg


def prepare_overrides(
    overrides: Sequence[str],
    conf_dir: str | Path,
    groups: Sequence[str],
    config_name: str = "config",
) -> list[str]:
    """Normalise tolerance overrides and check every override against the composed config.

    Returns the overrides to hand to Hydra; raises ConfigError (one line, with a "did you mean")
    for an unknown key, an unknown group option or an override Hydra cannot parse. Arguments that
    are not overrides (``-m``, ``--cfg``) and ``hydra`` settings pass through unchecked.
    """
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.errors import HydraException

    from rageval.app.config import search_path_dirs

    overrides = normalize_tolerances(overrides)
    extra = search_path_dirs(overrides)
    if extra is None:  # options live where this check cannot look: Hydra itself checks them
        return overrides
    from rageval.app.config import config_dirs

    conf_dirs = [*(d for d in config_dirs() if d != Path(conf_dir).resolve()), Path(conf_dir)]
    conf_dirs += extra[0]
    parser = OverridesParser.create()
    # the folders --config-dir and hydra.searchpath add, as one override the check composes with
    firsts = [searchpath_override(extra[0])] if extra[0] else []
    for text in overrides:
        if not _is_override(text) or text.lstrip("+~").startswith("hydra"):
            continue
        try:
            parsed = parser.parse_override(text)
        except HydraException as err:
            reason = str(err).splitlines()[0]
            raise ConfigError(
                f"cannot parse override {text!r}: {reason}; write key=value (quote values "
                "holding spaces, '@', '=' or brackets)"
            ) from None
        key = parsed.key_or_group
        values = _sweep_values(parsed) if parsed.is_sweep_override() else None
        if key in groups:
            options = group_options(conf_dirs, key)
            for value in values or [parsed.get_value_element_as_str()]:
                if value not in options:
                    raise ConfigError(
                        f"override {text!r}: {key} has no option {value!r}"
                        f"{_suggest(value, options)} (options: {', '.join(options)})"
                    )
        if values == []:  # range(512, 128): nothing to run
            raise ConfigError(
                f"override {text!r}: the sweep is empty (range(start, stop, step) counts from "
                "start by step and stops below stop: write range(128, 1024, 128) and the like)"
            )
        first = values[0] if values else None
        prefix = text[: len(text) - len(text.lstrip("+~"))]
        firsts.append(f"{prefix}{key}={first}" if first is not None else text)
    _compose_check(firsts, conf_dir, groups, config_name)
    return overrides


def _sweep_values(parsed) -> list[str]:
    """The values of a sweep override; an optimiser's interval (hydra/sweeper=optuna) is checked
    at its lower end."""
    from hydra.errors import HydraException

    try:
        return list(parsed.sweep_string_iterator())
    except HydraException:
        return [str(parsed.value().start)]


def _compose_check(
    overrides: list[str], conf_dir: str | Path, groups: Sequence[str], config_name: str
) -> None:
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra
    from hydra.errors import HydraException
    from omegaconf.errors import OmegaConfBaseException

    from rageval.app.config import register_resolvers

    register_resolvers()  # resolvers and the config schema conf/ extends
    was_initialized = GlobalHydra.instance().is_initialized()
    if was_initialized:  # keep a caller's Hydra state: check without touching it
        return
    try:
        with initialize_config_dir(config_dir=str(Path(conf_dir).resolve()), version_base="1.3"):
            compose(config_name, overrides=overrides)
            return
    except (HydraException, OmegaConfBaseException) as err:
        failure = err
    with initialize_config_dir(config_dir=str(Path(conf_dir).resolve()), version_base="1.3"):
        base = compose(config_name, overrides=[o for o in overrides if o.split("=")[0] in groups])
    explained = explain_key(failure, overrides, config_keys(base), groups)
    if explained is not None:
        raise explained from None
    from rageval.app.config import describe_error

    # a bad value: name the override Hydra names, else all of them
    named = re.search(r"Error merging override (\S+)", str(failure))
    culprit = named.group(1) if named else " ".join(overrides)
    raise ConfigError(f"bad override ({culprit}): {describe_error(failure)}") from None


def explain(
    err: Exception, overrides: Sequence[str], keys: Sequence[str], groups: Sequence[str]
) -> ConfigError:
    """One line for a Hydra composition error: the override, what was wrong, the closest keys."""
    explained = explain_key(err, overrides, keys, groups)
    if explained is not None:
        return explained
    from rageval.app.config import describe_error

    return ConfigError(f"bad override ({' '.join(overrides)}): {describe_error(err)}")


def explain_key(
    err: Exception, overrides: Sequence[str], keys: Sequence[str], groups: Sequence[str]
) -> ConfigError | None:
    """The one-line error for an unknown key, with the closest keys; None for other errors."""
    text = str(err)
    match = re.search(r"Could not (?:override|append to config\.) '([^']+)'", text) or re.search(
        r"Key '([^']+)' is not in struct", text
    )
    bad = match.group(1) if match else None
    culprit = next((o for o in overrides if bad and o.lstrip("+~").split("=")[0] == bad), None)
    if bad and culprit:
        parent = bad.rsplit(".", 1)[0] + "." if "." in bad else ""
        siblings = [k for k in keys if k.startswith(parent) and "." not in k[len(parent) :]]
        hint = _suggest(bad, list(keys) + list(groups)) or (
            f" (keys under {parent[:-1]}: {', '.join(k[len(parent) :] for k in siblings)})"
            if parent and siblings
            else ""
        )
        return ConfigError(
            f"override {culprit!r}: unknown config key {bad!r}{hint}; "
            f"to add a new key write +{culprit.lstrip('+~')}"
        )
    return None
