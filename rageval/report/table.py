"""One table model for every table rageval shows: columns (header, alignment), rows of cells
already formatted as text, and three renderers.

- :func:`markdown`: a GitHub table; every cell escaped (``|`` as ``\\|``, line breaks folded into
  spaces, ``<`` as ``&lt;`` unless the caller keeps it), so no cell can break the table or reach
  the page as markup. A backtick needs no escape: GitHub splits a row into cells before it reads
  code spans, and ``\\|`` inside one shows as ``|``.
- :func:`csv_text`: the csv module's quoting, one line per row.
- :func:`console`: plain text drawn by rich, never with ANSI codes (the text goes to a terminal,
  a file or a CI log alike). ``look="boxed"`` is the sweep's tables (rich's simple head rule);
  ``look="plain"`` the report's and gate's aligned columns (two spaces between columns, an
  optional ``---`` rule under the header, optional indent).

Modules outside this one build a :class:`Table` and never join cells with ``" | "`` themselves
(tests/unit/report/test_table.py checks it).
"""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

Align = Literal["left", "right", "center"]
Look = Literal["boxed", "plain"]
WIDE = 10_000  # a console this wide draws any table at its natural width

_MD_ALIGN = {"left": "---", "right": "---:", "center": ":---:"}


@dataclass(frozen=True)
class Column:
    """A column: its header and alignment; for the console, the narrowest it is drawn, whether a
    cell too wide folds over lines (else it stays on one line) and whether its cells are bold."""

    header: str
    align: Align = "left"
    min_width: int | None = None
    fold: bool = False
    bold: bool = False


@dataclass(frozen=True)
class Strong:
    """A cell shown with emphasis: ``**text**`` in markdown, bold on a terminal, plain in CSV."""

    text: str

    def __str__(self) -> str:
        return self.text


Cell = str | Strong


@dataclass
class Table:
    """Columns and rows of formatted cells; ``title`` goes above the table, ``caption`` below
    (both plain lines, left out of the CSV)."""

    columns: list[Column]
    rows: list[list[Cell]] = field(default_factory=list)
    title: str = ""
    caption: str = ""

    def add_row(self, *cells: Any) -> None:
        """One row, a cell per column (a non-string cell is written with ``str``, None as an
        empty cell, as the csv module writes it)."""
        if len(cells) != len(self.columns):
            raise ValueError(f"a row of {len(cells)} cells in a table of {len(self.columns)}")
        self.rows.append(
            [c if isinstance(c, Strong) else "" if c is None else str(c) for c in cells]
        )

    @property
    def headers(self) -> list[str]:
        return [c.header for c in self.columns]

    def markdown(self, *, escape_lt: bool = True) -> str:
        return markdown(self, escape_lt=escape_lt)

    def csv(self, *, lineterminator: str = "\n") -> str:
        return csv_text(self, lineterminator=lineterminator)

    def console(
        self, width: int = WIDE, *, look: Look = "plain", rule: bool = False, indent: int = 0
    ) -> str:
        return console(self, width, look=look, rule=rule, indent=indent)


def num(x: Any, fmt: str = ".4f") -> str:
    """A number as a table cell: ``n/a`` for one that was not measured (None or NaN)."""
    return "n/a" if x is None or (isinstance(x, float) and x != x) else f"{x:{fmt}}"


def mean_ci(mean: Any, low: Any = None, high: Any = None, digits: int = 3, ci: int = 3) -> str:
    """``mean [low, high]`` as every table shows a mean with its interval; ``n/a`` for a mean
    that was not measured (None or NaN), and no interval when it has none: never ``nan``."""

    def missing(x: Any) -> bool:
        return x is None or (isinstance(x, float) and x != x)

    if missing(mean):
        return "n/a"
    if missing(low) or missing(high):
        return f"{mean:.{digits}f}"
    return f"{mean:.{digits}f} [{low:.{ci}f}, {high:.{ci}f}]"


def md_cell(text: object, *, escape_lt: bool = True) -> str:
    """``text`` safe in a markdown table cell: pipes escaped, line breaks folded into spaces and,
    unless ``escape_lt`` is false, every ``<`` written ``&lt;`` (no tag, comment or image reaches
    the page; ``->`` stays readable)."""
    out = str(text)
    if escape_lt:
        out = out.replace("<", "&lt;")
    out = out.replace("|", "\\|")
    return " ".join(out.splitlines())


def markdown(table: Table, *, escape_lt: bool = True) -> str:
    """The table as GitHub markdown lines (``title`` and ``caption`` as paragraphs around it),
    ending in a newline."""

    def cell(c: Cell) -> str:
        text = md_cell(c, escape_lt=escape_lt)
        return f"**{text}**" if isinstance(c, Strong) and text else text

    def row(cells: Sequence[Cell]) -> str:
        return "| " + " | ".join(cell(c) for c in cells) + " |"

    lines = [md_cell(table.title, escape_lt=escape_lt), ""] if table.title else []
    lines.append(row(table.headers))
    lines.append("|" + "|".join(_MD_ALIGN[c.align] for c in table.columns) + "|")
    lines += [row(r) for r in table.rows]
    if table.caption:
        lines += ["", md_cell(table.caption, escape_lt=escape_lt)]
    return "\n".join(lines) + "\n"


def csv_text(table: Table, *, lineterminator: str = "\n") -> str:
    """The header and rows as CSV (the csv module's minimal quoting)."""
    out = io.StringIO()
    w = csv.writer(out, lineterminator=lineterminator)
    w.writerow(table.headers)
    w.writerows([str(c) for c in r] for r in table.rows)
    return out.getvalue()


def to_rich(table: Table, *, look: Look = "boxed", rule: bool = False) -> Any:
    """The rich Table that :func:`console` draws. Cells are rich ``Text``: no markup, emoji or
    highlighting is read from them."""
    from rich import box
    from rich.rule import Rule
    from rich.table import Table as RichTable
    from rich.text import Text

    if look == "boxed":
        out = RichTable(box=box.SIMPLE_HEAD)
    else:  # two spaces between columns, none at the edges
        out = RichTable(box=None, padding=(0, 1), pad_edge=False, header_style="")
    for c in table.columns:
        out.add_column(
            Text(c.header),
            justify=c.align,
            style="bold" if c.bold else "",
            no_wrap=not c.fold,
            overflow="fold" if c.fold else "ellipsis",
            min_width=c.min_width,
        )
    if rule:  # a rule as wide as each column: a Rule measures 1 and fills what it is given
        out.add_row(*[Rule(characters="-", style="") for _ in table.columns])
    for r in table.rows:
        out.add_row(*[Text(str(c), style="bold" if isinstance(c, Strong) else "") for c in r])
    return out


def render(renderable: Any, width: int = WIDE) -> str:
    """A rich renderable as plain text ``width`` columns wide: no ANSI codes even when
    FORCE_COLOR is set, trailing spaces cut, no blank first or last line."""
    from rich.console import Console

    buf = io.StringIO()
    Console(
        file=buf,
        width=width,
        force_terminal=False,
        color_system=None,
        no_color=True,
        highlight=False,
        markup=False,
        emoji=False,
        legacy_windows=False,
    ).print(renderable)
    return "\n".join(line.rstrip() for line in buf.getvalue().splitlines()).strip("\n")


def console(
    table: Table, width: int = WIDE, *, look: Look = "plain", rule: bool = False, indent: int = 0
) -> str:
    """The table as console text at most ``width`` columns wide (rich folds cells only when the
    table is wider), ``title`` above it, ``caption`` below, each line indented ``indent``."""
    body = render(to_rich(table, look=look, rule=rule), width)
    if indent:
        body = "\n".join((" " * indent + line).rstrip() for line in body.splitlines())
    return "\n".join(x for x in (table.title, body, table.caption) if x)
