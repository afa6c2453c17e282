"""Document-level evaluation: a chunk ranking collapses to documents (first occurrence wins, score
kept, ties by id descending as trec_eval orders them) before the cut at k; chosen automatically
for document labels and selectable with ``level``; the exported TREC files score the same."""

from __future__ import annotations

import json
import warnings

import pytest

from rageval.errors import ConfigError
from rageval.formats.trec import read_qrels, read_run, write_qrels, write_run
from rageval.inputs.chunking import ChunkingSpec
from rageval.run.evaluation import evaluate
from rageval.run.score import collapse_to_documents
from rageval.run.spec import RunSpec
from rageval.scoring.metrics import score_rankings
from rageval.types import RankedList

DOCS = {
    "alpha": "red apples grow on tall trees in the orchard " * 6,
    "beta": "green pears and red apples share one basket",
    "gamma": "blue berries grow on low bushes",
    "delta": "red apples",
    "omega": "red apples",
}
GOLDEN = [
    {"id": "q1", "query": "red apples", "relevant_docs": {"delta": 2, "gamma": 1}},
    {"id": "q2", "query": "green pears", "relevant_docs": ["beta"]},
    {"id": "q3", "query": "blue berries", "relevant_docs": {"gamma": 1, "alpha": 0}},
]


class OverlapRetriever:
    """Scores a chunk by the number of query words it holds: many ties, no model."""

    def __init__(self):
        self.depths: list[int] = []

    def index(self, chunks, encoder):
        self.chunks = list(chunks)

    def search(self, queries, depth):
        self.depths.append(depth)
        out = []
        for q in queries:
            words = set(q.split())
            pairs = [(c.id, float(len(words & set(c.text.split())))) for c in self.chunks]
            pairs.sort(key=lambda p: -p[1])  # stable: index order among ties, as FAISS would
            pairs = pairs[:depth]
            out.append(RankedList(tuple(i for i, _ in pairs), tuple(s for _, s in pairs)))
        return out


@pytest.fixture
def data(tmp_path):
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps({"id": d, "text": t}) + "\n" for d, t in DOCS.items()))
    golden = tmp_path / "golden.jsonl"
    golden.write_text("".join(json.dumps(g) + "\n" for g in GOLDEN))
    return str(corpus), str(golden)


def run(data, model_dir, chunk=4, level="auto", ks=(1, 2, 3)):
    spec = RunSpec(
        corpus=data[0],
        golden=data[1],
        tokenizer_dir=model_dir,
        chunking=ChunkingSpec(chunk),
        k=2,
        ks=ks,
        level=level,
        latency_sample=0,
        budgets=(),
    )
    retriever = OverlapRetriever()
    return evaluate(spec, retriever, None), retriever


def test_collapse_keeps_first_occurrence_and_its_score():
    rl = RankedList(("a1", "b1", "a2", "c1", "b2"), (0.9, 0.8, 0.7, 0.6, 0.5))
    doc_of = {"a1": "A", "a2": "A", "b1": "B", "b2": "B", "c1": "C"}
    assert collapse_to_documents(rl, doc_of) == RankedList(("A", "B", "C"), (0.9, 0.8, 0.6))
    assert collapse_to_documents(RankedList((), ()), doc_of) == RankedList((), ())
    assert collapse_to_documents(RankedList(("x",), (1.0,)), doc_of).ids == ("x",)  # unknown: kept


def test_collapse_orders_tied_documents_by_id_descending_like_trec_eval():
    rl = RankedList(("a1", "b1", "c1", "a2"), (0.5, 0.5, 0.4, 0.3))
    doc_of = {"a1": "A", "a2": "A", "b1": "B", "c1": "C"}
    assert collapse_to_documents(rl, doc_of) == RankedList(("B", "A", "C"), (0.5, 0.5, 0.4))


def test_auto_level_is_doc_for_document_labels_and_the_cut_is_after_collapsing(data, model_dir):
    report, retriever = run(data, model_dir)
    assert report.level == "doc" and report.counts["chunks"] > len(DOCS)  # alpha has many chunks
    assert retriever.depths[0] == 3 * 10  # document level searches 10x deeper before collapsing
    assert all(len(set(r.ids)) == len(r.ids) and set(r.ids) <= set(DOCS) for r in report.rankings)
    # chunks of alpha (five of them), beta, delta and omega hold "red apples": a tie, which
    # collapses to one entry per document, larger id first
    assert report.rankings[0].ids[:4] == ("omega", "delta", "beta", "alpha")
    assert report.rankings[0].scores[:4] == (2.0,) * 4
    assert report.per_query[0]["precision@3"] == pytest.approx(1 / 3)
    assert report.per_query[0]["precision@2"] == 0.5 and report.per_query[0]["mrr@2"] == 0.5
    assert report.qrels["q3"] == {"gamma": 1, "alpha": 0}


def test_level_chunk_spreads_document_labels_over_their_chunks(data, model_dir, tokenizer):
    from rageval.inputs.chunking import chunk_documents
    from rageval.inputs.corpus import load_corpus

    report, retriever = run(data, model_dir, level="chunk")
    assert report.level == "chunk" and retriever.depths[0] == 3
    chunks = chunk_documents(load_corpus(data[0]), ChunkingSpec(4), tokenizer)
    assert set(report.rankings[0].ids) <= {c.id for c in chunks}
    want = {
        c.id: {"gamma": 1, "alpha": 0}[c.doc_id] for c in chunks if c.doc_id in ("gamma", "alpha")
    }
    assert report.qrels["q3"] == want and len(want) > 2


def test_level_doc_can_be_forced_for_chunk_labels_and_evidence(mini, model_dir):
    from rageval.inputs.corpus import load_corpus

    spec = dict(
        corpus=str(mini / "corpus"),
        golden=str(mini / "golden.jsonl"),
        tokenizer_dir=model_dir,
        chunking=ChunkingSpec(32),
        latency_sample=0,
    )
    report = evaluate(RunSpec(**spec, level="doc"), OverlapRetriever(), None)
    assert report.level == "doc"
    docs = {d.id for d in load_corpus(mini / "corpus")}
    assert all(set(judged) <= docs for judged in report.qrels.values())
    assert evaluate(RunSpec(**spec), OverlapRetriever(), None).level == "chunk"
    with pytest.raises(ConfigError, match="level must be one of auto, chunk, doc"):
        evaluate(RunSpec(**spec, level="document"), OverlapRetriever(), None)


@pytest.mark.parametrize(("chunk", "level"), [(0, "auto"), (4, "auto"), (4, "chunk")])
def test_exported_trec_files_score_like_the_report(data, model_dir, tmp_path, chunk, level):
    report, _ = run(data, model_dir, chunk=chunk, level=level, ks=(1, 2, 3, 5))
    assert any(len(set(r.scores)) < len(r.scores) for r in report.rankings)  # ties to order
    qids = [r["id"] for r in report.per_query]
    write_run(tmp_path / "run.trec", qids, report.rankings)
    write_qrels(tmp_path / "qrels.trec", report.qrels)
    back = read_run(tmp_path / "run.trec")
    assert [back[q].ids for q in qids] == [r.ids for r in report.rankings]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        again = score_rankings(
            qids, [back[q] for q in qids], read_qrels(tmp_path / "qrels.trec"), (1, 2, 3, 5)
        )
    # every trec_eval metric of the report (budget and token metrics are rageval's own)
    assert again.mean() == {name: report.metrics[name] for name in again.mean()}


def test_level_is_selectable_in_config(model_dir, tmp_path):
    from hydra import compose, initialize_config_dir

    from rageval.app.main import CONF_DIR, build, register_resolvers

    register_resolvers()
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        cfg = compose("config", overrides=[f"cache_dir={tmp_path}", "level=doc", "search=bm25"])
    assert build(cfg).spec.level == "doc"


class CountingBM25:
    def __init__(self, cache_dir):
        from rageval.retrieval.local.lexical import BM25Retriever

        self.inner, self.calls = BM25Retriever(cache_dir=cache_dir), []

    def index(self, chunks, encoder):
        self.inner.index(chunks, encoder)

    def search(self, queries, depth):
        self.calls.append(len(queries))
        return self.inner.search(queries, depth)


def test_a_golden_set_is_searched_in_batches_with_the_same_result(mini, model_dir, tmp_path):
    from rageval.inputs.chunking import ChunkingSpec
    from rageval.run.evaluation import evaluate
    from rageval.run.spec import RunSpec

    reports = {}
    for batch in (3, 10_000):
        spec = RunSpec(
            corpus=str(mini / "corpus"),
            golden=str(mini / "golden.jsonl"),
            tokenizer_dir=model_dir,
            chunking=ChunkingSpec(48, 8),
            latency_sample=0,
            query_batch=batch,
        )
        r = CountingBM25(str(tmp_path))
        reports[batch] = (evaluate(spec, r, None), r.calls)
    (small, calls), (big, one) = reports[3], reports[10_000]
    assert calls == [3, 3, 2] and one == [8]
    assert small.metrics == big.metrics and small.rankings == big.rankings
