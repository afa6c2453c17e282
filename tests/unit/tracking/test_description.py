"""A run description longer than MLflow keeps (8,000 characters) is cut by rageval at a line,
with a pointer to the artifacts, instead of by MLflow mid-row with a warning."""

from __future__ import annotations

from rageval.tracking.log import DESCRIPTION_LIMIT, fit_description


def test_a_short_description_is_kept_whole():
    text = "**Sweep** of 2 jobs\n\n| job | ndcg@5 |\n|---|---|\n| 0 | 0.5 |"
    assert fit_description(text) == text


def test_a_long_description_is_cut_at_a_line_and_says_where_the_rest_is():
    rows = [f"| {i} | chunk={i} search=hybrid | 0.{i:04d} |" for i in range(400)]
    text = "**Sweep** of 400 jobs\n\n" + "\n".join(rows)
    assert len(text) > DESCRIPTION_LIMIT
    fitted = fit_description(text)
    assert len(fitted) <= DESCRIPTION_LIMIT
    body, _, tail = fitted.rpartition("\n\n")
    assert "leaderboard.md" in tail and "study.md" in tail
    assert body.splitlines()[-1] in rows  # the last row kept is whole
    assert text.startswith(body)
