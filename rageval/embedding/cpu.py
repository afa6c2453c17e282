"""The CPU's feature flags, which decide the precision float OpenVINO runs in (AMX) and the
weight range of per-token int8 (VNNI): read once per process."""

from __future__ import annotations

import functools
from pathlib import Path


@functools.cache
def cpu_flags() -> frozenset[str] | None:
    """The CPU's feature flags from /proc/cpuinfo; None when it cannot be read (not Linux)."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return None
    return frozenset(
        f for line in text.splitlines() if line.startswith("flags") for f in line.split()
    )
