"""The review page's HTML: passage text is shown as text (escaped) and carried intact in the
records the Save button writes, whatever it holds."""

from __future__ import annotations

import json
import re

from markupsafe import escape

from rageval.authoring.review import render_review

HOSTILE = 'Run </script><script>alert(1)</script> then __DATA__ & "quotes" <b>bold</b>'


def test_passage_text_is_escaped_on_the_page_and_intact_in_the_records():
    pool = [
        {
            "query_id": "q1",
            "query": "what <i>now</i>?",
            "evidence": [{"doc": "d", "quote": "a <quote>"}],
            "passages": [
                {"doc": "d", "start": 7, "text": HOSTILE, "chunk": "d:0", "runs": {"r": 1}}
            ],
        }
    ]
    page = render_review(pool, "review <title>")
    assert "<script>alert(1)" not in page and "<i>now</i>" not in page
    assert escape(HOSTILE) in page  # Jinja's escaping, the pages' only one
    scripts = re.findall(r'<script type="application/json" id="records">(.*?)</script>', page, re.S)
    assert len(scripts) == 1
    assert json.loads(scripts[0]) == [
        [{"query_id": "q1", "doc": "d", "quote": HOSTILE, "start": 7}]
    ]
    assert page.count("<script") == 2  # the records and the page's own script, nothing injected


def test_the_import_command_shown_names_the_pool_quoted_for_a_shell():
    pool = [{"query_id": "q1", "query": "q", "evidence": [], "passages": []}]
    page = render_review(pool, "t", "my pools/pool.jsonl")
    assert "<code>rageval judge &#39;my pools/pool.jsonl&#39; --import FILE</code>" in page
    # Save's message: the script reads it from the button (the script is the same on every page)
    assert 'data-import-command="rageval judge &#39;my pools/pool.jsonl&#39; --import "' in page
    assert "rageval judge --import FILE" in render_review(pool)  # no pool file: the default


def test_document_labels_show_each_documents_opening_as_known_evidence():
    pool = [
        {
            "query_id": "q1",
            "query": "q",
            "evidence": [],
            "relevant": ["d1", "d2"],
            "relevant_docs": [{"doc": "d1", "text": "Lava <b>flows</b>"}],
            "passages": [],
        }
    ]
    page = render_review(pool)
    assert '<span class="doc">d1</span> <q>Lava &lt;b&gt;flows&lt;/b&gt;</q>' in page
    assert "<li>d2</li>" not in page  # the texts replace the bare ids
