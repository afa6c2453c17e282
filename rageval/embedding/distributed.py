"""Embedding a corpus across a Ray cluster (``embedding.executor=ray``).

The texts a run is missing from the embedding cache are cut into the same groups a single process
embeds (each distinct text once, longest first, ``write_every`` to a group) and each group becomes
one row of a Ray Dataset. ``map_batches`` hands the rows to a pool of actors, each of which loads
the encoder once (any backend: torch, onnx, openvino, static; an export is built by the launching
process before the pool starts) and writes each group's vectors as one segment of the shared
cache. A segment is named by the digest of its keys (rageval.embedding.cache), so:

- the cache a cluster writes equals the one a single process writes: the same segment files,
  rows in the same order, vectors bit-identical (every row depends on its own text alone,
  rageval.embedding.batching; MKL's strict mode is passed to every worker);
- a worker killed mid-run loses only the group in flight: Ray Data restarts the actor and retries
  the group, and a group whose segment was written before the kill is not embedded again (its
  ``.keys`` file, written last, marks it complete);
- a run stopped with Ctrl-C keeps every finished segment, and the next run embeds only the rest.

Only row counts and timings come back to the launching process; the vectors travel through the
cache's files, which must therefore be on storage every node mounts at the same path
(docs/scale-out.md). The launching process then reads them as any cached run does.
"""

from __future__ import annotations

import contextlib
import logging
import os
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from rageval.embedding.cache import EmbeddingError
from rageval.errors import ConfigError, install_hint

# Workers compute the vectors a single process would only with MKL's reproducible mode on.
WORKER_ENV = {"MKL_CBWR": "AUTO,STRICT", "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}


@dataclass(frozen=True)
class Group:
    """One future cache segment: the texts as the model reads them (prompt included), and their
    cache keys in the same order."""

    texts: list[str]
    keys: list[bytes]


@dataclass
class FillStats:
    """What a distributed fill did: texts embedded, groups skipped because an earlier attempt (a
    restarted worker, an interrupted run) had already written them, wall time, workers seen."""

    texts: int = 0
    groups: int = 0
    skipped_groups: int = 0
    seconds: float = 0.0
    workers: dict[int, list[float]] = field(default_factory=dict)  # pid -> [texts, seconds]

    def rate(self) -> float:
        """Texts per second across the cluster, over the wall time."""
        return self.texts / self.seconds if self.seconds > 0 else 0.0


def resolve_address(address: str | None) -> str:
    """``embedding.ray_address``: null means ``$RAY_ADDRESS`` when it is set, else ``local`` (a
    cluster started for the run on 127.0.0.1)."""
    if address is None or str(address).strip() == "":
        return os.environ.get("RAY_ADDRESS") or "local"
    return str(address).strip()


@contextlib.contextmanager
def cluster(address: str | None, cpus: int | None = None) -> Iterator[bool]:
    """Connect to the Ray cluster of ``address`` for the block (yields True when it was started
    here). Inside a Ray task (a sweep on the Ray launcher) the task's own cluster is used; a
    ``local`` cluster is bound to 127.0.0.1 and stopped when the block ends, also on Ctrl-C."""
    try:
        import ray
    except ImportError:
        raise ConfigError(
            f"embedding.executor=ray needs Ray: {install_hint('ray')} "
            "(or set embedding.executor=local)"
        ) from None
    if ray.is_initialized():
        yield False
        return
    where = resolve_address(address)
    os.environ.setdefault("RAY_BACKEND_LOG_LEVEL", "fatal")  # its C++ notes off the console
    logging.getLogger("ray").setLevel(logging.ERROR)  # its start-up notes too; errors still show
    kwargs: dict[str, Any] = {
        "include_dashboard": False,
        "log_to_driver": False,
        "logging_level": logging.WARNING,
        "runtime_env": {"env_vars": dict(WORKER_ENV)},
    }
    if where == "local":
        kwargs.update(address="local", _node_ip_address="127.0.0.1", num_cpus=cpus)
    else:
        kwargs["address"] = where
    try:
        ray.init(**kwargs)
    except (ConnectionError, RuntimeError, ValueError) as err:
        raise ConfigError(
            f"embedding.ray_address={where!r}: cannot reach a Ray cluster there ({err}); start "
            "one (`ray start --head`) or use embedding.ray_address=local"
        ) from None
    try:
        yield True
    finally:
        ray.shutdown()


def quiet_ray_data() -> None:
    """Ray Data's own progress bars and execution banners off: rageval prints one bar."""
    from ray.data import DataContext

    ctx = DataContext.get_current()
    ctx.enable_progress_bars = False
    ctx.print_on_execution_start = False
    ctx.enable_auto_log_stats = False
    for name in ("ray.data", "ray"):
        logging.getLogger(name).setLevel(logging.ERROR)


class NoFreeCPU(RuntimeError):
    """The cluster has no CPU free for an embedding actor (a sweep's jobs hold them all)."""


def workers_for(
    requested: int | None, cpus_per_worker: float, groups: int, free: float | None = None
) -> int:
    """Actors in the pool: ``requested``, else as many as the cluster's free CPUs hold (``free``;
    read from the cluster when None); never more than there are groups. NoFreeCPU when not one
    actor fits: inside a sweep job on a cluster whose CPUs the jobs hold, the pool would wait
    forever."""
    if requested is not None and int(requested) < 1:
        raise ConfigError(f"embedding.ray_workers must be >= 1 (or null), got {requested}")
    if free is None:
        free = _free_cpus(cpus_per_worker)
    fits = int(free // max(cpus_per_worker, 1e-9))
    if fits < 1:
        raise NoFreeCPU(f"{free:g} CPUs free, {cpus_per_worker:g} needed per worker")
    n = int(requested) if requested is not None else fits
    return max(1, min(n, groups))


def _free_cpus(needed: float, wait: float = 30.0) -> float:
    """The cluster's free CPUs, waiting up to ``wait`` seconds for ``needed`` of them: the actors
    of a fill that just ended give their CPUs back a moment after it."""
    import ray

    deadline = time.monotonic() + wait
    while True:
        free = float(ray.available_resources().get("CPU", 0.0))
        if free >= needed or time.monotonic() >= deadline:
            return free
        time.sleep(0.2)


def fill(
    make_encoder: Callable[..., Any],
    fingerprint: str,
    groups: Sequence[Group],
    *,
    address: str | None = None,
    workers: int | None = None,
    cpus_per_worker: float = 1.0,
    desc: str = "embedding on Ray",
    progress: bool = True,
) -> FillStats:
    """Embed ``groups`` on a Ray cluster into the cache of the encoder ``make_encoder(**kw)``
    builds in each worker (``executor``, ``progress`` and ``threads`` are given as keywords);
    ``fingerprint`` is the launching process's, which every worker must match."""
    if cpus_per_worker <= 0:
        raise ConfigError(f"embedding.ray_cpus_per_worker must be > 0, got {cpus_per_worker}")
    stats = FillStats(groups=len(groups))
    if not groups:
        return stats
    from tqdm.auto import tqdm

    total = sum(len(g.keys) for g in groups)
    start = time.perf_counter()
    with cluster(address, cpus=os.cpu_count()):
        import ray
        import ray.data

        quiet_ray_data()
        n_workers = workers_for(workers, cpus_per_worker, len(groups))
        rows = [{"texts": g.texts, "keys": b"".join(g.keys)} for g in groups]
        ds = ray.data.from_items(rows, override_num_blocks=len(rows)).map_batches(
            EmbedWorker,
            fn_constructor_kwargs={
                "make_encoder": make_encoder,
                "fingerprint": fingerprint,
                "threads": max(1, int(cpus_per_worker)),
            },
            batch_size=1,
            batch_format="pyarrow",
            compute=ray.data.ActorPoolStrategy(size=n_workers),
            num_cpus=cpus_per_worker,
            runtime_env={"env_vars": dict(WORKER_ENV)},
        )
        label = f"{desc} ({n_workers} worker{'s' * (n_workers > 1)})"
        with tqdm(total=total, desc=label, unit="chunk", disable=not progress) as bar:
            try:
                for row in ds.iter_rows():
                    n, pid = int(row["texts"]), int(row["pid"])
                    if row["skipped"]:
                        stats.skipped_groups += 1
                    else:
                        stats.texts += n
                        seen = stats.workers.setdefault(pid, [0.0, 0.0])
                        seen[0] += n
                        seen[1] += float(row["seconds"])
                    bar.update(n)
            except ray.exceptions.RayError as err:
                raise _error_of(err) from None
    stats.seconds = time.perf_counter() - start
    return stats


def _error_of(err: BaseException) -> Exception:
    """The rageval error a worker raised (a bad vector, a missing extra), else one line."""
    seen: set[int] = set()
    cause: BaseException | None = err
    while cause is not None and id(cause) not in seen:
        seen.add(id(cause))
        if isinstance(cause, (EmbeddingError, ConfigError)):
            return cause
        inner = getattr(cause, "cause", None)
        cause = inner if isinstance(inner, BaseException) else cause.__cause__
    first = str(err).strip().splitlines()
    return EmbeddingError(
        f"embedding on Ray failed: {first[-1] if first else type(err).__name__} (the segments "
        "written so far stay in the cache; run again to embed the rest)"
    )


class EmbedWorker:
    """A Ray Data actor: one encoder loaded once, one cache segment written per group."""

    def __init__(self, make_encoder: Callable[..., Any], fingerprint: str, threads: int = 1):
        self.encoder = make_encoder(executor="local", progress=False, threads=threads)
        if self.encoder.fingerprint != fingerprint:
            raise EmbeddingError(
                f"a Ray worker on {os.uname().nodename} sees other model files than the launching "
                f"process (fingerprint {self.encoder.fingerprint[:12]}, expected "
                f"{fingerprint[:12]}): install the same model at the same path on every node"
            )
        self.pid = os.getpid()
        self.model = None  # loaded at the first group that is not in the cache yet

    def __call__(self, batch) -> dict[str, list]:
        from rageval.embedding.cache import KEY_BYTES, check_vectors

        out: dict[str, list] = {"texts": [], "pid": [], "seconds": [], "skipped": []}
        for texts, joined in zip(
            batch.column("texts").to_pylist(), batch.column("keys").to_pylist(), strict=True
        ):
            keys = [joined[i : i + KEY_BYTES] for i in range(0, len(joined), KEY_BYTES)]
            start = time.perf_counter()
            skipped = self.encoder.cache.holds_segment(keys)
            if not skipped:
                if self.model is None:
                    self.model = self.encoder.load_model()
                vec = self.encoder.vectors(self.model, texts)
                check_vectors(vec, texts)
                self.encoder.cache.put(keys, vec)
            out["texts"].append(len(keys))
            out["pid"].append(self.pid)
            out["seconds"].append(time.perf_counter() - start)
            out["skipped"].append(skipped)
        return out
