"""Embedding backends: choices and install hints, cache keys, export-once, the query/index guard."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import numpy as np
import pytest

from rageval.embedding import SentenceTransformerEncoder, backends
from rageval.embedding.cache import EmbeddingCache
from rageval.embedding.guard import AGREE_COSINE, PairedEncoder, check_query_model
from rageval.errors import ConfigError, IndexMismatchError
from rageval.formats import sealed

# --- choices and the one install hint -------------------------------------------------------


@pytest.mark.parametrize(
    ("backend", "quantize", "message"),
    [
        ("tensorrt", "none", "embedding.backend must be one of torch, onnx, openvino, static"),
        ("onnx", "int4", "embedding.quantize must be one of none, int8"),
        ("torch", "int8", "quantize=int8 needs embedding.backend=onnx"),
    ],
)
def test_a_bad_backend_or_quantization_names_the_valid_values(tmp_path, backend, quantize, message):
    with pytest.raises(ConfigError, match=message):
        SentenceTransformerEncoder(cache_dir=str(tmp_path), backend=backend, quantize=quantize)


@pytest.mark.parametrize(
    ("backend", "quantize", "missing", "extra"),
    [
        ("onnx", "none", "optimum.onnxruntime", "onnx"),
        ("onnx", "int8", "onnx", "onnx"),
        ("openvino", "none", "optimum.intel", "openvino"),
        ("openvino", "int8", "nncf", "openvino"),
        ("static", "none", "model2vec", "static"),
    ],
)
def test_a_missing_extra_is_one_line_naming_it(
    tmp_path, monkeypatch, backend, quantize, missing, extra
):
    monkeypatch.setattr(backends, "_importable", lambda module: module != missing)
    with pytest.raises(ConfigError) as err:
        SentenceTransformerEncoder(cache_dir=str(tmp_path), backend=backend, quantize=quantize)
    msg = str(err.value)
    assert "\n" not in msg
    assert f"pip install 'rageval[{extra}]'" in msg and missing in msg
    assert not (tmp_path / "models").exists()  # refused before any work


def test_the_extras_are_in_pyproject_and_dev_installs_them():
    import tomllib

    root = Path(__file__).resolve().parents[3]
    extras = tomllib.loads((root / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    named = {extra for _, extra in backends.EXTRAS.values()}
    assert named <= set(extras)
    dev = next(d for d in extras["dev"] if d.startswith("rageval["))
    assert named <= set(dev[len("rageval[") : -1].split(","))


# --- cache keys -------------------------------------------------------------------------------


def test_every_backend_and_quantization_has_its_own_cache_key(tmp_path):
    combos = [
        (b, q) for b in backends.BACKENDS for q in backends.QUANTIZE if (b, q) != ("torch", "int8")
    ]
    encs = {
        c: SentenceTransformerEncoder(cache_dir=str(tmp_path), backend=c[0], quantize=c[1])
        for c in combos
    }
    fps = {c: e.fingerprint for c, e in encs.items()}
    assert len(set(fps.values())) == len(combos)
    assert len({e.cache.dir for e in encs.values()}) == len(combos)
    # one source model: the torch fingerprint is unchanged by the new options (old caches stay
    # valid)
    assert {e.source_fingerprint for e in encs.values()} == {fps[("torch", "none")]}
    assert fps[("torch", "none")] == SentenceTransformerEncoder(cache_dir=str(tmp_path)).fingerprint
    assert encs[("onnx", "int8")].description == "all-MiniLM-L6-v2 onnx int8"
    # vectors stored under one backend are not found under another
    key = [b"k" * 16]
    EmbeddingCache(tmp_path, fps[("onnx", "none")]).put(key, np.ones((1, 3), np.float32))
    assert EmbeddingCache(tmp_path, fps[("torch", "none")]).lookup(key)[1] == [0]
    assert EmbeddingCache(tmp_path, fps[("onnx", "none")]).lookup(key)[1] == []


def test_static_dims_come_from_the_config_without_loading_anything(tmp_path):
    enc = SentenceTransformerEncoder(cache_dir=str(tmp_path), backend="static")
    assert enc.dim == backends.STATIC_DIMS
    assert not enc.model_loaded and not (tmp_path / "models").exists()


# --- export once ------------------------------------------------------------------------------

_JOB = textwrap.dedent(
    """
    import json, os, sys, time
    from pathlib import Path
    from rageval.embedding import backends

    cache, counter = Path(sys.argv[1]), Path(sys.argv[2])

    def slow_export(source, target):
        with open(counter, "a") as fh:
            fh.write(f"{os.getpid()}\\n")
        target.mkdir(parents=True)
        # export until the other job has arrived at prepare() too (or 20 s have passed)
        deadline = time.time() + 20
        while len(list(cache.glob("arrived-*"))) < 2 and time.time() < deadline:
            time.sleep(0.05)
        time.sleep(0.5)
        (target / "weights.bin").write_bytes(b"w" * 1000)
        return "weights.bin"

    backends.EXPORTERS[("onnx", "none")] = slow_export
    cache.mkdir(parents=True, exist_ok=True)
    (cache / f"arrived-{os.getpid()}").touch()
    got = backends.prepare(Path("/src"), "f" * 64, "onnx", "none", cache,
                           measure=lambda folder, name: 1e-7)
    assert (got.path / got.file_name).read_bytes() == b"w" * 1000
    print(json.dumps({"path": str(got.path), "d": got.max_cosine_distance}))
    """
)


def test_two_parallel_jobs_export_once(tmp_path):
    counter = tmp_path / "exports.txt"
    cmd = [sys.executable, "-c", _JOB, str(tmp_path / "cache"), str(counter)]
    jobs = [subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True) for _ in range(2)]
    outs = [json.loads(j.communicate(timeout=120)[0]) for j in jobs]
    assert [j.returncode for j in jobs] == [0, 0]
    assert len(counter.read_text().split()) == 1  # one export, the other job waited and reused it
    assert outs[0] == outs[1] and outs[0]["d"] == 1e-7
    final = Path(outs[0]["path"])
    assert final == backends.export_dir(tmp_path / "cache", "f" * 64, "onnx", "none")
    info = json.loads((final / "export.json").read_text())
    assert info["max_cosine_distance"] == 1e-7 and info["probe_texts"] == len(backends.PROBE_TEXTS)
    assert [p.name for p in final.parent.iterdir() if p.name.endswith(".tmp")] == []
    # a later run reuses it without exporting
    subprocess.run(cmd, check=True, capture_output=True)
    assert len(counter.read_text().split()) == 1


def test_a_failed_export_leaves_nothing_and_the_next_run_retries(tmp_path, monkeypatch):
    calls = []

    def broken(source, target):
        calls.append(1)
        target.mkdir(parents=True)
        (target / "half.onnx").write_bytes(b"x")
        raise RuntimeError("export crashed half-way")

    monkeypatch.setitem(backends.EXPORTERS, ("onnx", "none"), broken)
    with pytest.raises(RuntimeError, match="half-way"):
        backends.prepare(Path("/src"), "a" * 64, "onnx", "none", tmp_path)
    models = tmp_path / "models"
    assert [p.name for p in models.iterdir() if not p.name.endswith(".lock")] == []

    def good(source, target):
        calls.append(2)
        target.mkdir(parents=True)
        (target / "m.onnx").write_bytes(b"ok")
        return "m.onnx"

    monkeypatch.setitem(backends.EXPORTERS, ("onnx", "none"), good)
    got = backends.prepare(Path("/src"), "a" * 64, "onnx", "none", tmp_path)
    assert calls == [1, 2] and (got.path / "m.onnx").read_bytes() == b"ok"


@pytest.mark.parametrize("damage", ["truncated", "overwritten", "unsealed"])
def test_a_damaged_export_is_exported_again_with_a_warning(tmp_path, monkeypatch, damage):
    calls = []

    def export(source, target):
        calls.append(1)
        target.mkdir(parents=True)
        (target / "m.onnx").write_bytes(b"weights" * 1000)
        return "m.onnx"

    monkeypatch.setitem(backends.EXPORTERS, ("onnx", "none"), export)
    first = backends.prepare(Path("/src"), "e" * 64, "onnx", "none", tmp_path)
    model = first.path / "m.onnx"
    if damage == "truncated":
        model.write_bytes(model.read_bytes()[:100])
    elif damage == "overwritten":
        model.write_bytes(b"x" * model.stat().st_size)
    else:  # an export without a digest: not read unverified
        (first.path / sealed.DIGEST).unlink()
    with pytest.warns(UserWarning, match=rf"cached model export {first.path} is damaged"):
        again = backends.prepare(Path("/src"), "e" * 64, "onnx", "none", tmp_path)
    assert calls == [1, 1] and (again.path / "m.onnx").read_bytes() == b"weights" * 1000
    assert backends.prepare(Path("/src"), "e" * 64, "onnx", "none", tmp_path).path == again.path
    assert calls == [1, 1]  # whole again: read, not exported a third time


# --- the query/index guard --------------------------------------------------------------------


class _Enc:
    def __init__(self, fingerprint, source="src", distance=0.0, description=""):
        self.fingerprint, self.source_fingerprint = fingerprint, source
        self.max_cosine_distance, self.description = distance, description
        self.dim, self.texts_encoded, self.tokenizer_dir = 4, 3, "/tok"

    def encode_documents(self, texts):
        return np.zeros((len(texts), 4), np.float32)

    encode_queries = encode_documents


def test_another_backend_whose_vectors_agree_passes_the_guard():
    torch_enc, onnx_enc = _Enc("t", distance=0.0, description="m torch"), _Enc("o", distance=2e-7)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no mismatch warning either
        paired = check_query_model(torch_enc, onnx_enc, allow=False)
    assert isinstance(paired, PairedEncoder) and paired.fingerprint == "t"
    assert paired.tokenizer_dir == "/tok" and paired.texts_encoded == 6
    assert paired.description.startswith("m torch (queries: ")
    # two exports each just inside half the angle agree with each other
    half = 1 - np.cos(np.arccos(AGREE_COSINE) / 2) - 1e-12
    check_query_model(_Enc("a", distance=half), _Enc("b", distance=half), allow=False)


@pytest.mark.parametrize(
    "query",
    [
        _Enc("q", distance=0.02),  # int8: beyond the tolerance
        _Enc("q", source="other", distance=0.0),  # another model
        _Enc("q", distance=None),  # not comparable (a static model)
    ],
)
def test_vectors_that_may_not_agree_are_refused(query):
    index = _Enc("i", distance=1e-4)
    with pytest.raises(IndexMismatchError, match="cosine 0.9999"):
        check_query_model(index, query, allow=False)
    with pytest.warns(UserWarning, match="different embedding models"):
        assert isinstance(check_query_model(index, query, allow=True), PairedEncoder)


def _recording_exporter(built: list[str]):
    """An exporter that writes ``m.bin`` = b"new" and records the folders it built."""

    def fake(source, target):
        built.append(target.name)
        target.mkdir(parents=True)
        (target / "m.bin").write_bytes(b"new")
        return "m.bin"

    return fake


def test_an_export_of_an_older_format_is_rebuilt_and_the_others_kept(tmp_path, monkeypatch):
    monkeypatch.setattr(backends, "EXPORT_FORMATS", {"onnx": 2})
    built: list[str] = []
    fake = _recording_exporter(built)

    for backend in ("onnx", "static"):
        monkeypatch.setitem(backends.EXPORTERS, (backend, "none"), fake)
        old = backends.export_dir(tmp_path, "c" * 64, backend, "none")
        old.mkdir(parents=True)
        (old / "m.bin").write_bytes(b"old")
        info = {"format": 1, "backend": backend, "file_name": "m.bin", "max_cosine_distance": 0}
        (old / "export.json").write_text(json.dumps(info))
        sealed.seal(old)  # as prepare() leaves an export: each file's sha256 beside it
    assert backends.export_format("onnx") > 1 == backends.export_format("static")
    onnx = backends.prepare(Path("/src"), "c" * 64, "onnx", "none", tmp_path)
    static = backends.prepare(Path("/src"), "c" * 64, "static", "none", tmp_path)
    assert (onnx.path / "m.bin").read_bytes() == b"new" and len(built) == 1
    assert json.loads((onnx.path / "export.json").read_text())["format"] == 2
    assert (static.path / "m.bin").read_bytes() == b"old"


FLAGS = {  # /proc/cpuinfo flags of each CPU class rageval supports (the ones that matter)
    "amx": {"avx2", "avx512f", "avx512bw", "avx512_vnni", "avx512_bf16", "amx_int8", "amx_bf16"},
    "avx512_bf16": {"avx2", "avx512f", "avx512bw", "avx512_vnni", "avx512_bf16"},
    "avx512_vnni": {"avx2", "avx512f", "avx512bw", "avx512_vnni"},
    "avx512": {"avx2", "avx512f", "avx512bw"},
    "avx2": {"avx2", "fma"},
}


@pytest.fixture
def cpu_class(monkeypatch):
    """Pretend to be a CPU of one class: ``cpu_class("amx")``."""
    from rageval.embedding import cpu

    monkeypatch.delenv("ONEDNN_MAX_CPU_ISA", raising=False)
    monkeypatch.setattr("platform.machine", lambda: "x86_64")

    def pretend(name: str) -> None:
        monkeypatch.setattr(cpu, "cpu_flags", lambda: frozenset(FLAGS[name]))

    return pretend


def test_a_new_int8_format_rebuilds_the_int8_export_only(tmp_path, monkeypatch, cpu_class):
    """A format bumped for one quantization of a backend (openvino int8 moved from int8 weights
    to static int8): its old export is rebuilt and its vectors get a new cache key, while the
    backend's other export stays."""
    cpu_class("avx512_vnni")
    monkeypatch.setattr(backends, "EXPORT_FORMATS", {"openvino": 2, ("openvino", "int8"): 3})
    built: list[str] = []
    fake = _recording_exporter(built)

    for quantize in ("none", "int8"):
        monkeypatch.setitem(backends.EXPORTERS, ("openvino", quantize), fake)
        variant = backends.export_variant("openvino", quantize)
        old = backends.export_dir(tmp_path, "d" * 64, "openvino", quantize, **variant)
        old.mkdir(parents=True)
        (old / "m.bin").write_bytes(b"old")
        info = {"format": 2, "backend": "openvino", "quantize": quantize, "file_name": "m.bin"}
        (old / "export.json").write_text(json.dumps(info))
        sealed.seal(old)  # as prepare() leaves an export
    assert backends.export_format("openvino", "int8") == 3 > backends.export_format("openvino")
    assert backends.export_format("openvino", "none") == 2
    plain = backends.prepare(Path("/src"), "d" * 64, "openvino", "none", tmp_path)
    int8 = backends.prepare(Path("/src"), "d" * 64, "openvino", "int8", tmp_path)
    assert (plain.path / "m.bin").read_bytes() == b"old"
    assert (int8.path / "m.bin").read_bytes() == b"new" and len(built) == 1
    assert json.loads((int8.path / "export.json").read_text())["format"] == 3
    keys = {
        q: SentenceTransformerEncoder(
            cache_dir=str(tmp_path), backend="openvino", quantize=q, progress=False
        ).fingerprint
        for q in ("none", "int8")
    }
    assert len(set(keys.values())) == 2


@pytest.mark.parametrize("name", list(FLAGS))
def test_openvino_compiles_with_an_explicit_precision_f32_unless_bf16_is_asked_for(cpu_class, name):
    """The plugin's own default is bf16 on any CPU with AVX512-BF16 (int8 on a CPU with AMX:
    min cosine 0.91 to torch): rageval always sets the precision, f32 unless asked for bf16,
    and bf16 only where the CPU has it."""
    cpu_class(name)
    assert backends.openvino_precision() == "f32"
    assert backends.openvino_precision("f32") == "f32"
    has_bf16 = name in ("amx", "avx512_bf16")
    assert backends.openvino_precision("bf16") == ("bf16" if has_bf16 else "f32")
    assert backends.openvino_config("f32") == {"INFERENCE_PRECISION_HINT": "f32"}
    export = backends.Export(Path("/x"), "m.xml", None, {"quantize": "int8", "precision": "f32"})
    config = backends.openvino_config(str(export.info["precision"]))
    assert config["INFERENCE_PRECISION_HINT"] == "f32"


def test_the_cpu_class_follows_the_flags_and_an_onednn_cap_only_lowers_it(cpu_class, monkeypatch):
    from rageval.embedding.cpu import kernel_class

    for name in FLAGS:
        cpu_class(name)
        assert kernel_class() == name
    cpu_class("avx512_bf16")
    for cap, expected in [
        ("AVX2", "avx2"),
        ("avx512_core", "avx512"),
        ("AVX512_CORE_VNNI", "avx512_vnni"),
        ("AVX512_CORE_AMX", "avx512_bf16"),  # a cap cannot add AMX to a CPU without it
        ("DEFAULT", "avx512_bf16"),
    ]:
        monkeypatch.setenv("ONEDNN_MAX_CPU_ISA", cap)
        assert kernel_class(honour_onednn_cap=True) == expected, cap
        assert kernel_class() == "avx512_bf16"  # ONNX Runtime does not read the cap
    monkeypatch.setenv("ONEDNN_MAX_CPU_ISA", "AVX2")
    assert backends.openvino_precision("bf16") == "f32"  # capped below bf16: the plugin runs f32


def test_numerics_and_the_cache_key_keep_every_cpu_class_apart_where_vectors_depend_on_it(
    tmp_path, cpu_class
):
    """int8 and bf16 vectors depend on the CPU's kernels: one cache key per class (and per
    precision); f32 and torch keep one key on every CPU. numerics() is plain JSON."""
    keys: dict = {}
    for name in FLAGS:
        cpu_class(name)
        for backend, quantize, precision in [
            ("openvino", "int8", "f32"),
            ("openvino", "none", "f32"),
            ("openvino", "none", "bf16"),
            ("onnx", "int8", "f32"),
            ("torch", "none", "f32"),
        ]:
            enc = SentenceTransformerEncoder(
                cache_dir=str(tmp_path),
                backend=backend,
                quantize=quantize,
                precision=precision,
                progress=False,
            )
            numerics = enc.numerics()
            assert json.loads(json.dumps(numerics)) == numerics
            assert set(numerics) == {"backend", "quantize", "precision", "isa", _RUNTIME[backend]}
            if numerics["precision"] == "bf16":
                assert numerics["isa"] == name
            elif quantize == "int8":  # the same int8 kernels with or without AVX512-BF16
                assert numerics["isa"] == name.replace("avx512_bf16", "avx512_vnni")
            else:
                assert numerics["isa"] is None
            keys.setdefault((backend, quantize, precision), {})[name] = enc.fingerprint
            assert not enc.model_loaded
    assert len(set(keys[("openvino", "int8", "f32")].values())) == len(FLAGS) - 1
    assert len(set(keys[("onnx", "int8", "f32")].values())) == len(FLAGS) - 1
    assert len(set(keys[("openvino", "none", "f32")].values())) == 1
    assert len(set(keys[("torch", "none", "f32")].values())) == 1
    bf16 = keys[("openvino", "none", "bf16")]
    # bf16 where the CPU has it (AMX and AVX512-BF16 kernels apart), f32 (the f32 key) elsewhere
    f32 = keys[("openvino", "none", "f32")]["avx2"]
    assert bf16["avx2"] == bf16["avx512"] == bf16["avx512_vnni"] == f32
    assert len({bf16["amx"], bf16["avx512_bf16"], f32}) == 3


_RUNTIME = {"openvino": "openvino", "onnx": "onnxruntime", "torch": "torch"}


def test_each_precision_and_cpu_class_has_its_own_export_and_probe_distance(
    tmp_path, monkeypatch, cpu_class
):
    """A cache shared by CPUs of several classes: the IR is the same, but the distance to torch
    the query/index guard trusts is measured in the precision and kernels the export runs in, so
    each builds (and measures) its own; float f32 is one export on every CPU."""
    built: list[str] = []
    monkeypatch.setitem(backends.EXPORTERS, ("openvino", "none"), _recording_exporter(built))
    monkeypatch.setitem(backends.EXPORTERS, ("openvino", "int8"), _recording_exporter(built))
    seen = set()
    for name in ("avx512_bf16", "amx", "avx512_bf16", "avx2"):
        cpu_class(name)
        plain = backends.prepare(Path("/src"), "e" * 64, "openvino", "none", tmp_path)
        assert plain.path.name.endswith("-openvino-none-f32") and plain.info["isa"] is None
        int8 = backends.prepare(
            Path("/src"), "e" * 64, "openvino", "int8", tmp_path, measure=lambda f, n: 0.01
        )
        isa = name.replace("avx512_bf16", "avx512_vnni")  # int8's kernels: the same
        assert int8.path.name.endswith(f"-openvino-int8-f32-{isa}")
        assert int8.info["precision"] == "f32" and int8.info["isa"] == isa
        bf16 = backends.prepare(
            Path("/src"), "e" * 64, "openvino", "none", tmp_path, precision="bf16"
        )
        assert bf16.info["precision"] == ("f32" if name == "avx2" else "bf16")
        seen |= {plain.path, int8.path, bf16.path}
    # f32 once; int8 for each of the three classes; bf16 for the two classes with bf16
    assert len(built) == len(seen) == 6


def test_the_calibration_texts_fill_the_models_window_and_are_not_the_probe_set(tokenizer):
    """Static int8 fixes each activation's range from these texts: a range seen only on short
    texts would clip long ones, and the probe set must stay apart to measure the export."""
    from rageval.embedding.calibration import CALIBRATION_TEXTS

    lengths = [len(tokenizer.encode(t).ids) for t in CALIBRATION_TEXTS]
    assert max(lengths) >= 256 and min(lengths) <= 16
    assert sum(n >= 200 for n in lengths) >= 4
    assert not set(CALIBRATION_TEXTS) & set(backends.PROBE_TEXTS)
    assert len(set(CALIBRATION_TEXTS)) == len(CALIBRATION_TEXTS)


@pytest.mark.parametrize("key", ["word_embedding_dimension", "embedding_dimension"])
def test_dims_are_read_from_either_pooling_config_format(tmp_path, key):
    model = tmp_path / "model"
    (model / "1_Pooling").mkdir(parents=True)
    (model / "1_Pooling" / "config.json").write_text(json.dumps({key: 12}))
    enc = SentenceTransformerEncoder(model=str(model), cache_dir=str(tmp_path), backend="onnx")
    assert enc.dim == 12 and not enc.model_loaded


def test_an_export_keeps_optimums_and_torchs_export_noise_off_the_console(monkeypatch, caplog):
    """Exporting a plain model folder made optimum warn that it 'could not infer whether the
    model was already converted' (with a bare TypeError text under it) and torch's tracer warn
    about constants: neither says anything a user can act on."""
    import logging

    import sentence_transformers

    class Loader:
        def __init__(self, *args, **kwargs):
            logging.getLogger("optimum.intel.openvino.modeling_base").warning(
                "Could not infer whether the model was already converted or not to the "
                "OpenVINO IR, keeping `export=True`.\nexpected str, bytes or os.PathLike object"
            )
            logging.getLogger("optimum.intel.openvino.modeling_base").warning("a real warning")
            warnings.warn(
                "torch.tensor results are registered as constants in the trace", stacklevel=1
            )

    monkeypatch.setattr(sentence_transformers, "SentenceTransformer", Loader)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        backends._st(Path("/src"), "openvino")
    logged = [r.getMessage() for r in caplog.records]
    assert logged == ["a real warning"]
    assert not [w for w in seen if "registered as constants" in str(w.message)]
    # the filter is gone afterwards: other code's warnings from that logger still show
    assert not logging.getLogger("optimum.intel.openvino.modeling_base").filters


# --- the static backend averages all of a text's own word pieces ---------------------------


def _tiny_static_model(model_dir: str):
    """A small model2vec model on the packaged model's tokenizer.json, which pads to 128 word
    pieces and cuts there (as distilling the real model gives it)."""
    from model2vec import StaticModel
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(Path(model_dir) / "tokenizer.json"))
    assert tok.padding is not None and tok.truncation is not None
    vectors = np.random.default_rng(0).standard_normal((tok.get_vocab_size(), 8))
    return StaticModel(vectors.astype(np.float32), tok, normalize=False)


def _own_mean(model, text: str) -> np.ndarray:
    from tokenizers import Tokenizer

    tok = Tokenizer.from_str(model.tokenizer.to_str())
    tok.no_padding()
    tok.no_truncation()
    mean = model.embedding[tok.encode(text, add_special_tokens=False).ids].mean(axis=0)
    return (mean / np.linalg.norm(mean)).astype(np.float32)


@pytest.mark.parametrize("saved_by", ["export", "format 1"])
def test_a_static_vector_is_the_mean_of_all_its_texts_word_pieces(
    tmp_path, monkeypatch, model_dir, saved_by
):
    """No [PAD] vectors in a short text's mean, no word piece dropped after the 128th: for an
    export built now, and for one saved with the source's padding (format 1), as loaded."""
    import model2vec.distill

    if saved_by == "export":
        monkeypatch.setattr(
            model2vec.distill, "distill", lambda **kw: _tiny_static_model(model_dir)
        )
        backends._export_static(Path(model_dir), tmp_path, "none")
        saved = json.loads((tmp_path / "tokenizer.json").read_text())
        assert saved["padding"] is None and saved["truncation"] is None
    else:
        _tiny_static_model(model_dir).save_pretrained(str(tmp_path))
    model = backends.load(backends.Export(tmp_path, None, None, {}), "static")
    short = "reset password"
    assert np.allclose(
        backends.encode_static(model, [short])[0], _own_mean(model, short), atol=1e-6
    )
    words = [f"term{i}" for i in range(150)]  # ~3 word pieces each: far past 128
    whole, first = " ".join(words), " ".join(words[:40])
    vectors = backends.encode_static(model, [whole, first])
    assert np.allclose(vectors[0], _own_mean(model, whole), atol=1e-6)
    assert not np.allclose(vectors[0], vectors[1], atol=1e-3)


def test_static_exports_of_the_padded_format_are_rebuilt():
    assert backends.export_format("static") == 2
    assert backends.export_format("static", "int8") == 2
