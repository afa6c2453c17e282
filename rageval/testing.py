"""Helpers for users' own test suites.

from rageval.testing import assert_no_regression

def test_retriever_does_not_regress(tmp_path):
    assert_no_regression(out=tmp_path)  # the project's baseline (rageval.yaml)
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from rageval.gate.compare import Comparison


def assert_no_regression(
    baseline: str | Path | None = None,
    overrides: Sequence[str] = (),
    out: str | Path | None = None,
) -> Comparison:
    """Re-run the baseline's config (with ``overrides``) and fail with the comparison table if any
    gate metric regressed or the golden set changed since the baseline; an inconclusive check
    warns (InconclusiveGate), or fails with ``gate.on_inconclusive=fail``.

    ``baseline``: default the project's (``baseline`` in rageval.yaml); a relative path is taken
    from the working directory, else from the project root, so the test runs from any folder."""
    from rageval.app.check import run_check
    from rageval.cli.paths import default_baseline
    from rageval.project import find_project

    path = Path(baseline) if baseline is not None else default_baseline()
    project = find_project()
    if not path.is_absolute() and not path.exists() and project is not None:
        path = project.root / path
    cmp, out_dir = run_check(path, list(overrides), out, quiet=True)
    if cmp.exit_code != 0:
        raise AssertionError(f"{cmp.console()}\n(details: {out_dir / 'gate.md'})")
    if cmp.status == "inconclusive":  # gate.on_inconclusive=warn: the test passes, and says so
        import warnings

        warnings.warn(cmp.console().splitlines()[-1], InconclusiveGate, stacklevel=2)
    if cmp.embedding_changed:  # gate.on_embedding_drift=warn: the test passes, and says so
        import warnings

        warnings.warn(cmp.canary["line"], EmbeddingDrift, stacklevel=2)
    return cmp


class InconclusiveGate(UserWarning):
    """The golden set could not decide a gated metric (gate.on_inconclusive=warn)."""


class EmbeddingDrift(UserWarning):
    """The embedding's vectors moved since the baseline (gate.on_embedding_drift=warn)."""
