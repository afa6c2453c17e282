"""Filling the cache ahead of the index, in this process and through the Ray worker's code.

The model is replaced by a digest of each text (deterministic, batch-independent), so these tests
check the grouping, the segment files and the worker's bookkeeping in a second; the real model on
a real Ray cluster is tests/integration/test_distributed_embedding.py.
"""

from __future__ import annotations

import functools
import hashlib
import os

import numpy as np
import pytest

from rageval.embedding import distributed
from rageval.embedding import encoder as enc_mod
from rageval.embedding.cache import EmbeddingCache, segment_name, text_key
from rageval.errors import ConfigError

DIM = 8
TEXTS = [f"text number {i} " + "word " * (i % 7) for i in range(23)] + ["text number 0 "]


def fake_vectors(texts) -> np.ndarray:
    rows = []
    for t in texts:
        raw = np.frombuffer(hashlib.sha256(t.encode()).digest()[: DIM * 4], np.uint32)
        v = (raw % 1000).astype(np.float32) + 1
        rows.append(v / np.linalg.norm(v))
    return np.stack(rows)


@pytest.fixture
def fake_model(monkeypatch):
    calls = []

    def load(self):
        self._model = "fake"
        return self._model

    def vectors(self, model, texts, progress=None):
        calls.append(list(texts))
        if progress is not None:
            progress(len(texts))
        return fake_vectors(texts)

    monkeypatch.setattr(enc_mod.SentenceTransformerEncoder, "_load", load)
    monkeypatch.setattr(enc_mod.SentenceTransformerEncoder, "_vectors", vectors)
    return calls


def encoder(root, **kw) -> enc_mod.SentenceTransformerEncoder:
    return enc_mod.SentenceTransformerEncoder(
        cache_dir=str(root), progress=False, write_every=5, **kw
    )


def files(enc) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(enc.cache.dir.glob("seg-*"))}


def test_prefill_writes_the_segments_encoding_writes(tmp_path, fake_model):
    a, b = encoder(tmp_path / "a"), encoder(tmp_path / "b")
    out = a.encode_documents(TEXTS)
    assert b.prefill(TEXTS) == len(set(TEXTS)) == b.texts_encoded
    assert files(a) == files(b) and len(files(a)) == 2 * 5  # 24 texts, 23 distinct: 5 groups
    assert np.array_equal(out, fake_vectors(TEXTS))
    assert np.array_equal(b.encode_documents(TEXTS), out) and b.texts_encoded == 23  # read back
    assert b.prefill(TEXTS, ["a query"]) == 1  # only the query was missing


def test_a_segment_is_named_by_its_keys_and_never_written_twice(tmp_path):
    cache = EmbeddingCache(tmp_path, "fp")
    keys = [text_key(t) for t in ("a", "b")]
    cache.put(keys, np.ones((2, 3), np.float32))
    path = cache.dir / f"{segment_name(keys)}.keys"
    before = path.stat().st_mtime_ns
    assert cache.holds_segment(keys) and not cache.holds_segment(keys[::-1])
    cache.put(keys, np.full((2, 3), 2, np.float32))  # a retried worker: the first write stands
    assert path.stat().st_mtime_ns == before and len(list(cache.dir.glob("seg-*.npy"))) == 1
    assert cache.missing([*keys, text_key("c")]) == [2]


def test_groups_are_distinct_longest_first_write_every_each(tmp_path, fake_model):
    enc = encoder(tmp_path)
    groups = enc._plan(TEXTS, "query: ")
    flat = [t for g in groups for t in g.texts]
    assert [len(g.keys) for g in groups] == [5, 5, 5, 5, 3]
    assert len(flat) == len(set(flat)) == 23 and all(t.startswith("query: ") for t in flat)
    assert [len(t) for t in flat] == sorted((len(t) for t in flat), reverse=True)
    assert groups[0].keys[0] == text_key(flat[0][len("query: ") :], "query: ")


def test_the_ray_worker_writes_each_group_once_and_skips_what_is_there(tmp_path, fake_model):
    import pyarrow as pa

    single, ray_side = encoder(tmp_path / "single"), encoder(tmp_path / "ray")
    single.prefill(TEXTS)
    del fake_model[:]
    groups = ray_side._plan(TEXTS, "")
    make = functools.partial(enc_mod.SentenceTransformerEncoder, **ray_side.spec())
    worker = distributed.EmbedWorker(make, ray_side.fingerprint)

    def run(gs):  # the rows a fill sends: each group's place in the texts' file, and its keys
        store = distributed.TextStore.write(tmp_path / "spool", gs)
        return worker(pa.Table.from_pylist(store.rows()))

    first = run(groups[:3])
    assert first["skipped"] == [False] * 3 and first["texts"] == [5, 5, 5]
    again = run(groups)  # a retried or resumed run: the written groups are skipped
    assert again["skipped"] == [True, True, True, False, False]
    assert files(single) == files(ray_side)
    assert len(fake_model) == 5  # each group through the model once


def test_a_worker_with_other_model_files_refuses(tmp_path, fake_model):
    enc = encoder(tmp_path)
    with pytest.raises(distributed.EmbeddingError, match="other model files"):
        distributed.EmbedWorker(functools.partial(type(enc), **enc.spec()), "0" * 64)


def test_ray_settings_are_checked(tmp_path, monkeypatch):
    with pytest.raises(ConfigError, match="executor='spark'"):
        encoder(tmp_path, executor="spark")
    with pytest.raises(ConfigError, match="ray_workers must be >= 1"):
        distributed.workers_for(0, 1.0, 3, free=4)
    assert distributed.workers_for(8, 1.0, 3, free=4) == 3  # never more actors than groups
    assert distributed.workers_for(None, 2.0, 10, free=5) == 2  # as many as the free CPUs hold
    with pytest.raises(distributed.NoFreeCPU):  # a sweep's jobs hold every CPU
        distributed.workers_for(None, 1.0, 10, free=0.5)
    monkeypatch.setenv("RAY_ADDRESS", "10.0.0.5:6379")
    assert distributed.resolve_address(None) == "10.0.0.5:6379"
    assert distributed.resolve_address("local") == "local"
    monkeypatch.delenv("RAY_ADDRESS")
    assert distributed.resolve_address("") == "local"


def test_a_task_takes_up_to_four_groups_while_each_worker_keeps_eight_tasks():
    assert distributed.groups_per_task(980, 2) == 4  # a 1M-chunk fill: 245 tasks
    assert distributed.groups_per_task(48, 2) == 3  # 16 tasks, 8 a worker
    assert distributed.groups_per_task(20, 2) == 1  # a small fill: a group a task, as before
    assert distributed.groups_per_task(1, 4) == 1


def test_no_free_cpu_on_the_cluster_embeds_in_this_process(tmp_path, fake_model, monkeypatch):
    def full(*args, **kwargs):
        raise distributed.NoFreeCPU("0 CPUs free, 1 needed per worker")

    monkeypatch.setattr(distributed, "fill", full)
    local, ray_side = encoder(tmp_path / "local"), encoder(tmp_path / "ray", executor="ray")
    local.prefill(TEXTS)
    with pytest.warns(UserWarning, match="embedding in this process"):
        assert ray_side.prefill(TEXTS) == 23
    assert files(local) == files(ray_side)


def test_one_groups_worth_is_embedded_here_rather_than_on_a_cluster_started_for_it(
    tmp_path, fake_model, monkeypatch
):
    """A cluster started for at most ``write_every`` texts costs more than it saves: they are
    embedded in this process. On a running cluster (an address, or a Ray launcher's job) they
    still go to Ray, and so does a fill of more texts."""
    sent = []

    def fill(make, fingerprint, groups, **kw):
        sent.append((len(groups), kw["address"]))
        enc = make(executor="local", progress=False)
        for g in groups:
            enc._store(enc._load(), g)
        return distributed.FillStats(groups=len(groups), texts=sum(len(g.keys) for g in groups))

    monkeypatch.setattr(distributed, "fill", fill)
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    local = encoder(tmp_path / "local")
    local.prefill(TEXTS[:5])
    here = encoder(tmp_path / "here", executor="ray")
    assert here.prefill(TEXTS[:5]) == 5 and sent == []  # one group: this process
    assert files(here) == files(local)
    assert here.encode_queries(["a query"]).shape == (1, DIM) and sent == []
    # a small corpus's chunks and its queries: two groups, one group's worth of texts
    small = encoder(tmp_path / "small", executor="ray")
    assert small.prefill(TEXTS[5:8], ["q1", "q2"]) == 5 and sent == []

    two = encoder(tmp_path / "two", executor="ray")
    assert two.prefill(TEXTS[:10]) == 10 and sent == [(2, None)]
    running = encoder(tmp_path / "running", executor="ray", ray_address="head:6379")
    assert running.prefill(TEXTS[:5]) == 5 and sent[-1] == (1, "head:6379")
    monkeypatch.setenv("RAY_ADDRESS", "head:6379")
    assert distributed.starts_cluster(None) is False
    monkeypatch.delenv("RAY_ADDRESS")
    assert distributed.starts_cluster(None) is True and distributed.starts_cluster("local")


def test_a_local_cluster_starts_no_idle_workers_and_a_running_one_is_left_as_it_is(monkeypatch):
    """The raylet ``ray.init`` starts for a local cluster reads RAY_prestart_worker_first_driver
    from the environment: off, so it starts no idle worker per CPU that the fill's actors would
    never use; the caller's environment is left as it was. Joining a running cluster by its
    address changes nothing of it; a value the user set is kept."""
    import sys
    import types

    seen = []
    fake = types.SimpleNamespace(
        is_initialized=lambda: False,
        init=lambda **kw: seen.append((kw["address"], os.environ.get(distributed.PRESTART_ENV))),
        shutdown=lambda: None,
    )
    monkeypatch.setitem(sys.modules, "ray", fake)
    # recorded first, so the value cluster() sets is undone after the test
    monkeypatch.setenv(distributed.PRESTART_ENV, "")
    monkeypatch.delenv(distributed.PRESTART_ENV)
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    with distributed.cluster("head:6379") as started:
        assert started
    with distributed.cluster("local", cpus=2):
        assert distributed.PRESTART_ENV not in os.environ  # for the raylet alone
    monkeypatch.setenv(distributed.PRESTART_ENV, "1")
    with distributed.cluster("local", cpus=2):
        pass
    assert seen == [("head:6379", None), ("local", "0"), ("local", "1")]
    assert os.environ[distributed.PRESTART_ENV] == "1"
