"""The one pre-flight check of a command line: every mistake is one line with a suggestion.

:func:`preflight` answers every caller (a run, a sweep, a tuning study, ``rageval check``,
``rageval embed``) before Hydra starts, each override parsed once (rageval/app/override.py):

- :func:`prepare_overrides`: Hydra reports a mistyped key (``chunks=256``) or group option
  (``search=vectr``) with several lines of its own text and exit code 1, and lists internal
  options (``base``) among the choices. The config is composed with the overrides (the first
  value of each sweep) and any failure becomes a :class:`~rageval.errors.ConfigError` (exit 2)
  naming the override, what was wrong and the closest valid keys or options.
- :func:`check_overrides`: every other value of a sweep, against that same composed config.
- :func:`check_study`: a tuning study's settings and search space (hydra/sweeper=optuna).

It also makes per-metric tolerances work as documented: ``gate.tolerances.recall@5=0.05`` and
``gate.tolerances.recall_at_5=0.05`` both become ``++gate.tolerances.recall_at_5=0.05`` (the key
is added to the empty mapping; ``@`` never reaches Hydra's lexer). A metric name that is not one
is an error listing the valid names. Slice tolerances (``gate.slices.source=adversarial.recall@5=
0.05``) become a mapping override Hydra parses (rageval.gate.slices.normalize_slice_override).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from pathlib import Path

from rageval.app.override import is_override, parse, prefix_of
from rageval.config_schema import override_key
from rageval.errors import ConfigError, did_you_mean

TOLERANCE = re.compile(r"^(\+{0,2})gate\.tolerances\.([^=]+)=(.*)$", re.DOTALL)
# options of a group that only other options build on, never chosen on the command line
INTERNAL_OPTIONS = ("base",)
# Hydra flags after which the command line is Hydra's business (help, --cfg, another config dir).
MULTIRUN_FLAGS = ("-m", "--multirun")


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


def preflight(
    argv: Sequence[str],
    conf_dir: str | Path | None = None,
    groups: Sequence[str] | None = None,
    one_config: bool = False,
) -> list[str]:
    """The one check of a command line before Hydra starts, for every caller: the overrides
    normalised (:func:`normalize_tolerances`) and checked against the config composed once with
    them (:func:`prepare_overrides`), every value of a sweep (:func:`check_overrides`) and a
    tuning study's settings (:func:`check_study`). ``one_config`` (``rageval check``): a sweep
    is an error. Returns the overrides to hand to Hydra; ConfigError (exit 2) otherwise."""
    from rageval.app.config import CONF_DIR, GROUPS

    conf_dir = CONF_DIR if conf_dir is None else conf_dir
    groups = GROUPS if groups is None else groups
    if one_config and not any(is_override(a) for a in argv):
        # nothing to check: the caller composes conf/ itself, and says what fails there
        return list(argv)
    argv, cfg = _prepare(argv, conf_dir, groups)
    if one_config:
        if any(o.is_sweep for o in (parse(a) for a in argv if is_override(a))):
            raise ConfigError(
                "rageval check re-runs one configuration: give one value per override, not a sweep"
            )
        return argv
    check_overrides(argv, cfg)
    check_study(argv, conf_dir)
    return argv


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
    return _prepare(overrides, conf_dir, groups, config_name)[0]


def _prepare(
    overrides: Sequence[str],
    conf_dir: str | Path,
    groups: Sequence[str],
    config_name: str = "config",
):
    """:func:`prepare_overrides`, and the config it composed (the first job's without Hydra's
    own settings; None when it could not compose here)."""
    from hydra.errors import HydraException

    from rageval.app.config import search_path_dirs

    overrides = normalize_tolerances(overrides)
    extra = search_path_dirs(overrides)
    if extra is None:  # options live where this check cannot look: Hydra itself checks them
        return overrides, None
    from rageval.app.config import config_dirs

    conf_dirs = [*(d for d in config_dirs() if d != Path(conf_dir).resolve()), Path(conf_dir)]
    conf_dirs += extra[0]
    # the folders --config-dir and hydra.searchpath add, as one override the check composes with
    firsts = [searchpath_override(extra[0])] if extra[0] else []
    for text in overrides:
        if not is_override(text) or override_key(text).startswith("hydra"):
            continue
        try:
            parsed = parse(text)
        except HydraException as err:
            reason = str(err).splitlines()[0]
            raise ConfigError(
                f"cannot parse override {text!r}: {reason}; write key=value (quote values "
                "holding spaces, '@', '=' or brackets)"
            ) from None
        key = parsed.key
        values = list(parsed.values) if parsed.is_sweep else None
        if key in groups:
            options = group_options(conf_dirs, key)
            for value in values or [parsed.hydra.get_value_element_as_str()]:
                if value not in options:
                    hint = did_you_mean(value, options, n=3, clause=True)
                    raise ConfigError(
                        f"override {text!r}: {key} has no option {value!r}"
                        f"{hint} (options: {', '.join(options)})"
                    )
        if values == []:  # range(512, 128): nothing to run
            raise ConfigError(
                f"override {text!r}: the sweep is empty (range(start, stop, step) counts from "
                "start by step and stops below stop: write range(128, 1024, 128) and the like)"
            )
        first = values[0] if values else None
        firsts.append(f"{parsed.prefix}{key}={first}" if first is not None else text)
    cfg = _compose_check(firsts, conf_dir, groups, config_name)
    return overrides, cfg


def _compose_check(
    overrides: list[str], conf_dir: str | Path, groups: Sequence[str], config_name: str
):
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra
    from hydra.errors import HydraException
    from omegaconf.errors import OmegaConfBaseException

    from rageval.app.config import register_resolvers

    register_resolvers()  # resolvers and the config schema conf/ extends
    was_initialized = GlobalHydra.instance().is_initialized()
    if was_initialized:  # keep a caller's Hydra state: check without touching it
        return None
    from yaml import YAMLError

    from rageval.app.config import config_file_error

    try:
        with initialize_config_dir(config_dir=str(Path(conf_dir).resolve()), version_base="1.3"):
            return compose(config_name, overrides=overrides)
    except (HydraException, OmegaConfBaseException) as err:
        failure = err
    except YAMLError as err:  # a config file is not YAML
        raise config_file_error(err) from None
    try:
        with initialize_config_dir(config_dir=str(Path(conf_dir).resolve()), version_base="1.3"):
            base = compose(config_name, overrides=[o for o in overrides if _group_line(o, groups)])
    except (HydraException, OmegaConfBaseException, YAMLError) as err:  # the files themselves
        from rageval.app.config import describe_error

        raise config_file_error(err) or ConfigError(
            f"the config does not compose: {describe_error(err)}"
        ) from None
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
    culprit = next((o for o in overrides if bad and override_key(o) == bad), None)
    if bad and culprit:
        parent = bad.rsplit(".", 1)[0] + "." if "." in bad else ""
        siblings = [k for k in keys if k.startswith(parent) and "." not in k[len(parent) :]]
        hint = did_you_mean(bad, [*keys, *groups], n=3, clause=True) or (
            f" (keys under {parent[:-1]}: {', '.join(k[len(parent) :] for k in siblings)})"
            if parent and siblings
            else ""
        )
        return ConfigError(
            f"override {culprit!r}: unknown config key {bad!r}{hint}; "
            f"to add a new key write +{_unprefixed(culprit)}"
        )
    return None


def _unprefixed(line: str) -> str:
    """An override line without its ``+``/``++``/``~`` prefix."""
    return line[len(prefix_of(line)) :]


def _group_line(line: str, groups: Sequence[str]) -> bool:
    """A line choosing a group's option, as written (``search=bm25``, not ``+search=bm25``)."""
    return line.split("=")[0] in groups


def check_overrides(argv: Sequence[str], cfg=None) -> None:
    """Check every value of every sweep override in ``argv`` (the others at their first value):
    Hydra's schema and group checks fail here, as one ConfigError, before a job starts.
    Command lines with other Hydra flags (--help, --cfg, --config-dir...) are left to Hydra.

    The first job's config (``cfg``: the one :func:`prepare_overrides` composed, else composed
    here); the other values of a sweep are checked against it (a group option's file, a value's
    type), and composed only when that cannot tell."""
    from hydra.errors import HydraException

    from rageval.app.config import compose, describe_error

    if any(a.startswith("-") and a not in MULTIRUN_FLAGS for a in argv):
        return
    given = [a for a in argv if a not in MULTIRUN_FLAGS]
    try:
        parsed = [parse(a) for a in given]
        if any(o.is_interval for o in parsed):
            return  # an optimiser's search space (hydra/sweeper=optuna): it checks its trials
        choices = [
            list(zip(o.values, o.hydra.sweep_iterator(), strict=True))
            if o.is_sweep
            else [(None, None)]
            for o in parsed
        ]
    except HydraException as err:
        raise ConfigError(f"bad override ({' '.join(given)}): {describe_error(err)}") from None
    except Exception:  # a sweep Hydra's basic sweeper cannot list (ranges for an optimiser)
        return

    def line(o, text: str | None) -> str:
        return o.line if text is None else o.with_value(text)

    from rageval.report.costs import DEFAULT_PARETO_COST, cost_spec

    # the sweep's own settings: Hydra only warns when a callback raises, and the jobs would run
    for o, values in zip(parsed, choices, strict=True):
        if o.key == "sweep.pareto_cost" and o.hydra.package is None:
            for text, value in values:
                cost_spec(str(value if text is not None else o.hydra.value()))
    if all(len(values) == 1 for values in choices):
        return  # one job: rageval.app.preflight.prepare_overrides composed it already
    first = [line(o, values[0][0]) for o, values in zip(parsed, choices, strict=True)]
    if cfg is None or any(not is_override(a) or override_key(a).startswith("hydra") for a in given):
        cfg = compose(first)  # the first job has lines prepare_overrides did not compose with
    cost_spec((cfg.get("sweep") or {}).get("pareto_cost") or DEFAULT_PARETO_COST)  # from a file
    for i, (o, values) in enumerate(zip(parsed, choices, strict=True)):
        for text, value in values[1:]:
            if not _fits(cfg, o, text, value):
                try:
                    compose([*first[:i], line(o, text), *first[i + 1 :]])
                except ConfigError as err:
                    reason = str(err).split("): ", 1)[-1]
                    raise ConfigError(f"bad override ({line(o, text)}): {reason}") from None


def _fits(cfg, override, text: str, value) -> bool:
    """True when ``override`` set to this sweep value surely composes: the group option's file
    exists in conf/, or the value merges into ``cfg`` with the schema's types. False: compose."""
    import copy

    from hydra.core.override_parser.types import OverrideType
    from omegaconf import OmegaConf

    from rageval.app.config import config_dirs

    key, override = override.key, override.hydra
    if override.package is not None or override.type != OverrideType.CHANGE:
        return False
    dirs = [d for d in config_dirs() if (d / key).is_dir()]
    if dirs:
        return any((d / key / f"{text}.yaml").is_file() for d in dirs)
    if key.startswith("hydra") or "/" in key:
        return False
    try:
        OmegaConf.update(copy.deepcopy(cfg), key, value, merge=True)
    except Exception:
        return False
    return True


def check_study(argv: Sequence[str], conf_dir: str | Path) -> None:
    """Before Hydra starts: when the command line selects rageval's Optuna sweeper, check its
    settings and search space, so a mistake is one line and exit 2 before any trial runs."""
    given = [a for a in argv if not a.startswith("-")]
    if not any(a.split("=", 1)[0] == "hydra/sweeper" for a in given):  # as written: no prefix
        return
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra
    from hydra.errors import HydraException
    from omegaconf.errors import OmegaConfBaseException

    from rageval.app.config import register_resolvers
    from rageval.app.study.settings import StudySettings, check_sampler, is_study
    from rageval.app.study.space import search_space

    if GlobalHydra.instance().is_initialized():
        return
    register_resolvers()  # the schema conf/config.yaml extends
    hydra_args = [a for a in given if override_key(a).startswith("hydra")]
    try:
        with initialize_config_dir(config_dir=str(Path(conf_dir).resolve()), version_base="1.3"):
            cfg = compose("config", overrides=hydra_args, return_hydra_config=True)
    except (HydraException, OmegaConfBaseException) as err:
        _explain_sweeper_key(err, hydra_args)
        return  # Hydra itself says what is wrong with its other settings
    if is_study(cfg):
        s = StudySettings.of(cfg)
        check_sampler(s)
        space, fixed = search_space(s.params, [a for a in given if a not in hydra_args])
        _check_not_running(conf_dir, hydra_args, space, fixed, s)


def _check_not_running(conf_dir, hydra_args, space, fixed, s) -> None:
    """A study another command is running stops here, in one line, before Hydra starts (the
    study holds its lock while it runs: :func:`study_lock`)."""
    from hydra import compose, initialize_config_dir
    from hydra.errors import HydraException
    from omegaconf.errors import OmegaConfBaseException

    from rageval.app.study.storage import readable_storage, storage_of, study_lock, study_name
    from rageval.tracking.client import sqlite_file

    try:
        with initialize_config_dir(config_dir=str(Path(conf_dir).resolve()), version_base="1.3"):
            cfg = compose("config", overrides=[*hydra_args, *fixed], return_hydra_config=True)
    except (HydraException, OmegaConfBaseException):
        return  # the override checks say what is wrong
    storage, name = storage_of(cfg, s), study_name(cfg, space, fixed, s)
    if (db := sqlite_file(storage)) is not None and not db.exists():
        return  # a new storage: no study runs there yet, and the check leaves no file behind
    with study_lock(storage, name):
        readable_storage(storage)


def _explain_sweeper_key(err: Exception, hydra_args: Sequence[str]) -> None:
    """A mistyped ``hydra.sweeper.KEY`` (or ``hydra.sweeper.sampler.KEY``) on the command line:
    one ConfigError with the closest keys, instead of Hydra's multi-line struct error."""
    from rageval.app.study.settings import SAMPLERS, StudySettings, sampler_args

    found = re.search(r"Key '([^']+)' is not in struct", str(err)) or re.search(
        r"Could not override '([^']+)'", str(err)
    )
    full = re.search(r"full_key: (\S+)", str(err))
    key = full.group(1) if full else (found.group(1) if found else "")
    if not key.startswith("hydra.sweeper."):
        return
    culprit = next((a for a in hydra_args if override_key(a) == key), key)
    if key.startswith("hydra.sweeper.sampler."):
        arg = key.rsplit(".", 1)[1]
        chosen = [
            a.split("=", 1)[1] for a in hydra_args if a.startswith("hydra.sweeper.sampler.name=")
        ]  # as written: a prefixed line adds a key the conf file does not set
        sampler = chosen[-1] if chosen and chosen[-1] in SAMPLERS else "tpe"
        hint = did_you_mean(arg, sampler_args(sampler), n=2, clause=True)
        raise ConfigError(
            f"override {culprit!r}: the sampler's settings have no {arg!r}"
            f"{hint}; to pass the {sampler} sampler an argument "
            f"the conf file does not set, write +{_unprefixed(culprit)}"
        )
    known = sorted(StudySettings.__dataclass_fields__)
    name = key[len("hydra.sweeper.") :]
    hint = did_you_mean(name, known, n=2, clause=True)
    raise ConfigError(
        f"override {culprit!r}: hydra.sweeper has no key {name!r}{hint} (keys: {', '.join(known)})"
    )
