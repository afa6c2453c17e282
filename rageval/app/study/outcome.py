"""A study's outcome read back: study.json in the sweep folder (written by
:func:`rageval.app.study.final.write_outcome`; logged on the parent run by rageval.tracking.study)
and the study's block the sweep prints after the leaderboard."""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rageval.app.study.settings import STUDY_FILE


def load_outcome(sweep_dir: Path) -> dict[str, Any] | None:
    """study.json of a sweep folder (None: the sweep was no study)."""
    f = Path(sweep_dir) / STUDY_FILE
    return json.loads(f.read_text()) if f.is_file() else None


def print_outcome(outcome: Mapping[str, Any]) -> None:
    """The study's block after the leaderboard."""
    from rageval.report.study import StudySummary

    print()
    if outcome.get("error"):
        print(f"rageval: error: {outcome['error']}", file=sys.stderr)
        return
    print(StudySummary.from_dict(outcome["summary"]).console())
    print(f"study {outcome['study']!r} in {outcome['storage']} (run the same command to resume)")
