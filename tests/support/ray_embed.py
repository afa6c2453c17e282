"""Embed one corpus on Ray clusters, inside a loopback-only network namespace.

Started by tests/integration/test_distributed_embedding.py under ``unshare --net``: brings ``lo``
up and embeds the texts of TEXTS.json in this process, with the packaged model on torch (cache
``single``) and on ONNX Runtime (cache ``single-onnx``). Then on a local cluster the run starts
itself, interrupted (Ctrl-C) after its second result (cache ``resumed``: the run stops its own
cluster on the way out). Then one Ray head node is started with ``ray start`` (two CPUs) and
serves the rest, joined by its address: the corpus on two workers (cache ``ray``), again while
one worker is killed mid-run (cache ``killed``), the interrupted run resumed (cache ``resumed``),
and ``rageval embed`` for the MINI dataset's chunks in a process of its own (``embed-cluster``;
``embed-local`` is the same command in this process).

The two-worker fill runs torch, the default, in its actors: the cache it writes must equal the
one torch writes in one process, byte for byte, which holds only with MKL's reproducible mode
passed to every worker. The others test what the launcher and Ray do (a killed actor, Ctrl-C,
resuming, joining by address), which is the same for every backend; they run the ONNX export
(built once a session, tests/support/model_exports.py), whose actors start in ~0.3 s of CPU
against ~5 s for torch's (importing torch and sentence-transformers), and with it the export a
fill prepares before its actors start. Two cluster starts in all. Prints one JSON document with
what each run reported.

    unshare --net python tests/support/ray_embed.py WORKDIR TEXTS.json MINI_DIR SHARED_CACHE
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from model_exports import copy_exports, onnx_encoder

import rageval  # noqa: F401  (first: MKL's reproducible mode, before torch, here and in workers)

# 240 distinct texts in 60 groups: 3 to a Ray task on two workers (distributed.groups_per_task),
# so the kill and the interrupt land in tasks of several groups
WRITE_EVERY = 4
WORKER_TAG = "MapWorker(MapBatches(EmbedWorker))"


def encoder(root: Path, executor: str, workers: int = 2, exports: Path | None = None, **kw):
    """An encoder on the cache ``root``; with ``exports`` (the session's cache), on the ONNX
    export copied from there."""
    from rageval.embedding import SentenceTransformerEncoder

    kw.update(write_every=WRITE_EVERY, executor=executor, ray_workers=workers, batch_size=16)
    if exports is not None:
        return onnx_encoder(root, exports, **kw)
    return SentenceTransformerEncoder(cache_dir=str(root), progress=False, **kw)


def segments(enc) -> list[str]:
    return sorted(p.name for p in enc.cache.dir.glob("seg-*.keys"))


def worker_pids() -> list[int]:
    import psutil

    found = []
    for p in psutil.process_iter(["pid", "cmdline"]):
        cmd = " ".join(p.info["cmdline"] or [])
        if WORKER_TAG in cmd:
            found.append(p.info["pid"])
    return found


def when_segments(enc, n: int, action, done: dict) -> threading.Thread:
    """Run ``action()`` once ``n`` segments are complete in ``enc``'s cache."""

    def watch() -> None:
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline:
            if enc.cache.dir.is_dir() and len(segments(enc)) >= n:
                done["at_segments"] = len(segments(enc))
                done["result"] = action()
                return
            time.sleep(0.02)

    t = threading.Thread(target=watch, daemon=True)
    t.start()
    return t


def kill_a_worker():
    pids = worker_pids()
    if not pids:
        return None
    os.kill(pids[0], signal.SIGKILL)
    return pids[0]


@contextlib.contextmanager
def interrupt_after(n: int):
    """KeyboardInterrupt in this thread at the ``n``-th progress update (a result arriving)."""
    from tqdm.auto import tqdm

    original = tqdm.update
    seen = [0]

    def update(self, k=1):
        seen[0] += 1
        if seen[0] >= n:
            raise KeyboardInterrupt
        return original(self, k)

    tqdm.update = update
    try:
        yield
    finally:
        tqdm.update = original


def fill_report(enc, n: int) -> dict:
    s = enc.last_fill or distributed_stats()
    return {
        "embedded": n,
        "texts": s.texts,
        "skipped_groups": s.skipped_groups,
        "groups": s.groups,
        "workers": sorted(s.workers),
        "segments": segments(enc),
    }


def distributed_stats():
    from rageval.embedding.distributed import FillStats

    return FillStats()


def main() -> None:
    work, texts_file, mini, shared = (Path(a) for a in sys.argv[1:5])
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    texts = json.loads(texts_file.read_text())
    out: dict = {}

    single = encoder(work / "single", "local")
    out["single"] = {"embedded": single.prefill(texts), "segments": segments(single)}
    # one thread, as in every Ray actor: the comparisons below are about Ray, not thread counts
    onnx = encoder(work / "single-onnx", "local", exports=shared, threads=1)
    out["single-onnx"] = {"embedded": onnx.prefill(texts), "segments": segments(onnx)}

    # Ctrl-C while results arrive: the run's own local cluster is stopped on the way out (its
    # workers with it), as when a user presses Ctrl-C; the next run embeds only the rest
    resumed = encoder(work / "resumed", "ray", workers=1, exports=shared)
    try:
        with interrupt_after(2):
            resumed.prefill(texts)
        out["interrupted"] = False
    except KeyboardInterrupt:
        out["interrupted"] = True
    out["kept_after_interrupt"] = segments(resumed)

    # one head node (`ray start`, two CPUs) for the rest: this process's runs join it by address,
    # then `rageval embed` joins it from a process of its own
    from loopback_sweep import start_head, stop_head

    from rageval.embedding.distributed import cluster

    head, address = start_head(work, {**os.environ, "RAY_USAGE_STATS_ENABLED": "0"})
    try:
        with cluster(address):
            ray_enc = encoder(work / "ray", "ray")
            out["ray"] = fill_report(ray_enc, ray_enc.prefill(texts))

            killed = encoder(work / "killed", "ray", exports=shared)
            seen: dict = {}
            watcher = when_segments(killed, 2, kill_a_worker, seen)
            n = killed.prefill(texts)
            watcher.join(timeout=5)
            out["killed"] = {**fill_report(killed, n), "killed_pid": seen.get("result")}
            out["killed"]["at_segments"] = seen.get("at_segments")

            # one worker: what is tested is which groups it embeds, not how they are shared
            again = encoder(work / "resumed", "ray", workers=1, exports=shared)
            out["resumed"] = fill_report(again, again.prefill(texts))
        out["embed"] = embed_commands(work, mini, shared, address)
    finally:
        stop_head(head)
    print(json.dumps(out))


def embed_commands(work: Path, mini: Path, shared: Path, address: str) -> dict:
    """``rageval embed`` in this process (the reference), then in a process of its own on the
    running head node at ``address``, joined by that address."""
    from rageval.app.config import register_resolvers
    from rageval.app.embed import embed

    args = [
        "dataset=custom",
        f"dataset.corpus={mini / 'corpus'}",
        f"dataset.golden={mini / 'golden.jsonl'}",
        "chunk=32",
        "embedding.backend=onnx",
        "embedding.threads=1",  # as in the Ray actor
    ]
    for name in ("embed-local", "embed-cluster"):
        copy_exports(work / name, shared, ("onnx", "none"))
    register_resolvers()
    local = io.StringIO()
    embed([*args, f"cache_dir={work / 'embed-local'}"], out=local)
    done = {"local": {"returncode": 0, "stdout": local.getvalue(), "stderr": ""}}
    env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0"}
    # one worker: joining by address from another process is what is tested
    extra = [
        "embedding.executor=ray",
        f"embedding.ray_address={address}",
        "embedding.ray_workers=1",
    ]
    cache = f"cache_dir={work / 'embed-cluster'}"
    proc = subprocess.run(
        [sys.executable, "-m", "rageval", "embed", *args, *extra, cache],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    done["cluster"] = {
        "returncode": proc.returncode,
        "stdout": proc.stdout,
        "stderr": proc.stderr[-3000:],
    }
    return done


if __name__ == "__main__":
    main()
