"""``rageval compare`` / ``rageval plan`` refuse ambiguous or broken score files (exit 2, file and
line named) instead of picking one value: a duplicate query id (trec_eval -q, CSV, a report's
per-query rows), a ragged CSV row, bytes that are not UTF-8."""

from __future__ import annotations

import json

import pytest

from rageval.cli.main import main

IDS = [f"q{i:02d}" for i in range(20)]
BASE = {q: 0.5 + 0.02 * (i % 10) for i, q in enumerate(IDS)}
WORSE = {q: v - 0.34 for q, v in BASE.items()}


def _trec(values: dict[str, float]) -> list[str]:
    return [f"ndcg_cut_5\t{q}\t{v:.4f}" for q, v in values.items()]


def _csv(values: dict[str, float]) -> list[str]:
    return [f"{q},{v:.4f}" for q, v in values.items()]


def _run(args, capsys) -> tuple[int, str]:
    code = main(args)
    out = capsys.readouterr()
    return code, out.out + out.err


@pytest.mark.parametrize("command", ["compare", "plan"])
def test_a_trec_eval_file_whose_queries_repeat_with_other_values_is_refused(
    tmp_path, capsys, command
):
    base, run = tmp_path / "base.txt", tmp_path / "run.txt"
    base.write_text("\n".join(_trec(BASE)) + "\n")
    # the drop, then every query again with the baseline's values: the last line used to win
    run.write_text("\n".join(_trec(WORSE) + _trec(BASE)) + "\n")
    code, out = _run([command, str(base), str(run)], capsys)
    assert code == 2, out
    assert f"{run}:{len(IDS) + 1}" in out and "'q00' has a second ndcg_cut_5 line" in out
    assert "line 1" in out  # where the first one is


@pytest.mark.parametrize("command", ["compare", "plan"])
def test_a_csv_whose_query_ids_repeat_is_refused(tmp_path, capsys, command):
    base, run = tmp_path / "base.csv", tmp_path / "run.csv"
    base.write_text("id,ndcg@5\n" + "\n".join(_csv(BASE)) + "\n")
    run.write_text("id,ndcg@5\n" + "\n".join(_csv(WORSE) + _csv(BASE)) + "\n")
    code, out = _run([command, str(base), str(run)], capsys)
    assert code == 2, out
    assert f"{run}:{len(IDS) + 2}" in out and "'q00' has a second row" in out


def test_a_report_with_a_query_twice_is_refused(tmp_path, capsys):
    rows = [{"id": q, "ndcg@5": v} for q, v in [*WORSE.items(), *BASE.items()]]
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "report.json").write_text(
        json.dumps({"metrics": {"ndcg@5": 0.5}, "per_query": rows, "digests": {}, "k": 5})
    )
    (tmp_path / "a.csv").write_text("id,ndcg@5\n" + "\n".join(_csv(BASE)) + "\n")
    code, out = _run(["compare", str(tmp_path / "a.csv"), str(tmp_path / "b")], capsys)
    assert code == 2, out
    assert "'q00' has a second per-query row (rows 1 and 21" in out


@pytest.mark.parametrize(
    ("row", "cells"), [("q05,0.7,0.1", 3), ("q05", 1)], ids=["extra cell", "missing cell"]
)
def test_a_ragged_csv_row_is_refused_with_its_line(tmp_path, capsys, row, cells):
    lines = _csv(BASE)
    lines[5] = row
    base, run = tmp_path / "base.csv", tmp_path / "run.csv"
    base.write_text("id,ndcg@5\n" + "\n".join(_csv(BASE)) + "\n")
    run.write_text("id,ndcg@5\n" + "\n".join(lines) + "\n")
    code, out = _run(["compare", str(base), str(run)], capsys)
    assert code == 2, out
    assert f"{run}:7" in out and f"{cells} cells where the header has 2" in out


@pytest.mark.parametrize("suffix", ["csv", "txt"])
def test_a_score_file_that_is_not_utf8_is_refused_with_its_line(tmp_path, capsys, suffix):
    base, run = tmp_path / f"base.{suffix}", tmp_path / f"run.{suffix}"
    make = _csv if suffix == "csv" else _trec
    header = ["id,ndcg@5"] if suffix == "csv" else []
    base.write_text("\n".join(header + make(BASE)) + "\n")
    lines = header + make(BASE)
    lines[3] = lines[3].replace("q", "\xe9", 1)
    run.write_bytes("\n".join(lines).encode("latin-1") + b"\n")
    code, out = _run(["plan", str(base), str(run)], capsys)
    assert code == 2, out
    assert f"{run}:4" in out and "not valid UTF-8" in out
