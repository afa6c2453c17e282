"""Inference backends for a sentence-transformers model: torch, ONNX Runtime, OpenVINO, static.

``embedding.backend`` picks how the model runs and ``embedding.quantize`` whether its weights are
int8. Anything but plain torch needs an exported copy of the model, written once into
``<cache_dir>/models/<source fingerprint>-<backend>-<quantize>[-<precision>][-<CPU class>]/`` and
reused by every later run (the precision and CPU class where the vectors depend on them:
:func:`numerics`):

- ``onnx``: the model exported to ONNX (sentence-transformers' ``backend="onnx"``, through
  optimum), its attention, layer-norm and GELU sub-graphs fused into ONNX Runtime's kernels;
  ``int8`` is *dynamic quantization per token* (int8 weights per output column, each token's
  activations scaled by their own largest value at run time: rageval.embedding.onnx_graph), so a
  text's vector does not depend on its batch.
- ``openvino``: the model exported to OpenVINO IR; ``int8`` is *static quantization* (NNCF
  post-training quantization: int8 weights, and int8 activations whose ranges are fixed once from
  rageval's own calibration texts, rageval.embedding.calibration), so the matrix products run on
  the CPU's int8 instructions and a text's vector does not depend on its batch. Its float parts
  (layer norm, softmax, GELU, the residual sums) run in an explicit precision, f32 unless
  ``embedding.precision=bf16``, never the plugin's CPU-dependent default.
- ``static``: a model2vec static embedding distilled from the model (a vector per token of its
  vocabulary, PCA to 256 dims, mean of the token vectors per text); ``int8`` stores it in int8.

An export is built in a temp folder beside its final place and renamed into it under a file
lock, so two sweep jobs that ask for it at once export it once and neither ever sees half of it.
Every file of an export is sealed with its sha256 (rageval.formats.sealed) and checked before a
run loads it: a damaged export is exported again, with a warning. Its ``export.json``, written
last inside the temp folder, records how far its vectors are from
the source model's own (torch) vectors: the largest cosine distance over :data:`PROBE_TEXTS`,
embedded by both. The query/index guard reads that number (rageval.embedding.guard).
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import logging
import os
import shutil
import time
import uuid
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from rageval.errors import ConfigError, install_hint
from rageval.formats import sealed

BACKENDS = ("torch", "onnx", "openvino", "static")
QUANTIZE = ("none", "int8")
EXPORT_FORMAT = 1
# a backend (or one quantization of it: a (backend, quantize) key wins) whose export changed: its
# older exports are rebuilt, the others' stay valid. onnx 2: fused fp32 graph, per-token int8, may
# run without torch; openvino 2: may run without torch; openvino int8 3: static int8 (weights and
# activations) instead of int8 weights; openvino none 3: f32 unless the CPU has AMX; openvino
# int8 4: its float parts compiled in an explicit precision (f32 unless embedding.precision=bf16)
# instead of the plugin's default (bf16 on a CPU with AVX512-BF16), so the probe distance is
# measured again; static 2: its tokenizer saved without the source tokenizer.json's padding and
# truncation (all-MiniLM-L6-v2's pads to 128 word pieces and cuts there), which had put [PAD]
# vectors into every shorter text's mean and dropped every word piece after the 128th
EXPORT_FORMATS: dict[str | tuple[str, str], int] = {
    "onnx": 2,
    "static": 2,
    ("openvino", "none"): 3,
    ("openvino", "int8"): 4,
}
STATIC_DIMS = 256  # PCA dimensions of a distilled static model

# backend -> (module that must import, the rageval extra that installs it)
EXTRAS = {
    "onnx": ("optimum.onnxruntime", "onnx"),
    "openvino": ("optimum.intel", "openvino"),
    "static": ("model2vec", "static"),
}
_INT8_EXTRA = {"onnx": ("onnx", "onnx"), "openvino": ("nncf", "openvino")}

# what each export is, for export.json and the docs
METHODS = {
    ("onnx", "none"): "ONNX, fp32, attention/layer-norm/GELU fused for ONNX Runtime (BERT models)",
    ("onnx", "int8"): "ONNX, dynamic int8 per token: int8 weights per output column, each "
    "token's activations scaled by their own max |x| at run time (batch-independent)",
    ("openvino", "none"): "OpenVINO IR, run in f32 (bf16 with embedding.precision=bf16)",
    ("openvino", "int8"): "OpenVINO IR, static int8 (NNCF post-training quantization, "
    "transformer preset): int8 weights per channel and int8 activations, their ranges fixed "
    "from rageval's calibration texts; float parts in f32 (bf16 with embedding.precision=bf16)",
    ("static", "none"): f"model2vec static embedding, PCA to {STATIC_DIMS} dims, float32",
    ("static", "int8"): f"model2vec static embedding, PCA to {STATIC_DIMS} dims, int8 table",
}

# A fixed probe set: short and long, prose and identifiers, so the measured distance covers
# several padded lengths. Changing it changes EXPORT_FORMAT (the stored distances would differ).
PROBE_TEXTS = (
    "How many days of parental leave do contractors get?",
    "Rotate the Key Vault secret used by invoicing",
    "Which regions is the payments service deployed to?",
    "reset password",
    "The on-call engineer acknowledges a page within five minutes and posts a status update in "
    "the incident channel every thirty minutes until the incident is resolved.",
    "kubectl rollout restart deployment/payments-api -n prod && kubectl rollout status",
    "Expense reports above 500 EUR need the approval of a director before the end of the month; "
    "receipts are scanned and attached, and travel booked outside the portal is not refunded.",
    "Error 0x80070005: access denied while writing C:\\ProgramData\\agent\\config.json",
    "What is the retention period for audit logs, and who can extend it?",
    "Datenschutz: personenbezogene Daten werden nach 30 Tagen gelöscht.",
    "SELECT customer_id, SUM(amount) FROM invoices WHERE status = 'open' GROUP BY customer_id;",
    "A B C",
    "The quarterly disaster-recovery drill fails over the primary database to the secondary "
    "region, replays the write-ahead log, verifies row counts against the last snapshot, and "
    "then fails back; the runbook lists every command, the expected output and who to call "
    "when a step takes longer than its budget. " * 3,
    "vpn not connecting from home office since update",
    "Benefits enrolment opens on 1 November and closes on 30 November.",
    "🙂 emoji, accents (café, naïve) and CJK 检索增强生成",
)


@dataclass(frozen=True, slots=True)
class Export:
    """An exported model ready to load: its folder, the file inside to load, and its distance to
    the source model's vectors (``None``: not comparable, e.g. a static model of other dims)."""

    path: Path
    file_name: str | None
    max_cosine_distance: float | None
    info: dict


def check_choice(backend: str, quantize: str) -> None:
    """A ConfigError naming the valid values when ``backend`` or ``quantize`` is not one."""
    if backend not in BACKENDS:
        raise ConfigError(
            f"embedding.backend must be one of {', '.join(BACKENDS)}, got {backend!r}"
        )
    if quantize not in QUANTIZE:
        raise ConfigError(
            f"embedding.quantize must be one of {', '.join(QUANTIZE)}, got {quantize!r}"
        )
    if backend == "torch" and quantize != "none":
        raise ConfigError(
            "embedding.quantize=int8 needs embedding.backend=onnx, openvino or static "
            "(torch runs the model as it is)"
        )


def require(backend: str, quantize: str = "none") -> None:
    """The one install hint: a ConfigError naming the rageval extra when the backend's libraries
    are missing (checked without importing them)."""
    needs = [EXTRAS.get(backend)]
    if quantize == "int8":
        needs.append(_INT8_EXTRA.get(backend))
    for need in needs:
        if need is None:
            continue
        module, extra = need
        if not _importable(module):
            raise ConfigError(
                f"embedding.backend={backend} needs the {extra!r} extra ({module} is not "
                f"installed): {install_hint(extra)}"
            )


def _importable(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a parent package is missing
        return False


def export_dir(
    cache_dir: Path,
    source_fingerprint: str,
    backend: str,
    quantize: str,
    precision: str | None = None,
    isa: str | None = None,
) -> Path:
    """Where the export of one source model for one backend and quantization lives; an OpenVINO
    export also names the precision it runs in, and an int8 (or bf16) export the CPU class whose
    kernels run it (:func:`export_variant`), so a cache shared by CPUs of several classes keeps
    one export each, each with the probe distance measured in the class it runs in."""
    name = "-".join(x for x in (source_fingerprint[:24], backend, quantize, precision, isa) if x)
    return Path(cache_dir) / "models" / name


def export_variant(backend: str, quantize: str, precision: str = "f32") -> dict:
    """The precision and CPU class an export of ``backend``/``quantize`` runs in on this machine
    (``precision``: the one asked for), where they depend on the machine, else None."""
    return {
        "precision": openvino_precision(precision) if backend == "openvino" else None,
        "isa": isa_class(backend, quantize, openvino_precision(precision)),
    }


# (backend, quantize) -> function(source folder, target folder) -> file to load, relative to target
Exporter = Callable[[Path, Path], "str | None"]
EXPORTERS: dict[tuple[str, str], Exporter] = {}


def exporter(backend: str, quantize: str):
    """Decorator: register ``fn`` as the exporter of (``backend``, ``quantize``) in EXPORTERS."""

    def register(fn: Exporter) -> Exporter:
        EXPORTERS[(backend, quantize)] = fn
        return fn

    return register


def prepare(
    source: Path,
    source_fingerprint: str,
    backend: str,
    quantize: str,
    cache_dir: Path,
    measure: Callable[[Path, str | None], float | None] | None = None,
    wait_s: float = 3600.0,
    precision: str = "f32",
) -> Export:
    """The export of ``source`` for ``backend``/``quantize``: read from the cache, or built once.

    ``measure(folder, file_name)`` returns the export's largest cosine distance to the source
    model over :data:`PROBE_TEXTS`; it runs inside the lock, before the export becomes visible."""
    from filelock import FileLock, Timeout

    variant = export_variant(backend, quantize, precision)
    final = export_dir(cache_dir, source_fingerprint, backend, quantize, **variant)
    found = _read(final)
    if found is not None:
        return found
    final.parent.mkdir(parents=True, exist_ok=True)
    lock = FileLock(str(final) + ".lock")
    try:
        lock.acquire(timeout=wait_s)
    except Timeout:
        raise ConfigError(
            f"waited {wait_s:.0f} s for another process exporting {final}; if none is running, "
            f"delete {final}.lock"
        ) from None
    try:
        found = _read(final)  # another process finished it while this one waited
        if found is not None:
            return found
        if final.exists():  # an older export format, or a folder left by an interrupted export
            shutil.rmtree(final, ignore_errors=True)
        tmp = final.parent / f".{final.name}.{os.getpid()}-{uuid.uuid4().hex[:8]}.tmp"
        try:
            file_name = EXPORTERS[(backend, quantize)](source, tmp)
            distance = measure(tmp, file_name) if measure is not None else None
            info = {
                "format": export_format(backend, quantize),
                "backend": backend,
                "quantize": quantize,
                "source": str(source),
                "source_fingerprint": source_fingerprint,
                "file_name": file_name,
                "method": METHODS.get((backend, quantize), ""),
                "max_cosine_distance": distance,
                "probe_texts": len(PROBE_TEXTS),
                "precision": variant["precision"],
                "isa": variant["isa"],
                "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                "versions": _versions(),
            }
            (tmp / "export.json").write_text(json.dumps(info, indent=2))
            sealed.seal(tmp)  # every file's sha256, checked before a later run loads it
            os.rename(tmp, final)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        found = _read(final)
        assert found is not None  # just renamed into place, under the lock
        return found
    finally:
        lock.release()


def export_format(backend: str, quantize: str = "none") -> int:
    """The export layout version of ``backend`` with ``quantize``: an export of another version
    is rebuilt."""
    found = EXPORT_FORMATS.get((backend, quantize))
    return found if found is not None else EXPORT_FORMATS.get(backend, EXPORT_FORMAT)


def _read(folder: Path) -> Export | None:
    try:
        info = json.loads((folder / "export.json").read_text())
    except (OSError, ValueError):
        return None
    backend, quantize = str(info.get("backend")), str(info.get("quantize", "none"))
    if info.get("format") != export_format(backend, quantize):
        return None
    reason = sealed.fault(folder)
    if reason is not None:  # prepare() removes it and exports again
        warnings.warn(
            f"the cached model export {folder} is damaged ({reason}); it is not used: exporting "
            "the model again",
            stacklevel=3,
        )
        return None
    d = info.get("max_cosine_distance")
    return Export(folder, info.get("file_name"), None if d is None else float(d), info)


def _versions() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    out = {}
    for pkg in ("sentence-transformers", "torch", "onnxruntime", "openvino", "model2vec"):
        with contextlib.suppress(PackageNotFoundError):
            out[pkg] = version(pkg)
    return out


def _st(source: Path, backend: str, **kw):
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    from sentence_transformers import SentenceTransformer
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    hf_logging.set_verbosity_error()
    # sentence-transformers logs "exporting ..." and advises saving the export into the source
    # folder (site-packages for the packaged model): rageval saves it into its cache itself.
    # optimum warns that it "could not infer whether the model was already converted" (a plain
    # model folder is not), with a bare "expected str, bytes or os.PathLike object" under it;
    # it resets its loggers' levels when it sets them up, so that one message is filtered.
    st_log = logging.getLogger("sentence_transformers")
    level = st_log.level
    st_log.setLevel(logging.ERROR)
    noisy = [logging.getLogger(name) for name in _OPTIMUM_LOADERS]
    for log in noisy:
        log.addFilter(_not_converted_yet)
    try:
        with warnings.catch_warnings():
            # the ONNX/OpenVINO export traces the model, and torch warns about its constants
            warnings.filterwarnings("ignore", message=r"torch\.tensor results are registered")
            return SentenceTransformer(str(source), backend=backend, device="cpu", **kw)
    finally:
        st_log.setLevel(level)
        for log in noisy:
            log.removeFilter(_not_converted_yet)


_OPTIMUM_LOADERS = ("optimum.intel.openvino.modeling_base", "optimum.onnxruntime.modeling")


def _not_converted_yet(record: logging.LogRecord) -> bool:
    return not str(record.msg).startswith("Could not infer whether the model was already")


def _model_type(folder: Path) -> str:
    try:
        return str(json.loads((folder / "config.json").read_text()).get("model_type", ""))
    except (OSError, ValueError):
        return ""


@exporter("onnx", "none")
def _export_onnx(source: Path, target: Path) -> str:
    from rageval.embedding.onnx_graph import fuse_transformer

    model = _st(source, "onnx")
    model.save_pretrained(str(target))
    fuse_transformer(target / "onnx" / "model.onnx", _model_type(target))
    _record_runner(model, target)
    return "onnx/model.onnx"


def _record_runner(model, target: Path) -> None:
    from rageval.embedding import runner

    found = runner.matches_sentence_transformers(model, target, PROBE_TEXTS)
    runner.write_runner(target, found)


@exporter("onnx", "int8")
def _export_onnx_int8(source: Path, target: Path) -> str:
    from rageval.embedding.onnx_graph import int8_weight_max, quantize_per_token

    model = _st(source, "onnx")
    model.save_pretrained(str(target))
    _record_runner(model, target)
    plain = target / "onnx" / "model.onnx"
    name = "onnx/model_int8_per_token.onnx"
    # the unfused graph: its Q, K and V are plain MatMuls that quantize like the others
    quantize_per_token(plain, target / name, weight_max=int8_weight_max())
    plain.unlink()  # only the quantized graph is ever loaded
    return name


# optimum compiles the model it exports: in f32, not the plugin's default (bf16 on a CPU with
# AVX512-BF16, which under ONEDNN_MAX_CPU_ISA=AVX2 fails to compile its softmax)
_EXPORT_OV = {"ov_config": {"INFERENCE_PRECISION_HINT": "f32"}}


@exporter("openvino", "none")
def _export_openvino(source: Path, target: Path) -> str:
    model = _st(source, "openvino", model_kwargs=_EXPORT_OV)
    model.save_pretrained(str(target))
    _record_runner(model, target)
    return "openvino/openvino_model.xml"


@exporter("openvino", "int8")
def _export_openvino_int8(source: Path, target: Path) -> str:
    import nncf
    import openvino as ov

    from rageval.embedding.calibration import CALIBRATION_TEXTS

    model = _st(source, "openvino", model_kwargs=_EXPORT_OV)
    model.save_pretrained(str(target))
    _record_runner(model, target)
    xml = target / "openvino" / "openvino_model.xml"
    graph = ov.Core().read_model(str(xml))
    names = [i.get_any_name() for i in graph.inputs]
    # one text a sample, tokenized as the encoder tokenizes it (unpadded: no pad token's
    # activations widen a range)
    preprocess = getattr(model, "preprocess", None) or model.tokenize
    samples = []
    for text in CALIBRATION_TEXTS:
        features = preprocess([text])
        samples.append({k: np.asarray(features[k]) for k in names if k in features})
    nncf_log = logging.getLogger("nncf")
    level = nncf_log.level
    nncf_log.setLevel(logging.WARNING)
    try:
        quantized = nncf.quantize(
            graph,
            nncf.Dataset(samples),
            model_type=nncf.ModelType.TRANSFORMER,  # softmax, layer norm and GELU stay float
            subset_size=len(samples),
        )
    finally:
        nncf_log.setLevel(level)
    name = "openvino/openvino_model_int8.xml"
    ov.save_model(quantized, str(target / name))
    xml.unlink()
    xml.with_suffix(".bin").unlink()
    return name


def _export_static(source: Path, target: Path, quantize: str) -> None:
    from model2vec.distill import distill

    model = distill(
        model_name=str(source),
        pca_dims=STATIC_DIMS,
        quantize_to="int8" if quantize == "int8" else "float32",
    )
    # the source's tokenizer.json may pad and truncate (MiniLM's: to 128 word pieces); a static
    # model averages every id it gets, so padding would enter the mean: neither is kept
    _whole_texts(model.tokenizer)
    model.save_pretrained(str(target))


def _whole_texts(tokenizer) -> None:
    """No padding, no truncation (model2vec cuts at its own ``max_length``, 512 word pieces)."""
    tokenizer.no_padding()
    tokenizer.no_truncation()


@exporter("static", "none")
def _export_static_f32(source: Path, target: Path) -> None:
    _export_static(source, target, "none")


@exporter("static", "int8")
def _export_static_int8(source: Path, target: Path) -> None:
    _export_static(source, target, "int8")


PRECISIONS = ("f32", "bf16")


def check_precision(backend: str, precision: str) -> None:
    """A ConfigError naming the valid values when ``precision`` is not one, or is bf16 for a
    backend that cannot run it."""
    if precision not in PRECISIONS:
        raise ConfigError(
            f"embedding.precision must be one of {', '.join(PRECISIONS)}, got {precision!r}"
        )
    if precision == "bf16" and backend != "openvino":
        raise ConfigError(
            f"embedding.precision=bf16 needs embedding.backend=openvino ({backend} runs in f32); "
            "set embedding.precision=f32"
        )


def openvino_precision(requested: str = "f32") -> str:
    """The inference precision OpenVINO runs the float parts of a model in (all of a float model,
    everything but the int8 matrix products of an int8 one) when rageval compiles it with
    ``INFERENCE_PRECISION_HINT=requested``: ``f32``, or ``bf16`` when asked for on a CPU with
    bf16 instructions (AVX512-BF16 or AMX; elsewhere the plugin runs f32). rageval always sets
    the hint: the plugin's own default is bf16 on any CPU with AVX512-BF16, which made a
    model's vectors depend on the CPU (int8 on a CPU with AMX: min cosine 0.91 to torch's)."""
    if requested != "bf16":
        return "f32"
    from rageval.embedding.cpu import cpu_flags, kernel_class

    has_bf16 = {"avx512_bf16", "amx_bf16"} & (cpu_flags() or frozenset())
    # under ONEDNN_MAX_CPU_ISA below AVX-512 VNNI the plugin runs f32 (measured: AVX512_CORE)
    capped = kernel_class(honour_onednn_cap=True) not in ("avx512_vnni", "avx512_bf16", "amx")
    return "bf16" if has_bf16 and not capped else "f32"


def openvino_config(precision: str) -> dict:
    """The compile options that fix the precision an OpenVINO model runs in."""
    return {"INFERENCE_PRECISION_HINT": precision}


def isa_class(backend: str, quantize: str, precision: str = "f32") -> str | None:
    """The CPU class whose kernels compute this backend's vectors, when they depend on it: int8
    (VNNI multiplies u8 x s8 into int32; without it the products go through int16 and are
    rescaled) and bf16 (AMX tiles, AVX512-BF16, or oneDNN's bf16 on a capped ISA): a class of
    rageval.embedding.cpu.kernel_class. int8 in f32 does not tell AVX512-BF16 from AVX-512 VNNI
    (the same int8 kernels, measured: equal vectors). None for f32 without int8, whose kernels
    differ by rounding only, and for the static backend."""
    from rageval.embedding.cpu import kernel_class

    if backend == "openvino" and (quantize == "int8" or precision == "bf16"):
        found = kernel_class(honour_onednn_cap=True)
    elif backend == "onnx" and quantize == "int8":
        found = kernel_class(honour_onednn_cap=False)  # ONNX Runtime's MLAS reads the CPU only
    else:
        return None
    return "avx512_vnni" if found == "avx512_bf16" and precision != "bf16" else found


_RUNTIME = {
    "torch": "torch",
    "onnx": "onnxruntime",
    "openvino": "openvino",
    "static": "model2vec",
}


def numerics(backend: str, quantize: str, requested_precision: str = "f32") -> dict:
    """What decides the vectors a backend computes on this machine, read without loading (or
    importing) anything: backend, quantization, the precision it runs in, the CPU kernel class
    where its kernels depend on it (None elsewhere), and its runtime's version."""
    from importlib.metadata import PackageNotFoundError, version

    precision = openvino_precision(requested_precision) if backend == "openvino" else "f32"
    runtime = _RUNTIME[backend]
    try:
        runtime_version = version(runtime)
    except PackageNotFoundError:
        runtime_version = None
    return {
        "backend": backend,
        "quantize": quantize,
        "precision": precision,
        "isa": isa_class(backend, quantize, precision),
        runtime: runtime_version,
    }


def load(export: Export, backend: str, threads: int | None = None):
    """The model behind an export, ready to encode; ``threads``: the runtime's intra-op threads
    (None: its default, every core)."""
    if backend == "static":
        from model2vec import StaticModel

        model = StaticModel.from_pretrained(str(export.path))
        _whole_texts(model.tokenizer)  # exports of format 2 on are saved so already
        return model
    model_kwargs: dict = {"file_name": export.file_name} if export.file_name else {}
    if backend == "onnx":
        import onnxruntime

        from rageval.embedding import runner

        # idle threads sleep instead of spinning: the same speed, less CPU taken from the
        # other jobs of a sweep (or the other users of a shared machine)
        options = onnxruntime.SessionOptions()
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        if threads:
            options.intra_op_num_threads = int(threads)
        if export.file_name and runner.runs_direct(export.path):
            # tokenizer.json + ONNX Runtime + numpy: no torch or sentence-transformers import
            return runner.DirectEncoderModel(export.path, export.file_name, "onnx", options)
        model_kwargs["session_options"] = options
    if backend == "openvino" and export.file_name:
        from rageval.embedding import runner

        config = openvino_config(str(export.info.get("precision") or "f32"))
        if threads:
            # OpenVINO pins its threads to cores by default: two workers of one thread each
            # would share the first core (measured: 2 workers ran at the speed of 1)
            config.update(INFERENCE_NUM_THREADS=int(threads), ENABLE_CPU_PINNING=False)
        if runner.runs_direct(export.path):
            return runner.DirectEncoderModel(export.path, export.file_name, "openvino", config)
        model_kwargs["ov_config"] = config
    return _st(export.path, backend, model_kwargs=model_kwargs)


def encode_static(model, texts: list[str]) -> np.ndarray:
    """Unit-length float32 rows from a model2vec model (a text's vector is its own tokens' mean)."""
    vec = np.asarray(model.encode(list(texts), show_progress_bar=False), dtype=np.float32)
    norms = np.linalg.norm(vec, axis=1, keepdims=True)
    return vec / np.where(norms > 0, norms, 1.0)
