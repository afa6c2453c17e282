"""The sweep's console tables fit 120 columns with one line per job, whatever the jobs report:
columns that do not fit are left out (and named), never wrapped into a three-line row."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from rageval.report.leaderboard import load_jobs, rank
from rageval.scoring.stats import bootstrap_ci

DECIDING = "evidence_recall@1024t"
# the demo sweep's columns: evidence quotes, judged@5 and the condensed nDCG among them
METRICS = [
    DECIDING,
    "ndcg@5",
    "recall@5",
    "quote_recall@5",
    "evidence_recall@5",
    "evidence_precision@5",
    "evidence_iou@5",
    "evidence_precision_max",
    "tokens@5",
    "judged@5",
    "ndcg_cond@5",
]
COSTS = {
    "load_s": 0.03,
    "chunk_s": 0.95,
    "embed_s": 12.5,
    "index_s": 0.11,
    "search_s": 0.05,
    "rerank_s": 3.2,
    "score_s": 0.7,
    "total_s": 17.3,
    "latency_p50_ms": 4.32,
    "latency_p95_ms": 5.53,
    "texts_embedded": 12260,
    "texts_cached": 0,
    "index_disk_bytes": 1_600_000,
    "index_memory_bytes": 1_700_000,
    "tokens_per_query": 635.3,
    "requests_index": 10,
    "requests_search": 2,
}


def _job(root, n, values, rng):
    d = root / str(n)
    d.mkdir(parents=True)
    per_metric = {
        m: np.clip(rng.normal(0.6, 0.2, 60), 0, 1) * (1000 if m == "tokens@5" else 1)
        for m in METRICS
    }
    rows = [{"id": f"q{i}", **{m: float(v[i]) for m, v in per_metric.items()}} for i in range(60)]
    rep = {
        "metrics": {m: float(v.mean()) for m, v in per_metric.items()},
        "ci": {m: list(bootstrap_ci(v)) for m, v in per_metric.items()},
        "per_query": rows,
        "overrides": [f"{k}={v}" for k, v in values.items()],
        "k": 5,
        "costs": {c: x * (1 + n / 10) for c, x in COSTS.items()},
    }
    (d / "report.json").write_text(json.dumps(rep))


@pytest.fixture
def board(tmp_path):
    rng = np.random.default_rng(7)
    n = 0
    for chunk in (128, 256, 512):
        for search in ("vector", "bm25", "hybrid"):
            values = {"chunk": chunk, "search": search, "rerank": "cross_encoder"}
            _job(tmp_path, n, values, rng)
            n += 1
    return rank(load_jobs(tmp_path), DECIDING, resamples=200)


def _job_lines(table: str, jobs: int) -> list[str]:
    return [x for x in table.splitlines() if re.match(r"\s+\d+\s{3}(128|256|512)\s", x)][:jobs]


@pytest.mark.parametrize("width", [120, 100])
def test_the_leaderboard_fits_with_one_line_per_job_and_the_ci_whole(board, width):
    text = board.console(width)
    assert max(map(len, text.splitlines())) <= width
    main = text.split("\n\nBy slice")[0].split("\n\nCosts")[0]
    lines = _job_lines(main, 9)
    assert len(lines) == 9  # each job one line ...
    for job, line in zip(board.jobs, lines, strict=True):
        lo, hi = job.report["ci"][DECIDING]
        assert f"{job.metrics[DECIDING]:.3f} [{lo:.3f}, {hi:.3f}]" in line  # ... its CI on it
    # the next row of the table is the next job: no continuation lines of wrapped cells
    rows = main.split("─\n", 1)[1].splitlines()
    assert rows[:9] == lines
    shown = re.search(r"\(not shown here, in leaderboard.md and .csv: ([^)]*)\)", main)
    assert shown, main
    dropped = shown.group(1).replace("\n", " ").split(", ")
    assert dropped[0] == "evidence_iou@5"  # a near-duplicate of evidence precision goes first
    assert DECIDING not in dropped and "quote_recall@5" not in dropped


def test_the_wide_enough_console_shows_every_column(board):
    text = board.console(200).split("\n\nCosts")[0]
    assert "not shown here" not in text
    header = text.split("─", 1)[0]
    assert all(m in header for m in ("judged@5", "iou@5", "precision@5", "tokens@5"))


@pytest.mark.parametrize("width", [120, 90])
def test_the_costs_table_fits_and_always_shows_the_pareto_cost(board, width):
    text = board.costs_console(width)
    assert max(map(len, text.splitlines())) <= width
    rows = text.split("─\n", 1)[1].splitlines()[:9]
    assert rows == _job_lines(text, 9) and len(rows) == 9
    head = text.split("─\n", 1)[0]
    assert "p95 ms" in head and "pareto" in head
    assert "(not shown here" in text or width >= 120


def test_the_slice_section_fits_leaving_out_the_last_slices(tmp_path):
    rng = np.random.default_rng(1)
    for n, search in enumerate(("vector", "bm25")):
        d = tmp_path / str(n)
        d.mkdir()
        values = rng.uniform(0, 1, 200)
        rows = [
            {"id": f"q{i}", "source": f"customer-segment-{i % 20:02d}", "ndcg@5": float(v)}
            for i, v in enumerate(values)
        ]
        rep = {
            "metrics": {"ndcg@5": float(values.mean())},
            "ci": {"ndcg@5": list(bootstrap_ci(values))},
            "per_query": rows,
            "overrides": [f"search={search}"],
            "k": 5,
            "slices": {"fields": ["source"], "min_slice_size": 5, "metrics": [], "rows": []},
        }
        (d / "report.json").write_text(json.dumps(rep))
    view = rank(load_jobs(tmp_path), "ndcg@5", resamples=200).slices
    text = view.console(120)
    assert max(map(len, text.splitlines())) <= 120
    header = text.split("─", 1)[0]
    shown = [s for s in view.names if s in header]
    more = len(view.names) - len(shown)
    assert 0 < len(shown) < 20 and shown == view.names[: len(shown)]
    assert f"; {more} more slices in leaderboard.md)" in text
    assert len(_slice_rows(text)) == 2


def _slice_rows(text: str) -> list[str]:
    return [x for x in text.splitlines() if re.match(r"\s+\d+\s{3}(vector|bm25)\s", x)]


def test_with_many_swept_keys_the_ci_gives_way_last_and_rows_stay_whole(tmp_path):
    rng = np.random.default_rng(2)
    for n in range(4):
        values = {
            "embedding": f"minilm-int8-{n}",
            "backend": f"qdrant-{n}",
            "search": f"hybrid-{n}",
            "chunk": 128 * (n + 1),
        }
        _job(tmp_path, n, values, rng)
    board = rank(load_jobs(tmp_path), DECIDING, resamples=200)
    text = board.console(80).split("\n\nCosts")[0]
    assert max(map(len, text.splitlines())) <= 80
    rows = text.split("─\n", 1)[1].splitlines()[:4]
    assert [r.split()[0] for r in rows] == ["0", "1", "2", "3"]  # one line per job
    assert f"the CI of {DECIDING}" in text.replace("\n", " ")
    assert [r.split()[-2:] for r in rows][0][0] == f"{board.jobs[0].metrics[DECIDING]:.3f}"
