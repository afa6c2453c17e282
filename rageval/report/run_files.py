"""The files of a run folder that people read (the per-query table, chunks, plot and page), and
the page of a finished run folder or of two (``rageval report``)."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

from rageval.errors import InputError
from rageval.formats.atomic import atomic_write_text
from rageval.report.eval_report import slice_csv
from rageval.report.html import render, render_diff, write_page
from rageval.report.per_query import (
    per_query_csv,
    read_chunks,
    shown_chunk_ids,
    write_chunk_labels,
)
from rageval.report.plots import curve_png


def save_run_folder(report, out: str | Path) -> Path:
    """Write a run folder anyone can recheck: run.trec, qrels.trec, chunks.jsonl, the readable
    files (:func:`write_run_files`) and report.json, written last (its presence means the run
    completed)."""
    from rageval.formats.trec import write_qrels, write_run
    from rageval.inputs.chunking import write_chunks_jsonl

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    qids = [r["id"] for r in report.per_query]
    write_run(out / "run.trec", qids, report.rankings, tag="rageval")
    write_qrels(out / "qrels.trec", report.qrels)
    write_chunks_jsonl(out / "chunks.jsonl", report.chunks)
    write_run_files(report, out)
    report.write_json(out / "report.json")
    return out


def write_run_files(report, out: Path) -> None:
    """The run folder's readable files besides report.json, chunks.jsonl and the TREC files:
    per_query.csv, slices.csv, chunk_labels.tsv, the metric@k plot and the per-query page
    report.html."""
    out = Path(out)
    atomic_write_text(out / "per_query.csv", per_query_csv(report.per_query))
    if (report.slices or {}).get("rows"):
        atomic_write_text(out / "slices.csv", slice_csv(report.slices))
    write_chunk_labels(out, report.chunks)
    curve_png(report, out / "metrics_at_k.png")
    shown = shown_chunk_ids(report.per_query, report.qrels)  # the rows the page can show
    write_page(
        out / "report.html",
        report.to_dict(),
        {r["id"]: r for r in report.chunks if r["id"] in shown},
    )


def load(run_dir: str | Path) -> dict:
    """report.json of ``run_dir`` (or a report.json path), with a clear error when missing."""
    path = Path(run_dir)
    path = path / "report.json" if path.is_dir() else path
    if not path.is_file():
        raise InputError(
            f"no report.json in {run_dir}; pass a run's output folder (it holds report.json, "
            "written when the run completed)"
        )
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise InputError(f"not a valid report.json ({err})", path=str(path)) from None
    if not isinstance(data, dict) or not isinstance(data.get("per_query"), list):
        raise InputError("not a rageval report: it has no per_query rows", path=str(path))
    return data


def write_report(
    run_dir: str | Path, other: str | Path | None = None, out: str | Path | None = None
) -> Path:
    """Write the page of ``run_dir`` (or of ``other`` against ``run_dir``); returns its path."""
    a_dir = Path(run_dir) if Path(run_dir).is_dir() else Path(run_dir).parent
    a = load(run_dir)
    if other is None:
        page = render(a, read_chunks(a_dir))
        target = Path(out) if out else a_dir / "report.html"
    else:
        b_dir = Path(other) if Path(other).is_dir() else Path(other).parent
        b = load(other)
        if a.get("digests", {}).get("golden") != b.get("digests", {}).get("golden"):
            warnings.warn(
                "the two runs used different golden sets: queries are matched by id", stacklevel=2
            )
        shared = {r["id"] for r in a["per_query"]} & {r["id"] for r in b["per_query"]}
        if not shared:
            raise InputError(
                f"{run_dir} and {other} have no query id in common; nothing to compare"
            )
        page = render_diff(
            a, read_chunks(a_dir), b, read_chunks(b_dir), a_dir.name or "A", b_dir.name or "B"
        )
        target = Path(out) if out else a_dir / "diff.html"
    target.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(target, page)
    return target
