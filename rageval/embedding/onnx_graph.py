"""Rewrites of an exported ONNX encoder: fused transformer kernels, and per-token int8.

Both take an ONNX file written by sentence-transformers' exporter and write another; they run
once, when rageval exports a model into its cache (rageval.embedding.backends).

:func:`fuse_transformer` replaces the exported graph's attention, layer-norm and GELU sub-graphs
with ONNX Runtime's fused CPU kernels (its ``onnxruntime.transformers`` optimizer), the same maths
in fewer passes over memory.

:func:`quantize_per_token` is rageval's int8: **dynamic quantization per token**. ONNX Runtime's
own dynamic quantization scales a MatMul's input by the largest value of the whole tensor, i.e.
of every text in the batch, so a text's vector depends on its batch-mates. Here every MatMul with
a weight matrix gets:

- weights: int8, symmetric, one scale per output column (``max |w| / 127``), computed once;
- activations: quantized at run time with one scale per token (per row of the MatMul's input:
  ``max |x| / 127`` over that row alone) to uint8 around a zero point of 128, by ONNX's blocked
  ``QuantizeLinear`` (one block = one row);
- an int8 product (``MatMulIntegerToFloat``: VNNI/AMX kernels where the CPU has them) rescaled by
  the column scales inside the kernel and by the token's scale after it.

A token's scale depends on that token's activations alone, and the integer product is exact, so
a text's vector is the same in any batch, at full batch speed. The attention products of two
activations (Q·Kᵀ, softmax·V) stay float.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np

# model types whose graphs ONNX Runtime's transformer optimizer fuses (BERT-style encoders)
FUSABLE = {"bert": "bert"}
QUANTIZED_OPSET = 21  # blocked QuantizeLinear


def fuse_transformer(path: Path, model_type: str) -> dict[str, int]:
    """Rewrite ``path`` in place with ONNX Runtime's fused transformer kernels; returns the count
    of each fused operator ({} when the model type is not one the optimizer knows: left as is)."""
    kind = FUSABLE.get(model_type)
    if kind is None:
        return {}
    import onnxruntime.transformers as ort_transformers

    # the optimizer imports its siblings by bare name from the folder the package's __init__
    # appended to sys.path once; a host that restored sys.path since (a test runner, an
    # embedding application) would fail with "No module named 'fusion_options'"
    folder = os.path.dirname(ort_transformers.__file__)
    if folder not in sys.path:
        sys.path.append(folder)
    from onnxruntime.transformers import optimizer

    # num_heads/hidden_size 0: read from the graph; opt_level 0: only the portable fusions are
    # saved, ONNX Runtime applies its own graph optimisations when it loads the file
    model = optimizer.optimize_model(
        str(path), model_type=kind, num_heads=0, hidden_size=0, opt_level=0, use_gpu=False
    )
    stats = {k: int(v) for k, v in model.get_fused_operator_statistics().items() if v}
    model.save_model_to_file(str(path))
    return stats


def quantize_per_token(src: Path, dst: Path, weight_max: int = 127) -> int:
    """Write ``src`` to ``dst`` with every weight MatMul in int8, activations scaled per token
    (see the module docstring); returns how many MatMuls were quantized. ``weight_max`` 63 keeps
    the products in range on x86 CPUs without VNNI (ONNX Runtime's "reduce range")."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    model = onnx.load(str(src))
    graph = model.graph
    weights = {i.name: i for i in graph.initializer}
    consts = {
        "rq_inv_max": np.array(1.0 / 127, np.float32),
        "rq_tiny": np.array(1e-30, np.float32),  # an all-zero row keeps a finite scale
        "rq_last_axis": np.array([-1], np.int64),
        "rq_zero": np.array(0.0, np.float32),
        "rq_one": np.array(1.0, np.float32),
        "rq_zp_f": np.array(128.0, np.float32),
        "rq_zp": np.array(128, np.uint8),
    }
    nodes, scaled, dropped, count = [], {}, set(), 0
    for node in graph.node:
        w = weights.get(node.input[1]) if node.op_type == "MatMul" else None
        if w is None or len(w.dims) != 2:
            nodes.append(node)
            continue
        x, name = node.input[0], node.output[0]
        wf = numpy_helper.to_array(w).astype(np.float32)
        w_scale = np.maximum(np.abs(wf).max(axis=0), 1e-30) / weight_max
        wq = np.clip(np.round(wf / w_scale), -weight_max, weight_max).astype(np.int8)
        if x not in scaled:  # Q, K and V share one input: quantize it once
            q = f"{x}/rq"
            nodes += [
                helper.make_node("Abs", [x], [q + "/abs"]),
                helper.make_node(
                    "ReduceMax", [q + "/abs", "rq_last_axis"], [q + "/max"], keepdims=1
                ),
                helper.make_node("Max", [q + "/max", "rq_tiny"], [q + "/max1"]),
                helper.make_node("Mul", [q + "/max1", "rq_inv_max"], [q + "/scale"]),
                # the zero point must have the scale's (dynamic) shape for blocked quantization
                helper.make_node("Mul", [q + "/scale", "rq_zero"], [q + "/z0"]),
                helper.make_node("Add", [q + "/z0", "rq_zp_f"], [q + "/z1"]),
                helper.make_node("Cast", [q + "/z1"], [q + "/zp"], to=TensorProto.UINT8),
                helper.make_node(
                    "QuantizeLinear",
                    [x, q + "/scale", q + "/zp"],
                    [q + "/u8"],
                    axis=-1,
                    block_size=int(wf.shape[0]),
                ),
            ]
            scaled[x] = q
        q = scaled[x]
        consts[w.name + "/q8"] = wq
        consts[w.name + "/scale"] = w_scale.astype(np.float32)
        dropped.add(w.name)
        nodes += [
            helper.make_node(
                "MatMulIntegerToFloat",
                [q + "/u8", w.name + "/q8", "rq_one", w.name + "/scale", "rq_zp"],
                [name + "/rq"],
                domain="com.microsoft",
            ),
            helper.make_node("Mul", [name + "/rq", q + "/scale"], [name]),
        ]
        count += 1
    del graph.node[:]
    graph.node.extend(nodes)
    kept = [i for i in graph.initializer if i.name not in dropped]
    del graph.initializer[:]
    graph.initializer.extend(kept + [numpy_helper.from_array(v, k) for k, v in consts.items()])
    for opset in model.opset_import:
        if opset.domain in ("", "ai.onnx"):
            opset.version = max(opset.version, QUANTIZED_OPSET)
    if not any(o.domain == "com.microsoft" for o in model.opset_import):
        model.opset_import.append(helper.make_opsetid("com.microsoft", 1))
    onnx.save(model, str(dst))
    return count


def int8_weight_max() -> int:
    """127, or 63 on x86 CPUs without VNNI, whose uint8 x int8 kernels saturate in int16."""
    import platform

    from rageval.embedding.cpu import cpu_flags

    if platform.machine().lower() not in ("x86_64", "amd64", "i386", "i686"):
        return 127
    flags = cpu_flags()
    if flags is None:
        return 63
    return 127 if flags & {"avx512_vnni", "avx_vnni", "amx_int8"} else 63
