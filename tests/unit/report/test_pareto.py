"""The Pareto front of a sweep on hand-made jobs: dominance with ties and equal costs, the cost
chosen by sweep.pareto_cost, the marks in leaderboard.md/.csv and the plot."""

from __future__ import annotations

import csv
import io
import json
import math

import numpy as np
import pytest

from rageval.errors import ConfigError
from rageval.report.leaderboard import load_jobs, rank
from rageval.report.pareto import Point, dominates, pareto_front, pareto_png

# job: (quality, cost)
HAND_MADE = {
    0: (0.80, 10.0),  # on the front
    1: (0.80, 12.0),  # same quality as 0 at a higher cost: weakly dominated
    2: (0.70, 5.0),  # the cheapest: on the front
    3: (0.60, 5.0),  # same cost as 2 with less quality: weakly dominated
    4: (0.90, 20.0),  # the best: on the front
    5: (0.90, 20.0),  # equal to 4 on both: neither beats the other, both on the front
    6: (0.50, 30.0),  # worse and dearer than everything
    7: (math.nan, 1.0),  # no metric: takes no part
}


def test_front_of_a_hand_made_set_with_ties_and_equal_costs():
    points = [Point(j, q, c) for j, (q, c) in HAND_MADE.items()]
    assert pareto_front(points) == [2, 0, 4, 5]  # by cost, then job number


def test_dominance_needs_one_strict_improvement():
    a, b = Point(0, 0.8, 10.0), Point(1, 0.8, 12.0)
    assert dominates(a, b) and not dominates(b, a)
    assert not dominates(a, Point(2, 0.8, 10.0))  # equal on both
    assert not dominates(a, Point(3, 0.9, 11.0)) and not dominates(Point(3, 0.9, 11.0), a)


def _write(root, n, overrides, values, costs=None, ok=True):
    d = root / str(n)
    d.mkdir(parents=True)
    if not ok:
        (d / "error.json").write_text(json.dumps({"error": "boom", "overrides": overrides}))
        return
    values = np.asarray(values, dtype=float)
    rep = {
        "k": 5,
        "overrides": overrides,
        "metrics": {"ndcg@5": float(values.mean()), "tokens@5": 100.0 * (n + 1)},
        "ci": {"ndcg@5": [float(values.mean()) - 0.05, float(values.mean()) + 0.05]},
        "per_query": [{"id": f"q{i}", "ndcg@5": float(v)} for i, v in enumerate(values)],
    }
    if costs is not None:
        rep["costs"] = costs
    (d / "report.json").write_text(json.dumps(rep))


@pytest.fixture
def sweep(tmp_path):
    base = np.linspace(0.2, 0.9, 30)
    # job 0: good and slow, 1: as good and slower, 2: worse and fast, 3: worse, fast, big index
    _write(tmp_path, 0, ["search=hybrid"], base, {"latency_p95_ms": 5.0, "index_disk_bytes": 900})
    _write(tmp_path, 1, ["search=rerank"], base, {"latency_p95_ms": 9.0, "index_disk_bytes": 800})
    _write(
        tmp_path, 2, ["search=bm25"], base - 0.1, {"latency_p95_ms": 1.0, "index_disk_bytes": 50}
    )
    _write(tmp_path, 3, ["search=vector"], base - 0.2, {"latency_p95_ms": 1.0})
    _write(tmp_path, 4, ["search=broken"], base, ok=False)
    # a report written before the costs block: its latency is read as the cost
    _write(tmp_path, 5, ["search=old"], base - 0.3)
    rep = json.loads((tmp_path / "5" / "report.json").read_text())
    rep["latency"] = {"p50_ms": 0.1, "p95_ms": 0.5}
    (tmp_path / "5" / "report.json").write_text(json.dumps(rep))
    return tmp_path


def test_rank_marks_the_front_against_the_chosen_cost(sweep):
    jobs = load_jobs(sweep)
    board = rank(jobs, "ndcg@5", resamples=200)
    assert board.pareto_cost == "latency_p95_ms" and board.front == [5, 2, 0]
    by_index = rank(jobs, "ndcg@5", resamples=200, pareto_cost="index_disk_bytes")
    assert by_index.front == [2, 1]  # 3 and 5 report no index size: not on that front
    by_tokens = rank(jobs, "ndcg@5", resamples=200, pareto_cost="tokens_per_query")
    assert by_tokens.front == []  # no job reports it: nothing marked, nothing made up
    with pytest.raises(ConfigError, match="valid costs: .*tokens_per_query"):
        rank(jobs, "ndcg@5", pareto_cost="p95_latency")


def test_the_front_and_the_costs_are_columns_of_the_leaderboard(sweep):
    board = rank(load_jobs(sweep), "ndcg@5", resamples=200)
    rows = list(csv.DictReader(io.StringIO(board.csv())))
    assert [r["pareto_front"] for r in rows] == ["1", "0", "1", "0", "", "1"]
    assert [r["latency_p95_ms"] for r in rows] == ["5.0", "9.0", "1.0", "1.0", "", "0.5"]
    assert rows[3]["index_disk_bytes"] == "" and rows[0]["index_disk_bytes"] == "900.0"
    md = board.markdown()
    assert "| p95 ms | index disk | pareto | verdict |" in md
    assert md.count("| front |") == 3 and "on the Pareto front of ndcg@5" in md
    text = board.console()
    assert "Costs (front: the Pareto front of ndcg@5 against latency_p95_ms" in text
    assert max(map(len, text.splitlines())) <= 120


def test_the_plot_is_written_for_two_jobs_or_more(sweep, tmp_path):
    import matplotlib.image

    board = rank(load_jobs(sweep), "ndcg@5", resamples=200)
    path = pareto_png(board, tmp_path / "out" / "pareto.png")
    height, width, _ = matplotlib.image.imread(path).shape
    assert width > height > 400
    board.jobs = board.jobs[:1]
    assert pareto_png(board, tmp_path / "one.png") is None


def test_a_bytes_cost_is_drawn_in_kb_and_mb_not_raw_counts(tmp_path, monkeypatch):
    from matplotlib.figure import Figure

    base = np.linspace(0.2, 0.9, 30)
    for n, size in enumerate((430_000, 720_000, 1_600_000)):
        _write(tmp_path, n, [f"chunk={128 * 2**n}"], base - 0.1 * n, {"index_memory_bytes": size})
    board = rank(load_jobs(tmp_path), "ndcg@5", resamples=200, pareto_cost="index_memory_bytes")
    figures = []
    save = Figure.savefig
    monkeypatch.setattr(Figure, "savefig", lambda fig, p: figures.append(fig) or save(fig, p))
    pareto_png(board, tmp_path / "pareto.png")
    ax = figures[0].axes[0]
    ticks = [t.get_text() for t in ax.get_xticklabels() if t.get_text()]
    assert ticks and all(t.endswith((" kB", " MB")) or t == "0" for t in ticks), ticks
    assert "MB" in " ".join(ticks) and not ax.xaxis.get_offset_text().get_text()
    assert ax.get_xlabel() == "index_memory_bytes (the index's arrays in memory)"
