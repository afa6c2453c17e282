"""The embedding canary: a few fixed texts whose vectors show when the embedding moved.

A model's fingerprint covers its files, not the numbers they produce: a CPU with other kernels
(AMX's bf16 against AVX2's f32), a library upgrade or a hosted model its provider updated gives
other vectors under the same fingerprint. So every run that embeds also embeds a small fixed set
of texts (:func:`choose`: up to 16 golden queries and 16 passages, the first
:data:`PASSAGE_CHARS` characters of documents, both picked by the sha256 of their ids, so any
run on the same golden set and corpus picks the same texts, whatever its chunking) through the
embedding cache (milliseconds once cached) and records their vectors in report.json
(``canary``). ``rageval promote`` moves the vectors into a sibling file of the baseline
(``baseline.canary.npy``, float32, read without pickle, its sha256 in baseline.json), and the
gate compares the texts both sides hold (:func:`drift`): a smallest cosine below
``1 - NOISE`` says the embedding changed since the baseline.
"""

from __future__ import annotations

import base64
import hashlib
import heapq
import io
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

N_TEXTS = 32
PASSAGE_CHARS = 1000
# float noise: batch composition and thread count move a cosine by ~1e-6; a changed precision,
# kernel or model by 1e-3 and more
NOISE = 1e-4


@dataclass(frozen=True, slots=True)
class CanaryText:
    """One canary text: ``query:<id>`` or ``passage:<doc id>``, and its text."""

    id: str
    text: str

    @property
    def is_query(self) -> bool:
        """Embedded as a query (with the query prompt) rather than as a passage."""
        return self.id.startswith("query:")


def _order(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def choose(queries: Sequence[Any], docs: Sequence[Any], n: int = N_TEXTS) -> list[CanaryText]:
    """Up to ``n`` texts: half golden queries (``GoldenQuery``), the rest document openings
    (``Document``), each picked in the order of its id's sha256 (see the module docstring)."""
    picked = heapq.nsmallest(n // 2, queries, key=lambda q: _order(q.id))
    out = [CanaryText(f"query:{q.id}", q.query) for q in picked]
    texts = heapq.nsmallest(
        n - len(out), (d for d in docs if d.text.strip()), key=lambda d: _order(d.id)
    )
    out += [CanaryText(f"passage:{d.id}", d.text[:PASSAGE_CHARS]) for d in texts]
    return out


def text_digest(text: str) -> str:
    """The first 16 hex digits of sha256 over ``text``."""
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def measure(encoder: Any, texts: Sequence[CanaryText]) -> dict[str, Any]:
    """The canary block of a run: each text's id and digest, the encoder's fingerprint and the
    texts' vectors (``vectors``: :func:`pack`), queries embedded as queries, passages as
    documents, through the encoder (and so its cache)."""
    queries = [t for t in texts if t.is_query]
    passages = [t for t in texts if not t.is_query]
    parts = []
    if queries:
        parts.append(np.asarray(encoder.encode_queries([t.text for t in queries]), np.float32))
    if passages:
        parts.append(np.asarray(encoder.encode_documents([t.text for t in passages]), np.float32))
    ordered = [*queries, *passages]
    vectors = np.concatenate(parts) if parts else np.zeros((0, 0), np.float32)
    return {
        "fingerprint": str(getattr(encoder, "fingerprint", "") or ""),
        "texts": [{"id": t.id, "sha256": text_digest(t.text)} for t in ordered],
        "vectors": pack(vectors),
    }


def pack(vectors: np.ndarray) -> dict[str, Any]:
    """``vectors`` as JSON data: float32 little-endian bytes in base64, with their shape."""
    arr = np.ascontiguousarray(vectors, dtype="<f4")
    return {
        "dtype": "float32",
        "shape": list(arr.shape),
        "base64": base64.b64encode(arr.tobytes()).decode("ascii"),
    }


def unpack(data: Mapping[str, Any]) -> np.ndarray:
    """The array :func:`pack` wrote; ValueError when the data does not describe one."""
    shape = [int(x) for x in data.get("shape") or ()]
    if data.get("dtype") != "float32" or len(shape) != 2:
        raise ValueError("not a float32 matrix")
    raw = base64.b64decode(str(data.get("base64") or ""), validate=True)
    if len(raw) != 4 * shape[0] * shape[1]:
        raise ValueError(f"{len(raw)} bytes for a matrix of shape {shape}")
    return np.frombuffer(raw, dtype="<f4").reshape(shape).astype(np.float32)


def sibling_path(baseline: str | Path) -> Path:
    """``golden/baseline.json`` -> ``golden/baseline.canary.npy``."""
    p = Path(baseline)
    return p.with_name(f"{p.stem}.canary.npy")


def to_file(block: Mapping[str, Any], baseline: str | Path) -> dict[str, Any]:
    """Write the block's vectors to the baseline's sibling ``.npy`` (atomically); the block as
    baseline.json holds it: the file's name and sha256 instead of the vectors."""
    from rageval.formats.atomic import atomic_write_bytes

    vectors = unpack(block["vectors"])
    buf = io.BytesIO()
    np.save(buf, vectors, allow_pickle=False)
    raw = buf.getvalue()
    path = sibling_path(baseline)
    atomic_write_bytes(path, raw)
    kept = {k: v for k, v in block.items() if k != "vectors"}
    return {**kept, "file": path.name, "sha256": hashlib.sha256(raw).hexdigest()}


def from_file(block: Mapping[str, Any], baseline: str | Path) -> dict[str, Any]:
    """The baseline's canary block with its vectors read back from the sibling file; a file
    that is missing, unreadable or not the one baseline.json names leaves the block without
    vectors and a ``problem`` saying why (the canary is then not compared: it never blocks)."""
    path = Path(baseline).with_name(str(block.get("file") or ""))
    out = dict(block)
    try:
        raw = path.read_bytes()
    except OSError as err:
        out["problem"] = f"{path.name} is missing ({err.strerror or err}); commit it or re-promote"
        return out
    if hashlib.sha256(raw).hexdigest() != block.get("sha256"):
        out["problem"] = f"{path.name} does not match its baseline (sha256); re-promote"
        return out
    try:
        arr = np.load(io.BytesIO(raw), allow_pickle=False)
        if arr.ndim != 2 or arr.shape[0] != len(block.get("texts") or ()):
            raise ValueError(f"shape {arr.shape}")
    except ValueError as err:
        out["problem"] = f"{path.name} is not the canary's vectors ({err}); re-promote"
        return out
    out["vectors"] = pack(arr)
    return out


def _vectors(block: Mapping[str, Any] | None) -> tuple[dict[str, int], np.ndarray] | str:
    """(text key -> row, vectors) of a block, or why it cannot be compared."""
    if not block:
        return "not recorded"
    if block.get("problem"):
        return str(block["problem"])
    try:
        vec = unpack(block.get("vectors") or {})
    except (ValueError, TypeError) as err:
        return f"its vectors are unreadable ({err})"
    rows = {f"{t['id']}|{t['sha256']}": i for i, t in enumerate(block.get("texts") or [])}
    if len(rows) != len(vec):
        return "its texts and vectors disagree"
    return rows, vec


def drift(baseline: Mapping[str, Any] | None, current: Mapping[str, Any] | None) -> dict[str, Any]:
    """The canary's verdict between two reports' canary blocks: ``status`` (``unchanged``,
    ``changed``, ``skipped``, ``not_recorded`` or ``not_compared``), ``texts`` compared,
    ``min_cosine`` and the ``line`` a console and gate.md print."""
    if current is None and baseline is not None:
        return _verdict(
            "skipped", "embedding canary: skipped (this run embeds nothing: no vector search)"
        )
    if baseline is None and current is None:
        return _verdict(
            "skipped", "embedding canary: skipped (neither run embeds: no vector search)"
        )
    old, new = _vectors(baseline), _vectors(current)
    if old == "not recorded":
        return _verdict(
            "not_recorded",
            "embedding canary: not recorded in the baseline (re-promote it to record one)",
        )
    if isinstance(old, str) or isinstance(new, str):
        why = old if isinstance(old, str) else f"this run's canary: {new}"
        return _verdict("not_compared", f"embedding canary: not compared ({why})")
    (ra, va), (rb, vb) = old, new
    shared = [k for k in ra if k in rb]
    if not shared:
        return _verdict(
            "not_compared",
            f"embedding canary: not compared (none of the "
            f"baseline's {len(ra)} canary texts is unchanged in this run's inputs)",
        )
    mix = "the comparison mixes it with your change"
    if va.shape[1] != vb.shape[1]:
        return _verdict(
            "changed",
            f"embedding changed since the baseline: vectors of "
            f"{vb.shape[1]} dimensions, the baseline's {va.shape[1]} "
            f"({len(shared)} canary texts); {mix}",
            len(shared),
            0.0,
        )
    a = va[[ra[k] for k in shared]].astype(np.float64)
    b = vb[[rb[k] for k in shared]].astype(np.float64)
    norms = np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1)
    cos = np.einsum("ij,ij->i", a, b) / np.where(norms > 0, norms, 1.0)
    low = float(cos.min())
    if low < 1.0 - NOISE:
        shown = f"{low:.3f}" if low < 0.999 else f"{low:.6f}"
        line = (
            f"embedding changed since the baseline: min cosine {shown} over "
            f"{len(shared)} canary texts; {mix}"
        )
        return _verdict("changed", line, len(shared), low)
    line = (
        f"embedding canary: {len(shared)} texts within float noise of the baseline's "
        f"(min cosine {low:.6f})"
    )
    return _verdict("unchanged", line, len(shared), low)


def _verdict(status: str, line: str, texts: int = 0, low: float | None = None) -> dict[str, Any]:
    return {"status": status, "line": line, "texts": texts, "min_cosine": low}
