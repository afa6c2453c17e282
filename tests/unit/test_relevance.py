import json

import pytest

from rageval.chunking import ChunkingSpec, chunk_documents
from rageval.errors import InputError
from rageval.inputs.corpus import load_corpus
from rageval.inputs.golden import load_golden
from rageval.relevance import locate_quote, resolve
from rageval.types import Chunk, Document


def _chunks(doc_id, bounds, text):
    return [
        Chunk(f"{doc_id}#{i}", doc_id, i, text[s:e], s, e, e - s) for i, (s, e) in enumerate(bounds)
    ]


def test_locate_exact_then_case_whitespace_and_markdown_insensitive():
    text = "Intro.\nThe **payments** service is\n   deployed to `westeurope`."
    assert locate_quote(text, "payments** service") == (text.index("payments"), text.index(" is"))
    s, e = locate_quote(text, "the payments service is deployed to westeurope")
    assert text[s:e] == "The **payments** service is\n   deployed to `westeurope"
    assert locate_quote(text, "northeurope") is None


def test_evidence_maps_to_chunks_holding_most_of_the_quote_or_mostly_quote(tmp_path):
    text = "a" * 100 + "QUOTE" * 20 + "b" * 100  # quote = [100, 200)
    doc = Document("d", text)
    # c0 holds 60% of the quote; c1 holds 40% of it but is 80% quote; c2 holds a sliver only
    chunks = _chunks("d", [(0, 160), (160, 210), (190, 300)], text)
    p = tmp_path / "g.jsonl"
    p.write_text(
        json.dumps(
            {"id": "q", "query": "x", "evidence": [{"doc": "d", "quote": "QUOTE" * 20, "grade": 2}]}
        )
    )
    res = resolve(load_golden(p), {"d": doc}, chunks)
    assert res.level == "chunk"
    assert res.qrels["q"] == {"d#0": 2, "d#1": 2}
    assert res.spans["q"][0].start == 100 and res.spans["q"][0].end == 200


def test_long_quote_cut_unluckily_still_resolves_to_the_best_chunk(tmp_path):
    text = "x" * 300 + "Q" * 100 + "y" * 300
    # a gap between the windows: the chunks hold 40% and 45% of the quote and are mostly not
    # quote, so neither rule passes and the larger overlap wins
    chunks = _chunks("d", [(0, 340), (355, 700)], text)
    p = tmp_path / "g.jsonl"
    p.write_text(
        json.dumps({"id": "q", "query": "x", "evidence": [{"doc": "d", "quote": "Q" * 100}]})
    )
    res = resolve(load_golden(p), {"d": Document("d", text)}, chunks)
    assert res.qrels["q"] == {"d#1": 1}


def test_same_quotes_resolve_under_128_256_and_512_tokens(mini, tokenizer):
    docs = load_corpus(mini / "corpus")
    golden = load_golden(mini / "golden.jsonl")
    by_id = {d.id: d for d in docs}
    long_docs = [d.__class__(d.id, (d.text + "\n\n") * 12) for d in docs]  # make docs span chunks
    long_by_id = {d.id: d for d in long_docs}
    for size in (128, 256, 512):
        for corpus, lookup in ((docs, by_id), (long_docs, long_by_id)):
            chunks = chunk_documents(corpus, ChunkingSpec(size), tokenizer)
            res = resolve(golden, lookup, chunks)
            by_chunk = {c.id: c for c in chunks}
            for q in golden.queries:
                assert res.qrels[q.id], (size, q.id)
                for ev in q.evidence:
                    span = next(
                        s for s in res.spans[q.id] if s.doc == ev.doc and s.grade == ev.grade
                    )
                    holders = [by_chunk[c] for c in res.qrels[q.id] if by_chunk[c].doc_id == ev.doc]
                    assert any(
                        c.start <= span.start and span.end <= c.end or c.end > span.start
                        for c in holders
                    )


def test_doc_level_auto_and_forced(mini, tokenizer, tmp_path):
    docs = load_corpus(mini / "corpus")
    by_id = {d.id: d for d in docs}
    chunks = chunk_documents(docs, ChunkingSpec(32), tokenizer)
    p = tmp_path / "g.jsonl"
    p.write_text(json.dumps({"id": "q", "query": "x", "relevant_docs": {"faq": 2}}) + "\n")
    res = resolve(load_golden(p), by_id, chunks)
    assert res.level == "doc" and res.qrels == {"q": {"faq": 2}}
    res = resolve(load_golden(p), by_id, chunks, level="chunk")
    assert set(res.qrels["q"]) == {c.id for c in chunks if c.doc_id == "faq"}
    mixed = resolve(load_golden(mini / "golden.jsonl"), by_id, chunks, level="doc")
    assert mixed.qrels["q03"] == {"runbooks/invoicing": 2}


def test_chunk_labels_by_ordinal_or_id(mini, tokenizer, tmp_path):
    docs = load_corpus(mini / "corpus")
    chunks = chunk_documents(docs, ChunkingSpec(32), tokenizer)
    c = chunks[3]
    p = tmp_path / "g.jsonl"
    p.write_text(
        json.dumps({"id": "q", "query": "x", "relevant": {c.label: 2, chunks[4].id: 1}}) + "\n"
    )
    res = resolve(load_golden(p), {d.id: d for d in docs}, chunks)
    assert res.qrels["q"] == {c.id: 2, chunks[4].id: 1}


@pytest.mark.parametrize(
    "entry, expect",
    [
        (
            {"evidence": [{"doc": "policies/leeve", "quote": "x"}]},
            "unknown document 'policies/leeve' (did you mean 'policies/leave'?)",
        ),
        (
            {"evidence": [{"doc": "faq", "quote": "not in the faq at all"}]},
            "evidence[0] quote not found in document 'faq'",
        ),
        ({"relevant": ["faq:99"]}, "chunk label 'faq:99' matches no chunk"),
        ({"relevant_docs": ["nope"]}, "relevant_docs names unknown document 'nope'"),
    ],
)
def test_unresolvable_labels_name_file_line_and_query(mini, tokenizer, tmp_path, entry, expect):
    docs = load_corpus(mini / "corpus")
    chunks = chunk_documents(docs, ChunkingSpec(64), tokenizer)
    p = tmp_path / "g.jsonl"
    p.write_text(json.dumps({"id": "ok", "query": "x", "relevant_docs": ["faq"]}) + "\n"
                 + json.dumps({"id": "bad", "query": "x", **entry}) + "\n")  # fmt: skip
    with pytest.raises(InputError) as err:
        resolve(load_golden(p), {d.id: d for d in docs}, chunks)
    assert f"{p}:2: query 'bad': " in str(err.value)
    assert expect in str(err.value)
