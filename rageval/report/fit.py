"""Console tables that fit the terminal without wrapping a cell.

rich squeezes a table wider than the console by wrapping its cells, which turns a row with a
confidence interval into three lines. :func:`fit_table` instead leaves out whole columns, in the
order the caller names, until the table fits at its natural width; the files written beside the
console output (leaderboard.md, .csv) keep every column.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from rageval.report.table import WIDE, Column, Table, console


def widest(text: str) -> int:
    """The longest line of ``text``."""
    return max((len(line) for line in text.splitlines()), default=0)


def fit_table(
    build: Callable[[list[str]], Table],
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
    text = console(build(shown), WIDE, look="boxed")
    while widest(text) > width and queue:
        name = queue.pop(0)
        shown.remove(name)
        dropped.append(name)
        text = console(build(shown), WIDE, look="boxed")
    if widest(text) > width:
        text = console(build(shown), width, look="boxed")
    return text, dropped


def job_table(keys: Sequence[str]) -> Table:
    """A sweep's console table with its first columns: the job number and each swept key."""
    # search.bm25.k1 over two lines, search. over bm25.k1: folded at the dot
    return Table(
        [Column("job", "right"), *[Column(k.replace(".", ".\n", 1), fold=True) for k in keys]]
    )
