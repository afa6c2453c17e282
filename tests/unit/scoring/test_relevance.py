import json

import pytest

from rageval.errors import InputError
from rageval.inputs.chunking import ChunkingSpec, chunk_documents
from rageval.inputs.corpus import load_corpus
from rageval.inputs.golden import load_golden
from rageval.scoring.relevance import duplicate_quotes, locate_quote, resolve
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
    p.write_text(
        json.dumps({"id": "ok", "query": "x", "relevant_docs": ["faq"]})
        + "\n"
        + json.dumps({"id": "bad", "query": "x", **entry})
        + "\n"
    )
    with pytest.raises(InputError) as err:
        resolve(load_golden(p), {d.id: d for d in docs}, chunks)
    assert f"{p}:2: query 'bad': " in str(err.value)
    assert expect in str(err.value)


def _golden(tmp_path, evidence):
    p = tmp_path / "g.jsonl"
    p.write_text(json.dumps({"id": "q", "query": "x", "evidence": evidence}) + "\n")
    return load_golden(p)


def test_typographic_punctuation_is_folded_and_offsets_map_to_the_original_text():
    text = "Policy:\u00a0the \u201cfast\u2011path\u201d \u2014 it\u2019s quick\u2026 done."
    s, e = locate_quote(text, 'the "fast-path" - it\'s quick... done')
    assert (s, e) == (text.index("the"), text.index("done") + len("done"))
    assert locate_quote(text, "quick...") == (text.index("quick"), text.index("\u2026") + 1)
    assert locate_quote(text, "it's QUICK") == (text.index("it"), text.index("\u2026"))


def test_a_missing_quote_names_the_nearest_passage_and_its_line(tmp_path):
    text = "Intro line.\nSecond line.\nRotate the invoicing database password every 90 days.\n"
    golden = _golden(
        tmp_path, [{"doc": "d", "quote": "rotate the invoice db password every 90 days"}]
    )
    chunks = _chunks("d", [(0, len(text))], text)
    with pytest.raises(InputError) as err:
        resolve(golden, {"d": Document("d", text)}, chunks)
    msg = str(err.value)
    assert f"{golden.path}:1:" in msg and "quote not found in document 'd'" in msg
    assert "nearest passage (line 3," in msg and "Rotate the invoicing database" in msg


def test_occurrence_or_start_picks_which_match_of_a_repeated_quote(tmp_path):
    text = "Step one: restart the service. Step two: check logs. Finally: restart the service."
    doc = {"d": Document("d", text)}
    chunks = _chunks("d", [(0, 31), (31, 53), (53, len(text))], text)
    second = text.rindex("restart")
    for item, want in [({}, 10), ({"occurrence": 2}, second), ({"start": second}, second)]:
        golden = _golden(tmp_path, [{"doc": "d", "quote": "restart the service", **item}])
        res = resolve(golden, doc, chunks)
        assert res.spans["q"][0].start == want
        assert list(res.qrels["q"]) == (["d#0"] if want == 10 else ["d#2"])
    for item, msg in [({"occurrence": 3}, "occurs 2 time"), ({"start": 5}, "matches start at 10")]:
        golden = _golden(tmp_path, [{"doc": "d", "quote": "restart the service", **item}])
        with pytest.raises(InputError, match=msg):
            resolve(golden, doc, chunks)
    golden = _golden(tmp_path, [{"doc": "d", "quote": "restart the service"}])
    (warning,) = duplicate_quotes(golden, doc)
    assert warning.startswith(f"{golden.path}:1: query 'q', evidence[0]: the quote occurs 2 times")
    assert f'"start": {second}' in warning
    assert (
        duplicate_quotes(
            _golden(tmp_path, [{"doc": "d", "quote": "restart the service", "occurrence": 1}]), doc
        )
        == []
    )
