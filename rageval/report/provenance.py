"""What a run's numbers stand on, and what changed beneath a change.

A run records (``provenance`` in report.json, copied into the baseline by ``rageval promote``):

- ``corpus``: a digest per document (its id -> sha256 of its text, the first 16 hex digits; a
  corpus of more than :data:`MAX_ENTRIES` documents records its count and overall digest only);
- ``golden``: a digest per golden query (its id -> sha256 of its canonical entry: text, labels,
  source, tags, meta) and the golden set's digest;
- ``judgements``: the digest of the judgements the label set counted;
- ``embedding``: the model's fingerprint and the environment that shapes its vectors: backend,
  quantization, precision, the CPU class where a backend's kernels depend on it, the versions of
  the libraries that compute them, and the encoder's own ``numerics()`` when it has one; None for
  a run whose retriever embeds nothing (BM25).

:func:`diff` names in plain words what differs between two such records, e.g.
``corpus: 1 document added (notes/gate), 0 removed, 0 changed``. Everything here is plain JSON
data: no path outside the project, no code.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from importlib import metadata
from typing import Any

MAX_ENTRIES = 20_000  # per-document (per-query) digests above this count are not recorded
SHOWN = 3  # names listed per kind of change before "and N more"
NOT_RECORDED = "not recorded"
# the libraries whose versions shape the vectors of each backend (distribution names)
LIBRARIES = {
    "torch": ("torch", "sentence-transformers", "transformers"),
    "onnx": ("onnxruntime", "optimum", "transformers"),
    "openvino": ("openvino", "optimum-intel", "nncf", "transformers"),
    "static": ("model2vec",),
}
INDEX_LIBRARIES = ("faiss-cpu", "numpy")


def text_digest(text: str) -> str:
    """The first 16 hex digits of sha256 over ``text`` (UTF-8)."""
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _entries(items: Mapping[str, str], overall: str) -> dict[str, Any]:
    block: dict[str, Any] = {"count": len(items), "digest": overall}
    if len(items) <= MAX_ENTRIES:
        block["entries"] = dict(sorted(items.items()))
    return block


def corpus_block(docs: Sequence[Any], overall: str) -> dict[str, Any]:
    """Per-document digests of ``docs`` (``Document``s) and the corpus digest ``overall``."""
    if len(docs) > MAX_ENTRIES:  # not hashed twice only to be left out
        return {"count": len(docs), "digest": overall}
    return _entries({d.id: text_digest(d.text) for d in docs}, overall)


def golden_block(golden: Any) -> dict[str, Any]:
    """Per-query digests of a ``GoldenSet``'s entries and its digest."""
    from rageval.inputs.golden import entry_to_dict

    items = {
        q.id: text_digest(json.dumps(entry_to_dict(q), sort_keys=True, ensure_ascii=False))
        for q in golden.queries
    }
    return _entries(items, golden.digest)


def cpu_class() -> str | None:
    """The CPU's class as the embedding kernels see it: ``amx``, ``avx512_vnni``, ``avx512``,
    ``avx2`` or ``other`` (None: unknown, not Linux)."""
    from rageval.embedding.cpu import cpu_flags

    flags = cpu_flags()
    if flags is None:
        return None
    for name, needs in (
        ("amx", ("amx_bf16", "amx_tile")),
        ("avx512_vnni", ("avx512_vnni",)),
        ("avx512", ("avx512f",)),
        ("avx2", ("avx2",)),
    ):
        if any(f in flags for f in needs):
            return name
    return "other"


def _versions(names: Sequence[str]) -> dict[str, str]:
    out = {}
    for name in names:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return out


def embedding_block(encoder: Any) -> dict[str, Any]:
    """The encoder's fingerprint and the environment that shapes its vectors (see the module
    docstring); an encoder's ``numerics()`` (a plain dict) is recorded as it gives it."""
    backend = str(getattr(encoder, "backend", "") or "")
    quantize = str(getattr(encoder, "quantize", "") or "")
    block: dict[str, Any] = {
        "fingerprint": str(getattr(encoder, "fingerprint", "") or ""),
        "description": str(getattr(encoder, "description", "") or type(encoder).__name__),
    }
    if backend:
        from rageval.embedding.backends import BACKENDS, numerics

        block["backend"] = backend
        block["quantize"] = quantize = quantize or "none"
        if backend in BACKENDS:  # rageval's own: the precision its float parts run in here
            requested = str(getattr(encoder, "precision", "") or "f32")
            block["precision"] = numerics(backend, quantize, requested)["precision"]
        block["cpu"] = cpu_class()
    libs = (*LIBRARIES.get(backend, ()), *INDEX_LIBRARIES)
    block["versions"] = _versions(list(dict.fromkeys(libs)))
    numerics = getattr(encoder, "numerics", None)
    if callable(numerics):
        value = numerics()
        if isinstance(value, Mapping):
            block["numerics"] = json.loads(json.dumps(dict(value), default=str))
    return block


def record(
    corpus: Mapping[str, Any], golden: Any, judgements_digest: str, encoder: Any | None
) -> dict[str, Any]:
    """A run's provenance block (see the module docstring) from its :func:`corpus_block`, its
    ``GoldenSet``, the judgements' digest and its encoder (None: the run embeds nothing)."""
    return {
        "corpus": dict(corpus),
        "golden": golden_block(golden),
        "judgements": {"digest": judgements_digest},
        "embedding": embedding_block(encoder) if encoder is not None else None,
    }


def _names(ids: Sequence[str]) -> str:
    shown = ", ".join(sorted(ids)[:SHOWN])
    return shown + (f" and {len(ids) - SHOWN} more" if len(ids) > SHOWN else "")


def _plural(unit: str) -> str:
    return "queries" if unit == "query" else f"{unit}s"


def _set_diff(what: str, unit: str, old: Mapping[str, Any], new: Mapping[str, Any]) -> list[str]:
    """``corpus: 1 document added (x), 0 removed, 2 changed (a, b)``, or [] when equal."""
    if old.get("digest") == new.get("digest"):
        return []
    a, b = old.get("entries"), new.get("entries")
    if not isinstance(a, Mapping) or not isinstance(b, Mapping):
        return [
            f"{what}: changed (digest {str(old.get('digest'))[:12]} -> "
            f"{str(new.get('digest'))[:12]}; {old.get('count')} -> {new.get('count')} "
            f"{_plural(unit)}, per-entry digests not recorded)"
        ]
    added = [k for k in b if k not in a]
    removed = [k for k in a if k not in b]
    changed = [k for k in a if k in b and a[k] != b[k]]

    def named(ids: list[str]) -> str:
        return f" ({_names(ids)})" if ids else ""

    noun = unit if len(added) == 1 else _plural(unit)
    text = (
        f"{len(added)} {noun} added{named(added)}, {len(removed)} removed{named(removed)}, "
        f"{len(changed)} changed{named(changed)}"
    )
    if not (added or removed or changed):  # same entries, another digest: the ids' order/format
        text = f"digest {str(old.get('digest'))[:12]} -> {str(new.get('digest'))[:12]}"
    return [f"{what}: {text}"]


def _flat(value: Any, prefix: str = "") -> dict[str, Any]:
    """A nested mapping as ``{"versions.torch": "2.13.0", ...}``."""
    if not isinstance(value, Mapping):
        return {prefix[:-1]: value} if prefix else {}
    out: dict[str, Any] = {}
    for k, v in value.items():
        out.update(_flat(v, f"{prefix}{k}."))
    return out


def _embedding_diff(old: Mapping[str, Any] | None, new: Mapping[str, Any] | None) -> list[str]:
    """``embedding: backend torch -> onnx, quantize none -> int8, ...`` (one line), or []."""
    if old is None and new is None:
        return []
    if old is None or new is None:
        side = "the baseline" if old is None else "this run"
        return [f"embedding: {side} embeds nothing (no vector search)"]
    parts = []
    if old.get("fingerprint") != new.get("fingerprint"):
        parts.append(
            f"model fingerprint {str(old.get('fingerprint'))[:12]} -> "
            f"{str(new.get('fingerprint'))[:12]} ({old.get('description')} -> "
            f"{new.get('description')})"
        )
    for key in ("backend", "quantize", "precision", "cpu"):
        if key in old and key in new and old[key] != new[key]:
            parts.append(f"{key} {old[key]} -> {new[key]}")
    va, vb = old.get("versions") or {}, new.get("versions") or {}
    parts += [f"{n} {va[n]} -> {vb[n]}" for n in sorted(va.keys() & vb.keys()) if va[n] != vb[n]]
    na, nb = _flat(old.get("numerics")), _flat(new.get("numerics"))
    if old.get("numerics") is not None and new.get("numerics") is not None and na != nb:
        keys = sorted(k for k in set(na) | set(nb) if na.get(k) != nb.get(k))
        for k in keys:  # a change said above already (precision, a version) is said once
            text = f"{k} {na.get(k, '-')} -> {nb.get(k, '-')}"
            if f"{k.rsplit('.', 1)[-1]} {na.get(k, '-')} -> {nb.get(k, '-')}" not in parts:
                parts.append(text)
    return [f"embedding: {', '.join(parts)}"] if parts else []


def diff(old: Mapping[str, Any] | None, new: Mapping[str, Any] | None) -> list[str]:
    """What differs between two provenance blocks, one plain line per change (corpus, golden
    set, judgements, embedding); [] when nothing does, or when neither side records one. A side
    that records none says so (a baseline promoted before rageval recorded it)."""
    if not old and not new:
        return []
    if not old or not new:
        side = "the baseline" if not old else "this run"
        return [
            f"provenance: {NOT_RECORDED} for {side} (corpus, golden set, judgements and "
            "embedding cannot be compared; re-promote the baseline to record them)"
        ]
    lines = _set_diff("corpus", "document", old.get("corpus") or {}, new.get("corpus") or {})
    lines += _set_diff("golden set", "query", old.get("golden") or {}, new.get("golden") or {})
    ja, jb = (
        (old.get("judgements") or {}).get("digest"),
        (new.get("judgements") or {}).get("digest"),
    )
    if ja != jb:
        lines.append(f"judgements: digest {str(ja)[:12]} -> {str(jb)[:12]}")
    lines += _embedding_diff(old.get("embedding"), new.get("embedding"))
    return lines
