"""Reaching Qdrant: the client import with its install hint, a client on a folder, in memory or on
a server, a masked description of where that is, and the name of a throwaway collection."""

from __future__ import annotations

import hashlib
import os
import re
import uuid
from typing import Any

from rageval.errors import RagevalError, install_hint

INSTALL_HINT = install_hint("qdrant")


def qdrant_module() -> Any:
    """Import qdrant_client, or say how to install it."""
    try:
        import qdrant_client
    except ImportError as exc:
        raise RagevalError(f"the qdrant backend needs qdrant-client: {INSTALL_HINT}") from exc
    return qdrant_client


def connect(
    location: str, path: str | None, url: str | None, api_key_env: str | None, embedded: bool
) -> Any:
    """A QdrantClient on the folder ``path``, in memory when ``embedded``, else on the server at
    ``url`` (or ``location``) with the API key from ``api_key_env``."""
    client_class = qdrant_module().QdrantClient
    if path:
        return client_class(path=str(path))
    if embedded:
        return client_class(location=":memory:")
    # the key goes straight to the client: never stored, never logged
    key = os.environ.get(api_key_env) if api_key_env else None
    target = {"url": url} if url else {"location": location}
    return client_class(**target, api_key=key or None)


def describe(location: str, path: str | None, url: str | None, embedded: bool) -> str:
    """Where the collection lives, for messages (credentials in a URL are masked)."""
    if path:
        return f"path={path}"
    if embedded:
        return "in memory"
    return "server " + re.sub(r"//[^@/]*@", "//***@", url or location)


def throwaway_name(run_key: str | None) -> str:
    """``rageval-<run_key slug>-<sha>`` for a sweep job, else ``rageval-<random>``."""
    if run_key is None:
        return f"rageval-{uuid.uuid4().hex[:12]}"
    slug = re.sub(r"[^A-Za-z0-9_-]+", "-", run_key)[:48].strip("-")
    return f"rageval-{slug}-{hashlib.sha256(run_key.encode()).hexdigest()[:8]}"
