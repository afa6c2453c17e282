"""The run-time quality check's parts: which runs it applies to, the texts it samples, its figures
and the record it keeps beside the cache."""

from __future__ import annotations

import numpy as np
import pytest

from rageval.embedding import quality
from rageval.errors import ConfigError


def test_only_int8_and_bf16_runs_of_an_exported_backend_are_checked():
    def n(backend, quantize="none", precision="f32"):
        return {"backend": backend, "quantize": quantize, "precision": precision}

    assert quality.applies(n("openvino", "int8"))
    assert quality.applies(n("onnx", "int8"))
    assert quality.applies(n("openvino", "none", "bf16"))
    assert not quality.applies(n("openvino"))
    assert not quality.applies(n("torch"))
    assert not quality.applies(n("static", "int8"))


def test_the_sample_spreads_over_the_batch_and_keeps_each_text_once():
    texts = [f"t{i}" for i in range(100)]
    picked = quality.sample(texts, 8)
    assert len(picked) == 8 and picked[0] == "t0" and picked[-1] == "t99"
    assert quality.sample(["a", "b", "a"], 8) == ["a", "b"]


def test_the_figures_are_the_row_cosines_against_the_tolerance():
    ref = np.eye(3, dtype=np.float32)
    got = ref.copy()
    got[1] = [0.6, 0.8, 0.0]  # cosine 0.8 to its reference row
    f = quality.compare(got, ref, 0.98)
    assert f["texts"] == 3 and abs(f["min_cosine"] - 0.8) < 1e-6
    assert abs(f["mean_cosine"] - (2.8 / 3)) < 1e-6 and not f["passed"]
    assert quality.compare(ref, ref, 0.98)["passed"]
    assert "0.8000" in quality.message("m int8", f, "m float")


def test_bad_settings_name_the_key_and_the_values(tmp_path):
    quality.check_mode("fallback", 0.99)
    with pytest.raises(ConfigError, match="warn, fallback, off"):
        quality.check_mode("loud", 0.98)
    for bad in (0, 1.5, "x"):
        with pytest.raises(ConfigError, match="quality_min_cosine"):
            quality.check_mode("warn", bad)


def test_the_record_is_read_back_and_junk_is_ignored(tmp_path):
    assert quality.read(tmp_path) is None
    quality.write(tmp_path / "c", {"min_cosine": 0.9, "passed": False})
    assert quality.read(tmp_path / "c")["min_cosine"] == 0.9
    (tmp_path / "c" / quality.RECORD).write_text("{not json")
    assert quality.read(tmp_path / "c") is None
