"""Text that goes into markdown (a pull-request comment, a job summary) as data, never markup."""

from __future__ import annotations

import html


def cell(text: object) -> str:
    """``text`` safe in a markdown table cell or paragraph: HTML escaped (no tags or comments
    reach the page), pipes escaped, line breaks folded."""
    out = html.escape(str(text), quote=False).replace("|", "\\|")
    return " ".join(out.splitlines())
