"""The committed baseline: a small summary file plus its per-query values in a CSV beside it.

``golden/baseline.json`` (schema 2) holds where the baseline came from, the resolved config and
group choices of that run (``rageval check`` rebuilds the run from them), the digests of the
golden set, corpus and model, and the metrics with their CIs. The per-query values live in
``golden/baseline.per_query.csv``, one line per query (id, query, first relevant rank, the slice
fields source, tags and meta (JSON) and each metric), so promoting a run that changed a few
queries changes a few lines of a pull request.
The summary records the CSV's sha256: a CSV edited by hand or left half-written is refused.

The pair changes at one moment (write_baseline): a kill during promote leaves the old pair or the
new one, never a mix, and no temporary file behind after the next promote. Baselines
of schema 1 (a report.json with everything inline) and CSVs without the slice columns (the gate
then slices by the current run's rows) still read.

What a baseline may hold is a typed document of data, read by a schema that refuses the rest. A
baseline arrives in pull requests like any file, so it is data, never code (docs/reliability.md
"Files carry data, never code"). :class:`BaselineDocument` lists every key a baseline has, with
its type; an unknown key, a value of the wrong type, an interpolation (``${...}``, refused, never
resolved), a key that names code (``_target_``, ``factory``, ``function``, ``kwargs``...: code is
named only by the project's conf/ and rageval.yaml), a group choice that is not a plain option
name, a ``relative_paths`` entry that is not a path key or a ``per_query_file`` other than the
sibling name is refused with :class:`~rageval.errors.InputError` (exit 2) naming the file and the
key. What the check then does with these values (compose the project's config, lay them over it,
refuse paths outside the project) is rageval.app.replay's. ``provenance`` (what shapes the
numbers: corpus digests per document, the environment) and ``canary`` (a sibling file of
embedding vectors, its sha256 and fingerprint) are plain JSON data.

:func:`read_baseline` returns a :class:`Baseline`, the typed object the gate passes around (the
check, the replay of its config, promote); :func:`write_baseline` writes one from a run's report.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import math
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
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
from rageval.embedding import canary
from rageval.errors import InputError
from rageval.formats.atomic import atomic_write_text
from rageval.report.table import Column, Table

# 3: the typed document (BaselineDocument below: no code keys, no masked values); 2 still
# reads where it holds only data
SCHEMA = 3
# summary keys copied from the report
SUMMARY_KEYS = (
    "level",
    "k",
    "ks",
    "mlflow_run_id",
    "choices",
    "overrides",
    "config",
    "digests",
    # the label set the metrics counted and the judgements behind it (absent before judgements
    # existed: such a baseline reads as "gold" with no judgements)
    "label_set",
    "judgements",
    # labels=ppi: the human sample, the LLM judge and the estimates (rageval.report.ppi_report)
    "ppi",
    # what the numbers stand on (rageval.report.provenance; absent before it was recorded)
    "provenance",
)
ID_COLUMNS = ("id", "query", "n_relevant", "first_relevant_rank")
# what gate.slices groups queries by (rageval.scoring.slices); tags and meta as JSON text
SLICE_COLUMNS = ("source", "tags", "meta")
# each query's top k (ids and <doc>:<ordinal> labels, JSON lists): the gate's page shows real rank
# moves against them (absent from baselines promoted before: the page then marks results "new")
RANKING_COLUMNS = ("retrieved", "retrieved_labels")


def sidecar_path(path: str | Path) -> Path:
    """``golden/baseline.json`` -> ``golden/baseline.per_query.csv``."""
    p = Path(path)
    return p.with_name(f"{p.stem}.per_query.csv")


def _read_json(path: Path, what: str) -> dict[str, Any]:
    if not path.is_file():
        hint = (
            "create one with `rageval promote RUN_ID`" if what == "baseline" else "check the path"
        )
        raise InputError(f"{what} not found; {hint}", path=str(path))
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as err:
        raise InputError(f"not a valid {what} JSON file: {err}", path=str(path)) from None
    if not isinstance(data, dict):
        raise InputError(f"not a rageval {what}: expected a JSON object", path=str(path))
    return data


def load_report(path: str | Path) -> dict[str, Any]:
    """A report.json or a baseline (either schema), checked for the keys the gate needs; a
    baseline's per-query values are read from its CSV."""
    p = Path(path)
    data = _read_json(p, "report")
    if "per_query_file" in data or data.get("schema") in (2, 3):
        data = validate_baseline(data, p)  # typed, data only (exit 2 naming the key)
        data = {**data, "per_query": _read_sidecar(p, data)}
    else:
        data = validate_report(data, p)
    _absolute_again(data, p.parent)
    if isinstance(data.get("canary"), dict) and data["canary"].get("file"):
        data["canary"] = canary.from_file(data["canary"], p)  # the vectors beside the baseline
    missing = [k for k in ("metrics", "per_query", "digests", "k") if k not in data]
    if missing:
        raise InputError(f"not a rageval report: missing {', '.join(missing)}", path=str(p))
    return data


@dataclass(frozen=True)
class Baseline:
    """A baseline read and validated by :func:`read_baseline`, as the gate passes it around:
    the file it was read from and, in ``report``, its summary with the per-query rows filled in
    from the CSV, paths made absolute again and the canary's vectors loaded (the shape of a
    run's report, which :func:`rageval.gate.compare.compare` pairs it with). ``path`` is None
    for a baseline made in memory (tests, a config replayed without one)."""

    report: Mapping[str, Any]
    path: Path | None = None

    @property
    def choices(self) -> dict[str, str | None]:
        """The run's group choices as stored (``dataset``, ``embedding``...: option names; None
        for no ``rerank``)."""
        return dict(self.report.get("choices") or {})

    @property
    def config(self) -> Mapping[str, Any]:
        """The run's resolved config, data only (the keys a check replays)."""
        return self.report.get("config") or {}

    @property
    def overrides(self) -> list[str]:
        """The run's override lines, as stored."""
        return list(self.report.get("overrides") or [])

    @property
    def label_set(self) -> str:
        """The label set the metrics counted (gold for a baseline from before judgements)."""
        from rageval.gate.labels import label_set

        return label_set(self.report)

    @property
    def digests(self) -> Mapping[str, Any]:
        """Digests of the golden set, corpus, model... the run was measured on."""
        return self.report.get("digests") or {}

    @property
    def per_query(self) -> list[dict[str, Any]]:
        """One row per query: ids, slice fields, ranking and each metric's value."""
        return list(self.report.get("per_query") or [])

    @property
    def project_root(self) -> str | None:
        """The root of the project the baseline was promoted in, when it recorded one."""
        return (self.report.get("project") or {}).get("root")

    @property
    def provenance(self) -> Mapping[str, Any] | None:
        """What the numbers stand on (rageval.report.provenance); None before it was recorded."""
        return self.report.get("provenance")

    @property
    def promoted_from(self) -> Mapping[str, Any]:
        """Where the baseline came from: run id, file, time, the metric ``--best`` chose it by."""
        return self.report.get("promoted_from") or {}


def read_baseline(path: str | Path) -> Baseline:
    """The baseline at ``path`` (either schema, or a report.json promoted as one), validated;
    InputError (exit 2) naming the file (and line or key) for what does not read."""
    p = Path(path)
    if not p.is_file():
        raise InputError(
            "baseline not found; create one with `rageval promote RUN_ID`", path=str(p)
        )
    return Baseline(load_report(p), p)


def _read_sidecar(path: Path, summary: Mapping[str, Any]) -> list[dict[str, Any]]:
    csv_path = path.with_name(str(summary["per_query_file"]))
    pending = pending_path(path)
    if pending.exists() and csv_path == sidecar_path(path) and _names_it(path, pending):
        os.replace(pending, csv_path)  # a promote killed after its summary: finish its move
    try:
        raw = csv_path.read_bytes()
    except OSError as err:
        raise InputError(
            f"the baseline's per-query file is missing ({err.strerror or err}); commit it with "
            "the baseline or re-promote",
            path=str(csv_path),
        ) from None
    if hashlib.sha256(raw).hexdigest() != summary.get("per_query_sha256"):
        raise InputError(
            f"does not match {path.name} (edited, or written without its summary); "
            "re-promote the baseline with `rageval promote`",
            path=str(csv_path),
        )
    reader = csv.DictReader(io.StringIO(raw.decode("utf-8")))
    return [{k: _cell(k, v) for k, v in row.items()} for row in reader]


def _cell(column: str, text: str) -> Any:
    if column in ("id", "query"):
        return text
    if column in RANKING_COLUMNS:
        try:
            value = json.loads(text) if text else []
        except ValueError:
            value = None
        if not isinstance(value, list):
            raise InputError(
                f"column {column!r} holds {text[:40]!r}, not a JSON list; re-promote the baseline"
            )
        return [str(x) for x in value]
    if column in SLICE_COLUMNS:
        if column == "source":
            return text or None
        try:
            return json.loads(text) if text else ([] if column == "tags" else {})
        except ValueError:
            raise InputError(
                f"column {column!r} holds {text[:40]!r}, not JSON; re-promote the baseline"
            ) from None
    if text == "":
        return None
    if column in ("n_relevant", "first_relevant_rank"):
        return int(text)
    return float(text)


def _metric_columns(report: Mapping[str, Any]) -> list[str]:
    rows = report.get("per_query") or []
    present = set().union(*(r.keys() for r in rows)) if rows else set()
    columns = [m for m in report["metrics"] if m in present]
    # labels=ppi: the people's values on the sampled queries, which the gate pairs too
    return columns + [f"human:{m}" for m in columns if f"human:{m}" in present]


def per_query_csv(report: Mapping[str, Any]) -> str:
    """The per-query values as CSV text: one line per query, floats written to round-trip."""
    rows = report["per_query"]
    slices = [c for c in SLICE_COLUMNS if any(c in r for r in rows)]
    ranked = [c for c in RANKING_COLUMNS if any(c in r for r in rows)]
    k = int(report.get("k") or 0) or None
    columns = [*ID_COLUMNS, *slices, *ranked, *_metric_columns(report)]
    table = Table([Column(c) for c in columns])
    for row in report["per_query"]:
        table.add_row(
            *[
                _compact(row.get(c), k) if c in RANKING_COLUMNS else _text(row.get(c))
                for c in columns
            ]
        )
    return table.csv()


def _compact(values: Any, k: int | None) -> str:
    """A query's top k as a compact JSON list."""
    items = list(values or [])[:k]
    return json.dumps(items, ensure_ascii=False, separators=(",", ":")) if items else ""


def _text(value: Any) -> str:
    if value is None or isinstance(value, float) and math.isnan(value):
        return ""
    if isinstance(value, list | dict):  # tags, meta
        return json.dumps(value, ensure_ascii=False, sort_keys=True) if value else ""
    if isinstance(value, float):
        return repr(value)
    return str(value)


def portable(
    value: Any, folder: str | Path, project: str | Path | None = None, prefix: str = ""
) -> tuple[Any, list[str]]:
    """``value`` (a config, a judgements block) as a committed file holds it, and the dotted keys
    it rewrote. Absolute paths inside ``project`` (default: the working directory, the project's
    root when promote runs there) become paths relative to ``folder`` (the baseline's own), and
    ``cache_dir`` (this machine's cache, never replayed) is left out. So the file names no
    machine, and :func:`load_report` turns those keys back into this checkout's paths."""
    root = Path(project or Path.cwd()).resolve()
    rewritten: list[str] = []

    def walk(v: Any, at: str) -> Any:
        if isinstance(v, Mapping):
            return {k: walk(x, f"{at}{k}.") for k, x in v.items() if k != "cache_dir"}
        if isinstance(v, list):
            return [walk(x, f"{at}{i}.") for i, x in enumerate(v)]
        if isinstance(v, str) and os.path.isabs(v) and Path(v).is_relative_to(root):
            rewritten.append(at.rstrip("."))
            return Path(os.path.relpath(v, Path(folder).resolve())).as_posix()
        return v

    return walk(value, prefix), rewritten


def _absolute_again(data: dict[str, Any], folder: Path) -> dict[str, Any]:
    """Undo :func:`portable` for the keys a baseline lists in ``relative_paths``."""
    for dotted in data.get("relative_paths") or ():
        *parents, last = dotted.split(".")
        node: Any = data
        for part in parents:
            node = node[int(part)] if isinstance(node, list) else node.get(part)
            if node is None:
                break
        else:
            if isinstance(node, list) and last.isdigit() and int(last) < len(node):
                key: Any = int(last)
            elif isinstance(node, dict) and last in node:
                key = last
            else:
                continue
            if isinstance(node[key], str):
                node[key] = os.path.normpath(folder.resolve() / node[key])
    return data


def write_baseline(report: Mapping[str, Any], path: str | Path, source: Mapping[str, Any]) -> Path:
    """Write ``report`` as the baseline at ``path`` (and its CSV), atomically; ``source`` says
    where it came from (run id, file, time)."""
    p = Path(path)
    table = per_query_csv(report)
    summary: dict[str, Any] = {"schema": SCHEMA, "promoted_from": dict(source)}
    summary.update({k: report[k] for k in SUMMARY_KEYS if k in report})
    from rageval.project import find_project

    project = find_project()
    root = project.root if project else None
    if project is not None:  # the check rebuilds the run inside this project, from anywhere
        summary["project"] = {"root": str(project.root)}
        if project.config_dir is not None:
            summary["project"]["config_dir"] = str(project.config_dir)
    if "config" in summary:  # data only: code is named by the project's config, secrets by env
        summary["config"] = stored_config(summary["config"])
    if "overrides" in summary:
        summary["overrides"] = stored_overrides(summary["overrides"])
    relative: list[str] = []
    for key in ("promoted_from", "config", "judgements", "project", "ppi"):
        if key in summary:
            summary[key], keys = portable(summary[key], p.parent, root, prefix=f"{key}.")
            relative += keys
    if relative:
        summary["relative_paths"] = relative
    summary["n_queries"] = len(report["per_query"])
    summary["metrics"] = report["metrics"]
    if "ci" in report:
        summary["ci"] = report["ci"]
    if report.get("canary"):  # the embedding canary's vectors go to their own file beside it
        summary["canary"] = canary.to_file(report["canary"], p)
    summary["per_query_file"] = sidecar_path(p).name
    summary["per_query_sha256"] = hashlib.sha256(table.encode()).hexdigest()
    validate_baseline(summary, p)  # what a check would refuse is never written
    # The pair changes at one moment: the new CSV is written beside the old one, the summary
    # (which names the CSV's digest) replaces the old summary, then the CSV moves in. A kill
    # before the summary leaves the old pair; after it, the new summary and its CSV waiting
    # beside (read_pair finishes the move). Leftovers of killed writes are cleared first.
    # Concurrent promotes take turns on the folder's lock, the later one's pair winning.
    from rageval.formats.atomic import locked

    waiting = f"rageval: another promote is writing {p}; waiting for it to finish"
    with locked(p, waiting=waiting):
        clear_leftovers(p)
        pending = pending_path(p)
        atomic_write_text(pending, table)
        atomic_write_text(p, json.dumps(summary, indent=2) + "\n")
        os.replace(pending, sidecar_path(p))
        if "canary" not in summary:  # a canary of the replaced baseline: no longer named
            canary.sibling_path(p).unlink(missing_ok=True)
    return p


def stored_config(config: Mapping[str, Any]) -> dict[str, Any]:
    """A run's resolved config as a baseline stores it: without the keys that name code (the
    project's config names it) and without masked secrets (replayed from their environment
    variable by the project's config, never from a file)."""

    def walk(v: Any) -> Any:
        if isinstance(v, Mapping):
            return {
                k: walk(x)
                for k, x in v.items()
                if k not in CODE_KEYS and (isinstance(x, Mapping) or not holds_mask(x))
            }
        if isinstance(v, list):
            return [walk(x) for x in v]
        return v

    return walk(config)


def holds_mask(value: Any) -> bool:
    """Whether ``value`` (at any depth) holds a masked secret: it is never stored nor replayed."""
    from rageval.formats.redact import MASK

    if isinstance(value, Mapping):
        return any(holds_mask(v) for v in value.values())
    if isinstance(value, list | tuple):
        return any(holds_mask(v) for v in value)
    return isinstance(value, str) and MASK in value


def stored_overrides(lines: list[str]) -> list[str]:
    """The run's override lines a baseline keeps: not those naming code or holding an
    interpolation or a masked secret (the summary line shows the rest)."""
    from rageval.config_schema import override_key
    from rageval.formats.redact import MASK

    return [
        o
        for o in lines
        if override_key(o).rsplit(".", 1)[-1] not in CODE_KEYS
        and not INTERPOLATION.search(o)
        and MASK not in o
    ]


def pending_path(path: str | Path) -> Path:
    """Where a promote writes the new per-query CSV before its summary names it."""
    side = sidecar_path(path)
    return side.with_name(side.name + ".next")


def clear_leftovers(path: str | Path) -> list[Path]:
    """Remove the temporary files a killed promote left beside the baseline (atomic writes'
    ``.<name>.*.tmp``, a pending CSV no summary names); returns them."""
    p = Path(path)
    if not p.parent.is_dir():
        return []
    names = (p.name, sidecar_path(p).name, pending_path(p).name)
    gone = [f for n in names for f in p.parent.glob(f".{n}.*.tmp")]
    pending = pending_path(p)
    if pending.exists() and not _names_it(p, pending):
        gone.append(pending)
    for f in gone:
        f.unlink(missing_ok=True)
    return gone


def _names_it(summary_path: Path, csv_path: Path) -> bool:
    try:
        summary = json.loads(summary_path.read_text(encoding="utf-8"))
        digest = hashlib.sha256(csv_path.read_bytes()).hexdigest()
    except (OSError, ValueError):
        return False
    return isinstance(summary, dict) and summary.get("per_query_sha256") == digest


def config_summary(report: Mapping[str, Any]) -> str:
    """``chunk=256 search=hybrid backend=faiss ... search.fusion=weighted``: what a person reads
    to know the config: chunking and k, each group's choice, then the run's own overrides of
    keys inside them (a tuned ``search.bm25.k1``), secrets masked."""
    from rageval.config_schema import override_key
    from rageval.formats.redact import redact_override
    from rageval.report.html import shown_override

    config = report.get("config") or {}
    parts = [f"{k}={config[k]}" for k in ("chunk", "chunk_overlap", "k") if k in config]
    parts += [f"{g}={c}" for g, c in (report.get("choices") or {}).items()]
    shown = {p.split("=", 1)[0] for p in parts} | {"split"}
    for o in report.get("overrides") or []:
        key = override_key(o)
        if "=" in o and key not in shown and shown_override(o):
            parts.append(redact_override(f"{key}={o.split('=', 1)[1]}"))
            shown.add(key)
    return " ".join(parts) or "(config not recorded)"


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


class BaselineDocument(_Doc):
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


class LegacyDocument(BaselineDocument):
    """Schema 2: the same keys; Hydra's ``_target_`` keys in ``config`` are dropped on read."""

    config: Annotated[dict[str, Any], AfterValidator(_legacy_config)] = {}


class ReportDocument(BaseModel):
    """A run's report.json (schema 1, also a baseline of schema 1): the keys a reader uses,
    typed; other keys are the report's own and pass (they are never replayed)."""

    model_config = ConfigDict(extra="allow", strict=True)

    # required by the gate's readers (load_report says which are missing)
    k: StrictInt | None = None
    metrics: dict[str, Number | None] = {}
    # query texts are the golden set's (any text); never replayed
    per_query: list[dict[str, Any]]
    digests: dict[str, Text | None] = {}
    choices: Choices = {}
    overrides: list[StrictStr] = []
    # a run's resolved config, code keys included: recorded, never replayed (rageval.app.replay)
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
    """``data`` (a parsed baseline summary, schema 2 or 3) checked against
    :class:`BaselineDocument`; a schema-2 config loses its ``_target_`` keys (never replayed).
    InputError (exit 2) naming the file and key, with the fix."""
    model = LegacyDocument if data.get("schema") == 2 else BaselineDocument
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
    """``data`` (a report.json, or a schema-1 baseline) checked against :class:`ReportDocument`."""
    try:
        ReportDocument.model_validate(dict(data))
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
