"""Integration: a labels=ppi run of the app, promoted, then gated with `rageval check`: the
re-run passes against its baseline; another human sample is a label change (exit 2)."""

from __future__ import annotations

import json
import shutil
import zlib

import pytest
from mlflow_store import store_uri

from rageval.app.check import run_check
from rageval.app.main import run_app
from rageval.app.promote import promote
from rageval.gate.compare import LABELS_CHANGED
from rageval.inputs.corpus import load_corpus
from rageval.inputs.golden import load_golden
from rageval.inputs.judgements import calibration_path

pytestmark = pytest.mark.integration
SAMPLE = ["q01", "q03", "q05", "q07"]


@pytest.fixture(autouse=True)
def _cache_env(monkeypatch, shared_cache):
    monkeypatch.setenv("RAGEVAL_CACHE_DIR", str(shared_cache))


def judged(tmp_path, mini):
    """Judgements of every query's passages (each document's paragraphs) by llm:fake, and of the
    sampled queries' by people; the judge's calibration accepted; the sample recorded."""
    golden = tmp_path / "golden.jsonl"
    shutil.copy(mini / "golden.jsonl", golden)
    docs = load_corpus(mini / "corpus")
    path = tmp_path / "judgements.jsonl"
    lines = []
    for q in load_golden(golden).queries:
        for d in docs:
            for para in [p.strip() for p in d.text.split("\n\n") if len(p.strip()) > 40][:4]:
                h = zlib.crc32(f"{q.id}|{para}".encode())
                base = {"query_id": q.id, "doc": d.id, "quote": para, "at": "2026-12-04T10:00:00Z"}
                lines.append(base | {"grade": 2 if h % 5 == 0 else 0, "judge": "llm:fake"})
                if q.id in SAMPLE:
                    lines.append(base | {"grade": 1 if h % 4 == 0 else 0, "judge": "human:ana"})
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    calibration_path(path, "fake").write_text(
        json.dumps({"verdict": "accepted", "judge": "llm:fake"})
    )
    sample = {"judge": "llm:fake", "seed": 0, "strata": None, "population": 8, "queries": SAMPLE}
    (tmp_path / "judgements.sample.json").write_text(json.dumps(sample))
    return golden, path


def test_a_ppi_baseline_passes_its_check_and_another_sample_is_refused(
    tmp_path, mini, shared_cache
):
    golden, judgements = judged(tmp_path, mini)
    out = tmp_path / "run"
    argv = [
        "dataset=custom",
        f"dataset.corpus={mini / 'corpus'}",
        f"dataset.golden={golden}",
        f"judgements={judgements}",
        "labels=ppi",
        f"cache_dir={shared_cache}",
        f"mlflow.tracking_uri={store_uri(tmp_path / 'mlflow.db')}",
        "chunk=64",
        "latency_sample=0",
        f"hydra.run.dir={out}",
    ]
    assert run_app(argv) == 0
    report = json.loads((out / "report.json").read_text())
    assert report["label_set"] == "ppi" and report["ppi"]["sample"]["size"] == len(SAMPLE)
    # the first baseline: its label set is the run's (no --force)
    done = promote(str(out / "report.json"), str(tmp_path / "baseline.json"), golden=str(golden))
    cmp, folder = run_check(done.path, out=tmp_path / "check", quiet=True)
    assert cmp.status == "pass", cmp.console()
    assert all(abs(r.delta) < 1e-9 for r in cmp.rows)
    assert cmp.labels["baseline"]["judge"] == "llm:fake"
    assert report["ppi"]["interval"] == "t"  # the default: Student-t intervals
    assert json.loads((folder / "report.json").read_text())["ppi"]["interval"] == "t"
    # ppi_interval is this machine's choice, not the baseline's: the check takes it as given
    cmp, folder = run_check(done.path, ["ppi_interval=z"], out=tmp_path / "check_z", quiet=True)
    assert cmp.status == "pass", cmp.console()
    assert json.loads((folder / "report.json").read_text())["ppi"]["interval"] == "z"
    sample_file = tmp_path / "judgements.sample.json"
    data = json.loads(sample_file.read_text())
    sample_file.write_text(json.dumps({**data, "queries": ["q02", "q04", "q06"]}))
    cmp, _ = run_check(done.path, out=tmp_path / "check2", quiet=True)
    assert cmp.status == LABELS_CHANGED and cmp.exit_code == 2
    assert "the human sample changed" in cmp.console()
