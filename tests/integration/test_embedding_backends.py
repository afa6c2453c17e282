"""Every backend with the packaged all-MiniLM-L6-v2: vectors independent of their batch, onnx fp32
equal to torch, and the guard's tolerance measured at export time."""

from __future__ import annotations

import json

import numpy as np
import pytest

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
def cache(tmp_path_factory):
    return tmp_path_factory.mktemp("backends-cache")


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


def test_openvino_int8_quantizes_weights_and_activations_statically(cache):
    """Every weighted matrix product of the int8 export reads int8 weights and activations
    through a FakeQuantize whose range is a constant of the graph (static quantization, not
    weight compression that leaves the products float), and it stays close to torch."""
    import openvino as ov

    enc = _fresh(cache, "openvino", "int8")
    export = enc._prepare()
    assert "static int8" in export.info["method"] and export.info["format"] == 3
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
    ref = _fresh(cache, "torch", "none").encode_documents(TEXTS)
    got = enc.encode_documents(TEXTS)
    assert np.einsum("ij,ij->i", ref, got).min() > 0.98
    assert 0 < export.max_cosine_distance < 0.05


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
    # a run on a ready export never imports torch, transformers or sentence-transformers
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
