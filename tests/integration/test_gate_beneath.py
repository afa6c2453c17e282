"""Integration: what changed beneath the change, named by `rageval check`, and the embedding canary.

A run on a copy of tests/support/data/mini with the packaged model (torch) is promoted; checks then
re-run it on an edited corpus, an edited golden set, an old baseline without provenance, BM25 only,
and the same model under another precision (ONNX Runtime, int8), whose vectors the canary sees
move while the model's files stay the same."""

import json
import re
import shutil

import pytest

from rageval.app.check import run_check
from rageval.app.main import run_app
from rageval.app.promote import promote
from rageval.gate.compare import EMBEDDING_CHANGED, GOLDEN_CHANGED, PASS

pytestmark = pytest.mark.integration

DRIFT = re.compile(
    r"embedding changed since the baseline: min cosine (0\.\d+) over (\d+) canary texts; "
    "the comparison mixes it with your change"
)


@pytest.fixture
def project(tmp_path, mini, shared_cache, monkeypatch):
    """A copy of the mini data, one torch run of it, promoted to b.json."""
    monkeypatch.setenv("RAGEVAL_CACHE_DIR", str(shared_cache))
    data = tmp_path / "data"
    shutil.copytree(mini, data)
    out = tmp_path / "run"
    overrides = [
        "dataset=custom",
        f"dataset.corpus={data / 'corpus'}",
        f"dataset.golden={data / 'golden.jsonl'}",
        f"cache_dir={shared_cache}",
        "mlflow.enabled=false",
        "chunk=64",
        "latency_sample=0",
        "embedding.backend=torch",
        f"hydra.run.dir={out}",
    ]
    assert run_app(overrides) == 0
    baseline = tmp_path / "b.json"
    done = promote(str(out / "report.json"), str(baseline), golden=str(data / "golden.jsonl"))
    assert "embedding canary: 13 texts' vectors in b.canary.npy" in done.summary()
    return {"dir": tmp_path, "data": data, "baseline": baseline}


def check(project, *overrides, name="check"):
    cmp, out = run_check(project["baseline"], list(overrides), project["dir"] / name, quiet=True)
    texts = [cmp.console(), (out / "gate.md").read_text(), (out / "gate.json").read_text()]
    return cmp, texts


def test_unchanged_says_nothing_changed_and_a_corpus_edit_is_named(project):
    cmp, texts = check(project)
    assert cmp.status == PASS and cmp.beneath == [] and cmp.canary["status"] == "unchanged"
    assert not any("embedding changed" in t for t in texts)
    note = project["data"] / "corpus" / "notes" / "gate.md"
    note.parent.mkdir()
    note.write_text("# Gate\n\nA page written into the corpus folder by mistake.\n")
    cmp, texts = check(project, name="edited")
    line = "corpus: 1 document added (notes/gate), 0 removed, 0 changed"
    assert cmp.beneath == [line] and cmp.status == PASS  # part of the change: the verdict stands
    assert all(line in t for t in texts)
    assert json.loads(texts[2])["beneath"] == [line]


def test_a_golden_edit_is_named_and_an_old_baseline_says_not_recorded(project):
    golden = project["data"] / "golden.jsonl"
    lines = golden.read_text().splitlines()
    first = json.loads(lines[0])
    golden.write_text("\n".join([json.dumps({**first, "query": first["query"] + "?"}), *lines[1:]]))
    cmp, texts = check(project, name="golden")
    assert cmp.status == GOLDEN_CHANGED
    line = f"golden set: 0 queries added, 0 removed, 1 changed ({first['id']})"
    assert line in cmp.beneath and all(line in t for t in texts)
    golden.write_text("\n".join(lines) + "\n")
    summary = json.loads(project["baseline"].read_text())
    del summary["provenance"], summary["canary"]
    project["baseline"].write_text(json.dumps(summary))
    cmp, texts = check(project, name="old")
    assert cmp.status == PASS
    assert "provenance: not recorded for the baseline" in texts[0]
    assert "Embedding canary: not recorded in the baseline" in texts[0]


def test_bm25_skips_the_canary_and_says_so(project):
    cmp, texts = check(project, "search=bm25", name="bm25")
    assert "Embedding canary: skipped (this run embeds nothing: no vector search)" in texts[0]
    assert "embedding: this run embeds nothing (no vector search)" in cmp.beneath


def test_the_same_model_in_another_precision_moves_the_canary(project):
    cmp, texts = check(project, "embedding.backend=onnx", "embedding.quantize=int8", name="int8")
    found = DRIFT.search(texts[0])
    assert found, texts[0]
    assert float(found.group(1)) < 1 and int(found.group(2)) == 13
    assert all(found.group(0) in t for t in texts[:2])
    assert cmp.status == PASS and cmp.exit_code == 0  # warn: said, not failed
    assert any("backend torch -> onnx, quantize none -> int8" in b for b in cmp.beneath)
    cmp, _ = check(
        project,
        "embedding.backend=onnx",
        "embedding.quantize=int8",
        "gate.on_embedding_drift=fail",
        name="int8-fail",
    )
    assert cmp.status == EMBEDDING_CHANGED and cmp.exit_code == 1
