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


def register_schema() -> None:
    """Store the schema in Hydra's ConfigStore (idempotent), for conf/config.yaml to extend."""
    from hydra.core.config_store import ConfigStore

    ConfigStore.instance().store(name=SCHEMA_NAME, node=RagevalConfig)
