"""The Azure AI Search SDK clients rageval uses, and the name and definition of a throwaway index.

The API key is read from its environment variable each time a credential is built; it is never
stored, logged or put into an error message.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from rageval.errors import RagevalError, install_hint

log = logging.getLogger(__name__)

INSTALL_HINT = install_hint("azure")
INDEX_NAME = re.compile(r"^(?!.*--)[a-z0-9](?:[a-z0-9-]{0,126}[a-z0-9])?$")


@dataclass(frozen=True)
class AzureConnection:
    """How the SDK clients reach the service: its endpoint, the environment variable holding the
    API key, and the connection pool and retries they share."""

    endpoint: str
    api_key_env: str
    parallelism: int
    max_retries: int
    retry_backoff: float
    timeout: float = 60.0  # seconds to connect, and to wait for an answer, per request

    def search_client(self, index_name: str) -> Any:
        """A ``SearchClient`` on one index."""
        from azure.search.documents import SearchClient

        options = self.client_options()
        return SearchClient(self.endpoint, index_name, credential(self.api_key_env), **options)

    def index_client(self) -> Any:
        """A ``SearchIndexClient`` for the service."""
        from azure.search.documents.indexes import SearchIndexClient

        options = self.client_options()
        return SearchIndexClient(self.endpoint, credential(self.api_key_env), **options)

    def client_options(self) -> dict[str, Any]:
        """The SDK client keywords: a requests transport with a pooled connection per worker
        thread, and :func:`retry_policy`."""
        from azure.core.pipeline.transport import RequestsTransport
        from requests import Session
        from requests.adapters import HTTPAdapter

        session = Session()  # a pooled connection per worker thread
        for prefix in ("https://", "http://"):
            session.mount(prefix, HTTPAdapter(pool_maxsize=max(10, self.parallelism)))
        transport = RequestsTransport(
            session=session,
            session_owner=True,
            connection_timeout=self.timeout,
            read_timeout=self.timeout,
        )
        policy = retry_policy(self.max_retries, self.retry_backoff)
        return {"transport": transport, "retry_policy": policy}


def credential(api_key_env: str) -> Any:
    """An ``AzureKeyCredential`` from ``api_key_env``, or Entra ID sign-in when it is unset."""
    key = os.environ.get(api_key_env, "")
    if key:
        from azure.core.credentials import AzureKeyCredential

        return AzureKeyCredential(key)
    try:
        from azure.identity import DefaultAzureCredential
    except ImportError:
        raise RagevalError(f"set {api_key_env}, or {INSTALL_HINT} for Entra ID") from None
    log.info("%s is not set: signing in with DefaultAzureCredential", api_key_env)
    return DefaultAzureCredential()


def retry_policy(max_retries: int, retry_backoff: float) -> Any:
    """azure-core's RetryPolicy (honours Retry-After, else exponential backoff), also for POST:
    rageval's POSTs (search, upload) are idempotent, and azure-core retries a POST only on
    500/503/504 or when Retry-After is present, so a bare 429 or 502 would fail at once."""
    from azure.core.pipeline.policies import RetryPolicy

    class IdempotentPostRetryPolicy(RetryPolicy):
        def configure_retries(self, options: dict[str, Any]) -> dict[str, Any]:
            settings = super().configure_retries(options)
            settings["methods"] = frozenset(settings["methods"]) | {"POST"}
            return settings

    n = max_retries
    return IdempotentPostRetryPolicy(
        retry_total=n,
        retry_status=n,
        retry_connect=n,
        retry_read=n,
        retry_backoff_factor=retry_backoff,
    )


def throwaway_index_name(config: dict[str, Any], chunk_ids: Iterable[str], commit: str) -> str:
    """``rageval-<commit>-<sha>``: the sha covers ``config`` (the index settings, run_key and
    encoder) and the chunk ids, so concurrent sweep jobs over other chunkings never share an
    index."""
    chunks = hashlib.sha256("\n".join(chunk_ids).encode()).hexdigest()
    content = json.dumps({**config, "chunks": chunks}, sort_keys=True)
    return f"rageval-{commit}-{hashlib.sha256(content.encode()).hexdigest()[:12]}"


def index_definition(
    name: str,
    id_field: str,
    text_field: str,
    vector_field: str,
    *,
    dim: int | None,
    semantic: str | None = None,
) -> dict[str, Any]:
    """The REST JSON of a throwaway index: key, searchable text, and (with ``dim``) a vector
    field searched exhaustively by cosine, plus a semantic configuration over the text."""
    fields: list[dict[str, Any]] = [
        {"name": id_field, "type": "Edm.String", "key": True, "filterable": True},
        {"name": text_field, "type": "Edm.String", "searchable": True},
    ]
    definition: dict[str, Any] = {"name": name, "fields": fields}
    if dim is not None:
        fields.append(
            {
                "name": vector_field,
                "type": "Collection(Edm.Single)",
                "searchable": True,
                "retrievable": False,
                "dimensions": dim,
                "vectorSearchProfile": "exact",
            }
        )
        algorithm = {"name": "eknn", "kind": "exhaustiveKnn"}
        algorithm["exhaustiveKnnParameters"] = {"metric": "cosine"}  # type: ignore[assignment]
        profiles = [{"name": "exact", "algorithm": "eknn"}]
        definition["vectorSearch"] = {"algorithms": [algorithm], "profiles": profiles}
    if semantic is not None:
        content = {"prioritizedContentFields": [{"fieldName": text_field}]}
        config = {"name": semantic, "prioritizedFields": content}
        definition["semantic"] = {"defaultConfiguration": semantic, "configurations": [config]}
    return definition
