"""What a baseline may hold: a typed document of data, read by a schema that refuses the rest.

A baseline arrives in pull requests like any file, so it is data, never code (docs/reliability.md
"Files carry data, never code"). :class:`Baseline` lists every key a baseline has, with its type;
an unknown key, a value of the wrong type, an interpolation (``${...}``, refused, never resolved),
a key that names code (``_target_``, ``factory``, ``function``, ``kwargs``...: code is named only
by the project's conf/ and rageval.yaml), a group choice that is not a plain option name, a
``relative_paths`` entry that is not a path key or a ``per_query_file`` other than the sibling
name is refused with :class:`~rageval.errors.InputError` (exit 2) naming the file and the key.
What the check then does with these values (compose the project's config, lay them over it,
refuse paths outside the project) is rageval.app.gate_run's.

``provenance`` (what shapes the numbers: corpus digests per document, the environment) and
``canary`` (a sibling file of embedding vectors, its sha256 and fingerprint) are plain JSON data.

pydantic is imported here; readers import this module inside the function that reads.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    StrictFloat,
    StrictInt,
    StrictStr,
    ValidationError,
)

from rageval.config_schema import CODE_KEYS
from rageval.errors import InputError

# Hydra's instantiation keys only: a schema-2 baseline recorded them (they were never replayed)
HYDRA_CODE_KEYS = frozenset({"_target_", "_args_", "_partial_", "_recursive_", "_convert_"})
# what `relative_paths` may name: the data paths of a run's config and the baseline's own records
PATH_KEYS = frozenset(
    {
        "config.dataset.corpus",
        "config.dataset.golden",
        "config.dataset.path",
        "config.judgements",
        "judgements.file",
        "promoted_from.file",
        "ppi.sample.file",
        "project.root",
        "project.config_dir",
    }
)
GROUPS = ("dataset", "embedding", "backend", "search", "rerank")
# an option of a config group: a file name in conf/<group>/, no folder, no `..`
OPTION = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]*$")
INTERPOLATION = re.compile(r"\$\{")


class Refused(ValueError):
    """A value a baseline may not hold; the message says why."""


def _no_interpolation(text: str) -> str:
    if INTERPOLATION.search(text):
        raise Refused(
            f"{text[:60]!r} is an interpolation; a baseline holds plain values "
            "(interpolations are refused, never resolved)"
        )
    return text


def plain_data(value: Any, code_ok: frozenset[str] = frozenset(), at: str = "") -> Any:
    """``value`` when it is plain JSON data: mappings with string keys, lists, strings without
    interpolation, numbers, booleans, null, and no key naming code (CODE_KEYS except
    ``code_ok``) at any depth; else :class:`Refused` naming the key."""
    if isinstance(value, Mapping):
        for k, v in value.items():
            if not isinstance(k, str):
                raise Refused(f"{at}{k!r}: keys are strings")
            if k in CODE_KEYS and k not in code_ok:
                raise Refused(
                    f"{at}{k} names code; code is named only by the project's conf/ and "
                    "rageval.yaml, never by a baseline"
                )
            plain_data(v, code_ok, f"{at}{k}.")
        return value
    if isinstance(value, list):
        for i, v in enumerate(value):
            plain_data(v, code_ok, f"{at}{i}.")
        return value
    if isinstance(value, str):
        try:
            return _no_interpolation(value)
        except Refused as err:
            raise Refused(f"{at.rstrip('.') or 'value'}: {err}") from None
    if value is None or isinstance(value, bool | int | float):
        return value
    raise Refused(f"{at.rstrip('.')}: {type(value).__name__} is not JSON data")


Text = Annotated[StrictStr, AfterValidator(_no_interpolation)]
Number = StrictInt | StrictFloat
Data = Annotated[Any, AfterValidator(plain_data)]
DataMap = Annotated[dict[str, Any], AfterValidator(plain_data)]


def _config(value: dict[str, Any]) -> dict[str, Any]:
    return plain_data(value)


def _legacy_config(value: dict[str, Any]) -> dict[str, Any]:
    """A schema-2 config: Hydra's ``_target_`` keys were recorded (never replayed); every other
    code key is refused."""
    return plain_data(value, code_ok=HYDRA_CODE_KEYS)


def _report_config(value: dict[str, Any]) -> dict[str, Any]:
    return plain_data(value, code_ok=CODE_KEYS)


def _choices(value: dict[str, Any]) -> dict[str, Any]:
    for group, option in value.items():
        if group not in GROUPS:
            raise Refused(f"{group!r} is not a config group ({', '.join(GROUPS)})")
        if option is None:
            continue
        if not isinstance(option, str) or not OPTION.match(option) or ".." in option:
            raise Refused(
                f"{group}: {option!r} is not an option name (a file name in conf/{group}/, "
                "no folder, no `..`)"
            )
    return value


def _relative(value: list[str]) -> list[str]:
    for key in value:  # a user's own values (config.extra.*) may hold project paths too
        if key not in PATH_KEYS and not key.startswith("config.extra."):
            shown = ", ".join(sorted(PATH_KEYS))
            raise Refused(f"{key!r} is not a path key ({shown}, config.extra.*)")
    return value


def _overrides(value: list[str]) -> list[str]:
    from rageval.config_schema import override_key

    for line in value:
        _no_interpolation(line)
        leaf = override_key(line).rsplit(".", 1)[-1]
        if leaf in CODE_KEYS:
            raise Refused(f"{line[:60]!r} names code; a baseline never does")
    return value


class _Doc(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class PromotedFrom(_Doc):
    """Where the baseline came from."""

    run_id: Text | None = None
    file: Text | None = None
    promoted_at: Text | None = None
    metric: Text | None = None


class ProjectRef(_Doc):
    """The project the baseline was promoted in (relative to the baseline file)."""

    root: Text
    config_dir: Text | None = None


Choices = Annotated[dict[str, Text | None], AfterValidator(_choices)]
Overrides = Annotated[list[Text], AfterValidator(_overrides)]


class Baseline(_Doc):
    """``golden/baseline.json``: every key it may hold, each with its type."""

    # "schema" is a BaseModel attribute: the field is schema_, read under its alias
    schema_: Literal[2, 3] = Field(3, alias="schema")
    promoted_from: PromotedFrom = PromotedFrom()
    level: Text | None = None
    k: StrictInt
    ks: list[StrictInt] = []
    mlflow_run_id: Text | None = None
    choices: Choices = {}
    overrides: Overrides = []
    config: Annotated[dict[str, Any], AfterValidator(_config)] = {}
    digests: dict[str, Text | None] = {}
    label_set: Text = "gold"
    judgements: DataMap = {}
    project: ProjectRef | None = None
    relative_paths: Annotated[list[Text], AfterValidator(_relative)] = []
    n_queries: StrictInt | None = None
    metrics: dict[str, Number | None]
    ci: dict[str, list[Number | None]] = {}
    per_query_file: Text
    per_query_sha256: Annotated[StrictStr, AfterValidator(lambda s: _hex(s))]
    # filled by the provenance and canary records: plain JSON data
    provenance: DataMap | None = None
    canary: DataMap | None = None
    # labels=ppi: the human sample, the judge and the estimates (rageval.report.ppi_report)
    ppi: DataMap | None = None

    model_config = ConfigDict(extra="forbid", strict=True, populate_by_name=True)


def _hex(text: str) -> str:
    if not re.fullmatch(r"[0-9a-f]{64}", text):
        raise Refused("not a sha256 (64 hex digits)")
    return text


class LegacyBaseline(Baseline):
    """Schema 2: the same keys; Hydra's ``_target_`` keys in ``config`` are dropped on read."""

    config: Annotated[dict[str, Any], AfterValidator(_legacy_config)] = {}


class Report(BaseModel):
    """A run's report.json (schema 1, also a baseline of schema 1): the keys a reader uses,
    typed; other keys are the report's own and pass (they are never replayed)."""

    model_config = ConfigDict(extra="allow", strict=True)

    # required by the gate's readers (rageval.gate.baseline.load_report says which are missing)
    k: StrictInt | None = None
    metrics: dict[str, Number | None] = {}
    # query texts are the golden set's (any text); never replayed
    per_query: list[dict[str, Any]]
    digests: dict[str, Text | None] = {}
    choices: Choices = {}
    overrides: list[StrictStr] = []
    # a run's resolved config, code keys included: recorded, never replayed (gate_run)
    config: Annotated[dict[str, Any], AfterValidator(_report_config)] = {}
    relative_paths: Annotated[list[Text], AfterValidator(_relative)] = []


def _where(err: ValidationError) -> str:
    """The first problem of ``err`` as ``key: what`` (one line)."""
    first = err.errors()[0]
    key = ".".join(str(p) for p in first["loc"] if not str(p).startswith("function-"))
    key = key.replace("schema_", "schema")
    msg = str(first["msg"]).removeprefix("Value error, ")
    if first["type"] == "extra_forbidden":
        msg = "not a baseline key (unknown keys are refused)"
    elif first["type"] == "missing":
        msg = "missing"
    elif "input" in first and first["type"] not in ("value_error",):
        msg = f"{msg} (got {first['input']!r:.60})"
    return f"{key}: {msg}" if key else msg


def validate_baseline(data: Mapping[str, Any], path: str | Path) -> dict[str, Any]:
    """``data`` (a parsed baseline summary, schema 2 or 3) checked against :class:`Baseline`;
    a schema-2 config loses its ``_target_`` keys (never replayed). InputError (exit 2) naming
    the file and key, with the fix."""
    model = LegacyBaseline if data.get("schema") == 2 else Baseline
    try:
        model.model_validate(dict(data))
    except ValidationError as err:
        raise InputError(
            f"not a valid baseline: {_where(err)}; a baseline holds data only: re-promote it "
            "with `rageval promote RUN_ID`",
            path=str(path),
        ) from None
    out = dict(data)
    if "config" in out:
        out["config"] = drop_keys(out["config"], HYDRA_CODE_KEYS)
    p = Path(path)
    if out["per_query_file"] != f"{p.stem}.per_query.csv":
        raise InputError(
            f"not a valid baseline: per_query_file: {out['per_query_file'][:80]!r} is not "
            f"{p.stem}.per_query.csv (the sibling file's name); re-promote the baseline",
            path=str(path),
        )
    return out


def validate_report(data: Mapping[str, Any], path: str | Path) -> dict[str, Any]:
    """``data`` (a report.json, or a schema-1 baseline) checked against :class:`Report`."""
    try:
        Report.model_validate(dict(data))
    except ValidationError as err:
        raise InputError(
            f"not a valid rageval report: {_where(err)}; use a report.json a run wrote",
            path=str(path),
        ) from None
    return dict(data)


def drop_keys(value: Any, keys: frozenset[str]) -> Any:
    """``value`` without ``keys`` at any depth."""
    if isinstance(value, Mapping):
        return {k: drop_keys(v, keys) for k, v in value.items() if k not in keys}
    if isinstance(value, list):
        return [drop_keys(v, keys) for v in value]
    return value
