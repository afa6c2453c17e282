"""Large-corpus paths: streamed FAISS builds, the memory-mapped cache under several writers,
batched query evaluation, and how a sweep job finds its parent run."""

import json
import multiprocessing
import subprocess
import sys

import numpy as np
from cache_writers import fill_cache
from mlflow_store import store_uri

from rageval.embedding.cache import EmbeddingCache, text_key


def unit(n, dim, seed=0):
    x = np.random.default_rng(seed).standard_normal((n, dim), dtype=np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


PEAK = """
import sys, numpy as np, faiss
from rageval.retrieval.local.dense import FaissRetriever
def hwm():  # this process's peak RSS in bytes (ru_maxrss would carry the forking parent's)
    return int(open("/proc/self/status").read().split("VmHWM:")[1].split()[0]) * 1024
x = np.load(sys.argv[1], mmap_mode="r")
ids = [str(i) for i in range(len(x))]
before = hwm()
r = FaissRetriever(batch_size=8192, progress=False)
r.add_vectors(ids, x)
print((hwm() - before) / x.nbytes)
"""


def test_building_from_a_memory_mapped_store_holds_the_vectors_about_once(tmp_path):
    # the index's own copy plus a batch: no full read of the store, no doubling of FAISS storage
    # (adding 30 batches to an unreserved flat index peaks near twice the data)
    path = tmp_path / "x.npy"
    np.save(path, unit(100_000, 128))
    out = subprocess.run(
        [sys.executable, "-c", PEAK, str(path)], capture_output=True, text=True, check=True
    )
    assert float(out.stdout.strip()) < 1.45


def test_several_processes_fill_one_cache_and_every_vector_reads_back(tmp_path):
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=fill_cache, args=(str(tmp_path), s)) for s in (0, 500, 1000, 1500)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    out, missing = EmbeddingCache(tmp_path, "fp").lookup([text_key(f"t{i}") for i in range(2000)])
    assert missing == [] and np.array_equal(out[:, 0], np.repeat([0, 500, 1000, 1500], 500))


def test_a_job_finds_its_parent_in_the_sweep_folder_then_the_environment_then_mlflow(
    tmp_path, monkeypatch
):
    from rageval.app.sweep import PARENT_ENV, PARENT_FILE, SWEEP_ENV, parent_run_id
    from rageval.tracking.client import client_for, ensure_experiment

    sweep = tmp_path / "sweep"
    sweep.mkdir()
    # a reused worker still holds the variables of an earlier sweep: ignored
    monkeypatch.setenv(PARENT_ENV, "stale")
    monkeypatch.setenv(SWEEP_ENV, str(tmp_path / "earlier"))
    assert parent_run_id(str(sweep)) is None
    monkeypatch.setenv(SWEEP_ENV, str(sweep))
    assert parent_run_id(str(sweep)) == "stale"
    (sweep / PARENT_FILE).write_text("from-file\n")
    assert parent_run_id(str(sweep)) == "from-file"
    # a cluster node without the sweep folder and without the variables asks MLflow
    monkeypatch.delenv(PARENT_ENV)
    uri = store_uri(tmp_path / "mlflow.db")
    client = client_for(uri)
    exp = ensure_experiment(client, "e")
    run = client.create_run(exp, tags={"rageval.sweep": "parent", "rageval.sweep_id": "/x/sw"})
    client.create_run(exp, tags={"rageval.sweep": "parent", "rageval.sweep_id": "/x/other"})
    assert parent_run_id("/x/sw", uri, "e") == run.info.run_id
    assert parent_run_id("/x/none", uri, "e") is None
    assert json.dumps(parent_run_id(None)) == "null"


def test_small_groups_duplicates_and_a_warm_cache_give_each_text_its_own_vector(tmp_path):
    from rageval.embedding import SentenceTransformerEncoder

    texts = ["alpha", "beta", "gamma", "alpha", "delta", "beta", "epsilon"]
    e = SentenceTransformerEncoder(cache_dir=str(tmp_path), progress=False, write_every=2)
    warm = e.encode_documents(["gamma"])
    got = e.encode_documents(texts)
    assert e.texts_encoded == 5  # gamma, then alpha, beta, delta, epsilon once each
    want = {t: e.encode_documents([t])[0] for t in set(texts)}  # now all from the cache
    assert e.texts_encoded == 5
    for t, v in zip(texts, got, strict=True):
        assert np.allclose(v, want[t], atol=1e-6) and abs(np.linalg.norm(v) - 1) < 1e-5
    assert np.array_equal(got[2], warm[0])
