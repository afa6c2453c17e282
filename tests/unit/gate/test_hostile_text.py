"""User text (queries, ids, slice values) reaches terminals and pull-request comments as data:
control characters shown as escapes, HTML neutralised in gate.md, control characters refused in
ids."""

from __future__ import annotations

import json

import pytest

from rageval.errors import InputError
from rageval.gate.compare import NOT_RETRIEVED, Comparison, MetricRow
from rageval.gate.slices import SliceRow

HOSTILE = "reset\x1b[2J\x00 now\nlines \u202eevil <img src=x onerror=alert(1)> <!-- <script>"


def comparison() -> Comparison:
    lost = {
        "id": "q\x1b1",
        "query": HOSTILE,
        "why": NOT_RETRIEVED,
        "baseline_rank": 1,
        "current_rank": 0,
        "expected": ["<b>doc</b>"],
    }
    return Comparison(
        status="regressed",
        rows=[MetricRow("ndcg@5", 0.8, 0.7, -0.1, 0.03, 0.01, "regressed")],
        lost_hits=[lost],
        rank_drops=[{**lost, "current_rank": 4}],
        gained_hits=[lost],
        slices=[
            SliceRow(
                "ndcg@5", 0.9, 0.5, -0.4, 0.05, 0.01, "regressed", slice=f"tags={HOSTILE}", n=3
            )
        ],
        k=5,
        n_queries=1,
    )


def test_the_console_shows_control_characters_as_escapes():
    text = comparison().console()
    for bad in ("\x1b", "\x00", "\u202e"):
        assert bad not in text
    assert "\\x1b[2J\\x00 now\\nlines \\u202eevil" in text
    assert all("\n" not in line for line in text.splitlines())


def test_gate_md_neutralises_html_from_the_golden_set():
    md = comparison().markdown()
    for bad in ("<img", "<script>", "<!--", "<b>", "\x1b", "\u202e"):
        assert bad not in md
    assert "&lt;img src=x onerror=alert(1)>" in md and "&lt;!--" in md


def test_ids_with_control_characters_are_refused(tmp_path):
    from rageval.inputs.corpus import load_corpus
    from rageval.inputs.golden import load_golden

    golden = tmp_path / "g.jsonl"
    line = {"id": "q\x001", "query": "x", "relevant_docs": ["d"]}
    golden.write_text(json.dumps(line) + "\n")
    with pytest.raises(InputError, match=r"g.jsonl:1: query id 'q\\\\x001' holds a control"):
        load_golden(golden)
    corpus = tmp_path / "c.jsonl"
    corpus.write_text(json.dumps({"id": "d\x1b[31m", "text": "t"}) + "\n")
    with pytest.raises(InputError, match=r"c.jsonl:1: document id .* holds a control"):
        load_corpus(str(corpus))


def test_a_corpus_line_too_long_for_any_allowed_document_is_refused_before_parsing(
    tmp_path, monkeypatch
):
    import rageval.formats.textio as textio
    from rageval.inputs.corpus import load_corpus

    corpus = tmp_path / "c.jsonl"
    ok = json.dumps({"id": "a", "text": "x" * 500})
    big = json.dumps({"id": "b", "text": "y" * 7_000})  # within 6 x 1 kB + 64 kB: parsed
    huge = json.dumps({"id": "c", "text": "z" * 80_000})  # beyond it: never parsed
    corpus.write_text("\n".join([ok, huge]) + "\n")
    parsed = []
    real = textio.loads
    monkeypatch.setattr(
        textio, "loads", lambda raw, **kw: parsed.append(len(raw)) or real(raw, **kw)
    )
    with pytest.raises(InputError, match=r"c.jsonl:2: the document on this line is 0.1 million"):
        load_corpus(str(corpus), max_document_mb=0.001)
    assert max(parsed) < 10_000  # the 80,000-character line was never parsed
    corpus.write_text("\n".join([ok, big]) + "\n")
    with pytest.raises(InputError, match=r"c.jsonl:2: document 'b' is 0.0 MB, above"):
        load_corpus(str(corpus), max_document_mb=0.001)  # parsed, then refused by its size
