"""Text that goes into markdown (a pull-request comment, a job summary) as data, never markup."""

from __future__ import annotations


def cell(text: object) -> str:
    """``text`` safe in a markdown table cell or paragraph: every ``<`` written ``&lt;`` (no tag,
    comment or image reaches the page; ``->`` stays readable), pipes escaped, line breaks
    folded."""
    out = str(text).replace("<", "&lt;").replace("|", "\\|")
    return " ".join(out.splitlines())
