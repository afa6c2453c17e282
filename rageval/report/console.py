"""Terminal feedback for waits that show no progress bar of their own (loading a model)."""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from collections.abc import Iterator

FRAMES = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"


@contextlib.contextmanager
def status(message: str, stream=None) -> Iterator[None]:
    """A spinner with the elapsed seconds while the block runs (a terminal), else one line before
    and one after (a log file, CI); either way the time it took is printed at the end."""
    stream = stream or sys.stderr
    t0 = time.perf_counter()
    tty = getattr(stream, "isatty", lambda: False)()
    stop = threading.Event()
    thread = None
    if tty:

        def spin() -> None:
            i = 0
            while not stop.wait(0.1):
                stream.write(
                    f"\r{FRAMES[i % len(FRAMES)]} {message} {time.perf_counter() - t0:.0f}s"
                )
                stream.flush()
                i += 1

        thread = threading.Thread(target=spin, daemon=True)
        thread.start()
    else:
        print(f"{message} ...", file=stream, flush=True)
    ok = False
    try:
        yield
        ok = True
    finally:
        stop.set()
        if thread is not None:
            thread.join()
            stream.write("\r\033[K")
        took = time.perf_counter() - t0
        print(f"{message}: {'done' if ok else 'failed'} in {took:.1f} s", file=stream, flush=True)
