"""The sweep as a user opens it in MLflow: a 2x2 sweep in an experiment that already holds a run,
the link it prints opened in headless Chromium against a real ``mlflow server``.

Set RAGEVAL_MLFLOW_SHOT=path.png to keep the screenshots of the sweep's view and (path-charts.png)
its chart view (docs/img holds them).
"""

from __future__ import annotations

import os
import re
import shutil

import pytest
from headless import chromium
from mlflow_server import mlflow_server

from rageval.app.main import run_app

pytestmark = [pytest.mark.integration, pytest.mark.long_module]

SWEPT = ["chunk=32,64", "search.bm25.b=0.75,0.2"]
# the mini golden set's corpus fits every budget (evidence_recall@1024t saturates); this metric
# tells the four configurations apart
DECIDE = "evidence_precision@5"


def project_args(mini, cache, uri) -> list[str]:
    return [
        "dataset=custom",
        f"dataset.corpus={mini / 'corpus'}",
        f"dataset.golden={mini / 'golden.jsonl'}",
        f"cache_dir={cache}",
        f"mlflow.tracking_uri={uri}",
        "search=bm25",
    ]


def wait_for_text(d, text: str, seconds: float = 90) -> None:
    """Until the page shows ``text`` (across elements: MLflow splits "4 matching runs")."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    WebDriverWait(d, seconds).until(lambda d: text in d.find_element(By.TAG_NAME, "body").text)


def close_side_panels(d) -> None:
    """MLflow 3.17 opens its assistant beside the table; a user closes it to read the runs."""
    from selenium.webdriver.common.by import By

    for close in d.find_elements(By.CSS_SELECTOR, "[aria-label='Close']"):
        if close.is_displayed():
            close.click()


def table_rows(d) -> dict[int, str]:
    """Row index -> the text of the row's cells (the pinned run name and the scrolled columns)."""
    from selenium.webdriver.common.by import By

    rows: dict[int, list[str]] = {}
    for el in d.find_elements(By.CSS_SELECTOR, ".ag-row[row-index]"):
        rows.setdefault(int(el.get_attribute("row-index")), []).append(el.text)
    return {i: " | ".join(parts) for i, parts in rows.items()}


def visible_headers(d) -> list[str]:
    """The header texts of the columns shown whole inside the window, left to right."""
    from selenium.webdriver.common.by import By

    width = d.execute_script("return window.innerWidth")
    out = []
    for el in d.find_elements(By.CSS_SELECTOR, ".ag-header-cell[col-id]"):
        rect = el.rect
        if el.is_displayed() and el.text.strip() and rect["x"] + rect["width"] <= width:
            out.append((rect["x"], el.text.strip()))
    return [text for _, text in sorted(out)]


def test_the_printed_link_opens_the_sweeps_four_jobs_best_marked(
    mini, shared_cache, tmp_path, capsys
):
    from mlflow.tracking import MlflowClient

    with mlflow_server(tmp_path / "server") as url:
        args = project_args(mini, shared_cache, url)
        # the experiment already holds a run of the team's
        assert run_app([*args, "chunk=64", f"hydra.run.dir={tmp_path / 'single'}"]) == 0
        sweep = ["-m", *args, *SWEPT, f"sweep.compare_metric={DECIDE}"]
        assert run_app([*sweep, f"hydra.sweep.dir={tmp_path / 'sweep'}"]) == 0
        out = capsys.readouterr().out
        link = re.search(r"sorted by evidence_precision@5: (http\S+)", out).group(1)
        charts = re.search(r"compare them in charts: (http\S+)", out).group(1)

        c = MlflowClient(url)
        exp = c.get_experiment_by_name("rageval")
        runs = c.search_runs([exp.experiment_id])
        assert len(runs) == 6  # the earlier run, the sweep's parent, its four jobs
        (parent,) = [r for r in runs if r.data.tags.get("rageval.sweep") == "parent"]
        jobs = [r for r in runs if r.data.tags.get("mlflow.parentRunId") == parent.info.run_id]
        others = [r.info.run_name for r in runs if r not in jobs]
        (best,) = [r for r in jobs if r.data.tags.get("rageval.verdict") == "best"]
        assert parent.data.tags["rageval.best_run_id"] == best.info.run_id
        assert all(len(r.data.metrics) <= 40 for r in runs)
        assert {"leaderboard.json", "slices.json", "pareto.png"} <= {
            a.path for a in c.list_artifacts(parent.info.run_id)
        }

        d = chromium("1600,1000")
        try:
            d.get(link)
            wait_for_text(d, "4 matching runs")
            close_side_panels(d)
            wait_for_text(d, best.info.run_name)
            rows = table_rows(d)
            shot = tmp_path / "sweep-view.png"
            d.save_screenshot(str(shot))
            if os.environ.get("RAGEVAL_MLFLOW_SHOT"):
                shutil.copyfile(shot, os.environ["RAGEVAL_MLFLOW_SHOT"])
            headers = visible_headers(d)
            # MLflow 3 in its classic runs view, not the GenAI one
            assert "workflowType=machine_learning" in d.current_url

            # exactly the sweep's four jobs: not the earlier run, not the parent
            assert len(rows) == 4
            for r in jobs:
                assert sum(r.info.run_name in text for text in rows.values()) == 1
            for name in others:
                assert not any(name in text for text in rows.values())
            # best first (sorted by the deciding metric), marked in its row and only there
            assert best.info.run_name in rows[0] and "best" in rows[0].split(" | ", 1)[1]
            assert not any("best" in t.split(" | ", 1)[1] for i, t in rows.items() if i)
            # the swept params, then the deciding metric, readable in the window
            decided = "span/evidence_precision_at_5"
            for name in ("chunk", "search.bm25.b", decided):
                assert name in headers, headers
            order = [headers.index(n) for n in ("chunk", "search.bm25.b", decided)]
            assert order == sorted(order)

            # the chart view opens on the deciding metric
            d.get(charts)
            wait_for_text(d, f"The sweep, decided by {decided}")
            wait_for_text(d, "Parallel Coordinates")
            if os.environ.get("RAGEVAL_MLFLOW_SHOT"):
                close_side_panels(d)
                shot = os.environ["RAGEVAL_MLFLOW_SHOT"].replace(".png", "-charts.png")
                d.save_screenshot(shot)
        finally:
            d.quit()
