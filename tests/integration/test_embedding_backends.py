"""Every backend with the packaged all-MiniLM-L6-v2: vectors independent of their batch, onnx fp32
equal to torch, and the guard's tolerance measured at export time."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest
from model_exports import copy_exports

from rageval.embedding import SentenceTransformerEncoder, backends
from rageval.embedding.guard import PairedEncoder, check_query_model
from rageval.errors import IndexMismatchError

TEXTS = [
    "How many days of parental leave do contractors get?",
    "reset password",
    "The on-call engineer acknowledges a page within five minutes and posts a status update "
    "every thirty minutes until the incident is resolved.",
    "vpn not connecting",
    "Expense reports above 500 EUR need a director's approval before the end of the month.",
    "A B C",
    "kubectl rollout restart deployment/payments-api -n prod",
]
OTHERS = [
    "Benefits enrolment opens on 1 November.",
    "short",
    "A much longer text about disaster recovery drills that fail over the primary database to "
    "the secondary region and back again, with every command listed in the runbook. " * 2,
]


@pytest.fixture(scope="module")
def cache(tmp_path_factory, shared_cache):
    """The module's own cache (its static export is a tiny model), with the ONNX exports the
    session built once (tests/support/model_exports.py)."""
    path = tmp_path_factory.mktemp("backends-cache")
    copy_exports(path, shared_cache, ("onnx", "none"), ("onnx", "int8"))
    return path


def _tiny_static(source, target):
    """A small model2vec model on the source tokenizer (distilling the real one takes minutes)."""
    from model2vec import StaticModel
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(source / "tokenizer.json"))
    vectors = np.random.default_rng(0).standard_normal((tok.get_vocab_size(), 8))
    StaticModel(vectors.astype(np.float32), tok).save_pretrained(str(target))


def _fresh(cache, backend, quantize, batch_size=4, model=None):
    # a new cache folder for vectors, the shared one for exports: every call runs the model
    # (``model``: an already loaded one of the same backend, so it is not loaded again)
    enc = SentenceTransformerEncoder(
        cache_dir=str(cache),
        backend=backend,
        quantize=quantize,
        batch_size=batch_size,
        progress=False,
    )
    enc.cache.dir = (
        cache / "vectors" / f"{backend}-{quantize}-{np.random.default_rng().integers(1 << 62)}"
    )
    enc._model = model
    return enc


@pytest.mark.parametrize(
    ("backend", "quantize"),
    [
        ("torch", "none"),
        ("onnx", "none"),
        ("onnx", "int8"),
        ("openvino", "none"),
        ("openvino", "int8"),
        ("static", "none"),
    ],
)
def test_a_text_gets_the_same_vector_whatever_batch_it_arrives_in(
    cache, monkeypatch, backend, quantize
):
    if backend == "static":
        monkeypatch.setitem(backends.EXPORTERS, ("static", "none"), _tiny_static)
    # one loaded model (loading an export costs more than these texts), a new vector cache each
    first = _fresh(cache, backend, quantize)
    model = first._load()
    alone = np.vstack(
        [first.encode_documents(TEXTS[:1])]
        + [_fresh(cache, backend, quantize, model=model).encode_documents([t]) for t in TEXTS[1:]]
    )
    together = _fresh(cache, backend, quantize, model=model).encode_documents(TEXTS)
    mixed = _fresh(cache, backend, quantize, batch_size=3, model=model).encode_documents(
        OTHERS + TEXTS[::-1]
    )
    assert first.texts_encoded == 1 and first.model_loaded
    assert np.array_equal(alone, together)
    assert np.array_equal(alone, mixed[len(OTHERS) :][::-1])
    assert np.allclose(np.linalg.norm(alone, axis=1), 1.0, atol=1e-5)


def test_onnx_fp32_matches_torch_and_passes_the_guard(cache):
    torch_enc = _fresh(cache, "torch", "none")
    onnx_enc = _fresh(cache, "onnx", "none")
    ref, got = torch_enc.encode_documents(TEXTS), onnx_enc.encode_documents(TEXTS)
    assert np.einsum("ij,ij->i", ref, got).min() >= 0.9999
    # the tolerance was measured at export time, over the probe set, and stored beside the export
    info = json.loads((onnx_enc._prepare().path / "export.json").read_text())
    assert info["source_fingerprint"] == torch_enc.fingerprint
    assert 0 <= info["max_cosine_distance"] == onnx_enc.max_cosine_distance < 1e-4
    assert isinstance(check_query_model(torch_enc, onnx_enc, allow=False), PairedEncoder)


def test_int8_is_a_different_model_for_the_guard(cache):
    torch_enc, int8_enc = _fresh(cache, "torch", "none"), _fresh(cache, "onnx", "int8")
    measured = int8_enc.max_cosine_distance
    ref, got = torch_enc.encode_documents(TEXTS), int8_enc.encode_documents(TEXTS)
    # the stored distance is what the probe set measured, not a bound on other texts: same order
    assert 1e-4 < measured < 0.1 and 1 - np.einsum("ij,ij->i", ref, got).min() < 0.1
    with pytest.raises(IndexMismatchError):
        check_query_model(torch_enc, int8_enc, allow=False)


# The CPU classes the int8 test runs under, forced where this machine allows: oneDNN (which runs
# OpenVINO's matrix products) honours ONEDNN_MAX_CPU_ISA, read once per process, so each class runs
# in a process of its own. A cap only lowers the ISA: AMX runs only on a CPU that has it.
CLASSES = {  # class -> ONEDNN_MAX_CPU_ISA (None: the CPU as it is)
    "amx": None,
    "avx512_vnni": "AVX512_CORE_VNNI",
    "avx512": "AVX512_CORE",
    "avx2": "AVX2",
}
# how each class's int8 products show in OpenVINO's runtime graph (primitiveType)
KERNELS = {"amx": "amx", "avx512_vnni": "brgemm_avx512", "avx512": "brgemm_avx512", "avx2": "gemm"}

_IN_CLASS = """
import collections, json, sys
from pathlib import Path
import numpy as np
import openvino as ov
from rageval.embedding import backends, runner
from rageval.embedding.batching import encode_stable
folder, name, precision, texts = json.loads(sys.argv[1])
numerics = backends.numerics("openvino", "int8", precision)
config = backends.openvino_config(numerics["precision"])
model = runner.DirectEncoderModel(Path(folder), name, "openvino", config)
vectors = encode_stable(model, texts, 4)
compiled = ov.Core().compile_model(str(Path(folder) / name), "CPU", config)
features = model.preprocess(texts[:2])
names = [p.get_any_name() for p in compiled.inputs]
compiled.create_infer_request().infer({k: features[k] for k in names})
kernels, precisions = set(), set()
for op in compiled.get_runtime_model().get_ordered_ops():
    info = op.get_rt_info()
    if info["layerType"].astype(str) == "FullyConnected":
        kernels.add(info["primitiveType"].astype(str))
    precisions.add(info["runtimePrecision"].astype(str))
print(json.dumps({"numerics": numerics, "kernels": sorted(kernels),
                  "precisions": sorted(precisions), "vectors": vectors.tolist()}))
"""


def skip_unless_forceable(cls: str, precision: str = "f32") -> str:
    """This CPU's class; skips the test when it cannot be forced into ``cls`` (checked before a
    test builds its export, so a class this CPU lacks costs nothing)."""
    from rageval.embedding.cpu import CLASSES as ORDER

    native = backends.isa_class("openvino", "int8", backends.openvino_precision(precision))
    if cls == "amx" and native != "amx":
        pytest.skip(
            "AMX cannot be forced on this CPU: ONEDNN_MAX_CPU_ISA only lowers the ISA, and this "
            f"CPU's class is {native}"
        )
    if ORDER.index(native) < ORDER.index(cls) or (native, cls) == ("avx2_vnni", "avx512"):
        pytest.skip(f"this CPU ({native}) has no {cls} instructions to force")
    return native


def _run_in_class(export, cls: str, precision: str = "f32") -> dict:
    """The int8 export's vectors of TEXTS, computed in a process forced into CPU class ``cls``
    (skipped when this CPU cannot be forced into it), with its numerics and runtime kernels."""
    import os
    import subprocess
    import sys

    native = skip_unless_forceable(cls, precision)
    env = {k: v for k, v in os.environ.items() if k != "ONEDNN_MAX_CPU_ISA"}
    if cls != native:  # the CPU's own class runs as it is
        env["ONEDNN_MAX_CPU_ISA"] = CLASSES[cls]
    arg = json.dumps([str(export.path), export.file_name, precision, TEXTS])
    out = subprocess.run(
        [sys.executable, "-c", _IN_CLASS, arg], capture_output=True, text=True, env=env
    )
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout.splitlines()[-1])


@pytest.mark.parametrize("cls", list(CLASSES))
def test_openvino_int8_quantizes_weights_and_activations_statically(cache, cls):
    """Every weighted matrix product of the int8 export reads int8 weights and activations
    through a FakeQuantize whose range is a constant of the graph (static quantization, not
    weight compression that leaves the products float), and it stays close to torch on every CPU
    class: AMX (only on a CPU with AMX: a cap cannot add it), AVX-512 VNNI, AVX-512 without VNNI
    and AVX2, each forced with ONEDNN_MAX_CPU_ISA, its float parts in f32."""
    import openvino as ov

    skip_unless_forceable(cls)
    enc = _fresh(cache, "openvino", "int8")
    export = enc._prepare()
    assert "static int8" in export.info["method"] and export.info["format"] == 4
    assert export.info["precision"] == "f32"
    graph = ov.Core().read_model(str(export.path / export.file_name))
    products = [op for op in graph.get_ordered_ops() if op.get_type_name() == "MatMul"]
    assert len(products) == 36  # 6 layers x (Q, K, V, attention output, two feed-forward)
    for op in products:
        activation = op.input_value(0).get_node()
        assert activation.get_type_name() == "FakeQuantize", op.get_friendly_name()
        ranges = [activation.input_value(i).get_node().get_type_name() for i in range(1, 5)]
        assert ranges == ["Constant"] * 4
        weight = op.input_value(1).get_node()
        while weight.get_type_name() != "Constant":
            weight = weight.input_value(0).get_node()
        assert weight.get_output_element_type(0).get_type_name() in ("i8", "u8")
    assert 0 < export.max_cosine_distance < 0.05
    found = _run_in_class(export, cls)
    # the class was forced: rageval names it, and the runtime ran its int8 kernels, all in f32
    assert found["numerics"]["isa"] == cls and found["numerics"]["precision"] == "f32"
    assert all(KERNELS[cls] in k and k.endswith(("I8", "i8")) for k in found["kernels"])
    assert "bf16" not in found["precisions"]
    ref = _fresh(cache, "torch", "none").encode_documents(TEXTS)
    got = np.asarray(found["vectors"], dtype=np.float32)
    assert np.einsum("ij,ij->i", ref, got).min() > 0.98
    if cls == enc.numerics()["isa"]:  # this process's own class: the product's path, same vectors
        assert np.abs(enc.encode_documents(TEXTS) - got).max() < 1e-6


def test_int8_with_bf16_float_parts_is_its_own_class_and_the_guard_measures_it(cache):
    """embedding.precision=bf16 with int8 (on a CPU with bf16: AVX512-BF16 or AMX): the float
    parts run in bf16 (on a CPU with AMX this took int8 to min cosine 0.91 to torch), under a
    cache key of their own, and the run-time check compares the run's first texts with the
    float model and records the figure, which must be the cosine it reports."""
    f32 = _fresh(cache, "openvino", "int8")
    enc = SentenceTransformerEncoder(
        cache_dir=str(cache), backend="openvino", quantize="int8", precision="bf16", progress=False
    )
    enc.cache.dir = cache / "vectors" / f"bf16-{np.random.default_rng().integers(1 << 62)}"
    if enc.numerics()["precision"] != "bf16":
        pytest.skip("this CPU has no bf16 instructions (AVX512-BF16 or AMX): bf16 runs as f32")
    assert enc.fingerprint != f32.fingerprint
    export = enc._prepare()
    assert export.info["precision"] == "bf16" and export.path != f32._prepare().path
    found = _run_in_class(export, enc.numerics()["isa"], "bf16")
    assert "bf16" in found["precisions"]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = enc.encode_documents(TEXTS)
    assert np.abs(got - np.asarray(found["vectors"], dtype=np.float32)).max() < 1e-6
    ref = _fresh(cache, "openvino", "none").encode_documents(TEXTS)  # the float model, f32
    cos = np.einsum("ij,ij->i", ref, got)
    assert enc.quality["texts"] == len(TEXTS)
    assert abs(enc.quality["min_cosine"] - cos.min()) < 1e-5
    assert enc.quality["passed"] == (cos.min() >= 0.98)
    assert any("quality check" in str(w.message) for w in caught) == (cos.min() < 0.98)


@pytest.mark.parametrize(
    ("backend", "quantize"),
    [("onnx", "none"), ("onnx", "int8"), ("openvino", "none"), ("openvino", "int8")],
)
def test_onnx_and_openvino_run_without_torch_and_equal_the_sentence_transformers_path(
    cache, backend, quantize
):
    import subprocess
    import sys

    from rageval.embedding import runner

    enc = _fresh(cache, backend, quantize)
    export = enc._prepare()
    plan = runner.read_runner(export.path)
    assert plan == {"direct": True, "max_seq_length": 256, "pooling": "mean", "normalize": True}
    direct = enc._vectors(enc._load(), TEXTS + [""])
    assert isinstance(enc._load(), runner.DirectEncoderModel)
    kwargs = {"file_name": export.file_name}
    if backend == "openvino":  # the precision rageval compiles with (f32 unless bf16 is asked for)
        kwargs["ov_config"] = backends.openvino_config(export.info["precision"])
    st = backends._st(export.path, backend, model_kwargs=kwargs)
    via_st = enc._vectors(st, TEXTS + [""])
    assert np.abs(direct - via_st).max() < 1e-6
    # a run on ready exports never imports torch, transformers or sentence-transformers; an int8
    # run's quality guard compares its first texts with the float export, so that one is ready too
    if quantize != "none":
        _fresh(cache, backend, "none")._prepare()
    code = (
        "import sys, pathlib, tempfile\n"
        "from rageval.embedding import SentenceTransformerEncoder\n"
        f"e = SentenceTransformerEncoder(cache_dir={str(cache)!r}, backend={backend!r}, "
        f"quantize={quantize!r}, progress=False)\n"
        "e.cache.dir = pathlib.Path(tempfile.mkdtemp())\n"
        "assert e.encode_documents(['a text', 'another']).shape == (2, 384)\n"
        "print(sorted({'torch', 'transformers', 'sentence_transformers'} & set(sys.modules)))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
