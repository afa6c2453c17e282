"""The gate names what changed beneath the change (corpus, golden set, judgements, embedding) and
the embedding canary's verdict, in the console, gate.md and gate.json; ``gate.on_embedding_drift``
decides whether a moved embedding fails the check. The baseline keeps both blocks (the canary's
vectors in their own file beside it)."""

import copy
import json

import numpy as np
import pytest

from rageval.embedding import canary
from rageval.errors import ConfigError
from rageval.gate.baseline import read_baseline, write_baseline
from rageval.gate.ci import github_annotations
from rageval.gate.compare import EMBEDDING_CHANGED, PASS, compare
from rageval.report import provenance
from rageval.types import Document, GoldenQuery, GoldenSet

METRICS = ["recall@5", "mrr@5"]
DOCS = [Document(f"doc{i}", f"text of document {i}") for i in range(4)]
QUERIES = [GoldenQuery(f"q{i}", f"question {i}", relevant_docs={"doc0": 1}) for i in range(8)]


class Encoder:
    fingerprint = "fp"
    description = "fake"

    def __init__(self, tilt=0.0):
        self.tilt = tilt

    def _vec(self, texts):
        rows = []
        for t in texts:
            v = np.random.default_rng(sum(t.encode())).normal(size=6) + self.tilt * np.arange(6)
            rows.append(v / np.linalg.norm(v))
        return np.array(rows, np.float32)

    encode_queries = encode_documents = _vec


def report(docs=DOCS, tilt=0.0, embeds=True):
    rows = [
        {"id": q.id, "query": q.query, "recall@5": 1.0, "mrr@5": 1.0, "hit_rate@5": 1.0}
        for q in QUERIES
    ]
    enc = Encoder(tilt) if embeds else None
    corpus = provenance.corpus_block(docs, provenance.text_digest(repr(docs)))
    golden = GoldenSet("g.jsonl", tuple(QUERIES), "g1")
    return {
        "metrics": {"recall@5": 1.0, "mrr@5": 1.0, "hit_rate@5": 1.0},
        "per_query": rows,
        "digests": {"golden": "g1"},
        "k": 5,
        "provenance": provenance.record(corpus, golden, "j", enc),
        "canary": canary.measure(enc, canary.choose(QUERIES, docs)) if enc else None,
    }


def test_an_unchanged_run_says_nothing_changed_and_nothing_about_drift():
    cmp = compare(report(), report(), METRICS)
    assert cmp.status == PASS and cmp.beneath == [] and cmp.canary["status"] == "unchanged"
    text = cmp.console() + cmp.markdown() + json.dumps(cmp.to_dict())
    assert "embedding changed" not in text
    assert "Changed beneath the change: nothing" in cmp.console()


def test_a_corpus_change_is_named_everywhere_and_the_verdict_stands():
    cmp = compare(report(), report([*DOCS, Document("notes/new", "a new note")]), METRICS)
    line = "corpus: 1 document added (notes/new), 0 removed, 0 changed"
    assert cmp.status == PASS and cmp.exit_code == 0
    assert line in cmp.console() and line in cmp.markdown()
    assert line in cmp.to_dict()["beneath"]


def test_a_moved_embedding_warns_with_its_figure_or_fails_when_asked():
    cmp = compare(report(), report(tilt=0.1), METRICS)
    low = cmp.canary["min_cosine"]
    assert cmp.status == PASS and cmp.exit_code == 0 and low < 1 - canary.NOISE
    line = f"embedding changed since the baseline: min cosine {low:.3f} over 12 canary texts"
    assert line in cmp.console().splitlines()[-1]  # the verdict line says it too
    assert line in cmp.markdown() and cmp.to_dict()["canary"]["status"] == "changed"
    assert any(a.startswith("::warning") and line in a for a in github_annotations(cmp, "b.json"))
    failed = compare(report(), report(tilt=0.1), METRICS, on_embedding_drift="fail")
    assert failed.status == EMBEDDING_CHANGED and failed.exit_code == 1
    assert failed.console().splitlines()[-1].startswith("FAIL (gate.on_embedding_drift=fail): ")
    assert failed.markdown().startswith("### ❌ Embedding changed since the baseline")
    with pytest.raises(ConfigError, match="gate.on_embedding_drift must be one of warn, fail"):
        compare(report(), report(), METRICS, on_embedding_drift="error")


def test_an_old_baseline_and_a_bm25_run_say_so():
    old = report()
    del old["provenance"], old["canary"]
    cmp = compare(old, report(), METRICS)
    assert "provenance: not recorded for the baseline" in cmp.console()
    assert "Embedding canary: not recorded in the baseline" in cmp.console()
    bm25 = compare(report(), report(embeds=False), METRICS)
    assert "embedding: this run embeds nothing (no vector search)" in bm25.console()
    assert "Embedding canary: skipped (this run embeds nothing" in bm25.console()
    # two files that are no rageval runs (TREC, CSV): nothing to say
    plain = {k: v for k, v in old.items()}
    assert compare(plain, copy.deepcopy(plain), METRICS).canary == {}


def test_the_baseline_keeps_both_blocks_and_the_canary_beside_it(tmp_path):
    path = tmp_path / "baseline.json"
    write_baseline(report(), path, {"run_id": "r1"})
    summary = json.loads(path.read_text())
    assert summary["provenance"]["corpus"]["count"] == 4
    assert "vectors" not in summary["canary"]
    assert summary["canary"]["file"] == "baseline.canary.npy"
    again = read_baseline(path).report
    assert compare(again, report(), METRICS).canary["status"] == "unchanged"
    assert compare(again, report(tilt=0.1), METRICS).canary["status"] == "changed"
    # a run that embeds nothing replaces it: the old canary file goes
    write_baseline(report(embeds=False), path, {"run_id": "r2"})
    assert "canary" not in json.loads(path.read_text())
    assert not (tmp_path / "baseline.canary.npy").exists()


def test_compare_of_two_run_files_names_them_too(tmp_path):
    from rageval.gate.power_report import compare_files

    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json.dumps(report()))
    b.write_text(json.dumps(report([*DOCS, Document("notes/new", "a new note")], tilt=0.1)))
    result = compare_files(a, b, ["recall@5"], resamples=200)
    text = result.text()
    assert "Changed beneath the change: corpus: 1 document added (notes/new)" in text
    assert "Embedding changed since the baseline: min cosine" in text
    assert result.to_dict()["canary"]["status"] == "changed"
    csv = tmp_path / "a.csv"
    csv.write_text("id,recall@5\n" + "".join(f"q{i},1.0\n" for i in range(8)))
    plain = compare_files(csv, a, ["recall@5"], resamples=200)
    assert plain.beneath == [] and plain.canary == {}


def test_hostile_document_ids_reach_no_terminal_or_page_as_markup():
    hostile = Document("notes/\x1b[2J<img src=x onerror=alert(1)>", "boo")
    cmp = compare(report(), report([*DOCS, hostile]), METRICS)
    assert "\x1b" not in cmp.console()
    assert "<img" not in cmp.markdown()
