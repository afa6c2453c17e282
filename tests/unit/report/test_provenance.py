"""What a run stands on (rageval.report.provenance): per-document and per-query digests, the
embedding's environment, and the plain-words diff the gate prints."""

import copy

from rageval.report import provenance
from rageval.types import Document, GoldenQuery, GoldenSet


class Encoder:
    fingerprint = "f" * 64
    description = "mini torch"
    backend = "torch"
    quantize = "none"


class WithNumerics(Encoder):
    def __init__(self, precision):
        self.precision = precision

    def numerics(self):
        return {"backend": "openvino", "precision": self.precision, "versions": {"ov": "2025.1"}}


def golden(*queries):
    return GoldenSet("g.jsonl", tuple(queries), provenance.text_digest(repr(queries)))


def record(docs, queries, encoder=None, judgements="j0"):
    corpus = provenance.corpus_block(docs, provenance.text_digest(repr(docs)))
    return provenance.record(corpus, golden(*queries), judgements, encoder)


DOCS = [Document("faq", "What is rageval?"), Document("runbooks/pay", "Restart the service.")]
QUERIES = [GoldenQuery("q1", "what is it", relevant_docs={"faq": 1}), GoldenQuery("q2", "restart")]


def test_a_record_is_plain_data_with_a_digest_per_document_and_query():
    rec = record(DOCS, QUERIES, Encoder())
    assert rec["corpus"]["count"] == 2
    assert set(rec["corpus"]["entries"]) == {"faq", "runbooks/pay"}
    assert rec["corpus"]["entries"]["faq"] == provenance.text_digest("What is rageval?")
    assert set(rec["golden"]["entries"]) == {"q1", "q2"}
    emb = rec["embedding"]
    assert emb["fingerprint"] == "f" * 64 and emb["backend"] == "torch"
    assert emb["precision"] == "f32" and "numpy" in emb["versions"]
    assert record(DOCS, QUERIES)["embedding"] is None  # a run that embeds nothing


def test_the_same_inputs_differ_in_nothing():
    assert provenance.diff(record(DOCS, QUERIES, Encoder()), record(DOCS, QUERIES, Encoder())) == []
    assert provenance.diff(None, None) == []  # neither side is a rageval run (TREC files)


def test_a_document_added_removed_or_changed_is_named():
    before = record(DOCS, QUERIES)
    added = record([*DOCS, Document("outputs/check/x/gate", "# Gate")], QUERIES)
    assert provenance.diff(before, added) == [
        "corpus: 1 document added (outputs/check/x/gate), 0 removed, 0 changed"
    ]
    edited = record([Document("faq", "What is rageval now?")], QUERIES)
    assert provenance.diff(before, edited) == [
        "corpus: 0 documents added, 1 removed (runbooks/pay), 1 changed (faq)"
    ]


def test_golden_set_judgements_and_embedding_changes_are_named():
    before = record(DOCS, QUERIES, Encoder())
    queries = [GoldenQuery("q1", "what is it now", relevant_docs={"faq": 1}), *QUERIES[1:]]
    queries += [GoldenQuery("q3", "new"), GoldenQuery("q4", "newer")]
    after = record(DOCS, queries, Encoder(), judgements="j1")
    after["embedding"]["precision"] = "bf16"
    after["embedding"]["versions"]["numpy"] = "0.0.1"
    lines = provenance.diff(before, after)
    assert lines[0] == "golden set: 2 queries added (q3, q4), 0 removed, 1 changed (q1)"
    assert lines[1] == "judgements: digest j0 -> j1"
    assert lines[2].startswith("embedding: precision f32 -> bf16, numpy ")
    assert lines[2].endswith(" -> 0.0.1")


def test_the_encoders_numerics_are_recorded_and_compared():
    a = record(DOCS, QUERIES, WithNumerics("bf16"))
    b = record(DOCS, QUERIES, WithNumerics("f32"))
    assert a["embedding"]["numerics"]["versions"] == {"ov": "2025.1"}
    assert provenance.diff(a, b) == ["embedding: precision bf16 -> f32"]
    # a change rageval's own fields and the encoder's numerics() both record is said once
    a["embedding"]["precision"], b["embedding"]["precision"] = "bf16", "f32"
    assert provenance.diff(a, b) == ["embedding: precision bf16 -> f32"]
    c = copy.deepcopy(b)
    c["embedding"]["numerics"]["versions"]["ov"] = "2026.0"
    assert provenance.diff(b, c) == ["embedding: versions.ov 2025.1 -> 2026.0"]


def test_vector_search_against_none_and_an_old_baseline_say_so():
    vec, bm25 = record(DOCS, QUERIES, Encoder()), record(DOCS, QUERIES)
    assert provenance.diff(vec, bm25) == ["embedding: this run embeds nothing (no vector search)"]
    (line,) = provenance.diff({}, vec)
    assert line.startswith("provenance: not recorded for the baseline")


def test_a_large_corpus_records_its_digest_only(monkeypatch):
    monkeypatch.setattr(provenance, "MAX_ENTRIES", 1)
    before, after = record(DOCS, QUERIES), record(DOCS[:1], QUERIES)
    assert "entries" not in before["corpus"]
    (line,) = provenance.diff(before, after)
    assert line.startswith("corpus: changed (digest ") and "2 -> 1 documents" in line


def test_rageval_backends_record_the_precision_their_float_parts_run_in():
    # an encoder of rageval's own backends (no model loaded): precision from the backend's numerics
    class Encoder:
        fingerprint, description = "fp", "MiniLM"

        def __init__(self, backend, quantize, precision="f32"):
            self.backend, self.quantize, self.precision = backend, quantize, precision

    for backend, quantize in (("torch", "none"), ("onnx", "int8"), ("openvino", "int8")):
        block = provenance.embedding_block(Encoder(backend, quantize))
        assert (block["backend"], block["quantize"], block["precision"]) == (
            backend,
            quantize,
            "f32",
        )
