"""Model exports built once a session and copied into a module's own cache.

An ONNX export of the packaged model takes ~5 s of CPU to build and measure, its int8 variant
~3 s more; three modules need them, two of which keep a cache of their own (one breaks its int8
export on purpose). :func:`copy_exports` builds each export in the session's shared cache, under
the export lock rageval itself takes (so parallel test workers build it once), and copies the
sealed folder into the module's cache, where rageval checks its checksums before loading it as
it would any export it built there.
"""

from __future__ import annotations

import os
import shutil
import uuid
from pathlib import Path


def copy_exports(cache: Path, shared: Path, *variants: tuple[str, str]) -> None:
    """Put the (backend, quantize) exports of the packaged model into ``cache``, built once in
    ``shared`` (the session's cache)."""
    from rageval.embedding import SentenceTransformerEncoder

    for backend, quantize in variants:
        built = SentenceTransformerEncoder(
            cache_dir=str(shared), backend=backend, quantize=quantize, progress=False
        )._prepare()
        target = Path(cache) / built.path.relative_to(shared)
        if target.exists():
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.parent / f".{target.name}.{os.getpid()}-{uuid.uuid4().hex[:8]}.tmp"
        shutil.copytree(built.path, tmp)
        os.rename(tmp, target)


def onnx_encoder(cache: Path, shared: Path, **kw):
    """An encoder on the cache ``cache`` running the ONNX export copied from ``shared`` (the
    session's cache); ``kw`` goes to SentenceTransformerEncoder."""
    from rageval.embedding import SentenceTransformerEncoder

    copy_exports(cache, shared, ("onnx", "none"))
    return SentenceTransformerEncoder(
        cache_dir=str(cache), backend="onnx", **{"progress": False, **kw}
    )
