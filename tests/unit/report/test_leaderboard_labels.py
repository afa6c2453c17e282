"""The leaderboard's judged-ness columns, and its note when jobs counted different label sets."""

import json

from rageval.report.leaderboard import load_jobs, rank


def _job(root, n, label_set, shift):
    d = root / str(n)
    d.mkdir()
    values = {"ndcg@5": 0.4 + shift, "judged@5": 0.2 + shift, "ndcg_cond@5": 0.8 + shift}
    rows = [{"id": f"q{i}", **values} for i in range(6)]
    rep = {"metrics": values, "per_query": rows, "overrides": [f"labels={label_set}"], "k": 5}
    if label_set:
        rep["label_set"] = label_set
    (d / "report.json").write_text(json.dumps(rep))


def test_judged_and_condensed_columns_and_one_label_set_says_nothing(tmp_path):
    _job(tmp_path, 0, "gold", 0.0)
    _job(tmp_path, 1, None, 0.1)  # a report from before label sets: gold
    board = rank(load_jobs(tmp_path), "ndcg@5", resamples=100)
    assert board.columns == ["ndcg@5", "judged@5", "ndcg_cond@5"]
    assert "| judged@5 | ndcg_cond@5 |" in board.markdown()
    assert "judged@5" in board.console() and "ndcg_cond" not in board.console()
    assert "label sets" not in board.header()


def test_jobs_of_different_label_sets_are_flagged(tmp_path):
    _job(tmp_path, 0, "gold", 0.0)
    _job(tmp_path, 1, "all", 0.1)
    header = rank(load_jobs(tmp_path), "ndcg@5", resamples=100).header()
    assert "measured with different label sets (all, gold)" in header
    assert "rank jobs of one set only" in header
