"""BEIR runs through the app with the real model: numbers equal `rageval score` on the exported
TREC files, pytrec_eval, and a minimal sentence-transformers pipeline."""

from __future__ import annotations

import json
import math
import warnings
from itertools import pairwise
from pathlib import Path

import numpy as np
import pytest
from beir_fixture import beir_qrels, make_beir, read_run_lines
from mlflow_store import store_uri
from trec_oracle import oracle_scores

from rageval.cli.import_beir import import_beir
from rageval.cli.main import main
from rageval.inputs.corpus import load_corpus

KS = (1, 3, 5, 10, 20)


def app_args(cache: Path, out: Path, *extra: str) -> list[str]:
    return [
        f"cache_dir={cache}",
        f"hydra.run.dir={out}",
        "latency_sample=0",
        f"mlflow.tracking_uri={store_uri(out.parent / 'mlflow.db')}",
        *extra,
    ]


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
    # the ranking metrics trec_eval defines (the report also has token budgets, which it does not)
    assert set(oracle[qids[0]]) <= set(rep["metrics"])
    for key in oracle[qids[0]]:
        value = rep["metrics"][key]
        assert scored["metrics"][key] == pytest.approx(value, abs=1e-12), key
        assert np.mean([oracle[q][key] for q in qids]) == pytest.approx(value, abs=1e-12), key
        for row in rep["per_query"]:
            assert row[key] == pytest.approx(oracle[row["id"]][key], abs=1e-12), (key, row["id"])

    client = MlflowClient(tracking_uri=f"sqlite:///{out.parent / 'mlflow.db'}")
    run_id = rep["mlflow_run_id"]
    for name in ("run.trec", "qrels.trec"):
        local = client.download_artifacts(run_id, name, str(out.parent / f"dl-{chunk}"))
        assert Path(local).read_bytes() == (out / name).read_bytes()


# rageval and the minimal pipeline below embed the same texts in float32 through two code paths
# (rageval pads texts by length bucket, `encode` pads by batch): their scores differ by a few
# float32 rounding steps (~1e-7), never by this much
TOL = 1e-6


def minimal_pipeline(root: Path, qids: list[str], model_dir: str) -> dict[tuple[str, str], float]:
    """{(query id, document id): score} from sentence-transformers and an exact inner product."""
    from sentence_transformers import SentenceTransformer

    docs = [json.loads(line) for line in (root / "corpus.jsonl").read_text().splitlines()]
    docs = [d for d in docs if (d["title"] + " " + d["text"]).strip()]
    queries = {q["_id"]: q["text"] for q in map(json.loads, (root / "queries.jsonl").open())}
    model = SentenceTransformer(model_dir, device="cpu")
    texts = sorted({(d["title"] + " " + d["text"]).strip() for d in docs})  # each text once
    vec = dict(zip(texts, model.encode(texts, normalize_embeddings=True), strict=True))
    query_vecs = model.encode([queries[q] for q in qids], normalize_embeddings=True)
    # each score is the correctly rounded inner product of the two float32 vectors, computed the
    # same way for every pair: a BLAS matrix product may round one column differently from
    # another, which would split the exact tie of two documents with the same text
    out = {}
    for q, qv in zip(qids, query_vecs.astype(np.float64), strict=True):
        for d in docs:
            dv = vec[(d["title"] + " " + d["text"]).strip()].astype(np.float64)
            out[q, d["_id"]] = math.fsum((qv * dv).tolist())
    return out


def decided_by_rounding(ref: dict[str, float], judged: dict[str, int], tol: float) -> list:
    """Pairs of documents of different grades whose reference scores are within ``tol``: their
    order, and any metric that counts them, is decided by float rounding, not by the model."""
    grade = {d: max(judged.get(d, 0), 0) for d in ref}
    ordered = sorted(ref, key=ref.get, reverse=True)
    pairs = []
    for i, a in enumerate(ordered):
        for b in ordered[i + 1 :]:
            if ref[a] - ref[b] >= tol:
                break
            if grade[a] != grade[b]:
                pairs.append((a, b, ref[a] - ref[b]))
    return pairs


def assert_scores_match(ref, run_lines, tol=TOL) -> None:
    """Every (query, document) of the run scored within ``tol`` of the reference, in an order the
    reference scores allow (up to ``tol``)."""
    ours = {(q, d): s for q, d, s in run_lines}
    assert ours.keys() == ref.keys()
    worst = max(ours, key=lambda key: abs(ours[key] - ref[key]))
    assert abs(ours[worst] - ref[worst]) < tol, (worst, ours[worst], ref[worst])
    for (q, a, _), (q2, b, _) in pairwise(run_lines):
        if q == q2:
            assert ref[q, a] >= ref[q, b] - tol, (q, a, b, ref[q, a], ref[q, b])


def assert_metrics_match(ref, report, qrels, tol=TOL) -> list[str]:
    """Each query's metrics equal pytrec_eval's on the reference run, except for queries whose
    reference ranking has two documents of different grades within ``tol``; returns those."""
    lines = [(q, d, s) for (q, d), s in ref.items()]
    want = oracle_scores(qrels, lines, KS)
    skipped = []
    for row in report["per_query"]:
        q = row["id"]
        if decided_by_rounding({d: s for (q2, d), s in ref.items() if q2 == q}, qrels[q], tol):
            skipped.append(q)
            continue
        for key in want[q]:
            assert row[key] == pytest.approx(want[q][key], abs=1e-12), (key, q)
    return skipped


@pytest.fixture(scope="module")
def reference(runs, model_dir) -> dict[tuple[str, str], float]:
    """The minimal pipeline's scores for the dense chunk=0 run's queries (computed once)."""
    root, _, rep = runs(0)
    return minimal_pipeline(root, [r["id"] for r in rep["per_query"]], model_dir)


def test_dense_chunk0_reproduces_a_minimal_pipeline(runs, reference):
    root, out, rep = runs(0)
    qids = [r["id"] for r in rep["per_query"]]
    qrels = beir_qrels(root, qids)
    ref = reference
    assert_scores_match(ref, read_run_lines(out / "run.trec"))
    skipped = assert_metrics_match(ref, rep, qrels)
    # only the queries that judge volcano-what, whose copy (same text, unjudged) ties with it
    assert all("volcano-what" in qrels[q] for q in skipped) and len(skipped) <= 3, skipped
    # the two copies tie exactly in the reference, so trec_eval's order is the ids' (descending)
    assert ref["q001", "volcano-what"] == ref["q001", "volcano-what-copy"]


def test_the_comparison_catches_dense_scores_off_by_1e_4(
    runs, reference, tmp_path, monkeypatch, shared_cache
):
    """The check above is not vacuous: perturb rageval's dense scores by up to 1e-4 and it fails."""
    from rageval.app.main import run_app
    from rageval.retrieval.local.dense import FaissRetriever
    from rageval.scoring.ranking import break_ties
    from rageval.types import RankedList

    search = FaissRetriever.search_vectors
    rng = np.random.default_rng(0)

    def perturbed(self, query_vectors, depth):
        out = []
        for rl in search(self, query_vectors, depth):
            noisy = np.asarray(rl.scores) + rng.uniform(-1e-4, 1e-4, len(rl.scores))
            order = np.argsort(-noisy, kind="stable")
            ids, scores = [rl.ids[i] for i in order], [float(noisy[i]) for i in order]
            out.append(break_ties(RankedList(ids=tuple(ids), scores=tuple(scores))))
        return out

    root, _, _ = runs(0)
    monkeypatch.setattr(FaissRetriever, "search_vectors", perturbed)
    out = tmp_path / "perturbed"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the two skipped queries
        args = app_args(shared_cache, out, "dataset=beir", f"dataset.path={root}", "chunk=0")
        assert run_app(args) == 0
    rep = json.loads((out / "report.json").read_text())
    assert {q for q, _ in reference} == {r["id"] for r in rep["per_query"]}
    with pytest.raises(AssertionError):
        assert_scores_match(reference, read_run_lines(out / "run.trec"))


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
