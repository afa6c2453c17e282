"""The pages' templates (rageval/report/pages/): every template renders with autoescape on, and a
page runs no script and applies no style but its own files', named by hash in its policy.

Each check is also shown to fail on a page that breaks it: a template environment without
autoescape, an inline script or style the policy does not cover, an event handler attribute."""

from __future__ import annotations

import base64
import copy
import hashlib
import re
from html.parser import HTMLParser
from pathlib import Path

import jinja2
import pytest
from markupsafe import escape
from page_runs import CHUNKS, RUN_A

import rageval
from rageval.authoring.review import render_review
from rageval.report import pages
from rageval.report.html import render, render_diff

X = "<img src=x onerror=alert(1)>\"'&</script><style>*{}</style>"


def hostile_pages() -> dict[str, str]:
    """Every page, with ``X`` in each field a run, a gate or a pool gives it."""
    run = copy.deepcopy(RUN_A)
    q = run["per_query"][0]
    q.update(id=X, query=X, meta={"x": X}, evidence=[{"doc": X, "quote": X}])
    q["retrieved_labels"] = [X, *q["retrieved_labels"][1:]]
    run["overrides"] = [f"chunk={X}"]
    run["slices"] = {
        "fields": [X],
        "min_slice_size": X,
        "metrics": ["ndcg@3"],
        "rows": [{"slice": X, "pooled": [X], "n": X, "metrics": {}, "ci": {}}],
    }
    chunks = copy.deepcopy(CHUNKS)
    chunks["c1"]["text"] = X
    moved = copy.deepcopy(run)  # the same queries, the hostile one's top results reordered
    moved["per_query"][0]["retrieved_labels"] = [*reversed(q["retrieved_labels"][1:]), "new:0"]
    moved["per_query"][0]["ndcg@3"] = 0.1
    gate_row = {"slice": X, "pooled": [X], "n": X, "metric": X, "verdict": X, "delta": -0.1}
    pool = [
        {
            "query_id": X,
            "query": X,
            "evidence": [{"doc": X, "quote": X}],
            "passages": [{"doc": X, "start": 0, "text": X, "chunk": X, "runs": {X: X}}],
        },
        {"query_id": "q2", "query": "q", "evidence": [], "relevant": [X], "passages": []},
    ]
    return {
        "report.html": render(run, chunks),
        "diff page": render_diff(
            run, chunks, moved, chunks, X, X, slice_rows=[gate_row], verdict=[X]
        ),
        "review page": render_review(pool, X, X),
    }


def test_the_pages_environment_autoescapes_every_template_and_none_turns_it_off():
    env = pages.environment()
    assert env.autoescape is True  # every template, whatever its name
    names = sorted(p.name for p in pages.FOLDER.glob("*.j2"))
    assert names == sorted(pages.TEMPLATES)
    for name in names:
        source = (pages.FOLDER / name).read_text(encoding="utf-8")
        assert not re.search(r"autoescape|\|\s*safe\b|Markup", source), name
        assert env.get_template(name).environment is env
    assert env.from_string("{{ x }}").render(x=X) == escape(X)


def test_only_the_pages_module_makes_templates_or_marks_text_safe():
    # a page rendered by another Environment, jinja2.Template or a Markup(...) of run data would
    # print it unescaped: rageval's code does neither outside rageval/report/pages/
    root = Path(rageval.__file__).parent
    users = {
        p.relative_to(root).as_posix()
        for p in root.rglob("*.py")
        if re.search(r"\bjinja2\b|\bmarkupsafe\b|\bMarkup\b", p.read_text(encoding="utf-8"))
    }
    assert users == {"report/pages/__init__.py"}


def test_every_page_escapes_every_field():
    for name, page in hostile_pages().items():
        assert X not in page and "<img" not in page, name
        assert "onerror=alert(1)&gt;" in page, name  # shown, as text


def test_a_page_rendered_without_autoescape_is_caught(monkeypatch):
    env = pages.environment()
    plain = jinja2.Environment(
        loader=env.loader,
        autoescape=False,
        undefined=jinja2.StrictUndefined,
        finalize=env.finalize,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    plain.globals.update(env.globals)
    plain.policies.update(env.policies)
    monkeypatch.setattr(pages, "environment", lambda: plain)
    assert all(X in page for page in hostile_pages().values())


class Parts(HTMLParser):
    """A page's inline scripts and styles (with their attributes) and the attributes that would
    run script or apply style outside them."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.scripts: list[tuple[dict, str]] = []
        self.styles: list[str] = []
        self.inline: list[str] = []  # on* handlers, style="...", javascript: URLs
        self._open: tuple[str, dict] | None = None
        self._text = ""

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        for k, v in a.items():
            if k.startswith("on") or k == "style" or (v or "").strip().startswith("javascript:"):
                self.inline.append(f"<{tag} {k}={v!r}>")
        if tag in ("script", "style"):
            self._open, self._text = (tag, a), ""

    def handle_data(self, data):
        if self._open:
            self._text += data

    def handle_endtag(self, tag):
        if self._open and tag == self._open[0]:
            if tag == "script":
                self.scripts.append((self._open[1], self._text))
            else:
                self.styles.append(self._text)
            self._open = None


def sha(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"


def not_covered(page: str) -> list[str]:
    """What in ``page`` its Content-Security-Policy would block or does not name: a script or
    style whose hash the policy lacks, a script of another type than JSON data, an inline
    handler or style attribute; and any hash the policy names that is not the page's own file."""
    (policy,) = re.findall(r'http-equiv="Content-Security-Policy" content="([^"]+)"', page)
    allowed = {
        d.split()[0]: set(d.split()[1:]) for d in (x.strip() for x in policy.split(";")) if d
    }
    assert allowed["default-src"] == {"'none'"}
    parts = Parts()
    parts.feed(page)
    parts.close()
    problems = list(parts.inline)
    for attrs, text in parts.scripts:
        if attrs == {"type": "application/json", "id": "records"}:
            continue  # data, never run
        if attrs or sha(text) not in allowed["script-src"]:
            problems.append(f"script {attrs} not allowed by its hash: {text[:60]!r}")
    for text in parts.styles:
        if sha(text) not in allowed["style-src"]:
            problems.append(f"style not allowed by its hash: {text[:60]!r}")
    # the policy names the page's own script and style files, as inlined, and nothing else
    own = {
        sha((pages.FOLDER / f).read_text(encoding="utf-8"))
        for f in pages.FOLDER.iterdir()
        if f.suffix in pages.ASSETS
    }
    problems += [h for h in allowed["script-src"] | allowed["style-src"] if h not in own]
    return problems


def test_every_page_runs_and_styles_only_its_own_files_by_their_hashes():
    for name, page in hostile_pages().items():
        assert not_covered(page) == [], name
        assert page.count("<style>") == 1 and page.count("<script>") == 1, name


@pytest.mark.parametrize(
    "added",
    [
        '<script type="module">alert(1)</script>',  # not hashed by the policy
        "<script defer>alert(1)</script>",
        '<div style="color:red">x</div>',  # style attributes are blocked
        '<a href="#" onclick="alert(1)">x</a>',
        '<a href="javascript:alert(1)">x</a>',
    ],
)
def test_inline_script_or_style_the_policy_does_not_cover_is_caught(added):
    page = render(RUN_A, CHUNKS)
    assert not_covered(page) == []
    assert not_covered(page.replace("</body>", added + "</body>"))


def test_a_page_script_or_style_that_is_not_its_file_is_caught():
    page = render(RUN_A, CHUNKS)
    # the policy would allow it (hashed at render time), but it is not the page's own file
    script = re.search(r"<script>(.*?)</script>", page, re.S).group(1)
    from rageval.formats.page_csp import with_csp

    bare = re.sub(r'\n<meta http-equiv="Content-Security-Policy"[^>]*>', "", page)
    tampered = with_csp(bare.replace(script, script + "alert(1);"))
    assert any("sha256" in p for p in not_covered(tampered))


def test_an_inlined_file_must_be_a_page_script_or_style_of_the_folder():
    for bad in ("queries.html.j2", "../html.py", "missing.js"):
        with pytest.raises(ValueError, match="not a page script or style"):
            pages.inline(bad)
