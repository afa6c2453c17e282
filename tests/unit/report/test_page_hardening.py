"""Every page escapes every field it renders, numbers read from files included, under a strict
Content-Security-Policy that lets only the page's own script and style run (by their hashes)."""

from __future__ import annotations

import base64
import copy
import hashlib
import re

from page_runs import CHUNKS, RUN_A

from rageval.authoring.review import render_review
from rageval.report.html import render

XSS = "<img src=x onerror=alert(1)>"


def csp(page: str) -> str:
    (policy,) = re.findall(r'http-equiv="Content-Security-Policy" content="([^"]+)"', page)
    return policy


def hashes_of(page: str, tag: str) -> set[str]:
    bodies = re.findall(rf"<{tag}>(.*?)</{tag}>", page, re.S)
    return {
        "'sha256-" + base64.b64encode(hashlib.sha256(b.encode()).digest()).decode() + "'"
        for b in bodies
    }


def check_policy(page: str) -> None:
    policy = csp(page)
    assert "unsafe-inline" not in policy and "default-src 'none'" in policy
    script = re.search(r"script-src ([^;]+);", policy).group(1).split()
    style = re.search(r"style-src ([^;]+);", policy).group(1).split()
    assert set(script) == hashes_of(page, "script") and script
    assert set(style) == hashes_of(page, "style") and style


def test_the_review_page_escapes_a_pool_s_run_ranks_and_allows_only_its_own_script():
    pool = [
        {
            "query_id": "q1",
            "query": "q",
            "evidence": [],
            "passages": [{"doc": "d", "start": 0, "text": "t", "chunk": "d:0", "runs": {"r": XSS}}],
        }
    ]
    page = render_review(pool)
    assert XSS not in page and "&lt;img src=x onerror=alert(1)&gt;" in page
    check_policy(page)


def test_report_html_escapes_numbers_read_from_a_report_and_survives_wrong_types():
    report = copy.deepcopy(RUN_A)
    report["slices"] = {
        "fields": ["source"],
        "min_slice_size": 1,
        "metrics": ["ndcg@5"],
        "rows": [
            {
                "slice": "source=x",
                "n": "<script>alert(1)</script>",
                "metrics": {"ndcg@5": 0.5},
                "ci": {"ndcg@5": [0.1, 0.9]},
            }
        ],
    }
    report["per_query"][0]["first_relevant_rank"] = "<b>1</b>"
    report["per_query"][0]["ndcg@5"] = "<i>0.5</i>"  # a metric that is not a number: blank
    page = render(report, CHUNKS)  # no traceback on a string rank
    assert "<script>alert(1)</script>" not in page and "<b>1</b>" not in page
    assert "<i>0.5</i>" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    check_policy(page)
