"""The process's peak resident memory over a stretch of a run (the ``index_peak_rss_bytes`` cost).

Linux keeps a high-water mark of each process's resident set (``VmHWM`` in /proc/self/status)
and resets it when "5" is written to /proc/self/clear_refs, so a stage's own peak is measured
without sampling. Elsewhere the lifetime peak of ``getrusage`` is the best there is (it never
goes down), and a stage's peak is reported only where it can be told apart (None otherwise).
"""

from __future__ import annotations

import contextlib
import sys


def reset_peak() -> bool:
    """Start a new high-water mark; False where the platform cannot."""
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
        return True
    except OSError:
        return False


def peak_rss() -> int | None:
    """The peak resident memory in bytes since the last :func:`reset_peak` (Linux), else the
    process's lifetime peak; None when neither can be read."""
    with contextlib.suppress(OSError, IndexError, ValueError), open("/proc/self/status") as fh:
        return int(fh.read().split("VmHWM:")[1].split()[0]) * 1024
    try:
        import resource
    except ImportError:  # Windows
        return None
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(peak if sys.platform == "darwin" else peak * 1024)


class StagePeak:
    """``with StagePeak() as p: ...`` then ``p.bytes``: the block's peak RSS (None where the
    platform keeps only a lifetime peak)."""

    def __init__(self):
        self.bytes: int | None = None
        self._fresh = False

    def __enter__(self) -> StagePeak:
        self._fresh = reset_peak()
        return self

    def __exit__(self, *exc) -> None:
        self.bytes = peak_rss() if self._fresh else None
