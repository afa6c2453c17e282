"""``rageval pool``: the top results of several runs that no label covers, per query, deduplicated
by text, from run folders and sweep folders written by BM25 runs on the fixture corpus."""

from __future__ import annotations

import json
import shutil

import pytest
from run_folders import make_run

from rageval.authoring.pool import passage_key, pool, read_pool, read_runs
from rageval.cli.main import main
from rageval.formats.trec import read_qrels, read_run


@pytest.fixture(scope="module")
def sweep(tmp_path_factory, mini, model_dir):
    """A sweep folder of two finished jobs (chunk 32 and 48) and one failed job."""
    root = tmp_path_factory.mktemp("multirun") / "2026-12-01" / "06-00-00"
    make_run(mini, model_dir, root / "0", chunk=32)
    make_run(mini, model_dir, root / "1", chunk=48)
    (root / "2").mkdir()
    (root / "2" / "run.trec").write_text("")
    (root / "2" / "error.json").write_text('{"error": "boom"}')
    return root


def chunk_text(mini_docs, row):
    return mini_docs[row["doc_id"]].text[row["start"] : row["end"]]


@pytest.fixture(scope="module")
def docs(mini):
    from rageval.inputs.corpus import load_corpus

    return {d.id: d for d in load_corpus(mini / "corpus")}


def test_pools_unlabelled_top_results_of_every_run_deduplicated_by_text(sweep, docs):
    with pytest.warns(UserWarning, match="failed or did not finish"):
        runs = read_runs([sweep])
    assert [r.name for r in runs] == ["chunk=32", "chunk=48"]
    result = pool(runs, docs, depth=4)
    # what each run put in its top 4 without a label, by text, read straight from its files
    expected: dict[str, set[str]] = {}
    for job in ("0", "1"):
        ranked = read_run(sweep / job / "run.trec")
        qrels = read_qrels(sweep / job / "qrels.trec")
        rows = {
            json.loads(line)["id"]: json.loads(line)
            for line in (sweep / job / "chunks.jsonl").read_text().splitlines()
        }
        for qid, rl in ranked.items():
            for cid in rl.ids[:4]:
                if cid not in qrels.get(qid, {}):
                    expected.setdefault(qid, set()).add(passage_key(chunk_text(docs, rows[cid])))
    got = {q["query_id"]: [passage_key(p["text"]) for p in q["passages"]] for q in result.queries}
    assert {q: set(v) for q, v in got.items()} == expected
    assert all(len(v) == len(set(v)) for v in got.values())  # one passage per text
    assert sum(result.per_query()) == sum(len(v) for v in expected.values())
    for q in result.queries:
        for p in q["passages"]:
            assert docs[p["doc"]].text[p["start"] : p["end"]] == p["text"]
            assert p["best_rank"] == min(p["runs"].values()) and 1 <= p["best_rank"] <= 4
            assert set(p["runs"]) <= {"chunk=32", "chunk=48"}
        ranks = [p["best_rank"] for p in q["passages"]]
        assert ranks == sorted(ranks)


def test_a_passage_both_runs_retrieved_names_both_with_their_ranks(tmp_path, mini, model_dir, docs):
    a = make_run(mini, model_dir, tmp_path / "a", chunk=32, overrides=[])
    b = make_run(mini, model_dir, tmp_path / "b", chunk=32, overrides=[])
    runs = read_runs([a, b])
    assert [r.name for r in runs] == ["a", "b"]  # no overrides: named by folder
    result = pool(runs, docs, depth=3)
    for q in result.queries:
        for p in q["passages"]:
            assert p["runs"] == {"a": p["best_rank"], "b": p["best_rank"]}


def test_cli_writes_the_pool_and_says_how_many_passages_per_query(sweep, tmp_path, capsys):
    out = tmp_path / "pool.jsonl"
    with pytest.warns(UserWarning, match="failed or did not finish"):
        code = main(["pool", str(sweep), "--depth", "5", "--out", str(out)])
    printed = capsys.readouterr().out
    assert code == 0, printed
    queries = read_pool(out)
    n = sum(len(q["passages"]) for q in queries)
    assert f"pooled {n} passages for {len(queries)} of 8 queries from 2 runs at depth 5" in printed
    for q in queries:
        assert f"{q['query_id']} {len(q['passages'])}" in printed
        assert q["source"]["golden"].endswith("golden.jsonl") and q["source"]["depth"] == 5
    with_evidence = next(q for q in queries if q["query_id"] == "q01")
    assert with_evidence["evidence"][0]["quote"] == "sixteen weeks of fully paid parental leave"


def test_refuses_folders_that_are_not_runs_and_runs_of_other_data(
    tmp_path, mini, model_dir, sweep, capsys
):
    (tmp_path / "empty").mkdir()
    assert main(["pool", str(tmp_path / "empty")]) == 2
    err = capsys.readouterr().err
    assert "neither a run folder" in err and str(tmp_path / "empty") in err

    other = tmp_path / "golden.jsonl"
    lines = (mini / "golden.jsonl").read_text().splitlines()
    other.write_text("\n".join(lines[:4]) + "\n")
    b = make_run(mini, model_dir, tmp_path / "b", chunk=32, golden=other)
    assert main(["pool", str(sweep / "0"), str(b)]) == 2
    err = capsys.readouterr().err
    assert "different golden sets" in err and str(b) in err

    assert main(["pool", str(sweep / "0"), "--depth", "0"]) == 2
    assert "--depth must be >= 1" in capsys.readouterr().err


def test_refuses_a_corpus_that_changed_since_the_run(tmp_path, mini, model_dir, capsys):
    corpus = tmp_path / "corpus"
    shutil.copytree(mini / "corpus", corpus)
    run = make_run(mini, model_dir, tmp_path / "r", corpus=corpus)
    faq = corpus / "faq.txt"
    faq.write_text("An edit after the run.\n" + faq.read_text())
    assert main(["pool", str(run), "--out", str(tmp_path / "p.jsonl")]) == 2
    err = capsys.readouterr().err
    assert "not the one" in err and "--corpus" in err
    assert not (tmp_path / "p.jsonl").exists()


def test_queries_selects_a_slice_and_names_unknown_ids(sweep, docs, mini):
    import warnings

    from rageval.inputs.golden import load_golden

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        runs = read_runs([sweep])
    hr = {q.id for q in load_golden(mini / "golden.jsonl").queries if "hr" in q.tags}
    result = pool(runs, docs, 4, queries="tag:hr")
    assert result.n_queries == len(hr) and {q["query_id"] for q in result.queries} <= hr
    assert [q["query_id"] for q in pool(runs, docs, 4, queries="q02,q07").queries] == [
        "q02",
        "q07",
    ]
    with pytest.raises(Exception, match="--queries names unknown query ids q99"):
        pool(runs, docs, 4, queries="q02,q99")


def test_a_document_level_run_pools_whole_documents(tmp_path, mini, model_dir, docs):
    run = make_run(mini, model_dir, tmp_path / "doc", level="doc")
    runs = read_runs([run])
    qrels = read_qrels(run / "qrels.trec")
    result = pool(runs, docs, depth=3)
    assert result.queries
    for q in result.queries:
        for p in q["passages"]:
            assert p["doc"] not in qrels.get(q["query_id"], {})
            assert (p["start"], p["end"], p["text"]) == (
                0,
                len(docs[p["doc"]].text),
                docs[p["doc"]].text,
            )


def test_a_moved_corpus_is_named_with_the_option_to_pass(tmp_path, mini, model_dir, capsys):
    corpus = tmp_path / "corpus"
    shutil.copytree(mini / "corpus", corpus)
    run = make_run(mini, model_dir, tmp_path / "r", corpus=corpus)
    corpus.rename(tmp_path / "moved")
    assert main(["pool", str(run), "--out", str(tmp_path / "p.jsonl")]) == 2
    err = capsys.readouterr().err
    assert f"is not at {corpus}" in err and "--corpus PATH" in err
    argv = ["pool", str(run), "--out", str(tmp_path / "p.jsonl"), "--corpus"]
    with pytest.warns(UserWarning, match="results per query, fewer than --depth 10"):
        assert main([*argv, str(tmp_path / "moved")]) == 0
