"""The per-query page (report.html) in a real headless Chromium: opens offline, sorts, filters,
expands a query to its chunks with the evidence quote highlighted, and diffs two runs."""

from __future__ import annotations

import shutil

import pytest

from rageval.report.html import highlight_ranges, rank_moves, render, render_diff

QUOTE = "contractors get ten days of parental leave"


def chunk(cid, doc, ordinal, text, start=0):
    return {"id": cid, "label": f"{doc}:{ordinal}", "doc_id": doc, "ordinal": ordinal,
            "start": start, "end": start + len(text), "text": text}  # fmt: skip


CHUNKS = {
    "c1": chunk("c1", "hr-leave", 0, "Leave policy. Employees get twenty days.", 0),
    "c2": chunk("c2", "hr-leave", 1, f"Note: {QUOTE}, paid in full.", 40),
    "c3": chunk("c3", "faq", 0, "Where is the office? In Leeds.", 0),
    "c4": chunk("c4", "runbook", 0, "Payments run in westeurope and northeurope.", 0),
}


def row(qid, query, retrieved, ndcg, first, source="ticket", tags=("hr",), evidence=True):
    labels = [CHUNKS[c]["label"] for c in retrieved]
    return {
        "id": qid, "query": query, "source": source, "tags": list(tags),
        "first_relevant_rank": first, "retrieved": retrieved, "retrieved_labels": labels,
        "relevant_labels": ["hr-leave:1"] if evidence else ["runbook:0"],
        "expected_docs": ["hr-leave"] if evidence else ["runbook"],
        "evidence": [{"doc": "hr-leave", "quote": QUOTE}] if evidence else [],
        "evidence_spans": [{"doc": "hr-leave", "start": 46, "end": 46 + len(QUOTE)}] if evidence else [],
        "ndcg@3": ndcg, "recall@3": 1.0 if first and first <= 3 else 0.0,
    }  # fmt: skip


def report(rows):
    return {"k": 3, "level": "chunk", "overrides": ["chunk=64"], "per_query": rows,
            "metrics": {"ndcg@3": sum(r["ndcg@3"] for r in rows) / len(rows), "recall@3": 0.5}}  # fmt: skip


RUN_A = report([
    row("q1", "How much leave do contractors get?", ["c1", "c2", "c3"], 0.63, 2),
    row("q2", "Which regions run payments?", ["c4", "c3", "c1"], 1.0, 1, "synthetic", ("ops",), False),
    row("q3", "Is the office in Leeds?", ["c3", "c1", "c4"], 0.0, 0, "adversarial", ("hr",), False),
])  # fmt: skip
RUN_B = report([
    row("q1", "How much leave do contractors get?", ["c2", "c1", "c4"], 1.0, 1),
    row("q2", "Which regions run payments?", ["c3", "c4", "c1"], 0.63, 2, "synthetic", ("ops",), False),
    row("q3", "Is the office in Leeds?", ["c3", "c1", "c4"], 0.0, 0, "adversarial", ("hr",), False),
])  # fmt: skip


def test_the_quote_is_highlighted_where_its_span_meets_the_chunk():
    r = RUN_A["per_query"][0]
    (lo, hi), = highlight_ranges(CHUNKS["c2"], r)  # fmt: skip
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


@pytest.fixture(scope="module")
def browser():
    chrome, driver = shutil.which("chromium"), shutil.which("chromedriver")
    if not (chrome and driver):
        pytest.skip("headless Chromium missing: apt-get install chromium chromium-driver")
    webdriver = pytest.importorskip("selenium.webdriver")
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = chrome
    for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1280,900"):
        opts.add_argument(a)
    d = webdriver.Chrome(service=Service(executable_path=driver), options=opts)
    # offline: any request leaving the file would fail and show in the performance entries
    d.execute_cdp_cmd("Network.enable", {})
    d.execute_cdp_cmd("Network.emulateNetworkConditions", {"offline": True, "latency": 0,
                      "downloadThroughput": -1, "uploadThroughput": -1})  # fmt: skip
    yield d
    d.quit()


def ids_shown(d):
    return [r.find_element("css selector", "td").text for r in d.find_elements("css selector", "#q tbody tr")
            if r.is_displayed()]  # fmt: skip


def test_one_run_page_sorts_filters_and_highlights_offline(browser, tmp_path):
    from selenium.webdriver.support.ui import Select

    path = tmp_path / "report.html"
    path.write_text(render(RUN_A, CHUNKS), encoding="utf-8")
    d = browser
    d.get(path.as_uri())
    assert d.execute_script("return performance.getEntriesByType('resource').length") == 0
    assert ids_shown(d) == ["q3", "q1", "q2"]  # worst first by ndcg@3
    headers = d.find_elements("css selector", "#q th")
    ndcg = next(h for h in headers if h.text.startswith("ndcg@3"))
    ndcg.click()  # already ascending: now descending
    assert ids_shown(d) == ["q2", "q1", "q3"]
    next(h for h in headers if h.text.startswith("id")).click()
    assert ids_shown(d) == ["q1", "q2", "q3"]

    Select(d.find_element("id", "slice")).select_by_value("source:synthetic")
    assert ids_shown(d) == ["q2"]
    Select(d.find_element("id", "slice")).select_by_value("")
    d.find_element("id", "only").click()  # misses only: q3 found nothing relevant
    assert ids_shown(d) == ["q3"]
    d.find_element("id", "only").click()
    d.find_element("id", "text").send_keys("contractors")
    assert ids_shown(d) == ["q1"] and "1 of 3" in d.find_element("id", "count").text

    q1 = next(r for r in d.find_elements("css selector", "#q tbody tr") if r.is_displayed())
    q1.find_element("css selector", "summary").click()
    marks = [m for m in q1.find_elements("css selector", "li mark") if m.is_displayed()]
    assert [m.text for m in marks] == [QUOTE]
    assert (
        marks[0].size["width"] > 0
        and marks[0].value_of_css_property("background-color") != "rgba(0, 0, 0, 0)"
    )
    relevant = q1.find_elements("css selector", "li.rel .label")
    assert [x.text for x in relevant] == ["hr-leave:1"]


def test_diff_page_shows_changes_worst_first_and_rank_moves(browser, tmp_path):
    path = tmp_path / "diff.html"
    path.write_text(
        render_diff(RUN_A, CHUNKS, RUN_B, CHUNKS, "baseline", "candidate"), encoding="utf-8"
    )
    d = browser
    d.get(path.as_uri())
    assert ids_shown(d) == ["q2", "q3", "q1"]  # the biggest drop first
    d.find_element("id", "only").click()  # changed only
    assert ids_shown(d) == ["q2", "q1"]
    q1 = [r for r in d.find_elements("css selector", "#q tbody tr") if r.is_displayed()][1]
    assert "+0.370" in q1.text and "2 → 1" in q1.text
    q1.find_element("css selector", "summary").click()
    moves = [m.text for m in q1.find_elements("css selector", "li .move")]
    assert moves == ["↑1", "↓1", "new"]
    assert "dropped from baseline's top 3: faq:0" in q1.text


def run_folder(path, report_dict):
    import json

    path.mkdir(parents=True)
    (path / "report.json").write_text(json.dumps(report_dict), encoding="utf-8")
    (path / "chunks.jsonl").write_text(
        "\n".join(json.dumps(c) for c in CHUNKS.values()) + "\n", encoding="utf-8"
    )
    return path


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
