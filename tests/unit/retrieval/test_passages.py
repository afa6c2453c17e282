"""Passages with their own ids and text are first-class results: scored on the text that came
back by the rules rageval's own chunks follow, and never a silent zero."""

from __future__ import annotations

import math

import pytest

from rageval.errors import BackendError, ConfigError
from rageval.inputs.chunking import ChunkingSpec, chunk_documents, load_tokenizer
from rageval.inputs.corpus import load_corpus
from rageval.retrieval.adapters import FunctionRetriever
from rageval.retrieval.passages import PassageStore, content_id, read_passage
from rageval.run.evaluation import evaluate
from rageval.run.spec import RunSpec
from rageval.scoring.ranking import ranked
from rageval.types import RankedList


def spec(mini, model_dir, **kw) -> RunSpec:
    base = dict(
        corpus=str(mini / "corpus"),
        golden=str(mini / "golden.jsonl"),
        tokenizer_dir=model_dir,
        chunking=ChunkingSpec(32),
        k=3,
        ks=(1, 3, 5),
        latency_sample=0,
        budgets=(64, 128),
    )
    base.update(kw)
    return RunSpec(**base)


class Shared:
    """rageval's chunks ranked by the words they share with the query; ``ranking(q)`` is that
    order, so a function can hand the very same chunks back as passages."""

    embeds = False

    def index(self, chunks, encoder=None):
        self.chunks = list(chunks)

    def ranking(self, query: str, depth: int):
        words = set(query.lower().split())
        return ranked(
            [(c.id, float(len(words & set(c.text.lower().split())))) for c in self.chunks], depth
        )

    def search(self, queries, depth):
        return [self.ranking(q, depth) for q in queries]


SPAN_FAMILIES = ("evidence_", "quote_", "tokens@", "recall@64t", "recall@128t")


def test_passages_with_text_score_like_the_same_ranking_of_rageval_chunks(mini, model_dir):
    own = Shared()
    a = evaluate(spec(mini, model_dir), own, None)
    by_id = {c.id: c for c in own.chunks}

    def search(query: str, k: int):  # the same chunks in the same order, as passages (no
        # scores: the order is the ranking, so ties among rageval's ids cannot reorder them)
        return [
            {"text": by_id[i].text, "doc_id": by_id[i].doc_id} for i in own.ranking(query, k).ids
        ]

    b = evaluate(spec(mini, model_dir), FunctionRetriever(search, progress=False), None)
    compared = [m for m in a.metrics if m.startswith(SPAN_FAMILIES) or "@" in m and "t" in m]
    assert len(compared) >= 20
    for m in compared:
        assert b.metrics[m] == pytest.approx(a.metrics[m], abs=1e-12), m
    # evidence is present and found: the comparison is not of zeros
    assert a.metrics["evidence_recall@3"] > 0.3 and a.metrics["quote_recall@5"] > 0.3
    assert b.counts["passages"] == b.counts["passages_located"] > 0
    row = b.per_query[0]
    assert row["retrieved"][0].startswith("p:") and row["retrieved_labels"] == row["retrieved"]


def test_an_index_with_its_own_chunking_is_scored_on_its_text(mini, model_dir):
    """Passages cut another way (whole paragraphs) still find the evidence quotes."""
    docs = load_corpus(str(mini / "corpus"))
    paragraphs = [(d.id, p) for d in docs for p in d.text.split("\n\n") if p.strip()]

    def search(query: str, k: int):
        words = set(query.lower().split())
        scored = sorted(
            paragraphs, key=lambda dp: (-len(words & set(dp[1].lower().split())), dp[1])
        )
        return [{"text": p, "doc_id": d} for d, p in scored[:k]]

    r = evaluate(spec(mini, model_dir), FunctionRetriever(search, progress=False), None)
    assert r.metrics["quote_recall@5"] > 0.5 and r.metrics["ndcg@3"] > 0.3
    assert r.counts["passages_located"] == r.counts["passages"]
    assert r.metrics["tokens@3"] > 0


def test_unlocated_passages_are_judged_on_text_and_their_spans_are_not_measured(mini, model_dir):
    """Text that differs from the corpus (an index that cleaned it) cannot be placed in its
    document: quotes still label it by text; span and budget metrics say n/a, never 0."""
    docs = load_corpus(str(mini / "corpus"))
    chunks = chunk_documents(docs, ChunkingSpec(32), load_tokenizer(model_dir))

    def search(query: str, k: int):
        words = set(query.lower().split())
        best = sorted(chunks, key=lambda c: (-len(words & set(c.text.lower().split())), c.id))
        return [{"text": "[cleaned] " + c.text, "doc_id": c.doc_id} for c in best[:k]]

    r = evaluate(spec(mini, model_dir), FunctionRetriever(search, progress=False), None)
    assert r.counts["passages_located"] == 0
    assert r.metrics["ndcg@3"] > 0.3  # evidence matched on text
    for m in ("evidence_recall@3", "quote_recall@3", "evidence_recall@64t", "evidence_iou@1"):
        assert math.isnan(r.metrics[m]), m
        assert all(row[m] is None for row in r.per_query)
    d = r.to_dict()
    assert d["metrics"]["evidence_recall@3"] is None  # report.json: null, not NaN or 0
    table = r.table()
    assert any(line.split()[:2] == ["evidence_recall@3", "n/a"] for line in table.splitlines())
    assert "n/a" in r.to_markdown()


def test_a_document_level_run_says_not_measured_for_span_metrics(mini, model_dir):
    docs = load_corpus(str(mini / "corpus"))

    def search(query: str, k: int):  # document ids only
        words = set(query.lower().split())
        return [
            d.id
            for d in sorted(docs, key=lambda d: (-len(words & set(d.text.lower().split())), d.id))
        ][:k]

    r = evaluate(
        spec(mini, model_dir, level="doc"), FunctionRetriever(search, progress=False), None
    )
    assert r.metrics["ndcg@3"] > 0.5
    for m in ("evidence_recall@3", "quote_recall@3", "tokens@3", "evidence_recall@128t"):
        assert math.isnan(r.metrics[m]), m
    assert r.to_dict()["metrics"]["quote_recall@3"] is None


def test_unknown_ids_without_text_stop_the_run(mini, model_dir):
    def search(query: str, k: int):
        return [f"kb-{i:04d}" for i in range(k)]

    with pytest.raises(ConfigError, match=r"0 of \d+ returned ids match .* return passage text"):
        evaluate(spec(mini, model_dir), FunctionRetriever(search, progress=False), None)


def test_what_a_function_may_return_is_checked_in_one_line(mini, model_dir):
    with pytest.raises(ConfigError, match=r"holding a int \(3\).*return a RankedList"):
        evaluate(spec(mini, model_dir), FunctionRetriever(lambda q, k: [3], progress=False), None)
    with pytest.raises(ConfigError, match="returned a dict for query"):
        evaluate(spec(mini, model_dir), FunctionRetriever(lambda q, k: {}, progress=False), None)


def test_ids_are_stable_and_one_id_is_one_text():
    p = read_passage({"text": "abc", "metadata": {"doc_id": "d"}})
    assert p.id == content_id("d", "abc") == read_passage({"text": "abc", "doc_id": "d"}).id
    assert read_passage({"text": "abc", "id": "kb-1"}).id == "kb-1"
    assert read_passage({"text": "x", "metadata": {"src": "d2"}}, doc_id_key="src").doc_id == "d2"
    store = PassageStore()
    store.add(read_passage({"text": "abc", "id": "kb-1"}))
    with pytest.raises(ConfigError, match="passage id 'kb-1' with two different texts"):
        store.add(read_passage({"text": "abd", "id": "kb-1"}))
    with pytest.raises(ConfigError, match="backend.id_key='pid'"):
        read_passage({"text": "abc", "metadata": {}}, id_key="pid")


def test_calls_run_concurrently_with_retries_timeouts_and_a_failure_report():
    import threading
    import time

    seen, lock, active, peak = [], threading.Lock(), [0], [0]
    flaky = {"q2": 1}
    # the first three queries, taken by the three threads, meet before any returns: the peak
    # does not depend on how fast this machine starts threads
    together, waiting = threading.Barrier(3, timeout=30), {"q0", "q1", "q2"}

    def search(query, k):
        with lock:
            active[0] += 1
            peak[0] = max(peak[0], active[0])
            meet = query in waiting
            waiting.discard(query)
        try:
            if meet:
                together.wait()
            if flaky.get(query):
                flaky[query] -= 1
                raise ConnectionError("reset by peer")
            if query == "slow":
                time.sleep(1.0)
            seen.append(query)
            return [f"{query}-a", f"{query}-b"][:k]
        finally:
            with lock:
                active[0] -= 1

    r = FunctionRetriever(search, parallelism=3, retries=1, backoff=0, progress=False)
    got = r.search([f"q{i}" for i in range(9)], 1)
    assert got == [[f"q{i}-a"] for i in range(9)] and peak[0] == 3
    assert r.calls == 10 and len(r.latency_ms()) == 9  # one retry; latency of each success
    slow = FunctionRetriever(search, timeout=0.2, retries=0, progress=False)
    with pytest.raises(BackendError, match=r"failed 1 of 2 queries .*'slow': TimeoutError") as e:
        slow.search(["q5", "slow"], 2)
    assert e.value.failed_queries == ["slow"]


def test_an_async_function_is_awaited_concurrently():
    import asyncio

    async def search(query: str, k: int):
        await asyncio.sleep(0.05)
        return [(f"{query}-x", 1.0)]

    r = FunctionRetriever(search, parallelism=8, progress=False)
    assert r.search([f"q{i}" for i in range(16)], 5)[3] == [("q3-x", 1.0)]
    assert len(r.latency_ms()) == 16


def test_a_function_named_by_path_is_imported_with_clear_errors():
    r = FunctionRetriever("fakes.plugin_retrievers:search_passages", progress=False)
    assert callable(r.function)
    with pytest.raises(ConfigError, match="backend.function is not set"):
        FunctionRetriever("???")
    with pytest.raises(ConfigError, match="has no 'serch_passages' .*did you mean"):
        FunctionRetriever("fakes.plugin_retrievers:serch_passages")
    with pytest.raises(ConfigError, match="cannot import 'nowhere_at_all'"):
        FunctionRetriever("nowhere_at_all:search")


def test_ranked_list_results_pass_through():
    r = FunctionRetriever(lambda q: RankedList(("a",), (1.0,)), progress=False)
    assert r.search(["q"], 3) == [RankedList(("a",), (1.0,))]


def test_evidence_no_passage_holds_is_missed_not_unmeasured(mini, model_dir):
    """The passages cover only what came back: evidence none of them holds counts in the
    denominator (recall 0), it is not set aside."""
    docs = load_corpus(str(mini / "corpus"))
    faq = next(d for d in docs if d.id == "faq")
    para = next(p for p in faq.text.split("\n\n") if "Helm" not in p and p.strip())

    def search(query: str, k: int):  # one passage, holding no query's evidence
        return [{"text": para, "doc_id": "faq"}]

    r = evaluate(spec(mini, model_dir), FunctionRetriever(search, progress=False), None)
    with_evidence = [row for row in r.per_query if row["evidence"]]
    assert with_evidence and all(row["evidence_recall@3"] == 0.0 for row in with_evidence)
    assert r.metrics["quote_recall@5"] == 0.0 and r.metrics["evidence_recall@128t"] == 0.0


def test_no_results_at_all_stop_the_run_and_some_empty_queries_warn(mini, model_dir):
    with pytest.raises(ConfigError, match="returned no results for any of the 8 queries"):
        evaluate(spec(mini, model_dir), FunctionRetriever(lambda q, k: [], progress=False), None)

    def some(query: str, k: int):
        return [] if "password" in query else search_passages(query, k)

    from fakes.plugin_retrievers import search_passages

    with pytest.warns(UserWarning, match=r"no results for 2 of 8 queries"):
        r = evaluate(spec(mini, model_dir), FunctionRetriever(some, progress=False), None)
    assert any("no results for 2 of 8 queries" in w for w in r.warnings)


def test_a_hung_call_fails_on_time_and_never_keeps_the_process_alive(tmp_path):
    """A call that never returns times out, the run stops naming it, and the process still
    exits at once: the stuck thread is a daemon."""
    import subprocess
    import sys

    script = (
        "import time\n"
        "from rageval.errors import BackendError\n"
        "from rageval.retrieval.adapters import FunctionRetriever\n"
        "def hang(q, k):\n"
        "    time.sleep(600)\n"
        "try:\n"
        "    FunctionRetriever(hang, timeout=0.3, retries=1, backoff=0, progress=False)"
        ".search(['a', 'b'], 3)\n"
        "except BackendError as e:\n"
        "    print(e)\n"
    )
    # a hang would keep the process alive for 600 s: the 60 s timeout fails the test then
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert "failed 2 of 2 queries after 1 retries" in out.stdout
    assert "TimeoutError: no answer in 0.3 s" in out.stdout


def test_a_factory_that_builds_no_retriever_is_one_line():
    from rageval.retrieval.adapters import LangChainRetriever, LlamaIndexRetriever

    with pytest.raises(ConfigError, match=r"returned a dict, which has no invoke\(query\)"):
        LangChainRetriever(lambda: {}, progress=False).search(["q"], 3)
    with pytest.raises(ConfigError, match=r"has no retrieve\(query\); return a LlamaIndex"):
        LlamaIndexRetriever(lambda similarity_top_k: [], progress=False).search(["q"], 3)

    def broken(k):
        raise FileNotFoundError("no such index: prod")

    with pytest.raises(ConfigError, match="failed while building the retriever: FileNotFound"):
        LangChainRetriever(broken, progress=False).search(["q"], 3)
    with pytest.raises(ConfigError, match=r"cannot be called with \['index', 'k'\]: .*fix backend"):
        LangChainRetriever(broken, kwargs={"index": "x"}, progress=False).search(["q"], 3)
