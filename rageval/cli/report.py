"""``rageval report RUN_DIR [OTHER_RUN_DIR] --out FILE``: the per-query page of a run, or the
difference between two runs of the same golden set (e.g. the baseline's run and a candidate).

A run folder holds report.json and chunks.jsonl (the chunk texts the page shows). With two
folders the first is A (the baseline) and the second B (the candidate): queries sort by the
change of the deciding metric, worst first, and each shows how B's top-k moved against A's.
The page is one self-contained HTML file: open it in a browser, attach it to a ticket.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from rageval.errors import InputError


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("run_dir", metavar="RUN_DIR", help="a run's output folder (holds report.json)")
    p.add_argument("other", metavar="OTHER_RUN_DIR", nargs="?",
                   help="a second run folder: the page shows OTHER against RUN_DIR")  # fmt: skip
    p.add_argument("--out", metavar="FILE",
                   help="HTML file to write (default RUN_DIR/report.html, or RUN_DIR/diff.html with two runs)")  # fmt: skip


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


def write_report(run_dir: str | Path, other: str | Path | None = None,
                 out: str | Path | None = None) -> Path:  # fmt: skip
    """Write the page of ``run_dir`` (or of ``other`` against ``run_dir``); returns its path."""
    from rageval.formats.atomic import atomic_write_text
    from rageval.report.html import render, render_diff
    from rageval.report.per_query import read_chunks

    a_dir = Path(run_dir) if Path(run_dir).is_dir() else Path(run_dir).parent
    a = load(run_dir)
    if other is None:
        page = render(a, read_chunks(a_dir))
        target = Path(out) if out else a_dir / "report.html"
    else:
        b_dir = Path(other) if Path(other).is_dir() else Path(other).parent
        b = load(other)
        if a.get("digests", {}).get("golden") != b.get("digests", {}).get("golden"):
            import warnings

            warnings.warn("the two runs used different golden sets: queries are matched by id",
                          stacklevel=2)  # fmt: skip
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


def run(args: argparse.Namespace) -> int:
    path = write_report(args.run_dir, args.other, args.out)
    print(f"per-query page: {path}")
    return 0


handle = run
