"""The run-time quality check of a reduced-precision encoder (``embedding.quality_guard``).

An int8 export's distance to the torch model is measured once, when it is built, on the machine
that built it (rageval.embedding.backends.PROBE_TEXTS). The vectors of an int8 or bf16 model also
depend on the CPU that runs it (its kernel class and the precision of its float parts), so a cache
of exports built on one CPU and read on another, or a runtime that changed its defaults, could
drift in silence. So the first texts every int8 or bf16 run embeds are also embedded by the same
backend's float model (f32), a few of them (:data:`SAMPLE`, spread over the batch's lengths), and
their cosines compared: below ``embedding.quality_min_cosine`` the run warns with the figure
(``quality_guard=warn``, the default), or goes on with the float model
(``quality_guard=fallback``); ``off`` skips the check. The figures are kept in the vector cache
(``quality.json``), so a later run whose vectors are all cached knows them without loading a model.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from rageval.errors import ConfigError
from rageval.formats.atomic import atomic_write_text

MODES = ("warn", "fallback", "off")
MIN_COSINE = (
    0.98  # the documented tolerance of int8 to its float model (docs/embedding-backends.md)
)
SAMPLE = 8
RECORD = "quality.json"


def check_mode(mode: str, min_cosine: float) -> None:
    """A ConfigError naming the valid values when ``mode`` or ``min_cosine`` is not one."""
    if mode not in MODES:
        raise ConfigError(
            f"embedding.quality_guard must be one of {', '.join(MODES)}, got {mode!r}"
        )
    try:
        ok = 0.0 < float(min_cosine) <= 1.0
    except (TypeError, ValueError):
        ok = False
    if not ok:
        raise ConfigError(
            f"embedding.quality_min_cosine must be a number in (0, 1], got {min_cosine!r}"
        )


def applies(numerics: dict) -> bool:
    """Whether an encoder of these numerics is checked: int8 or bf16 on an exported backend (a
    static model's float twin would need a second distillation, minutes; it is not checked)."""
    if numerics["backend"] not in ("onnx", "openvino"):
        return False
    return numerics["quantize"] == "int8" or numerics["precision"] == "bf16"


def sample(texts: Sequence[str], n: int = SAMPLE) -> list[str]:
    """Up to ``n`` distinct texts spread evenly over ``texts`` (a batch planned longest first:
    long and short ones both)."""
    distinct = list(dict.fromkeys(texts))
    if len(distinct) <= n:
        return distinct
    picks = np.linspace(0, len(distinct) - 1, n).round().astype(int)
    return [distinct[i] for i in sorted(set(picks.tolist()))]


def compare(got: np.ndarray, ref: np.ndarray, min_cosine: float) -> dict:
    """The row-wise cosines of two sets of unit vectors: their min and mean, and whether the min
    reaches ``min_cosine``."""
    cos = np.einsum("ij,ij->i", np.asarray(got, np.float64), np.asarray(ref, np.float64))
    worst = float(cos.min())
    return {
        "texts": len(cos),
        "min_cosine": worst,
        "mean_cosine": float(cos.mean()),
        "tolerance": float(min_cosine),
        "passed": bool(worst >= min_cosine),
    }


def read(cache_dir: Path) -> dict | None:
    """The figures a previous run stored beside this cache's vectors, if any."""
    try:
        found = json.loads((Path(cache_dir) / RECORD).read_text())
    except (OSError, ValueError):
        return None
    ok = isinstance(found, dict) and isinstance(found.get("min_cosine"), int | float)
    return found if ok else None


def write(cache_dir: Path, figures: dict) -> None:
    """Store the figures beside the cache's vectors (the cache folder is created if needed)."""
    Path(cache_dir).mkdir(parents=True, exist_ok=True)
    atomic_write_text(Path(cache_dir) / RECORD, json.dumps(figures, indent=2))


def message(description: str, figures: dict, against: str) -> str:
    """The warning of a check that failed: the figure, the tolerance, and what to do."""
    return (
        f"embedding quality check: {description} is at min cosine {figures['min_cosine']:.4f} "
        f"(mean {figures['mean_cosine']:.4f}) to {against} over {figures['texts']} of this run's "
        f"texts, below embedding.quality_min_cosine={figures['tolerance']}; its metrics are not "
        "comparable to the float model's. Set embedding.quality_guard=fallback to embed with the "
        "float model instead, or embedding.precision=f32 if you asked for bf16"
    )
