"""Integration: one corpus embedded by the packaged model in one process and on a Ray cluster of
two workers (embedding.executor=ray), in a loopback-only network namespace
(tests/support/ray_embed.py): the same cache files, a worker killed mid-run, a run interrupted and
resumed. Two clusters in all: the interrupted run's own, and one head node for everything else.
The two-worker fill runs torch; the killed, interrupted, resumed and joined-by-address fills run
the ONNX export (what they test is the same for every backend, and its actors start in a tenth
of the CPU time), each compared with the same backend in one process."""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from rageval.embedding.cache import EmbeddingCache, split_trailer, text_key

pytestmark = [pytest.mark.integration, pytest.mark.long_module]
SUPPORT = Path(__file__).resolve().parents[1] / "support"
RAY_ENV = {"RAY_USAGE_STATS_ENABLED": "0", "RAY_AUTH_MODE": "disabled"}
WORDS = [
    "index",
    "chunk",
    "query",
    "vector",
    "recall",
    "cluster",
    "worker",
    "segment",
    "cache",
    "model",
    "token",
    "passage",
    "ranking",
    "evidence",
    "golden",
    "baseline",
    "sweep",
    "latency",
    "budget",
    "corpus",
    "document",
    "retrieval",
    "gate",
    "metric",
]


def corpus(n: int = 240) -> list[str]:
    """Texts of 12 to 70 words, a few repeated (each distinct text is embedded once)."""
    rng = np.random.default_rng(7)
    texts = [
        " ".join(WORDS[j] for j in rng.integers(0, len(WORDS), int(rng.integers(12, 70))))
        for _ in range(n)
    ]
    return texts + texts[:15]


@pytest.fixture(scope="module")
def runs(tmp_path_factory, mini, shared_cache) -> dict:
    if subprocess.run(["unshare", "--net", "true"], capture_output=True).returncode != 0:
        pytest.skip("needs `unshare --net` (root) to keep Ray's traffic on loopback")
    work = tmp_path_factory.mktemp("ray-embed")
    (work / "texts.json").write_text(json.dumps(corpus()))
    env = {**os.environ, **RAY_ENV, "PYTHONPATH": str(SUPPORT)}
    proc = subprocess.run(
        [
            "unshare",
            "--net",
            "--",
            sys.executable,
            str(SUPPORT / "ray_embed.py"),
            str(work),
            str(work / "texts.json"),
            str(mini),
            str(shared_cache),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    return {"work": work, **json.loads(proc.stdout.strip().splitlines()[-1])}


def cache_files(root: Path) -> dict[str, bytes]:
    folder = next((root / "embeddings").iterdir())
    return {p.name: p.read_bytes() for p in sorted(folder.glob("seg-*"))}


DISTINCT = len(set(corpus()))


def test_two_workers_write_exactly_the_cache_one_process_writes(runs):
    assert runs["single"]["embedded"] == runs["ray"]["embedded"] == DISTINCT
    assert len(runs["ray"]["workers"]) == 2  # both actors embedded groups
    single, ray = cache_files(runs["work"] / "single"), cache_files(runs["work"] / "ray")
    assert single.keys() == ray.keys() and len(single) == 2 * runs["ray"]["groups"]
    for name in single:  # keys, vectors and checksums, byte for byte
        assert single[name] == ray[name], name
    keys = b"".join(split_trailer(v)[0] for n, v in single.items() if n.endswith(".keys"))
    assert len(keys) // 16 == DISTINCT  # each text in one segment


def test_a_worker_killed_mid_run_loses_only_its_group(runs):
    killed = runs["killed"]
    assert killed["killed_pid"] is not None and killed["at_segments"] < killed["groups"]
    # every group's result arrived once: embedded by a worker, or found written by a retry
    assert killed["texts"] <= DISTINCT and killed["embedded"] == killed["texts"]
    assert killed["segments"] == runs["ray"]["segments"]
    assert cache_files(runs["work"] / "killed") == cache_files(runs["work"] / "single-onnx")
    root = runs["work"] / "killed"
    leftovers = [  # besides the export (models/), copied in before the run
        p.name for p in root.rglob("*") if p.is_file() and p.relative_to(root).parts[0] != "models"
    ]
    assert all(
        n.startswith("seg-") or n.endswith(".tmp") or n == "fingerprints.json" for n in leftovers
    )


def test_an_interrupted_run_resumes_where_it_stopped(runs):
    assert runs["interrupted"]
    kept = runs["kept_after_interrupt"]
    assert kept and set(kept) < set(runs["single-onnx"]["segments"])  # finished groups stayed
    fingerprint = next((runs["work"] / "single-onnx" / "embeddings").iterdir()).name
    held = sum(
        len(
            split_trailer((runs["work"] / "resumed" / "embeddings" / fingerprint / n).read_bytes())[
                0
            ]
        )
        // 16
        for n in kept
    )
    assert runs["single-onnx"]["embedded"] == DISTINCT
    assert runs["resumed"]["embedded"] == DISTINCT - held  # the rest only
    keys = [text_key(t) for t in corpus()]
    want, missing = EmbeddingCache(runs["work"] / "single-onnx", fingerprint).lookup(keys)
    got, missing2 = EmbeddingCache(runs["work"] / "resumed", fingerprint).lookup(keys)
    assert missing == missing2 == [] and np.array_equal(want, got)


def test_rageval_embed_joins_a_running_cluster_by_address(runs):
    local, cluster = runs["embed"]["local"], runs["embed"]["cluster"]
    assert local["returncode"] == cluster["returncode"] == 0, cluster["stderr"]
    assert "Ray worker" not in local["stdout"] and "Ray worker" in cluster["stdout"]
    line = next(ln for ln in cluster["stdout"].splitlines() if "chunk texts and" in ln)
    assert "0 already cached" in line and "all-MiniLM-L6-v2 onnx:" in line
    one = cache_files(runs["work"] / "embed-local")
    assert one and one == cache_files(runs["work"] / "embed-cluster")
