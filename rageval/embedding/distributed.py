"""Embedding a corpus across a Ray cluster (``embedding.executor=ray``).

The texts a run is missing from the embedding cache are cut into the same groups a single process
embeds (each distinct text once, longest first, ``write_every`` to a group). The launching process
writes the groups' texts, one group at a time, into a file beside the cache (a ``TextStore``), and
each group becomes one row of a Ray Dataset: its place in that file and its keys, not its texts
(so neither the launching process nor Ray's object store holds the corpus's text a second time).
``map_batches`` hands the rows to a pool of actors (a few to a task: :func:`groups_per_task`),
each of which loads the encoder once (any backend: torch, onnx, openvino, static; an export is
built by the launching process before the pool starts) and writes each group's vectors as one
segment of the shared cache. A segment is named by the digest of its keys
(rageval.embedding.cache), so:

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
import importlib.util
import logging
import os
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from rageval.embedding.cache import EmbeddingError
from rageval.errors import ConfigError, install_hint

# Workers compute the vectors a single process would only with MKL's reproducible mode on.
WORKER_ENV = {"MKL_CBWR": "AUTO,STRICT", "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
# Ray's setting (spelt as Ray reads it) for the idle workers a raylet starts ahead
PRESTART_ENV = "RAY_prestart_worker_first_driver"


@dataclass(frozen=True)
class Group:
    """One future cache segment: the cache keys of its texts, and where the texts are: positions
    ``rows`` of ``source`` (a sequence of texts, e.g. a run's chunks read from their documents),
    each read with ``prompt`` before it. The texts are made when they are read (``texts``), so a
    corpus's groups do not hold a second copy of its text."""

    keys: list[bytes]
    source: Sequence[str]
    rows: Sequence[int]
    prompt: str = ""

    @classmethod
    def of_texts(cls, texts: list[str], keys: list[bytes]) -> Group:
        """A group of ``texts`` as given (the prompt included)."""
        return cls(keys, texts, range(len(texts)))

    @property
    def texts(self) -> list[str]:
        """The texts as the model reads them (prompt included), in the keys' order."""
        source, prompt = self.source, self.prompt
        return [prompt + source[i] for i in self.rows]


@dataclass
class TextStore:
    """The texts of a fill's groups in one file, UTF-8, one group after another; each group's
    place (its first byte and each text's end, relative to it) is a row the workers read it by.
    The launching process writes it a group at a time, so the texts are never all in its memory
    at once (nor in Ray's object store)."""

    path: str
    places: list[tuple[int, bytes, bytes]]  # (first byte, text ends as int64, joined keys)

    @classmethod
    def write(cls, folder: str | os.PathLike, groups: Sequence[Group]) -> TextStore:
        import uuid

        import numpy as np

        os.makedirs(folder, exist_ok=True)
        path = os.path.join(os.fspath(folder), f"texts-{uuid.uuid4().hex}.tmp")
        places = []
        with open(path, "wb") as fh:
            at = 0
            for g in groups:
                ends, end = [], 0
                for t in g.texts:
                    data = t.encode("utf-8", "surrogatepass")
                    fh.write(data)
                    end += len(data)
                    ends.append(end)
                places.append((at, np.asarray(ends, np.int64).tobytes(), b"".join(g.keys)))
                at += end
        return cls(path, places)

    def rows(self) -> list[dict[str, Any]]:
        """One row a group, as the workers read them."""
        return [
            {"store": self.path, "at": at, "ends": ends, "keys": keys}
            for at, ends, keys in self.places
        ]

    def remove(self) -> None:
        with contextlib.suppress(OSError):
            os.unlink(self.path)


def read_texts(path: str, at: int, ends: bytes) -> list[str]:
    """A group's texts from a :class:`TextStore` file."""
    import numpy as np

    bounds = np.frombuffer(ends, np.int64).tolist()
    with open(path, "rb") as fh:
        fh.seek(at)
        data = fh.read(bounds[-1] if bounds else 0)
    out, start = [], 0
    for end in bounds:
        out.append(data[start:end].decode("utf-8", "surrogatepass"))
        start = end
    return out


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


def starts_cluster(address: str | None) -> bool:
    """Whether :func:`cluster` would start a cluster of its own for ``address`` (it resolves to
    ``local`` and this process is not connected to one already, as a Ray launcher's job is);
    False when Ray is not installed (the fill then says how to install it)."""
    if importlib.util.find_spec("ray") is None:
        return False
    ray = sys.modules.get("ray")
    if ray is not None and ray.is_initialized():
        return False
    return resolve_address(address) == "local"


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
    # Ray's raylet starts one idle worker per CPU when the first driver connects; the fill's
    # actors (the job's runtime_env) start workers of their own and never use those, which only
    # import Ray and wait (the Ray embedding tests: 80.6-83.8 s of CPU without them, 86.2-87.1 s
    # with). Read by the raylet ray.init starts for a local cluster, and only by it: the caller's
    # environment is as it was afterwards (a value the user set is kept).
    prestart_off = where == "local" and PRESTART_ENV not in os.environ
    if prestart_off:
        os.environ[PRESTART_ENV] = "0"
    try:
        ray.init(**kwargs)
    except (ConnectionError, RuntimeError, ValueError) as err:
        raise ConfigError(
            f"embedding.ray_address={where!r}: cannot reach a Ray cluster there ({err}); start "
            "one (`ray start --head`) or use embedding.ray_address=local"
        ) from None
    finally:
        if prestart_off:
            os.environ.pop(PRESTART_ENV, None)
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
    spool: str | os.PathLike | None = None,
) -> FillStats:
    """Embed ``groups`` on a Ray cluster into the cache of the encoder ``make_encoder(**kw)``
    builds in each worker (``executor``, ``progress`` and ``threads`` are given as keywords);
    ``fingerprint`` is the launching process's, which every worker must match. The texts go to
    the workers through a :class:`TextStore` in ``spool`` (a folder every node sees at the same
    path: the cache's own), removed when the fill ends; each Ray row carries only a group's
    place in it and its keys."""
    if cpus_per_worker <= 0:
        raise ConfigError(f"embedding.ray_cpus_per_worker must be > 0, got {cpus_per_worker}")
    stats = FillStats(groups=len(groups))
    if not groups:
        return stats
    if spool is None:
        raise ConfigError("a fill on Ray needs a folder every node sees for its texts")
    from tqdm.auto import tqdm

    total = sum(len(g.keys) for g in groups)
    start = time.perf_counter()
    with contextlib.ExitStack() as stack:
        store = TextStore.write(spool, groups)
        stack.callback(store.remove)
        stack.enter_context(cluster(address, cpus=os.cpu_count()))
        import ray
        import ray.data

        quiet_ray_data()
        n_workers = workers_for(workers, cpus_per_worker, len(groups))
        rows = store.rows()
        per_task = groups_per_task(len(rows), n_workers)
        blocks = -(-len(rows) // per_task)
        ds = ray.data.from_items(rows, override_num_blocks=blocks).map_batches(
            EmbedWorker,
            fn_constructor_kwargs={
                "make_encoder": make_encoder,
                "fingerprint": fingerprint,
                "threads": max(1, int(cpus_per_worker)),
            },
            batch_size=per_task,
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


def groups_per_task(groups: int, workers: int) -> int:
    """Groups a Ray task embeds (one segment each, written as each is done): up to 4, while every
    worker still gets 8 tasks or more. A task of one group left each worker waiting 13% of a
    1M-chunk fill between tasks (Ray Data's per-task start); with a few tasks to a worker the
    last ones still balance, and a killed worker loses at most the group in flight."""
    return max(1, min(4, groups // (8 * max(1, workers))))


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
        columns = [batch.column(c).to_pylist() for c in ("store", "at", "ends", "keys")]
        for path, at, ends, joined in zip(*columns, strict=True):
            keys = [joined[i : i + KEY_BYTES] for i in range(0, len(joined), KEY_BYTES)]
            start = time.perf_counter()
            skipped = self.encoder.cache.holds_segment(keys)
            if not skipped:
                if self.model is None:
                    self.model = self.encoder.load_model()
                texts = read_texts(path, at, ends)
                vec = self.encoder.vectors(self.model, texts)
                check_vectors(vec, texts)
                self.encoder.cache.put(keys, vec)
            out["texts"].append(len(keys))
            out["pid"].append(self.pid)
            out["seconds"].append(time.perf_counter() - start)
            out["skipped"].append(skipped)
        return out
