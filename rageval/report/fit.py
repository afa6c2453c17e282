"""Console tables that fit the terminal without wrapping a cell.

rich squeezes a table wider than the console by wrapping its cells, which turns a row with a
confidence interval into three lines. :func:`fit_table` instead leaves out whole columns, in the
order the caller names, until the table fits at its natural width; the files written beside the
console output (leaderboard.md, .csv) keep every column.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Sequence
from typing import Any

WIDE = 10_000  # a console this wide draws any table at its natural width


def render(table: Any, width: int) -> str:
    """The rich ``table`` as plain text in a console ``width`` columns wide, trailing spaces cut."""
    from rich.console import Console

    buf = io.StringIO()
    Console(file=buf, width=width, no_color=True, highlight=False).print(table)
    return "\n".join(line.rstrip() for line in buf.getvalue().splitlines()).strip("\n")


def widest(text: str) -> int:
    """The longest line of ``text``."""
    return max((len(line) for line in text.splitlines()), default=0)


def fit_table(
    build: Callable[[list[str]], Any],
    columns: Sequence[str],
    drop_order: Sequence[str],
    width: int,
) -> tuple[str, list[str]]:
    """Draw ``build(shown)`` for the largest ``shown`` subset of ``columns`` that fits ``width``
    columns with every cell on one line: the columns of ``drop_order`` are left out one at a time,
    in that order, until it fits. Returns the text and the columns left out. When even the table
    without them is too wide, rich folds its cells to ``width`` as a last resort."""
    shown = list(columns)
    queue = [c for c in drop_order if c in shown]
    dropped: list[str] = []
    text = render(build(shown), WIDE)
    while widest(text) > width and queue:
        name = queue.pop(0)
        shown.remove(name)
        dropped.append(name)
        text = render(build(shown), WIDE)
    if widest(text) > width:
        text = render(build(shown), width)
    return text, dropped


def job_table(keys: Sequence[str]) -> Any:
    """A sweep's console table with its first columns: the job number and each swept key."""
    from rich import box
    from rich.table import Table

    table = Table(box=box.SIMPLE_HEAD)
    table.add_column("job", justify="right", no_wrap=True)
    for k in keys:  # search.bm25.k1 over two lines, search. over bm25.k1: folded at the dot
        table.add_column(k.replace(".", ".\n", 1), overflow="fold")
    return table
