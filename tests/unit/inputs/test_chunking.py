import pytest

from rageval.errors import ConfigError
from rageval.inputs.chunking import ChunkingSpec, chunk_documents, chunk_id
from rageval.inputs.corpus import load_corpus
from rageval.types import Document


def test_windows_have_exact_token_counts_offsets_and_overlap(tokenizer):
    text = " ".join(f"word{i}" for i in range(400))
    doc = Document("d", text)
    chunks = chunk_documents([doc], ChunkingSpec(64, 16), tokenizer)
    ids = tokenizer.encode(text, add_special_tokens=False)
    n = len(ids.ids)
    # windows never split a word, so each holds at most 64 tokens and at least 64 minus one word
    assert all(60 < c.n_tokens <= 64 for c in chunks[:-1])
    assert chunks[-1].n_tokens <= 64
    assert all(c.text.startswith("word") and c.text.split()[-1][4:].isdigit() for c in chunks)
    assert sum(c.n_tokens for c in chunks) - 16 * (len(chunks) - 1) <= n + len(chunks) * 3
    assert chunks[-1].end == len(text.rstrip())
    for c in chunks:
        assert text[c.start : c.end] == c.text
        assert len(tokenizer.encode(c.text, add_special_tokens=False).ids) == c.n_tokens
        assert c.label == f"d:{c.ordinal}"
    # neighbours share about 16 tokens (moved back to a word start)
    for a, b in zip(chunks, chunks[1:], strict=False):
        shared = len(tokenizer.encode(text[b.start : a.end], add_special_tokens=False).ids)
        assert 16 <= shared <= 19


def test_chunk_zero_is_one_chunk_per_document(mini, tokenizer):
    docs = load_corpus(mini / "corpus")
    chunks = chunk_documents(docs, ChunkingSpec(0), tokenizer)
    assert [c.doc_id for c in chunks] == [d.id for d in docs]
    assert all(c.text == d.text and c.start == 0 for c, d in zip(chunks, docs, strict=True))


def test_ids_are_content_derived_and_stable(mini, tokenizer):
    docs = load_corpus(mini / "corpus")
    a = chunk_documents(docs, ChunkingSpec(32), tokenizer)
    b = chunk_documents(list(reversed(docs)), ChunkingSpec(32), tokenizer)
    assert {c.id for c in a} == {c.id for c in b}
    assert len({c.id for c in a}) == len(a)
    c = a[0]
    assert c.id == chunk_id(c.doc_id, c.ordinal, c.text)


@pytest.mark.parametrize("size, overlap", [(-1, 0), (64, 64), (64, 100), (64, -1)])
def test_bad_specs(size, overlap):
    with pytest.raises(ConfigError):
        ChunkingSpec(size, overlap)


def test_whitespace_only_document_gives_no_chunks(tokenizer):
    assert chunk_documents([Document("d", "   \n ")], ChunkingSpec(16), tokenizer) == []


def test_chunks_hold_their_documents_text_once(tokenizer):
    """The chunks of a document read their text from the document's own string: holding them
    costs their ids and offsets, not a second copy of the corpus."""
    import tracemalloc

    text = " ".join(f"word{i % 997}" for i in range(60_000))  # ~500 KB
    docs = [Document("d", text)]
    chunks = chunk_documents(docs, ChunkingSpec(256), tokenizer)  # warm the tokenizer
    del chunks
    tracemalloc.start()
    chunks = chunk_documents(docs, ChunkingSpec(256), tokenizer)
    held, _ = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert len(chunks) > 100
    assert " ".join(c.text for c in chunks) == text  # no overlap: the windows tile the text
    # ids, offsets and the chunk objects: ~0.6x the text here; with a copy of each chunk's text
    # beside them, 1.7x
    assert held < len(text)


def test_chunk_rows_are_made_when_read_and_write_the_same_file(tokenizer, tmp_path):
    """A run's chunks.jsonl rows are made one at a time from its chunks (ChunkRows), not held as
    a list of dicts: the file, the labels and the texts are those of the list it replaced."""
    from rageval.inputs.chunking import ChunkRows, chunk_rows, write_chunks_jsonl

    docs = [Document("a", " ".join(f"w{i}" for i in range(300))), Document("b", "short one")]
    chunks = chunk_documents(docs, ChunkingSpec(32, 8), tokenizer)
    extents = {c.id: (c.doc_id, c.start + 1, c.end) for c in chunks[1:]}  # chunk 0: not located
    listed = chunk_rows(chunks, extents)
    rows = ChunkRows(chunks, extents)
    assert len(rows) == len(listed) > 3 and rows == listed and rows[1] == listed[1]
    assert rows[0]["span_start"] is None and rows[1:3] == listed[1:3]
    a = write_chunks_jsonl(tmp_path / "a.jsonl", listed).read_bytes()
    assert write_chunks_jsonl(tmp_path / "b.jsonl", rows).read_bytes() == a
    # the readable labels and the shown chunks' texts, in the keys' order of the list's rows
    shown = {chunks[2].id: chunks[2].text}
    for r in listed:
        r["label"] = f"{r['doc_id']}:{r['ordinal']}"
        if r["id"] in shown:
            r["text"] = shown[r["id"]]
    rows.label, rows.texts = "readable", shown
    assert list(rows) == listed and [list(r) for r in rows] == [list(r) for r in listed]
    rows.label = "id"
    assert [r["label"] for r in rows] == [c.id for c in chunks]
    # each row is a new dict: changing one read changes nothing held
    rows[0]["doc_id"] = "x"
    assert rows[0]["doc_id"] == "a"
