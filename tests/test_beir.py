"""BEIR datasets: reading and checking the three files, `rageval import beir`, and runs whose
numbers equal `rageval score` on the exported TREC files, pytrec_eval, and a minimal pipeline."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pytest
from beir_fixture import beir_qrels, make_beir, read_run_lines
from test_metrics import oracle_scores

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
        "volcano-what": 2, "volcano-cause": 1, "volcano-effect": 1, "glacier-what": 0,
    }  # fmt: skip
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
    "no queries": (lambda r: (r / "queries.jsonl").unlink(), "queries.jsonl: missing queries.jsonl"),
    "no folder": (lambda r: r.rename(r.with_name("gone")), "BEIR dataset folder not found"),
    "corpus json": (lambda r: _append(r / "corpus.jsonl", '{"_id": "x",'), "corpus.jsonl:40: malformed JSON"),
    "corpus no id": (lambda r: _append(r / "corpus.jsonl", '{"text": "t"}'), 'corpus.jsonl:40: document has no "id" or "_id"'),
    "corpus space": (lambda r: _append(r / "corpus.jsonl", '{"_id": "a b", "text": "t"}'), "corpus.jsonl:40: document id 'a b' holds whitespace"),
    "query json": (lambda r: _append(r / "queries.jsonl", "[1]"), "queries.jsonl:34: expected a JSON object"),
    "query text": (lambda r: _append(r / "queries.jsonl", '{"_id": "q9"}'), "queries.jsonl:34: query 'q9': missing or empty \"text\""),
    "query dup": (lambda r: _append(r / "queries.jsonl", '{"_id": "q000", "text": "x"}'), "queries.jsonl:34: duplicate query id 'q000' \\(first on line 1\\)"),
    "qrels cols": (lambda r: _append(r / "qrels/test.tsv", "q000\tvolcano-what"), "test.tsv:84: expected 3 tab-separated columns"),
    "qrels score": (lambda r: _append(r / "qrels/test.tsv", "q000\tglacier-cause\thigh"), "test.tsv:84: relevance grade 'high' is not an integer"),
    "qrels negative": (lambda r: _append(r / "qrels/test.tsv", "q000\tglacier-cause\t-1"), "test.tsv:84: negative score -1"),
    "unknown doc": (lambda r: _append(r / "qrels/test.tsv", "q001\tnowhere\t1"), "test.tsv:84: query 'q001' judges document 'nowhere', which is not in corpus.jsonl"),
    "unknown query": (lambda r: _append(r / "qrels/test.tsv", "q999\tvolcano-what\t1"), "test.tsv:84: query 'q999' is not in queries.jsonl"),
}  # fmt: skip


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


# --- integration: the real model, FAISS and MLflow --------------------------------------------


def app_args(cache: Path, out: Path, *extra: str) -> list[str]:
    return [
        f"cache_dir={cache}", f"hydra.run.dir={out}", "latency_sample=0",
        f"mlflow.tracking_uri=sqlite:///{out.parent / 'mlflow.db'}", *extra,
    ]  # fmt: skip


@pytest.fixture(scope="module")
def runs(tmp_path_factory, shared_cache):
    """Run the app once per chunk size on one fixture dataset: {chunk: (root, out, report)}."""
    from rageval.app.main import run_app

    base = tmp_path_factory.mktemp("beir-runs")
    root = make_beir(base / "beir")
    done = {}

    def get(chunk: int):
        if chunk not in done:
            out = base / f"chunk{chunk}"
            with pytest.warns(UserWarning, match="skipped 2 queries"):
                args = app_args(
                    shared_cache, out, "dataset=beir", f"dataset.path={root}", f"chunk={chunk}"
                )
                assert run_app(args) == 0
            done[chunk] = root, out, json.loads((out / "report.json").read_text())
        return done[chunk]

    return get


@pytest.mark.integration
@pytest.mark.parametrize("chunk", [0, 16])
def test_run_metrics_equal_rageval_score_and_pytrec_eval(runs, capsys, chunk):
    from mlflow.tracking import MlflowClient

    root, out, rep = runs(chunk)
    capsys.readouterr()
    assert rep["level"] == "doc" and rep["counts"]["documents"] == 38
    assert rep["counts"]["chunks"] == (38 if chunk == 0 else 96)
    qids = [r["id"] for r in rep["per_query"]]
    lines = read_run_lines(out / "run.trec")
    assert {d for _, d, _ in lines} <= {d.id for d in load_corpus(root)}  # document ids, not chunks
    # the two copies of one text tie; like trec_eval, the larger id comes first
    assert lines[0][:2] == ("q000", "volcano-what-copy") and lines[0][2] == lines[1][2]
    qrels = beir_qrels(root, qids)
    written = [line.split() for line in (out / "qrels.trec").read_text().splitlines()]
    assert {(q, d, int(g)) for q, _, d, g in written} == {
        (q, d, g) for q, j in qrels.items() for d, g in j.items()
    }

    assert (
        main(
            [
                "score",
                str(out / "qrels.trec"),
                str(out / "run.trec"),
                "--k",
                "1,3,5,10,20",
                "--json",
            ]
        )
        == 0
    )
    scored = json.loads(capsys.readouterr().out)
    assert scored["queries"] == len(qids) == 30
    oracle = oracle_scores(qrels, lines, KS)
    for key, value in rep["metrics"].items():
        assert scored["metrics"][key] == pytest.approx(value, abs=1e-12), key
        assert np.mean([oracle[q][key] for q in qids]) == pytest.approx(value, abs=1e-12), key
        for row in rep["per_query"]:
            assert row[key] == pytest.approx(oracle[row["id"]][key], abs=1e-12), (key, row["id"])

    client = MlflowClient(tracking_uri=f"sqlite:///{out.parent / 'mlflow.db'}")
    run_id = rep["mlflow_run_id"]
    for name in ("run.trec", "qrels.trec"):
        local = client.download_artifacts(run_id, name, str(out.parent / f"dl-{chunk}"))
        assert Path(local).read_bytes() == (out / name).read_bytes()


@pytest.mark.integration
def test_dense_chunk0_reproduces_a_minimal_pipeline(runs, model_dir):
    from sentence_transformers import SentenceTransformer

    root, out, rep = runs(0)
    docs = [json.loads(line) for line in (root / "corpus.jsonl").read_text().splitlines()]
    docs = [d for d in docs if (d["title"] + " " + d["text"]).strip()]
    queries = {q["_id"]: q["text"] for q in map(json.loads, (root / "queries.jsonl").open())}
    qids = [r["id"] for r in rep["per_query"]]
    model = SentenceTransformer(model_dir, device="cpu")
    texts = sorted({(d["title"] + " " + d["text"]).strip() for d in docs})  # each text once
    vec = dict(zip(texts, model.encode(texts, normalize_embeddings=True), strict=True))
    doc_vecs = np.stack([vec[(d["title"] + " " + d["text"]).strip()] for d in docs])
    scores = model.encode([queries[q] for q in qids], normalize_embeddings=True) @ doc_vecs.T
    lines = [(q, d["_id"], float(s)) for q, row in zip(qids, scores, strict=True) for d, s in zip(docs, row, strict=True)]  # fmt: skip
    want = oracle_scores(beir_qrels(root, qids), lines, KS)
    for row in rep["per_query"]:
        for key in want[row["id"]]:
            assert row[key] == pytest.approx(want[row["id"]][key], abs=1e-6), (key, row["id"])
    ours = {(q, d): s for q, d, s in read_run_lines(out / "run.trec")}
    ref = {(q, d): s for q, d, s in lines}
    assert max(abs(s - ref[key]) for key, s in ours.items()) < 1e-6


@pytest.mark.integration
@pytest.mark.parametrize("fmt", ["jsonl", "folder"])
def test_imported_dataset_evaluates_exactly_like_dataset_beir(runs, tmp_path, shared_cache, fmt):
    from rageval.app.main import run_app

    root, out, rep = runs(16)
    golden, corpus, _ = import_beir(root, tmp_path / "imp", corpus_format=fmt)
    dataset = ["dataset=custom", f"dataset.corpus={corpus}", f"dataset.golden={golden}"]
    assert run_app(app_args(shared_cache, tmp_path / "run", "chunk=16", *dataset)) == 0
    got = json.loads((tmp_path / "run" / "report.json").read_text())
    assert got["level"] == "doc" and got["digests"]["corpus"] == rep["digests"]["corpus"]
    assert got["metrics"] == rep["metrics"]
    assert (tmp_path / "run" / "run.trec").read_text() == (out / "run.trec").read_text()
