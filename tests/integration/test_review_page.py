"""The review page in a real headless Chromium (Debian's chromium and chromedriver, selenium): a
pool of BM25 runs on the fixture corpus is written as a page, opened offline, graded by clicking,
saved through Chrome's download, and the saved file imported back into the judgements."""

from __future__ import annotations

import json
import time

import pytest
from headless import offline_chromium
from run_folders import make_run

from rageval.authoring.pool import read_pool
from rageval.cli.main import main


@pytest.fixture(scope="module")
def downloads(tmp_path_factory):
    return tmp_path_factory.mktemp("downloads")


@pytest.fixture(scope="module")
def browser(downloads):
    d = offline_chromium("1200,1000", downloads)
    yield d
    d.quit()


def wait_for_file(folder, pattern, timeout=5.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        done = [p for p in folder.glob(pattern) if not p.name.endswith(".crdownload")]
        if done:
            return done[0]
        time.sleep(0.05)
    raise AssertionError(f"no {pattern} in {folder} after {timeout} s")


def test_grade_save_and_import_back(browser, downloads, tmp_path, mini, model_dir, capsys):
    judgements = tmp_path / "golden" / "judgements.jsonl"
    judgements.parent.mkdir()
    judgements.write_text("")  # the run names it, so it must exist; nothing judged yet
    run = make_run(mini, model_dir, tmp_path / "run", chunk=32, judgements=str(judgements))
    pool_file = tmp_path / "pool.jsonl"
    page = tmp_path / "review.html"
    assert main(["pool", str(run), "--depth", "3", "--out", str(pool_file)]) == 0
    assert main(["judge", str(pool_file), "--review", str(page)]) == 0
    pool = read_pool(pool_file)
    total = sum(len(q["passages"]) for q in pool)
    capsys.readouterr()

    d = browser
    d.get(page.as_uri())
    assert d.execute_script("return performance.getEntriesByType('resource').length") == 0
    queries = d.find_elements("css selector", "section.query")
    assert [q.find_element("css selector", ".qid").text for q in queries] == [
        q["query_id"] for q in pool
    ]
    first = queries[0]
    assert pool[0]["evidence"][0]["quote"] in first.find_element("css selector", ".known").text
    assert d.find_element("id", "progress").text == f"0 of {total} graded"

    # Save with nothing graded and no name: told what to do, nothing downloaded
    d.find_element("id", "save").click()
    assert "name" in d.find_element("id", "status").text
    d.find_element("id", "judge").send_keys("Ada Lovelace")
    d.find_element("id", "save").click()
    assert "Nothing graded" in d.find_element("id", "status").text

    passages = d.find_elements("css selector", "li.passage")
    picks = {0: 3, 1: 0, 2: 2}  # passage index -> grade
    for i, g in picks.items():
        passages[i].find_element("css selector", f"label.g{g}").click()
    passages[1].find_element("css selector", "label.g1").click()  # changed their mind: 0 -> 1
    picks[1] = 1
    passages[2].find_element("css selector", ".note").send_keys("answers it in passing")
    assert d.find_element("id", "progress").text == f"3 of {total} graded"
    # the keyboard: a click marks passage 3; "2" grades it and moves to 4, "0" grades 4 and
    # moves to 5, "j" to 6, "k" back to 5
    from selenium.webdriver.common.action_chains import ActionChains

    passages[3].find_element("css selector", ".text").click()
    ActionChains(d).send_keys("2").perform()
    assert "current" in passages[4].get_attribute("class")
    ActionChains(d).send_keys("0", "j", "k").perform()
    assert "current" in passages[5].get_attribute("class")
    assert passages[3].find_element("css selector", "input[value='2']").is_selected()
    assert passages[4].find_element("css selector", "input[value='0']").is_selected()
    picks.update({3: 2, 4: 0})
    assert d.find_element("id", "progress").text == f"5 of {total} graded"
    d.save_screenshot(str(tmp_path / "review.png"))
    d.find_element("id", "ungraded").click()  # hides what is graded
    assert not passages[0].is_displayed() and passages[5].is_displayed()
    d.find_element("id", "ungraded").click()
    d.find_element("id", "save").click()
    saved = wait_for_file(downloads, "judgements-Ada_Lovelace-*.jsonl")
    status = d.find_element("id", "status").text
    assert "Saved 5 grades" in status
    # the command shown names the pool, so the import goes to the judgements file it names
    assert f"import them with: rageval judge {pool_file} --import {saved.name}" in status

    records = [json.loads(x) for x in saved.read_text().splitlines()]
    flat = [(q, p) for q in pool for p in q["passages"]]
    assert len(records) == 5
    for rec, (i, g) in zip(records, sorted(picks.items()), strict=True):
        q, p = flat[i]
        assert (rec["query_id"], rec["doc"], rec["quote"], rec["start"]) == (
            q["query_id"],
            p["doc"],
            p["text"],
            p["start"],
        )
        assert rec["grade"] == g and rec["judge"] == "human:Ada Lovelace"
        assert rec["at"].endswith("Z") and len(rec["at"]) == 20
    assert records[2]["rationale"] == "answers it in passing" and "rationale" not in records[0]

    argv = ["judge", str(pool_file), "--import", str(saved)]
    assert main(argv) == 0
    assert "added 5 judgements by human:Ada Lovelace" in capsys.readouterr().out
    stored = [json.loads(x) for x in judgements.read_text().splitlines()]
    assert sorted(r["grade"] for r in stored) == sorted(picks.values())
    assert main(argv) == 0  # the same file again: nothing new
    assert "added 0 judgements" in capsys.readouterr().out
    assert len(judgements.read_text().splitlines()) == 5

    # pooled again, the judged passages are left out
    assert main(["pool", str(run), "--depth", "3", "--out", str(tmp_path / "again.jsonl")]) == 0
    again = sum(len(q["passages"]) for q in read_pool(tmp_path / "again.jsonl"))
    assert again == total - 5
