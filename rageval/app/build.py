"""``build``: every component of a run from its composed config, before the expensive work
starts."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rageval.errors import ConfigError, RagevalError
from rageval.retrieval.base import Encoder, Retriever
from rageval.run.spec import RunSpec

# Keys of the embedding node that configure the run, not the encoder's constructor.
EMBEDDING_RUN_KEYS = ("query_model", "query_backend", "query_quantize")


@dataclass(frozen=True)
class Components:
    """What ``evaluate`` needs: the run's spec, the encoders and the (retrying, reranking)
    retriever."""

    spec: RunSpec
    encoder: Encoder
    query_encoder: Encoder | None
    retriever: Retriever

    def close(self) -> None:
        """Release what the retriever (a throwaway index, a connection) and encoders hold."""
        for part in (self.retriever, self.encoder, self.query_encoder):
            close = getattr(part, "close", None)
            if callable(close):
                close()


def instantiate(node, what: str, **kwargs) -> Any:
    """``hydra.utils.instantiate`` with the failure as one ConfigError naming ``what``."""
    from hydra.errors import InstantiationException
    from hydra.utils import instantiate as hydra_instantiate

    try:
        return hydra_instantiate(node, _convert_="all", **kwargs)
    except InstantiationException as err:
        cause = err.__cause__ or err
        if isinstance(cause, RagevalError):
            raise cause from None
        raise ConfigError(f"cannot build {what} from {node.get('_target_')!r}: {cause}") from None


def resolve(cfg) -> dict[str, Any]:
    """``cfg`` resolved to plain data (interpolations, resolvers); ConfigError naming the key for
    a missing or unresolvable value."""
    from omegaconf import OmegaConf
    from omegaconf.errors import OmegaConfBaseException

    try:
        return OmegaConf.to_container(cfg, resolve=True, throw_on_missing=True)
    except OmegaConfBaseException as err:
        raise ConfigError(
            f"{err.__class__.__name__}: {str(err).splitlines()[0]} "
            f"(key {getattr(err, 'full_key', '?')})"
        ) from None


def build(cfg, resolved: dict[str, Any] | None = None) -> Components:
    """Build the dataset, encoders and retriever of ``cfg``; fails fast on config mistakes.
    ``resolved``: ``cfg`` already resolved (:func:`resolve`), so it is not resolved again."""
    import copy

    from omegaconf import OmegaConf

    from rageval.retrieval.retry import RetryingRetriever

    plain = copy.deepcopy(resolved) if resolved is not None else resolve(cfg)
    cfg = OmegaConf.create(plain)
    if cfg.retries < 0:
        raise ConfigError(f"retries must be >= 0, got {cfg.retries}")
    if not cfg.max_document_mb > 0:
        raise ConfigError(f"max_document_mb must be a number > 0, got {cfg.max_document_mb}")
    if cfg.retry_backoff < 0:
        raise ConfigError(
            f"retry_backoff must be a number of seconds >= 0, got {cfg.retry_backoff}"
        )
    encoder, query_encoder = _encoders(cfg.embedding)
    retriever = RetryingRetriever(
        instantiate(cfg.backend, "backend"), cfg.retries, float(cfg.retry_backoff)
    )
    if cfg.rerank:
        retriever = instantiate(cfg.rerank, "rerank", base=retriever)
    from rageval.embedding.base import tokenizer_dir_of

    tokenizer_dir = tokenizer_dir_of(encoder)
    dataset = instantiate(cfg.dataset, "dataset")
    plain["judgements"] = _judgements_path(plain.get("judgements"))
    spec = RunSpec.from_config(
        plain, corpus=dataset.corpus, golden=dataset.golden, tokenizer_dir=str(tokenizer_dir)
    )
    return Components(spec, encoder, query_encoder, retriever)


def _judgements_path(value) -> str | None:
    """The ``judgements`` key: a path (``~`` expanded), or None for the golden set's folder."""
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise ConfigError(
            f"judgements must be the path of a JSONL file (or null for judgements.jsonl next to "
            f"the golden set), got {value!r}"
        )
    from pathlib import Path

    return str(Path(value).expanduser())


def _encoders(node) -> tuple[Encoder, Encoder | None]:
    """The index encoder and, when ``query_model``, ``query_backend`` or ``query_quantize`` is
    set, the query encoder: the same node with those values (the constructor never sees them)."""
    from omegaconf import OmegaConf

    args = OmegaConf.masked_copy(node, [k for k in node if k not in EMBEDDING_RUN_KEYS])
    encoder = instantiate(args, "embedding")
    query = {k[len("query_") :]: node.get(k) for k in EMBEDDING_RUN_KEYS if node.get(k)}
    if not query:
        return encoder, None
    return encoder, instantiate(args, "embedding.query_model", **query)
