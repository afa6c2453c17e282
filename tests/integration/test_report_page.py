"""The per-query page in a real headless Chromium (Debian's chromium and chromedriver, selenium):
opens offline, sorts, filters by slice, misses and text, expands a query to its chunks with the
evidence quote highlighted, and in the diff view shows changes worst first with rank moves."""

from __future__ import annotations

import pytest
from headless import offline_chromium
from page_runs import CHUNKS, QUOTE, RUN_A, RUN_B

from rageval.report.html import render, render_diff


@pytest.fixture(scope="module")
def browser():
    d = offline_chromium()
    yield d
    d.quit()


def ids_shown(d):
    return [
        r.find_element("css selector", "td").text
        for r in d.find_elements("css selector", "#q tbody tr")
        if r.is_displayed()
    ]


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
    # a golden line's meta fields are slices too, values with spaces and list items included
    options = [o.get_attribute("value") for o in Select(d.find_element("id", "slice")).options]
    assert {"difficulty:very hard", "lang:en", "lang:de"} <= set(options)
    Select(d.find_element("id", "slice")).select_by_value("difficulty:very hard")
    assert ids_shown(d) == ["q1"]
    Select(d.find_element("id", "slice")).select_by_value("lang:de")
    assert ids_shown(d) == ["q1"]
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
