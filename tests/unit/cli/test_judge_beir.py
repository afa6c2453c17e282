"""Pooling and judging a BEIR dataset (document-level labels, no golden JSONL): `rageval judge`
finds the dataset the pool was made from, an LLM judge calibrates on the labelled documents,
and its judgements land where the runs and the next pool look for them."""

from __future__ import annotations

import html
import json
import re

import pytest
from beir_fixture import make_beir
from fakes.chat_server import ChatServer
from run_folders import make_beir_run

from rageval.authoring import chat
from rageval.cli.main import main

KEY = "sk-judge-beir-0123456789"


@pytest.fixture
def beir_pool(tmp_path, model_dir):
    root = make_beir(tmp_path / "beir")
    run = make_beir_run(root, model_dir, tmp_path / "run")
    out = tmp_path / "pool.jsonl"
    assert main(["pool", str(run), "--depth", "5", "--out", str(out)]) == 0
    return root, run, out


def _pooled(path):
    return {(q["query_id"], p["doc"]) for q in map(json.loads, path.open()) for p in q["passages"]}


def by_topic(body):
    """Relevant when the passage names the question's topic (the fixture's qrels rule)."""
    text = body["messages"][-1]["content"]
    question = re.search(r"<question>\n(.*)\n</question>", text, re.S).group(1).lower()
    passage = re.search(r"<passage>\n(.*)\n</passage>", text, re.S).group(1).lower()
    topic = re.search(r"(?:is an?|does an?|of an?) (.+?)(?: form|\?)", question).group(1)
    return json.dumps({"grade": 2 if topic in passage else 0, "reason": "topic"})


def test_a_beir_pool_names_its_dataset_and_the_judgements_runs_read(beir_pool, tmp_path):
    root, _, out = beir_pool
    source = json.loads(out.open().readline())["source"]
    assert source["golden"] == str(root) and source["split"] == "test"
    assert source["judgements"] == str(root / "qrels" / "judgements.jsonl")
    # document labels carry the documents' openings, for the review page's known evidence
    first = json.loads(out.open().readline())
    corpus = {d["_id"]: d for d in map(json.loads, (root / "corpus.jsonl").open())}
    shown = {d["doc"]: d["text"] for d in first["relevant_docs"]}
    assert set(shown) == set(first["relevant"]) and shown
    for doc, text in shown.items():
        assert corpus[doc]["text"] in text
    page = tmp_path / "review.html"
    assert main(["judge", str(out), "--review", str(page)]) == 0
    assert all(html.escape(t, quote=True) in page.read_text() for t in shown.values())


def test_an_llm_judges_a_beir_pool_calibrated_on_its_labelled_documents(
    beir_pool, tmp_path, monkeypatch, capsys
):
    root, run, out = beir_pool
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setattr(chat, "_sleep", lambda s: None)
    with ChatServer(key=KEY, responder=by_topic) as srv:
        argv = ["judge", str(out), "--llm", "--model", "judge-1", "--base-url", srv.base_url]
        rc = main([*argv, "--no-progress", "--max-requests", "1000"])
    printed = capsys.readouterr().out
    assert rc == 0, printed
    report = (root / "qrels" / "judgements.calibration.judge-1.md").read_text()
    assert "ACCEPTED" in report and "gold document label" in report
    written = [json.loads(x) for x in (root / "qrels" / "judgements.jsonl").open()]
    assert written and {j["judge"] for j in written} == {"llm:judge-1"}
    assert {(j["query_id"], j["doc"]) for j in written} == _pooled(out)
    # the next pool finds them (labels=gold runs do not count them, the pool still skips them)
    again = tmp_path / "again.jsonl"
    assert main(["pool", str(run), "--depth", "5", "--out", str(again)]) == 0
    assert not again.exists() or not _pooled(again) & _pooled(out)
