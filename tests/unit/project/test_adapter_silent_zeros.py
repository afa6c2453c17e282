"""No silent zeros at the adapter: ``level=auto`` decides from what the retriever returns and says
so; a run scoring 0 everywhere while it returned documents relevant at the other level stops;
passages are located by the source keys LangChain, LlamaIndex and Haystack use (a file path
included), or one line names the keys seen and the setting; ``rageval.evaluate`` takes a plain
function, a LangChain or a LlamaIndex retriever directly; slice tables show n/a, never nan."""

from __future__ import annotations

import logging
import re

import pytest
from fakes import frameworks

import rageval
from rageval.errors import ConfigError
from rageval.inputs.golden import load_golden

RANKING = ("precision@5", "recall@5", "hit_rate@5", "mrr@5", "ndcg@5", "map@5")


def _relevant_doc(q) -> str:
    """The document a golden query's labels point at."""
    if q.evidence:
        return q.evidence[0].doc
    if q.relevant_docs:
        return next(iter(q.relevant_docs))
    return next(iter(q.relevant)).rsplit(":", 1)[0]


@pytest.fixture
def doc_search(mini):
    """A team's search function over whole documents: the right document id first, then the
    others (ids, as a search API over documents returns them)."""
    golden = load_golden(mini / "golden.jsonl")
    right = {q.query: _relevant_doc(q) for q in golden.queries}
    docs = sorted(
        {
            p.relative_to(mini / "corpus").with_suffix("").as_posix()
            for p in (mini / "corpus").rglob("*.*")
        }
    )

    def search(query: str, k: int) -> list[str]:
        first = right[query]
        return [first, *(d for d in docs if d != first)][:k]

    return search


def test_a_function_returning_the_right_document_first_scores_at_document_level(
    mini, doc_search, caplog
):
    with caplog.at_level(logging.INFO, logger="rageval"):
        auto = rageval.evaluate(doc_search, mini / "golden.jsonl", chunk=64)
    assert "level=auto: document level, because the retriever returns document ids" in caplog.text
    doc = rageval.evaluate(doc_search, mini / "golden.jsonl", chunk=64, level="doc")
    for m in RANKING[1:]:  # precision@5 divides by 5: one relevant document of 5 is 0.2
        assert auto.metrics[m] == pytest.approx(1.0), m
    assert {m: auto.metrics[m] for m in RANKING} == {m: doc.metrics[m] for m in RANKING}


def test_zeros_at_chunk_level_with_relevant_documents_returned_stop_the_run(mini, doc_search):
    with pytest.raises(ConfigError, match=r"every ranking metric is 0 at level=chunk.*level=doc"):
        rageval.evaluate(doc_search, mini / "golden.jsonl", chunk=64, level="chunk")


def test_level_auto_says_it_stays_at_chunk_level_for_chunk_ids(mini, caplog):
    from fakes.plugin_retrievers import WordOverlap

    with caplog.at_level(logging.DEBUG, logger="rageval"):
        report = rageval.evaluate(WordOverlap(), mini / "golden.jsonl", chunk=64)
    assert "level=auto: chunk level" in caplog.text and report.level == "chunk"


@pytest.mark.parametrize("key", ["source", "file_path", "file_name", "document_id"])
def test_langchain_documents_are_located_by_their_source_key(mini, caplog, key):
    want = rageval.evaluate(
        frameworks.langchain_retriever(k=10), mini / "golden.jsonl", chunk=64
    ).metrics
    with caplog.at_level(logging.INFO, logger="rageval"):
        report = rageval.evaluate(
            frameworks.langchain_retriever(k=10, source_key=key), mini / "golden.jsonl", chunk=64
        )
    assert f"document ids read from {key!r}" in caplog.text
    assert report.counts["passages_located"] == report.counts["passages"] > 0
    assert report.metrics == pytest.approx(want, nan_ok=True)
    assert report.metrics["evidence_recall@5"] > 0


def test_llamaindex_nodes_with_a_file_path_are_located(mini, caplog):
    want = rageval.evaluate(frameworks.llamaindex_retriever(), mini / "golden.jsonl", chunk=64)
    with caplog.at_level(logging.INFO, logger="rageval"):
        report = rageval.evaluate(
            frameworks.llamaindex_retriever(source_key="file_path"), mini / "golden.jsonl", chunk=64
        )
    assert "document ids read from 'file_path'" in caplog.text
    assert report.counts["passages_located"] == report.counts["passages"] > 0
    # (LlamaIndex embeds a node's metadata with its text: the path changes the ranking a little)
    assert report.metrics["evidence_recall@5"] > 0 and report.metrics["ndcg@5"] > 0
    assert want.counts["passages_located"] == want.counts["passages"]


def test_passages_naming_no_document_get_one_line_with_the_keys_and_the_setting(mini, caplog):
    from rageval.inputs.corpus import load_corpus

    texts = [(d.id, d.text[:200]) for d in load_corpus(mini / "corpus")]

    def search(query: str, k: int):
        return [{"text": t, "metadata": {"origin": f"kb://{d}", "lang": "en"}} for d, t in texts]

    with caplog.at_level(logging.INFO, logger="rageval"):
        rageval.evaluate(search, mini / "golden.jsonl", chunk=64)
    lines = [r.getMessage() for r in caplog.records if "name no document" in r.getMessage()]
    assert len(lines) == 1
    assert "their metadata keys: lang, origin" in lines[0] and "backend.doc_id_key" in lines[0]
    assert "source, file_path, file_name" in lines[0]
    # with the key named, they are found
    caplog.clear()
    with caplog.at_level(logging.DEBUG, logger="rageval"):
        report = rageval.evaluate(
            lambda q, k: [{"text": t, "metadata": {"origin": d}} for d, t in texts],
            mini / "golden.jsonl",
            chunk=64,
            retriever_options={"doc_id_key": "origin"},
        )
    assert "document ids read from 'origin'" in caplog.text
    assert report.counts["passages_located"] == report.counts["passages"]


def test_the_api_takes_a_search_function_as_the_config_path_does(mini, doc_search):
    from rageval.retrieval.adapters import FunctionRetriever

    direct = rageval.evaluate(doc_search, mini / "golden.jsonl", chunk=64, level="doc")
    wrapped = rageval.evaluate(
        FunctionRetriever(doc_search), mini / "golden.jsonl", chunk=64, level="doc"
    )
    assert direct.metrics == pytest.approx(wrapped.metrics, nan_ok=True)


def test_a_slice_table_shows_n_a_for_what_was_not_measured(mini):
    from rageval.report.eval_report import slice_console

    report = rageval.evaluate(
        frameworks.langchain_retriever(k=10, source_key="url"),
        mini / "golden.jsonl",
        chunk=64,
        slices=["tags"],
        min_slice_size=1,
    )
    table = slice_console(report)
    assert "evidence_recall@5" in table
    assert "nan" not in table and "n/a" in table
    assert not re.search(r"\bnan\b", report.to_markdown())
