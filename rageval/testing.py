"""Helpers for users' own test suites.

from rageval.testing import assert_no_regression

def test_retriever_does_not_regress(tmp_path):
    assert_no_regression("golden/baseline.json", out=tmp_path)
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from rageval.gate.compare import Comparison


def assert_no_regression(
    baseline: str | Path = "golden/baseline.json",
    overrides: Sequence[str] = (),
    out: str | Path | None = None,
) -> Comparison:
    """Re-run the baseline's config (with ``overrides``) and fail with the comparison table if any
    gate metric dropped beyond its tolerance or the golden set changed since the baseline."""
    from rageval.app.gate_run import run_check

    cmp, out_dir = run_check(baseline, list(overrides), out, quiet=True)
    if cmp.status != "pass":
        raise AssertionError(f"{cmp.console()}\n(details: {out_dir / 'gate.md'})")
    return cmp
