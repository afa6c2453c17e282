"""BEIR datasets: reading and checking the three files, `rageval import beir`, and runs whose
numbers equal `rageval score` on the exported TREC files, pytrec_eval, and a minimal pipeline."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest
from beir_fixture import make_beir

from rageval.cli.main import main
from rageval.errors import InputError
from rageval.inputs.beir import beir_dataset, import_beir, load_beir
from rageval.inputs.corpus import load_corpus
from rageval.inputs.golden import load_golden

KS = (1, 3, 5, 10, 20)


@pytest.fixture
def beir(tmp_path) -> Path:
    return make_beir(tmp_path / "beir")


def test_golden_set_is_the_qrels_as_graded_document_labels(beir):
    data = load_beir(beir)
    assert len(data.docs) == 38 and len(data.golden.queries) == 30
    q = data.golden.queries[0]
    assert (q.id, q.query, q.line) == ("q000", "What is a volcano?", 2)
    # the judgement of the empty document "blank" is dropped
    assert dict(q.relevant_docs) == {
        "volcano-what": 2,
        "volcano-cause": 1,
        "volcano-effect": 1,
        "glacier-what": 0,
    }
    assert data.golden.path == str(beir / "qrels" / "test.tsv")
    assert {d.id: d.text for d in data.docs}["untitled"] == "Lava flows glow red at night."
    assert data.skipped == {
        "queries without judgements": 2,
        "queries whose judgements are all 0": 1,
        "judgements of empty documents": 1,
    }
    with pytest.warns(UserWarning, match="skipped 2 queries without judgements; 1 queries whose"):
        corpus, golden = beir_dataset(beir)
    assert corpus == tuple(data.docs) and golden.digest == data.golden.digest


def test_split_picks_the_qrels_file_and_a_missing_split_names_the_others(beir):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _, golden = beir_dataset(beir, "train")
    assert len(golden.queries) == 12 and all(len(q.relevant_docs) == 1 for q in golden.queries)
    with pytest.raises(
        InputError, match=r"dev\.tsv: no qrels for split 'dev' \(splits here: test, train\)"
    ):
        load_beir(beir, "dev")


def _append(path: Path, line: str) -> None:
    with path.open("a") as f:
        f.write(line + "\n")


BAD = {
    "no corpus": (lambda r: (r / "corpus.jsonl").unlink(), "corpus.jsonl: missing corpus.jsonl"),
    "no queries": (
        lambda r: (r / "queries.jsonl").unlink(),
        "queries.jsonl: missing queries.jsonl",
    ),
    "no folder": (lambda r: r.rename(r.with_name("gone")), "BEIR dataset folder not found"),
    "corpus json": (
        lambda r: _append(r / "corpus.jsonl", '{"_id": "x",'),
        "corpus.jsonl:40: malformed JSON",
    ),
    "corpus no id": (
        lambda r: _append(r / "corpus.jsonl", '{"text": "t"}'),
        'corpus.jsonl:40: document has no "id" or "_id"',
    ),
    "corpus space": (
        lambda r: _append(r / "corpus.jsonl", '{"_id": "a b", "text": "t"}'),
        "corpus.jsonl:40: document id 'a b' holds whitespace",
    ),
    "query json": (
        lambda r: _append(r / "queries.jsonl", "[1]"),
        "queries.jsonl:34: expected a JSON object",
    ),
    "query text": (
        lambda r: _append(r / "queries.jsonl", '{"_id": "q9"}'),
        "queries.jsonl:34: query 'q9': missing or empty \"text\"",
    ),
    "query dup": (
        lambda r: _append(r / "queries.jsonl", '{"_id": "q000", "text": "x"}'),
        "queries.jsonl:34: duplicate query id 'q000' \\(first on line 1\\)",
    ),
    "qrels cols": (
        lambda r: _append(r / "qrels/test.tsv", "q000\tvolcano-what"),
        "test.tsv:84: expected 3 tab-separated columns",
    ),
    "qrels score": (
        lambda r: _append(r / "qrels/test.tsv", "q000\tglacier-cause\thigh"),
        "test.tsv:84: relevance grade 'high' is not an integer",
    ),
    "qrels negative": (
        lambda r: _append(r / "qrels/test.tsv", "q000\tglacier-cause\t-1"),
        "test.tsv:84: negative score -1",
    ),
    "unknown doc": (
        lambda r: _append(r / "qrels/test.tsv", "q001\tnowhere\t1"),
        "test.tsv:84: query 'q001' judges document 'nowhere', which is not in corpus.jsonl",
    ),
    "unknown query": (
        lambda r: _append(r / "qrels/test.tsv", "q999\tvolcano-what\t1"),
        "test.tsv:84: query 'q999' is not in queries.jsonl",
    ),
}


@pytest.mark.parametrize("case", BAD)
def test_bad_input_is_an_input_error_with_file_and_line(beir, case):
    break_it, message = BAD[case]
    break_it(beir)
    with pytest.raises(InputError, match=message):
        load_beir(beir)


def test_import_cli_error_is_one_line_and_exit_2(beir, tmp_path, capsys):
    _append(beir / "qrels" / "test.tsv", "q001\tnowhere\t1")
    assert main(["import", "beir", str(beir), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{beir / 'qrels' / 'test.tsv'}:84: " in err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("fmt", ["jsonl", "folder"])
def test_import_writes_a_golden_set_and_corpus_the_tool_reads_back(beir, tmp_path, capsys, fmt):
    out = tmp_path / "out"
    argv = ["import", "beir", str(beir), "--out", str(out), "--corpus-format", fmt]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    corpus = out / ("corpus.jsonl" if fmt == "jsonl" else "corpus")
    assert f"wrote 30 queries to {out / 'retriever.jsonl'} and 38 documents to {corpus}" in printed
    assert "skipped 2 queries without judgements" in printed and "dataset=custom" in printed
    data = load_beir(beir)
    golden = load_golden(out / "retriever.jsonl")
    assert golden.digest == data.golden.digest
    assert [(q.id, q.query, dict(q.relevant_docs)) for q in golden.queries] == [
        (q.id, q.query, dict(q.relevant_docs)) for q in data.golden.queries
    ]
    docs = {d.id: d.text for d in load_corpus(corpus)}
    assert docs == {d.id: d.text for d in data.docs}
    assert main(argv) == 2 and "pass --force" in capsys.readouterr().err
    assert main([*argv, "--force"]) == 0


def test_folder_import_refuses_ids_that_are_not_file_names(beir, tmp_path):
    _append(beir / "corpus.jsonl", json.dumps({"_id": "../up", "title": "", "text": "t"}))
    with pytest.raises(InputError, match=r"'\.\./up' cannot be a file name; .*jsonl"):
        import_beir(beir, tmp_path / "o", split="train", corpus_format="folder")


def test_the_runs_max_document_mb_caps_a_beir_corpus(beir):
    from rageval.app.build import instantiate
    from rageval.app.config import compose

    big = max(len(json.loads(line)["text"]) for line in (beir / "corpus.jsonl").open())
    cfg = compose(["dataset=beir", f"dataset.path={beir}", f"max_document_mb={big / 2e6}"])
    with pytest.raises(Exception, match="above the .* MB limit for one document") as err:
        instantiate(cfg.dataset, "dataset")
    assert "max_document_mb" in str(err.value)
    cfg = compose(["dataset=beir", f"dataset.path={beir}"])
    assert len(instantiate(cfg.dataset, "dataset").golden.queries) == 30


def test_query_metadata_becomes_meta_and_slices_a_beir_run(beir, tmp_path):
    from rageval.scoring.slices import check_fields, slice_table

    path = beir / "queries.jsonl"
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    for i, q in enumerate(rows):  # what BEIR datasets carry: strings, lists, nested, nulls
        q["metadata"] = {
            "kind": ["what", "cause", "effect"][i % 3],
            "labels": ["geo", "bio"] if i % 2 else ["geo"],
            "answer": {"text": "nested"},
            "year": None,
        }
    path.write_text("".join(json.dumps(q) + "\n" for q in rows))
    data = load_beir(beir)
    by_id = {q["_id"]: q for q in rows}
    for q in data.golden.queries:
        want = by_id[q.id]["metadata"]
        assert dict(q.meta) == {"kind": want["kind"], "labels": want["labels"]}
    per_query = [{"id": q.id, "meta": dict(q.meta), "ndcg@5": 1.0} for q in data.golden.queries]
    check_fields(["kind", "labels"], per_query, "qrels/test.tsv")
    table = slice_table(per_query, ["kind"], ["ndcg@5"], min_size=1)
    assert sorted(r["slice"] for r in table) == ["kind=cause", "kind=effect", "kind=what"]
    assert sum(r["n"] for r in table) == len(data.golden.queries)
    # the exported golden set keeps it, digest and all
    golden, _, _ = import_beir(beir, tmp_path / "out")
    assert load_golden(golden).digest == data.golden.digest
    assert [dict(q.meta) for q in load_golden(golden).queries] == [
        dict(q.meta) for q in data.golden.queries
    ]
