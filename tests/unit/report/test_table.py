"""The one table model (rageval.report.table): its three renderers, and that no other module of
rageval builds a markdown table row by hand."""

from __future__ import annotations

import ast
import csv
import io
import re
from pathlib import Path

import pytest

from rageval.report.table import Column, Strong, Table, csv_text, markdown, to_rich

PACKAGE = Path(__file__).resolve().parents[3] / "rageval"
TABLE_MODULE = PACKAGE / "report" / "table.py"


def _table() -> Table:
    t = Table([Column("name"), Column("value", "right"), Column("note", "center")])
    t.add_row("a|b", "0.5000", "line one\nline two")
    t.add_row("<img src=x>", 12, None)
    t.add_row("`x|y`", Strong("0.9"), "")
    return t


# markdown


def test_markdown_escapes_pipes_folds_line_breaks_and_writes_lt_as_entity():
    text = markdown(_table())
    assert text.splitlines() == [
        "| name | value | note |",
        "|---|---:|:---:|",
        "| a\\|b | 0.5000 | line one line two |",
        "| &lt;img src=x> | 12 |  |",
        "| `x\\|y` | **0.9** |  |",
    ]
    assert text.endswith("|\n")


def test_every_markdown_row_has_as_many_cells_as_the_header():
    for line in markdown(_table()).splitlines():
        assert len(re.findall(r"(?<!\\)\|", line)) == 4, line


def test_markdown_keeps_lt_when_asked_and_escapes_headers_title_and_caption():
    t = Table([Column("a|b")], title="title <x>", caption="caption\nnext")
    t.add_row("<b>")
    assert markdown(t, escape_lt=False).splitlines() == [
        "title <x>",
        "",
        "| a\\|b |",
        "|---|",
        "| <b> |",
        "",
        "caption next",
    ]
    assert "title &lt;x>" in markdown(t)


def test_a_row_must_have_a_cell_per_column():
    with pytest.raises(ValueError, match="2 cells in a table of 3"):
        _table().add_row("a", "b")


# CSV


def test_csv_quotes_what_needs_it_and_reads_back():
    text = csv_text(_table())
    assert text.splitlines()[0] == "name,value,note"
    assert text.startswith('name,value,note\na|b,0.5000,"line one\nline two"\n')
    back = list(csv.reader(io.StringIO(text)))
    assert back == [
        ["name", "value", "note"],
        ["a|b", "0.5000", "line one\nline two"],
        ["<img src=x>", "12", ""],
        ["`x|y`", "0.9", ""],
    ]
    t = Table([Column('say "hi", twice')])
    t.add_row('a "b", c')
    assert csv_text(t) == '"say ""hi"", twice"\n"a ""b"", c"\n'
    assert csv_text(t, lineterminator="\r\n").endswith("\r\n")


# console


def test_the_plain_console_table_aligns_columns_two_spaces_apart():
    t = Table([Column("metric"), Column("mean", "right", min_width=8), Column("verdict")])
    t.add_row("ndcg@5", "0.5000", "pass")
    t.add_row("recall@10", "0.25", "")
    assert t.console(rule=True).splitlines() == [
        "metric         mean  verdict",
        "---------  --------  -------",
        "ndcg@5       0.5000  pass",
        "recall@10      0.25",
    ]
    assert t.console(indent=2).splitlines()[0] == "  metric         mean  verdict"


def test_the_console_shows_cells_as_text_not_rich_markup():
    t = Table([Column("slice")])
    t.add_row("[bold]x[/bold] :smile:")
    assert t.console().splitlines() == ["slice", "[bold]x[/bold] :smile:"]


def test_the_console_writes_no_ansi_codes_even_when_colour_is_forced(monkeypatch):
    monkeypatch.setenv("FORCE_COLOR", "1")
    monkeypatch.setenv("TERM", "xterm-256color")
    t = Table([Column("job", "right", bold=True), Column("x")], title="t", caption="c")
    t.add_row("1", Strong("best"))
    for look in ("plain", "boxed"):
        out = t.console(look=look)
        assert "\x1b" not in out, look
        assert "best" in out and out.splitlines()[0] == "t" and out.splitlines()[-1] == "c"


def test_the_boxed_console_table_is_rich_simple_head_and_folds_only_fold_columns():
    t = Table([Column("job", "right"), Column("search.\nbm25.k1", fold=True), Column("ndcg")])
    t.add_row("0", "0.9", "0.512")
    assert t.console(look="boxed").splitlines() == [
        "        search.",
        "  job   bm25.k1   ndcg",
        " ───────────────────────",
        "    0   0.9       0.512",
    ]
    rich = to_rich(t)
    assert [c.no_wrap for c in rich.columns] == [True, False, True]


# no module builds a markdown table by hand

ALIGNMENT_ROW = re.compile(r"^\|?\s*:?-{3,}:?\s*\|")


def hand_built_rows(source: str) -> list[str]:
    """``line: what`` for each way of building a markdown table row by hand in ``source``: an
    alignment row (``|---|``, ``---|``), a ``" | "`` joiner, an f-string or a sum starting a row
    with ``|``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            if ALIGNMENT_ROW.match(node.value):
                found.append(f"{node.lineno}: alignment row {node.value!r}")
        elif isinstance(node, ast.JoinedStr) and node.values:
            first = node.values[0]
            if isinstance(first, ast.Constant) and str(first.value).startswith("|"):
                found.append(f"{node.lineno}: f-string row {str(first.value)!r}")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            on = node.func.value
            if node.func.attr == "join" and isinstance(on, ast.Constant) and "|" in str(on.value):
                found.append(f"{node.lineno}: cells joined with {on.value!r}")
        elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            for side in (node.left, node.right):
                if isinstance(side, ast.Constant) and str(side.value).strip() == "|":
                    found.append(f"{node.lineno}: row edge {side.value!r} added")
    return found


@pytest.mark.parametrize(
    "source",
    [
        'lines = ["| a | b |", "|---|---:|"]',
        'line = "|" + "---|" * n',
        'row = "| " + " | ".join(cells) + " |"',
        'row = f"| {a} | {b} |"',
        'x = "|".join(cells)',
    ],
)
def test_the_check_finds_each_way_of_building_a_row_by_hand(source):
    assert hand_built_rows(source)


def test_the_check_leaves_text_that_only_holds_a_table_or_a_pipe():
    source = (
        'SAMPLE = "| region | orders |\\n|---|---:|\\n| north | 1 |"\n'
        'doc = """("accepted" | "rejected")"""\n'
        'cmd = "logs -f api | grep x"\n'
    )
    assert hand_built_rows(source) == []


def test_no_module_but_the_table_model_builds_a_markdown_table_by_hand():
    bad = [
        f"{path.relative_to(PACKAGE.parent)}:{hit}"
        for path in sorted(PACKAGE.rglob("*.py"))
        if path != TABLE_MODULE
        for hit in hand_built_rows(path.read_text(encoding="utf-8"))
    ]
    assert bad == [], "build a rageval.report.table.Table instead:\n" + "\n".join(bad)


def test_a_mean_that_was_not_measured_shows_n_a_never_nan():
    import math

    from rageval.report.table import mean_ci

    assert mean_ci(math.nan, math.nan, math.nan) == "n/a"
    assert mean_ci(None) == "n/a"
    assert mean_ci(0.5, math.nan, 0.7) == "0.500"
    assert mean_ci(0.5, 0.25, 0.75, 3, 2) == "0.500 [0.25, 0.75]"


def test_a_gate_row_whose_figures_are_nan_shows_n_a():
    import math

    from rageval.gate.compare import Comparison, MetricRow
    from rageval.report.table import num

    assert num(math.nan) == "n/a" and num(None) == "n/a" and num(0.25, "+.2f") == "+0.25"
    row = MetricRow("ndcg@5", 0.8, 0.8, 0.0, 0.03, math.nan, "ok", 0, 6, 0)
    text = Comparison(status="pass", rows=[row], k=5, n_queries=6).console()
    assert "n/a" in text and "nan" not in text
