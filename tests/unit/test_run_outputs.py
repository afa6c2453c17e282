"""A run's new outputs on the fixture corpus with BM25 (no model): budget and span metrics,
chunks.jsonl rows that recompute them, and no max_seq_length warning when nothing is embedded."""

import json
import warnings

import pytest

from rageval.inputs.chunking import ChunkingSpec, write_chunks_jsonl
from rageval.retrieval.local.lexical import BM25Retriever
from rageval.run.evaluation import evaluate
from rageval.run.spec import RunSpec
from rageval.scoring.relevance import resolve
from rageval.scoring.spans import span_metrics


class ShortModel:
    """An encoder stand-in that reads 8 tokens: only its max_seq_length matters here."""

    max_seq_length = 8
    fingerprint = "short"


class VectorLike(BM25Retriever):
    embeds = True  # as a vector retriever: its chunks go through the model


def _spec(mini, model_dir, **kw):
    return RunSpec(
        str(mini / "corpus"),
        str(mini / "golden.jsonl"),
        model_dir,
        ChunkingSpec(32, 8),
        latency_sample=0,
        **kw,
    )


def test_embeds_looks_through_retry_and_rerank_wrappers():
    from types import SimpleNamespace

    from rageval.retrieval.retry import RetryingRetriever
    from rageval.run.embed import embeds

    assert not embeds(RetryingRetriever(BM25Retriever()))
    assert not embeds(SimpleNamespace(base=RetryingRetriever(BM25Retriever()), search=print))
    assert embeds(RetryingRetriever(VectorLike()))
    assert embeds(SimpleNamespace(inner={"nlist": 4}, base=None, search=print))  # not a retriever


def test_bm25_runs_do_not_warn_about_max_seq_length(mini, model_dir):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        evaluate(_spec(mini, model_dir), BM25Retriever(), ShortModel())
    assert not [w for w in caught if "max_seq_length" in str(w.message)]
    with pytest.warns(UserWarning, match="exceeds the embedding model's max_seq_length=8"):
        evaluate(_spec(mini, model_dir), VectorLike(), ShortModel())


def test_a_run_reports_budget_span_and_token_metrics_and_its_chunks(mini, model_dir, tmp_path):
    report = evaluate(_spec(mini, model_dir, budgets=(64, 128)), BM25Retriever(), None)
    m = report.metrics
    for name in (
        "evidence_recall@64t",
        "evidence_precision@128t",
        "evidence_iou@64t",
        "recall@128t",
        "quote_recall@5",
        "quote_ndcg@5",
        "evidence_precision@5",
        "evidence_precision_max",
        "tokens@5",
    ):
        assert name in m and m[name] == m[name], name  # present and not NaN
    assert m["evidence_recall@64t"] <= m["evidence_recall@128t"]
    # CIs: every k for the ranking metrics, the headline k and every budget for the others
    assert {"ndcg@1", "ndcg@10", "quote_recall@5", "evidence_recall@64t", "tokens@5"} <= set(
        report.ci
    )
    assert "quote_recall@1" not in report.ci and "evidence_precision@10" not in report.ci
    assert 0 < m["evidence_precision@5"] <= m["evidence_precision_max"] <= 1
    # each query's context within the budget holds at most that many tokens
    rows = {r["id"]: r for r in report.per_query}
    assert all(r["tokens@5"] >= 0 for r in rows.values())
    assert "evidence_recall@128t" in report.table() and "tokens@5" in report.table()
    # chunks.jsonl holds what span metrics need: recompute evidence_recall@5 from it alone
    path = write_chunks_jsonl(tmp_path / "chunks.jsonl", report.chunks)
    chunks = [json.loads(line) for line in path.read_text().splitlines()]
    assert len(chunks) == report.counts["chunks"]
    ext = {c["id"]: (c["doc_id"], c["span_start"], c["span_end"]) for c in chunks}
    from rageval.inputs.corpus import load_corpus
    from rageval.inputs.golden import load_golden
    from rageval.types import Chunk

    docs = {d.id: d for d in load_corpus(mini / "corpus")}
    objs = [
        Chunk(
            c["id"],
            c["doc_id"],
            c["ordinal"],
            docs[c["doc_id"]].text[c["start"] : c["end"]],
            c["start"],
            c["end"],
            c["tokens"],
        )
        for c in chunks
    ]
    golden = load_golden(mini / "golden.jsonl")
    res = resolve(golden, docs, objs)
    qids = [q.id for q in golden.queries]
    again = span_metrics(qids, [r.ids for r in report.rankings], res.spans, ext, (5,))
    for i, q in enumerate(qids):
        want = rows[q]["evidence_recall@5"]
        got = again["evidence_recall@5"][i]
        assert (want is None and got != got) or want == got


def test_the_run_folder_from_rows_made_when_read_is_the_one_from_a_list(mini, model_dir, tmp_path):
    """report.chunks is made a row at a time from the run's chunks; the run folder written from
    it (chunks.jsonl, chunk_labels.tsv, the per-query page) is byte for byte the one written from
    the same rows held as a list of dicts."""
    from rageval.inputs.chunking import ChunkRows
    from rageval.report.html import render
    from rageval.report.run_files import save_run_folder

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        report = evaluate(_spec(mini, model_dir, budgets=(64,)), BM25Retriever(), None)
    assert isinstance(report.chunks, ChunkRows)
    rows = list(report.chunks)
    assert all("label" in r for r in rows) and any("text" in r for r in rows)
    assert not all("text" in r for r in rows)  # only the chunks the page shows carry their text
    save_run_folder(report, tmp_path / "made")
    # the page looks up only the chunks it shows: the same page as from every row
    page = render(report.to_dict(), {r["id"]: r for r in rows})
    assert (tmp_path / "made" / "report.html").read_text(encoding="utf-8") == page
    report.chunks = [dict(r) for r in rows]
    save_run_folder(report, tmp_path / "listed")
    for name in ("chunks.jsonl", "chunk_labels.tsv", "report.html", "run.trec", "qrels.trec"):
        made, listed = (tmp_path / side / name for side in ("made", "listed"))
        assert made.read_bytes() == listed.read_bytes(), name
