"""A strict Content-Security-Policy for the pages rageval writes (report.html, gate.html, the
review page): nothing loads from anywhere, and only the page's own script and style run, named by
their sha256 hashes, so text from a corpus, a golden set or a report that escaped its escaping
still could not run a script."""

from __future__ import annotations

import base64
import hashlib
import re

# executable inline scripts (a JSON data block, type="application/json", never runs)
SCRIPT = re.compile(r"<script>(.*?)</script>", re.DOTALL)
STYLE = re.compile(r"<style>(.*?)</style>", re.DOTALL)
CHARSET = '<meta charset="utf-8">'


def _hash(text: str) -> str:
    digest = hashlib.sha256(text.encode("utf-8")).digest()
    return f"'sha256-{base64.b64encode(digest).decode()}'"


def policy(page: str) -> str:
    """The policy for ``page``: its own inline scripts and styles by hash, nothing else."""
    scripts = " ".join(_hash(s) for s in SCRIPT.findall(page)) or "'none'"
    styles = " ".join(_hash(s) for s in STYLE.findall(page)) or "'none'"
    return (
        f"default-src 'none'; script-src {scripts}; style-src {styles}; "
        "img-src data:; base-uri 'none'; form-action 'none'"
    )


def with_csp(page: str) -> str:
    """``page`` with its policy in a meta element right after its charset (the page is final:
    its scripts and styles must not change afterwards)."""
    if CHARSET not in page:
        raise ValueError('a page needs <meta charset="utf-8"> for its policy to follow')
    meta = f'<meta http-equiv="Content-Security-Policy" content="{policy(page)}">'
    return page.replace(CHARSET, CHARSET + "\n" + meta, 1)
