"""BEIR runs through the app with the real model: numbers equal `rageval score` on the exported
TREC files, pytrec_eval, and a minimal sentence-transformers pipeline."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from beir_fixture import beir_qrels, make_beir, read_run_lines
from trec_oracle import oracle_scores

from rageval.cli.import_beir import import_beir
from rageval.cli.main import main
from rageval.inputs.corpus import load_corpus

KS = (1, 3, 5, 10, 20)


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
