"""The gate's verdict where a CI system shows it: GitHub Actions' job summary and annotations.

- :func:`append_step_summary`: gate.md appended to ``$GITHUB_STEP_SUMMARY`` when it is set (a
  GitHub Actions job), so the verdict is on the run's page without a comment bot.
- :func:`github_annotations`: one workflow command a line (``::error``/``::warning``/``::notice``),
  which GitHub shows on the run and the pull request; messages escaped as its docs require.
"""

from __future__ import annotations

import os
from pathlib import Path

from rageval.gate.compare import (
    EMBEDDING_CHANGED,
    GOLDEN_CHANGED,
    INCONCLUSIVE,
    LABELS_CHANGED,
    PASS,
    Comparison,
)

SUMMARY_ENV = "GITHUB_STEP_SUMMARY"
TITLE = "retrieval gate"


def append_step_summary(cmp: Comparison) -> Path | None:
    """Append the gate's markdown to ``$GITHUB_STEP_SUMMARY``; the file, or None when unset."""
    target = os.environ.get(SUMMARY_ENV)
    if not target:
        return None
    path = Path(target)
    with path.open("a", encoding="utf-8") as f:
        f.write(cmp.markdown().rstrip("\n") + "\n\n")
    return path


def _data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _prop(text: str) -> str:
    return _data(text).replace(":", "%3A").replace(",", "%2C")


def github_annotations(cmp: Comparison, baseline: str | Path) -> list[str]:
    """The verdict as GitHub workflow commands: an error per regressed metric or slice, a
    warning per improvement, and one line for the whole gate."""
    where = f"file={_prop(str(baseline))},title={_prop(TITLE)}"
    lines = []
    rows = [(r.metric, r) for r in cmp.rows] + [(f"{r.metric} on {r.slice}", r) for r in cmp.slices]
    for name, r in rows:
        change = (
            f"{name} {r.baseline:.4f} -> {r.current:.4f} ({r.delta:+.4f}; tolerance "
            f"{r.tolerance:g}, p {r.p_value:.3g})"
        )
        if r.verdict == "regressed":
            lines.append(f"::error {where}::{_data(change + ': regressed')}")
        elif r.verdict == "improved":
            lines.append(f"::notice {where}::{_data(change + ': improved')}")
    if cmp.embedding_changed and cmp.status != EMBEDDING_CHANGED:
        lines.append(f"::warning {where}::{_data(cmp.canary['line'])}")
    for r in cmp.inconclusive():
        lines.append(f"::warning {where}::{_data(r.line() + ': inconclusive')}")
    if cmp.status == PASS:
        lines.append(f"::notice {where}::{_data(cmp.console().splitlines()[-1])}")
    elif cmp.status == INCONCLUSIVE:
        level = "error" if cmp.exit_code else "warning"
        lines.append(f"::{level} {where}::{_data(cmp.console().splitlines()[-1])}")
    elif cmp.status in (GOLDEN_CHANGED, LABELS_CHANGED, EMBEDDING_CHANGED):
        last = cmp.console().splitlines()[-1]
        lines.append(f"::error {where}::{_data(last)}")
    else:
        lines.append(f"::error {where}::{_data('FAIL: ' + ', '.join(cmp.regressed()))}")
    return lines
