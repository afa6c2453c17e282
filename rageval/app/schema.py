"""Register the config's schema (rageval.config_schema) with Hydra, for conf/rageval.yaml to
extend."""

from __future__ import annotations

from rageval.config_schema import GateConfig, MlflowConfig, RagevalConfig, SweepConfig

SCHEMA_NAME = "rageval_schema"

__all__ = [
    "SCHEMA_NAME",
    "GateConfig",
    "MlflowConfig",
    "RagevalConfig",
    "SweepConfig",
    "register_schema",
]


# The ConfigStore entry this process stored: storing converts the dataclasses into a config anew
# each time, ~7% of a composition, and every composition registers the schema first
_stored: list = []


def register_schema() -> None:
    """Store the schema in Hydra's ConfigStore (idempotent), for conf/config.yaml to extend."""
    from hydra.core.config_store import ConfigStore

    store = ConfigStore.instance()
    if _stored and store.repo.get(f"{SCHEMA_NAME}.yaml") is _stored[0]:
        return  # still the entry stored here, untouched
    store.store(name=SCHEMA_NAME, node=RagevalConfig)
    _stored[:] = [store.repo[f"{SCHEMA_NAME}.yaml"]]
