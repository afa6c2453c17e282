"""The per-query page (report.html): highlighted quotes, rank moves, self-contained HTML, the
``rageval report`` command and the gate's diff page. tests/support/page_runs.py holds the runs."""

from __future__ import annotations

from page_runs import CHUNKS, QUOTE, RUN_A, RUN_B, chunk, run_folder

from rageval.report.html import highlight_ranges, rank_moves, render


def test_the_quote_is_highlighted_where_its_span_meets_the_chunk():
    r = RUN_A["per_query"][0]
    ((lo, hi),) = highlight_ranges(CHUNKS["c2"], r)
    assert CHUNKS["c2"]["text"][lo:hi] == QUOTE
    assert highlight_ranges(CHUNKS["c1"], r) == []  # same document, outside the span
    half = chunk("c9", "hr-leave", 2, "x" * 10, 46 + 10)  # the chunk starts inside the quote
    assert highlight_ranges(half, r) == [(0, 10)]


def test_rank_moves_name_new_up_down_and_dropped():
    a = {"retrieved_labels": ["a:0", "b:0", "c:0"]}
    b = {"retrieved_labels": ["b:0", "a:0", "d:0"]}
    moves, dropped = rank_moves(a, b)
    assert moves == {"b:0": "↑1", "a:0": "↓1", "d:0": "new"} and dropped == ["c:0"]


def test_the_page_is_self_contained():
    page = render(RUN_A, CHUNKS)
    assert "http://" not in page and "https://" not in page and "<link" not in page
    assert "src=" not in page  # no external script or image


def test_rageval_report_writes_one_page_or_a_diff_and_rejects_a_folder_without_report(
    tmp_path, capsys
):
    from rageval.cli.main import main

    a, b = run_folder(tmp_path / "base", RUN_A), run_folder(tmp_path / "cand", RUN_B)
    assert main(["report", str(a)]) == 0
    page = (a / "report.html").read_text(encoding="utf-8")
    assert f"<mark>{QUOTE}</mark>" in page and "hr-leave:1" in page
    assert main(["report", str(a), str(b), "--out", str(tmp_path / "d.html")]) == 0
    diff = (tmp_path / "d.html").read_text(encoding="utf-8")
    assert "base vs cand" in diff and "↑1" in diff and "dropped from base" in diff
    assert f"per-query page: {tmp_path / 'd.html'}" in capsys.readouterr().out
    assert main(["report", str(tmp_path / "nothing")]) == 2
    assert "no report.json in" in capsys.readouterr().err


def test_the_gate_writes_the_baseline_vs_candidate_page_beside_its_files(tmp_path):
    from rageval.report.html import write_diff_page

    cand = run_folder(tmp_path / "check", RUN_B)
    path = write_diff_page(cand / "diff.html", RUN_A, cand)
    page = path.read_text(encoding="utf-8")
    assert "baseline vs candidate" in page and "+0.370" in page and f"<mark>{QUOTE}</mark>" in page
