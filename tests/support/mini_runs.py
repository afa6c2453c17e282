"""The Hydra app on the mini data (tests/support/data/mini), as the integration tests run it:
its arguments, and one run with no MLflow and no latency sample whose report.json is read back."""

from __future__ import annotations

import json
from pathlib import Path


def mini_args(mini: Path, cache, *extra) -> list[str]:
    """The app's arguments for the mini corpus and golden set, embedding into ``cache``."""
    return [
        "dataset=custom",
        f"dataset.corpus={mini / 'corpus'}",
        f"dataset.golden={mini / 'golden.jsonl'}",
        f"cache_dir={cache}",
        *extra,
    ]


def run_mini(mini: Path, cache, tmp_path: Path, name: str, *extra) -> dict:
    """One run at chunk=32 into ``tmp_path/name`` (MLflow off, no latency sample); its report."""
    from rageval.app.main import run_app

    out = tmp_path / name
    args = mini_args(
        mini,
        cache,
        "mlflow.enabled=false",
        "latency_sample=0",
        "chunk=32",
        f"hydra.run.dir={out}",
        *extra,
    )
    assert run_app(args) == 0
    return json.loads((out / "report.json").read_text())
