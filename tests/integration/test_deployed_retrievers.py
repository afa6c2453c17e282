"""A team's deployed retriever through the Hydra app, as the README tells a user to run it: a
plain function, a LangChain retriever and a LlamaIndex retriever (the real framework classes,
in-memory stores, a deterministic embedding, no network), each with its own chunking, scored on
the passages it returns; what a run cannot measure is n/a everywhere, never 0."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest
from mlflow_store import store_uri

from rageval.app.main import run_app

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]


def args(mini, cache, tmp_path, *extra):
    return [
        "dataset=custom",
        f"dataset.corpus={mini / 'corpus'}",
        f"dataset.golden={mini / 'golden.jsonl'}",
        f"cache_dir={cache}",
        f"mlflow.tracking_uri={store_uri(tmp_path / 'mlflow.db')}",
        f"hydra.run.dir={tmp_path / 'run'}",
        *extra,
    ]


def mlflow_metrics(tmp_path, run_id):
    from mlflow.tracking import MlflowClient

    c = MlflowClient(tracking_uri=f"sqlite:///{tmp_path / 'mlflow.db'}")
    return c.get_run(run_id).data.metrics


@pytest.mark.parametrize(
    "backend",
    [
        ["backend=langchain", "backend.factory=fakes.frameworks:langchain_retriever"],
        ["backend=llamaindex", "backend.factory=fakes.frameworks:llamaindex_retriever"],
        ["backend=function", "backend.function=fakes.plugin_retrievers:search_passages"],
    ],
    ids=["langchain", "llamaindex", "function"],
)
def test_a_deployed_retriever_is_scored_on_the_passages_it_returns(
    backend, mini, shared_cache, tmp_path, capsys
):
    assert run_app(args(mini, shared_cache, tmp_path, *backend)) == 0
    printed = capsys.readouterr().out
    rep = json.loads((tmp_path / "run" / "report.json").read_text())
    m = rep["metrics"]
    # its own chunking, scored with the golden set's evidence quotes
    assert rep["counts"]["passages"] > 0
    assert rep["counts"]["passages_located"] == rep["counts"]["passages"]
    assert m["quote_recall@5"] > 0.4 and m["evidence_recall@5"] > 0.4 and m["ndcg@5"] > 0.3
    assert m["tokens@5"] > 0 and m["evidence_recall@1024t"] > 0.4
    assert rep["per_query"][0]["retrieved"][0].startswith("p:")  # ids derived from the text
    # the latency is that of the run's own calls: the service is not searched again to time it
    assert rep["latency"]["queries_sampled"] == 8 and rep["latency"]["searches"] == 0
    assert rep["costs"]["texts_embedded"] == 0  # rageval embedded nothing
    logged = mlflow_metrics(tmp_path, rep["mlflow_run_id"])
    assert logged["headline/ndcg_at_5"] == pytest.approx(m["ndcg@5"])
    assert "quote_recall@5" in printed


def test_the_depth_reaches_the_factory_and_ids_repeat_across_runs(mini, shared_cache, tmp_path):
    lc = ["backend=langchain", "backend.factory=fakes.frameworks:langchain_retriever"]
    assert run_app(args(mini, shared_cache, tmp_path, *lc, "depth=7")) == 0
    first = json.loads((tmp_path / "run" / "report.json").read_text())
    assert len(first["per_query"][0]["retrieved"]) == 5  # k of 7 searched
    rankings = (tmp_path / "run" / "run.trec").read_text().splitlines()
    assert max(int(line.split()[3]) for line in rankings) == 7  # the factory got k=7
    assert run_app(args(mini, shared_cache, tmp_path / "again", *lc, "depth=7")) == 0
    again = json.loads((tmp_path / "again" / "run" / "report.json").read_text())
    assert [r["retrieved"] for r in again["per_query"]] == [
        r["retrieved"] for r in first["per_query"]
    ]


def test_document_ids_give_n_a_for_span_metrics_in_every_view(
    mini, shared_cache, tmp_path, capsys, monkeypatch
):
    """Returning document ids (a level=doc run) measures ranking metrics, not spans."""
    monkeypatch.setenv("RAGEVAL_TEST_CORPUS", str(mini))
    fn = ["backend=function", "backend.function=fakes.plugin_retrievers:search_documents"]
    assert run_app(args(mini, shared_cache, tmp_path, *fn, "level=doc")) == 0
    printed = capsys.readouterr().out
    rep = json.loads((tmp_path / "run" / "report.json").read_text())
    assert rep["metrics"]["ndcg@5"] > 0.5
    for name in ("quote_recall@5", "evidence_recall@5", "tokens@5", "evidence_recall@1024t"):
        assert rep["metrics"][name] is None, name
        line = next(x for x in printed.splitlines() if x.startswith(name + " "))
        assert line.split()[1] == "n/a" and "0.0000" not in line
    logged = mlflow_metrics(tmp_path, rep["mlflow_run_id"])
    assert not [k for k in logged if "quote_recall" in k or "evidence_recall" in k]
    assert not any(math.isnan(v) for v in logged.values())
    assert logged["headline/ndcg_at_5"] == pytest.approx(rep["metrics"]["ndcg@5"])


def test_unknown_ids_stop_the_run_with_one_line(mini, shared_cache, tmp_path, capsys):
    fn = ["backend=function", "backend.function=fakes.plugin_retrievers:search_own_ids"]
    with pytest.raises(SystemExit) as exit_:
        run_app(args(mini, shared_cache, tmp_path, *fn))
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert re.search(
        r"rageval: error: 0 of \d+ returned ids match this run's chunks, documents", err
    )
    assert "return passage text" in err and "Traceback" not in err


def test_a_bad_function_path_is_one_line_naming_the_key(mini, shared_cache, tmp_path, capsys):
    fn = ["backend=function", "backend.function=fakes.plugin_retrievers:serch_passages"]
    with pytest.raises(SystemExit) as exit_:
        run_app(args(mini, shared_cache, tmp_path, *fn))
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert "backend.function='fakes.plugin_retrievers:serch_passages'" in err
    assert "did you mean 'search_passages'" in err and "Traceback" not in err


def test_the_examples_run_on_the_demo_as_the_docs_say(shared_cache, tmp_path, monkeypatch, capsys):
    """docs/your-retriever.md: the demo scored through examples/deployed.py's LangChain store,
    which chunks the demo corpus its own way (the hashed embedding: no model needed)."""
    monkeypatch.chdir(ROOT)
    monkeypatch.syspath_prepend(str(ROOT))
    common = [
        f"cache_dir={shared_cache}",
        f"mlflow.tracking_uri={store_uri(tmp_path / 'mlflow.db')}",
        f"hydra.run.dir={tmp_path / 'lc'}",
    ]
    lc = ["backend=langchain", "backend.factory=examples.deployed:langchain_retriever"]
    assert run_app([*common, *lc, "+backend.kwargs.embedding=hashed"]) == 0
    rep = json.loads((tmp_path / "lc" / "report.json").read_text())
    assert rep["counts"]["queries"] == 168 and rep["counts"]["passages_located"] > 500
    assert rep["metrics"]["quote_recall@5"] > 0.2 and rep["metrics"]["tokens@5"] > 0
    assert "evidence_recall@1024t" in capsys.readouterr().out
