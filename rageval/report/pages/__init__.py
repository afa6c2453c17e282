"""The HTML pages rageval writes, rendered from the Jinja2 templates in this folder.

- ``queries.html.j2``: a run's per-query page (report.html) and the page comparing two runs
  (``rageval report A B``, the gate's gate.html), with ``queries.css`` and ``queries.js``;
- ``review.html.j2``: the review page for people judging a pool, with ``review.css`` and
  ``review.js``.

Autoescape is on for every template: whatever a template prints is escaped by Jinja, the pages'
only escaping path (a value that must reach a script goes through Jinja's ``tojson``). A page's
script and style are files of their own here, inlined verbatim at render time (``inline``: pages
are single files, opened from disk or a CI artifact), and the page's Content-Security-Policy
allows exactly them by the sha256 of the inlined text (:mod:`rageval.formats.page_csp`).
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import jinja2
from markupsafe import Markup

from rageval.formats.page_csp import with_csp

FOLDER = Path(__file__).resolve().parent
TEMPLATES = ("queries.html.j2", "review.html.j2")
# what ``inline`` may put into a page: the pages' own scripts and styles, nothing from a run
ASSETS = (".css", ".js")


def _blank_none(value: Any) -> Any:
    """What a template prints for a value: None as nothing (a field a file left out)."""
    return "" if value is None else value


def inline(name: str) -> Markup:
    """The text of this folder's script or style ``name``, to go verbatim into a page's
    ``<script>`` or ``<style>`` element (whose hash the page's policy then names)."""
    path = FOLDER / name
    if path.suffix not in ASSETS or path.parent != FOLDER or not path.is_file():
        raise ValueError(f"not a page script or style in {FOLDER}: {name}")
    text = path.read_text(encoding="utf-8")
    if "</" in text:  # would end its element early (and "</" needs no place in a script here)
        raise ValueError(f"{name} holds '</', which would close its element in the page")
    return Markup(text)


@cache
def environment() -> jinja2.Environment:
    """The one Jinja2 environment of rageval's pages: autoescape on for every template, an
    unknown variable an error, None printed as nothing."""
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(FOLDER),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        finalize=_blank_none,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    # tojson (JSON inside a <script> element): keys in their order, text as it is
    env.policies["json.dumps_kwargs"] = {"sort_keys": False, "ensure_ascii": False}
    env.globals["inline"] = inline
    return env


def render_page(template: str, **context: Any) -> str:
    """The page ``template`` renders from ``context``, with its Content-Security-Policy."""
    return with_csp(environment().get_template(template).render(**context))
