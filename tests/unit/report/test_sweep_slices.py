"""The sweep's per-slice section on hand-made job folders: the deciding metric per slice and job,
the best job per slice, the slices on which the overall winner loses."""

from __future__ import annotations

import json

import numpy as np
import pytest

from rageval.report.leaderboard import load_jobs, rank
from rageval.scoring.stats import bootstrap_ci

METRIC = "ndcg@5"


def _job(root, n, overrides, ticket, adversarial, sliced=True):
    d = root / str(n)
    d.mkdir(parents=True)
    values = [*ticket, *adversarial]
    rows = [
        {
            "id": f"q{i:02d}",
            "source": "ticket" if i < len(ticket) else "adversarial",
            "tags": ["rare"] if i == 0 else [],
            METRIC: float(v),
        }
        for i, v in enumerate(values)
    ]
    rep = {
        "metrics": {METRIC: float(np.mean(values))},
        "ci": {METRIC: list(bootstrap_ci(values))},
        "per_query": rows,
        "overrides": overrides,
        "k": 5,
    }
    if sliced:  # what a run writes; the section recomputes from per-query rows either way
        rep["slices"] = {
            "fields": ["source", "tags"],
            "min_slice_size": 10,
            "metrics": [],
            "rows": [],
        }
    (d / "report.json").write_text(json.dumps(rep))


@pytest.fixture
def sweep(tmp_path):
    rng = np.random.default_rng(3)
    ticket = rng.uniform(0.6, 1.0, 30)
    adversarial = rng.uniform(0.4, 0.8, 12)
    # job 0 wins on the mean (tickets improve) while adversarial queries collapse; job 1 holds them
    _job(tmp_path, 0, ["search=hybrid"], ticket + 0.1, adversarial - 0.35)
    _job(tmp_path, 1, ["search=vector"], ticket - 0.05, adversarial)
    return tmp_path


def test_each_job_gets_the_deciding_metric_per_slice_with_its_ci(sweep):
    board = rank(load_jobs(sweep), METRIC)
    view = board.slices
    assert board.best == 0 and view.names == [
        "source=ticket",
        "source=adversarial",
        "tags=(none)",  # the untagged queries
        "tags=other",
    ]
    rows = json.loads((sweep / "1" / "report.json").read_text())["per_query"]
    adv = [r[METRIC] for r in rows if r["source"] == "adversarial"]
    n, mean, lo, hi = view.cells[1]["source=adversarial"]
    assert n == 12 and mean == pytest.approx(np.mean(adv), abs=1e-12)
    assert [lo, hi] == pytest.approx(list(bootstrap_ci(adv)), abs=1e-12)
    best = view.best_per_slice()
    assert best["source=ticket"] == 0 and best["source=adversarial"] == 1
    assert view.pooled == {"tags=other": ["rare"]}


def test_markdown_and_console_say_where_the_winner_loses(sweep):
    board = rank(load_jobs(sweep), METRIC)
    md = board.markdown()
    assert "### By slice: ndcg@5" in md
    assert "| job | search | source=ticket (n=30) | source=adversarial (n=12) |" in md
    section = md.split("### By slice")[1].splitlines()
    line = next(x for x in section if x.startswith("| 1 | vector |"))
    assert line.split(" | ")[3].startswith("**")  # job 1 leads on the adversarial slice
    assert not line.split(" | ")[2].startswith("**")
    assert "on source=adversarial job 1 leads" in md and "against the best job 0's" in md
    text = board.console()
    assert "By slice: ndcg@5" in text and all(len(x) <= 120 for x in text.splitlines())


def test_reports_written_before_slices_get_no_section(tmp_path):
    _job(tmp_path, 0, ["chunk=1"], [0.5] * 12, [0.1] * 12, sliced=False)
    _job(tmp_path, 1, ["chunk=2"], [0.4] * 12, [0.2] * 12, sliced=False)
    board = rank(load_jobs(tmp_path), METRIC)
    assert board.slices is None and "By slice" not in board.markdown()


def test_leaderboard_csv_has_the_deciding_metric_per_slice(sweep):
    import csv
    import io

    board = rank(load_jobs(sweep), METRIC)
    rows = {r["job"]: r for r in csv.DictReader(io.StringIO(board.csv()))}
    for job in (0, 1):
        n, mean, lo, hi = board.slices.cells[job]["source=adversarial"]
        row = rows[str(job)]
        assert float(row["ndcg@5 [source=adversarial]"]) == pytest.approx(mean, abs=1e-12)
        assert float(row["ndcg@5 [source=adversarial]_low"]) == pytest.approx(lo, abs=1e-12)
        assert float(row["ndcg@5 [source=adversarial]_high"]) == pytest.approx(hi, abs=1e-12)
        assert row["n [source=adversarial]"] == "12" and row["n [source=ticket]"] == "30"
    # the winner on the mean loses on the adversarial slice, and the spreadsheet shows it
    assert float(rows["0"]["ndcg@5 [source=adversarial]"]) < float(
        rows["1"]["ndcg@5 [source=adversarial]"]
    )


def test_leaderboard_csv_without_slices_has_no_slice_columns(tmp_path):
    _job(tmp_path, 0, ["chunk=1"], [0.5] * 12, [0.1] * 12, sliced=False)
    _job(tmp_path, 1, ["chunk=2"], [0.4] * 12, [0.2] * 12, sliced=False)
    head = rank(load_jobs(tmp_path), METRIC).csv().splitlines()[0]
    assert "[" not in head and "n [" not in head
