"""Per-token int8 on a small ONNX graph: batch-independent vectors, close to float, every weight
MatMul quantized, and the fused-graph rewrite leaving unknown model types alone."""

from __future__ import annotations

import numpy as np
import pytest

from rageval.embedding.onnx_graph import fuse_transformer, int8_weight_max, quantize_per_token

ort = pytest.importorskip("onnxruntime")
onnx = pytest.importorskip("onnx")


def _graph(path, rng):
    """x [batch, tokens, 8] -> MatMul 8x16 + bias -> Relu -> MatMul 16x4, and Q.Kᵀ of two
    activations (which stays float)."""
    from onnx import TensorProto, helper, numpy_helper

    w1 = rng.standard_normal((8, 16)).astype(np.float32)
    b1 = rng.standard_normal(16).astype(np.float32)
    w2 = rng.standard_normal((16, 4)).astype(np.float32)
    nodes = [
        helper.make_node("MatMul", ["x", "w1"], ["h"]),
        helper.make_node("Add", ["h", "b1"], ["hb"]),
        helper.make_node("Relu", ["hb"], ["r"]),
        helper.make_node("MatMul", ["r", "w2"], ["y"]),
        helper.make_node("Transpose", ["x"], ["xt"], perm=[0, 2, 1]),
        helper.make_node("MatMul", ["x", "xt"], ["gram"]),
    ]
    f = TensorProto.FLOAT
    graph = helper.make_graph(
        nodes,
        "tiny",
        [helper.make_tensor_value_info("x", f, ["b", "t", 8])],
        [
            helper.make_tensor_value_info("y", f, ["b", "t", 4]),
            helper.make_tensor_value_info("gram", f, ["b", "t", "t"]),
        ],
        [numpy_helper.from_array(a, n) for a, n in ((w1, "w1"), (b1, "b1"), (w2, "w2"))],
    )
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)]), str(path))


def _run(path, x):
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return sess.run(None, {"x": x})


@pytest.fixture
def models(tmp_path):
    rng = np.random.default_rng(7)
    src, dst = tmp_path / "f32.onnx", tmp_path / "int8.onnx"
    _graph(src, rng)
    assert quantize_per_token(src, dst) == 2  # the two weight MatMuls, not x.xᵀ
    return src, dst, rng


def test_a_text_gets_the_same_int8_output_alone_and_beside_a_loud_neighbour(models):
    src, dst, rng = models
    text = rng.standard_normal((1, 5, 8)).astype(np.float32)
    loud = 1000 * rng.standard_normal((1, 5, 8)).astype(np.float32)  # per-tensor scales move
    zeros = np.zeros((1, 5, 8), np.float32)
    alone = _run(dst, text)[0]
    batch = _run(dst, np.concatenate([loud, text, zeros]))[0]
    assert np.array_equal(alone[0], batch[1])
    # an all-zero text keeps finite scales (its first MatMul quantizes rows of zeros)
    assert np.isfinite(batch).all()
    assert np.allclose(batch[2], _run(src, zeros)[0][0], rtol=0.05, atol=0.05)


def test_int8_stays_close_to_float_and_leaves_activation_products_float(models):
    src, dst, rng = models
    x = rng.standard_normal((3, 6, 8)).astype(np.float32)
    (ref_y, ref_gram), (got_y, got_gram) = _run(src, x), _run(dst, x)
    assert np.array_equal(ref_gram, got_gram)
    rel = np.linalg.norm(got_y - ref_y) / np.linalg.norm(ref_y)
    assert 0 < rel < 0.02  # quantized (not a copy), within int8's rounding


def test_only_known_transformer_types_are_fused(models):
    src, _, _ = models
    before = src.read_bytes()
    assert fuse_transformer(src, "mpnet") == {}
    assert src.read_bytes() == before


def test_weight_range_fits_the_cpu():
    assert int8_weight_max() in (63, 127)
