"""The run-time quality check of int8 and bf16 runs (embedding.quality_guard), on a deliberately
broken quantization: per-token int8 whose weights keep three levels (-1, 0, 1) instead of 255, so
its vectors drift far from the float model's; the check measures that drift on the run's own
texts, warns with the figure, or embeds with the float model instead."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from model_exports import copy_exports

from rageval.embedding import SentenceTransformerEncoder, onnx_graph
from rageval.errors import ConfigError

TEXTS = [
    "How many days of parental leave do contractors get?",
    "reset password",
    "The on-call engineer acknowledges a page within five minutes and posts a status update "
    "every thirty minutes until the incident is resolved.",
    "vpn not connecting",
    "kubectl rollout restart deployment/payments-api -n prod",
]


@pytest.fixture(scope="module")
def cache(tmp_path_factory, shared_cache):
    """A cache of its own: the broken export must never reach another test's cache. The float
    ONNX export is the session's (tests/support/model_exports.py); the int8 one is built here."""
    path = tmp_path_factory.mktemp("guard-cache")
    copy_exports(path, shared_cache, ("onnx", "none"))
    mp = pytest.MonkeyPatch()
    mp.setattr(onnx_graph, "int8_weight_max", lambda: 1)
    yield path
    mp.undo()


def _enc(cache, quantize="int8", **kw):
    return SentenceTransformerEncoder(
        cache_dir=str(cache), backend="onnx", quantize=quantize, progress=False, **kw
    )


def _run(enc, texts=TEXTS):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        vec = enc.encode_documents(texts)
    return vec, [str(w.message) for w in caught if "quality check" in str(w.message)]


def test_a_drifting_int8_run_warns_with_the_figure_then_falls_back_to_float(cache):
    float_vec = _enc(cache, "none").encode_documents(TEXTS)
    warned = _enc(cache)
    vec, messages = _run(warned)
    cos = np.einsum("ij,ij->i", vec, float_vec)
    assert cos.min() < 0.98  # the broken quantization drifts: the premise of this test
    # the check measured the run's own texts against the float model and says the figure
    assert warned.quality["texts"] == len(TEXTS) and not warned.quality["passed"]
    assert abs(warned.quality["min_cosine"] - cos.min()) < 1e-5
    assert warned.quality["action"] == "warned" and warned.numerics()["quantize"] == "int8"
    assert len(messages) == 1 and f"{cos.min():.4f}" in messages[0]
    assert "quality_guard=fallback" in messages[0]

    # fallback, another vector cache (the same exports): the check runs, the float model embeds
    (cache / "other").mkdir()
    (cache / "other" / "models").symlink_to(cache / "models")
    fallback = SentenceTransformerEncoder(
        cache_dir=str(cache / "other"),
        backend="onnx",
        quantize="int8",
        quality_guard="fallback",
        progress=False,
    )
    vec, messages = _run(fallback)
    assert np.abs(vec - float_vec).max() < 1e-5
    assert fallback.quality["action"] == "fallback" and len(messages) == 1
    assert fallback.numerics()["quantize"] == "none"
    assert fallback.fingerprint == _enc(cache / "other", "none").fingerprint

    # a later fallback run on the first cache, every vector cached: it knows the figure from
    # the cache, switches to the float model's vectors, and loads no model at all
    with pytest.warns(UserWarning, match="quality_guard=fallback: this run embeds with"):
        again = _enc(cache, quality_guard="fallback")
    assert again.numerics()["quantize"] == "none" and again.quality["action"] == "fallback"
    vec, _ = _run(again)
    assert np.abs(vec - float_vec).max() < 1e-5 and not again.model_loaded

    # off: no check, the int8 vectors as they are
    off = _enc(cache, quality_guard="off")
    off.cache.dir = cache / "off-vectors"
    vec, messages = _run(off)
    assert off.quality is None and not messages
    assert np.einsum("ij,ij->i", vec, float_vec).min() < 0.98


def test_a_float_run_is_not_checked_and_bad_settings_are_refused(cache):
    enc = _enc(cache, "none")
    enc.encode_documents(TEXTS[:2])
    assert enc.quality is None
    with pytest.raises(ConfigError, match="quality_guard must be one of warn, fallback, off"):
        _enc(cache, quality_guard="strict")
    with pytest.raises(ConfigError, match="quality_min_cosine"):
        _enc(cache, quality_min_cosine=1.5)
    with pytest.raises(ConfigError, match="precision=bf16 needs embedding.backend=openvino"):
        _enc(cache, precision="bf16")
