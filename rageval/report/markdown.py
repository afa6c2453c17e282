"""Text that goes into markdown (a pull-request comment, a job summary) as data, never markup."""

from __future__ import annotations

from rageval.report.table import md_cell


def cell(text: object) -> str:
    """``text`` safe in a markdown table cell or paragraph: every ``<`` written ``&lt;`` (no tag,
    comment or image reaches the page; ``->`` stays readable), pipes escaped, line breaks
    folded (the table model's escaping, rageval.report.table)."""
    return md_cell(text)
