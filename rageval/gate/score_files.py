"""Per-query scores from anywhere, for ``rageval compare`` and ``rageval plan``: run folders,
report.json files, baselines, ``trec_eval -q`` output and CSV files.

- a run folder or a ``report.json``: its per-query rows; a baseline (``baseline.json``) reads its
  CSV beside it;
- ``trec_eval -q`` output: ``measure  query  value`` lines (the ``all`` lines, averages, are
  ignored; so are measures that are not numbers, such as ``runid``);
- a CSV file: a header, the query id in a column named ``id``, ``qid`` or ``query_id`` (else the
  first), every column of numbers a metric.

Files are UTF-8. A query id given twice (a second ``measure query`` line, a second CSV row, a
second per-query row of a report), a CSV row with more or fewer cells than its header, or bytes
that are not UTF-8 are refused with the file and line, never resolved by keeping one of them: a
comparison that silently took the last duplicate could report no change where there is one.
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
    from rageval.formats.textio import read_text

    text = read_text(p)
    first = next((ln for ln in text.splitlines() if ln.strip()), "")
    if p.suffix == ".csv" or ("," in first and len(first.split()) < 3):
        return _from_csv(p, text)
    return _from_trec(p, text)


def _from_report(p: Path) -> Scores:
    from rageval.gate.baseline import load_report

    report = load_report(p)
    values: dict[str, dict[str, float]] = {}
    seen: dict[str, int] = {}
    for i, row in enumerate(report["per_query"], start=1):
        qid = str(row["id"])
        if qid in seen:
            raise InputError(
                f"query {qid!r} has a second per-query row (rows {seen[qid]} and {i} of "
                "per_query); a comparison needs one score per query: remove one",
                path=str(p),
            )
        seen[qid] = i
        for key, value in row.items():
            if key in ("id", "query") or isinstance(value, bool):
                continue
            if isinstance(value, int | float) and math.isfinite(value):
                values.setdefault(key, {})[str(row["id"])] = float(value)
    return Scores(str(p), values)


def _from_trec(p: Path, text: str) -> Scores:
    values: dict[str, dict[str, float]] = {}
    first_line: dict[tuple[str, str], int] = {}
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
        if (measure, qid) in first_line:
            raise InputError(
                f"query {qid!r} has a second {measure} line (the first is line "
                f"{first_line[measure, qid]}); a comparison needs one score per query: remove one",
                path=str(p),
                line=lineno,
            )
        first_line[measure, qid] = lineno
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


def _csv_rows(p: Path, text: str) -> tuple[list[str], list[tuple[int, list[str]]]]:
    """The header and the (line, cells) of every non-blank row; a row with another number of
    cells than the header, or a query id given twice, is an InputError naming its line."""
    reader = csv.reader(io.StringIO(text, newline=""))
    header: list[str] = []
    rows: list[tuple[int, list[str]]] = []
    for cells in reader:
        if not any(c.strip() for c in cells):
            continue
        if not header:
            header = cells
            continue
        if len(cells) != len(header):
            raise InputError(
                f"{len(cells)} cells where the header has {len(header)} ({', '.join(header)}); "
                "fix this row",
                path=str(p),
                line=reader.line_num,
            )
        rows.append((reader.line_num, cells))
    return header, rows


def _from_csv(p: Path, text: str) -> Scores:
    header, rows = _csv_rows(p, text)
    if not header:
        raise InputError("an empty CSV file", path=str(p))
    id_col = next((c for c in header if c in ID_COLUMNS), header[0])
    at = header.index(id_col)
    seen: dict[str, int] = {}
    for lineno, cells in rows:
        qid = cells[at]
        if qid in seen:
            raise InputError(
                f"query {qid!r} has a second row (the first is line {seen[qid]}); a comparison "
                "needs one score per query: remove one",
                path=str(p),
                line=lineno,
            )
        seen[qid] = lineno
    values: dict[str, dict[str, float]] = {}
    for j, col in enumerate(header):
        if j == at:
            continue
        column: dict[str, float] = {}
        for lineno, cells in rows:
            cell = cells[j].strip()
            if not cell:
                continue
            try:
                column[cells[at]] = float(cell)
            except ValueError:
                column = {}
                break  # a text column (the query): not a metric
            if not math.isfinite(column[cells[at]]):
                raise InputError(f"{col} is {cell}", path=str(p), line=lineno)
        if column:
            values[col] = column
    if not values:
        raise InputError(f"no column of numbers besides the id column {id_col!r}", path=str(p))
    return Scores(str(p), values)
