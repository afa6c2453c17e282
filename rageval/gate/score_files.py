"""Per-query scores from anywhere, for ``rageval compare`` and ``rageval plan``: run folders,
report.json files, baselines, ``trec_eval -q`` output and CSV files.

- a run folder or a ``report.json``: its per-query rows; a baseline (``baseline.json``) reads its
  CSV beside it;
- ``trec_eval -q`` output: ``measure  query  value`` lines (the ``all`` lines, averages, are
  ignored; so are measures that are not numbers, such as ``runid``);
- a CSV file: a header, the query id in a column named ``id``, ``qid`` or ``query_id`` (else the
  first), every column of numbers a metric.
"""

from __future__ import annotations

import csv
import io
import math
from dataclasses import dataclass
from pathlib import Path

from rageval.errors import InputError

ID_COLUMNS = ("id", "qid", "query_id")


@dataclass(frozen=True)
class Scores:
    """Per-query scores of one run: ``values[metric][query id]``."""

    source: str
    values: dict[str, dict[str, float]]

    def metrics(self) -> list[str]:
        return list(self.values)

    def queries(self) -> set[str]:
        return {q for v in self.values.values() for q in v}


def read_scores(path: str | Path) -> Scores:
    """The per-query scores at ``path`` (see the module docstring); InputError naming the file
    and line for anything else."""
    p = Path(path)
    if p.is_dir():
        if not (p / "report.json").is_file():
            raise InputError("a folder without report.json: pass a run folder", path=str(p))
        p = p / "report.json"
    if not p.is_file():
        raise InputError(
            "not found; pass a run folder, a report or baseline JSON file, a "
            "trec_eval -q file or a CSV file",
            path=str(p),
        )
    if p.suffix == ".json":
        return _from_report(p)
    text = p.read_text(encoding="utf-8", errors="replace")
    first = next((ln for ln in text.splitlines() if ln.strip()), "")
    if p.suffix == ".csv" or ("," in first and len(first.split()) < 3):
        return _from_csv(p, text)
    return _from_trec(p, text)


def _from_report(p: Path) -> Scores:
    from rageval.gate.baseline import load_report

    report = load_report(p)
    values: dict[str, dict[str, float]] = {}
    for row in report["per_query"]:
        for key, value in row.items():
            if key in ("id", "query") or isinstance(value, bool):
                continue
            if isinstance(value, int | float) and math.isfinite(value):
                values.setdefault(key, {})[str(row["id"])] = float(value)
    return Scores(str(p), values)


def _from_trec(p: Path, text: str) -> Scores:
    values: dict[str, dict[str, float]] = {}
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        parts = line.split()
        if len(parts) != 3:
            raise InputError(
                f"expected trec_eval -q lines 'measure query value', got {len(parts)} fields",
                path=str(p),
                line=lineno,
            )
        measure, qid, raw = parts
        if qid == "all":
            continue
        try:
            value = float(raw)
        except ValueError:
            continue  # runid and other text measures
        if not math.isfinite(value):
            raise InputError(f"{measure} of query {qid!r} is {raw}", path=str(p), line=lineno)
        values.setdefault(measure, {})[qid] = value
    if not values:
        raise InputError("no per-query lines (was trec_eval run with -q?)", path=str(p))
    return Scores(str(p), values)


def _from_csv(p: Path, text: str) -> Scores:
    reader = csv.DictReader(io.StringIO(text))
    if not reader.fieldnames:
        raise InputError("an empty CSV file", path=str(p))
    id_col = next((c for c in reader.fieldnames if c in ID_COLUMNS), reader.fieldnames[0])
    rows = list(reader)
    values: dict[str, dict[str, float]] = {}
    for col in reader.fieldnames:
        if col == id_col:
            continue
        column: dict[str, float] = {}
        for i, row in enumerate(rows, start=2):
            cell = (row.get(col) or "").strip()
            if not cell:
                continue
            try:
                column[str(row[id_col])] = float(cell)
            except ValueError:
                column = {}
                break  # a text column (the query): not a metric
            if not math.isfinite(column[str(row[id_col])]):
                raise InputError(f"{col} is {cell}", path=str(p), line=i)
        if column:
            values[col] = column
    if not values:
        raise InputError(f"no column of numbers besides the id column {id_col!r}", path=str(p))
    return Scores(str(p), values)
