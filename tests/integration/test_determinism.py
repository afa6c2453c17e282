"""Determinism: the same config twice gives bit-identical numbers, and the order of a sweep's jobs
(and so the order in which the embedding cache fills) changes nothing."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from rageval.app.main import run_app

pytestmark = pytest.mark.integration
COMPARED = ("metrics", "ci", "per_query", "slices", "level", "k", "ks")
WORDS = [
    "leave",
    "contractor",
    "region",
    "payments",
    "deploy",
    "vault",
    "secret",
    "rotate",
    "invoice",
    "runbook",
    "policy",
    "days",
]


def mini_args(mini, cache, *extra) -> list[str]:
    return [
        "dataset=custom",
        f"dataset.corpus={mini / 'corpus'}",
        f"dataset.golden={mini / 'golden.jsonl'}",
        f"cache_dir={cache}",
        "mlflow.enabled=false",
        "latency_sample=0",
        *extra,
    ]


def outcome(run_dir: Path) -> dict:
    """What a run measured, as exact text: floats in JSON round-trip bit for bit."""
    report = json.loads((run_dir / "report.json").read_text())
    return {
        **{key: json.dumps(report[key], sort_keys=True) for key in COMPARED},
        "run.trec": (run_dir / "run.trec").read_bytes(),  # every score, to the last bit
        "qrels.trec": (run_dir / "qrels.trec").read_bytes(),
    }


def test_the_same_config_twice_gives_bit_identical_reports(mini, tmp_path):
    args = mini_args(mini, tmp_path / "cache", "chunk=64", "search=hybrid")
    assert run_app([*args, f"hydra.run.dir={tmp_path / 'first'}"]) == 0  # embeds
    assert run_app([*args, f"hydra.run.dir={tmp_path / 'second'}"]) == 0  # reads the cache
    first, second = outcome(tmp_path / "first"), outcome(tmp_path / "second")
    assert first == second
    report = json.loads((tmp_path / "second" / "report.json").read_text())
    assert report["counts"]["texts_embedded"] == 0 and report["metrics"]["ndcg@5"] > 0


N_DOCS = 20  # every length from 10 to 220 words: short ones are one chunk at 128 and at 256


def synthetic(tmp_path: Path) -> tuple[Path, Path]:
    """20 documents of 10 to 220 words (about as many tokens), a golden set of document labels."""
    rng = random.Random(5)
    corpus, golden = tmp_path / "corpus", tmp_path / "golden.jsonl"
    corpus.mkdir()
    for i in range(N_DOCS):
        words = [rng.choice(WORDS) for _ in range(10 + 210 * i // (N_DOCS - 1))]
        (corpus / f"doc{i:02}.md").write_text(" ".join(words) + "\n")
    lines = [
        {
            "id": f"q{i}",
            "query": " ".join(rng.sample(WORDS, 4)),
            "relevant_docs": [f"doc{7 * i % N_DOCS:02}"],
        }
        for i in range(8)
    ]
    golden.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return corpus, golden


def sweep(data, tmp_path: Path, name: str, *values: str) -> dict[tuple[str, ...], dict]:
    """Run a sweep with its own, empty cache; each job's outcome keyed by its swept values."""
    out, (corpus, golden) = tmp_path / name, data
    args = [
        "dataset=custom",
        f"dataset.corpus={corpus}",
        f"dataset.golden={golden}",
        f"cache_dir={tmp_path / f'cache-{name}'}",
        "mlflow.enabled=false",
        "latency_sample=0",
    ]
    assert run_app(["-m", *args, f"hydra.sweep.dir={out}", *values]) == 0
    jobs = {}
    for job in sorted(p for p in out.iterdir() if p.is_dir()):
        overrides = json.loads((job / "report.json").read_text())["overrides"]
        jobs[tuple(sorted(o for o in overrides if o.startswith(("chunk=", "search="))))] = outcome(
            job
        )
    return jobs


def test_the_order_of_a_sweep_changes_no_job(tmp_path):
    # Chunks of 128 and 256 tokens share the whole text of the shorter documents; which job embeds
    # them first, and with which other texts in its batches, depends on the order of the jobs.
    data = synthetic(tmp_path)
    forward = sweep(data, tmp_path, "forward", "chunk=128,256", "search=vector,hybrid")
    backward = sweep(data, tmp_path, "backward", "chunk=256,128", "search=hybrid,vector")
    assert len(forward) == 4 and forward.keys() == backward.keys()
    for job, measured in forward.items():
        assert measured == backward[job], job
