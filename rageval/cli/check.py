"""``rageval check``: re-run the baseline's configuration and gate on the comparison.

Exit 0 when nothing regressed beyond tolerance, 1 when something did, 2 on bad input (including
a golden set that changed since the baseline: re-promote after reviewing it).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

from rageval.formats.atomic import atomic_write_text
from rageval.gate.baseline import Comparison, compare, load_report

DEFAULT_BASELINE = "golden/baseline.json"
# Overrides that say where things ran, not what was measured: not replayed by `check`.
NOT_REPLAYED = ("hydra", "mlflow", "cache_dir", "latency_sample")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "overrides",
        nargs="*",
        help="Hydra overrides on top of the baseline's config, e.g. chunk=512",
    )
    p.add_argument(
        "--baseline", default=DEFAULT_BASELINE, help=f"baseline file (default {DEFAULT_BASELINE})"
    )
    p.add_argument(
        "--out", help="folder for the re-run and the comparison (default outputs/check/<time>)"
    )
    p.add_argument("--mlflow", action="store_true", help="also log the re-run to MLflow")


def _key(override: str) -> str:
    return override.split("=", 1)[0].lstrip("+~")


def replay_overrides(baseline: dict[str, Any], extra: list[str], mlflow: bool = False) -> list[str]:
    """Group choices and overrides of the baseline run, then ``extra`` on top (last one wins)."""
    merged: dict[str, str] = {}
    for g, c in (baseline.get("choices") or {}).items():
        merged[g] = f"{g}={c}"
    for o in baseline.get("overrides") or []:
        if not _key(o).startswith(NOT_REPLAYED):
            merged[_key(o)] = o
    for o in extra:
        merged[_key(o)] = o
    if not mlflow and "mlflow.enabled" not in merged:
        merged["mlflow.enabled"] = "mlflow.enabled=false"
    return list(merged.values())


def compose(overrides: list[str]):
    """The app's config with ``overrides``, composed without running Hydra's launcher."""
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir
    from hydra.errors import HydraException
    from omegaconf.errors import OmegaConfBaseException

    from rageval.app.main import CONF_DIR, register_resolvers
    from rageval.errors import ConfigError

    register_resolvers()
    try:
        with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
            return hydra_compose("config", overrides=overrides)
    except (HydraException, OmegaConfBaseException) as err:
        raise ConfigError(
            f"bad override ({' '.join(overrides)}): {str(err).splitlines()[0]}"
        ) from None


def run_check(baseline_path: str | Path, overrides: list[str] | None = None, out: str | Path | None = None,
              mlflow: bool = False, quiet: bool = False) -> tuple[Comparison, Path]:  # fmt: skip
    """Re-run, compare, and write comparison.json and comparison.md into the output folder."""
    from rageval.app.main import run_job

    baseline = load_report(baseline_path)
    cfg = compose(replay_overrides(baseline, list(overrides or []), mlflow))
    out_dir = Path(out) if out else Path("outputs") / "check" / time.strftime("%Y-%m-%d_%H-%M-%S")
    report = run_job(
        cfg, out_dir, overrides=list(overrides or []), choices=baseline.get("choices"), quiet=quiet
    )
    gate = cfg.gate
    cmp = compare(
        baseline,
        report.to_dict(),
        metrics=[str(m) for m in gate.metrics],
        tolerance=float(gate.tolerance),
        tolerances={str(k): float(v) for k, v in gate.tolerances.items()},
        require_significance=bool(gate.require_significance),
        alpha=float(gate.alpha),
        resamples=int(gate.resamples),
    )
    atomic_write_text(out_dir / "comparison.json", json.dumps(cmp.to_dict(), indent=2))
    atomic_write_text(out_dir / "comparison.md", cmp.markdown())
    return cmp, out_dir


def run(args) -> int:
    cmp, out_dir = run_check(args.baseline, args.overrides, args.out, args.mlflow)
    print()
    print(cmp.console())
    print(
        f"comparison: {out_dir / 'comparison.md'} (markdown for a pull-request comment), {out_dir / 'comparison.json'}"
    )
    return cmp.exit_code
