"""A run folder's life: marked incomplete before anything is written, complete when report.json
(written last) is there, failed when error.json is.

- ``begin``: creates the folder (an unwritable one is a one-line error), drops a stale
  ``report.json``/``error.json`` of an earlier run into the same folder, and writes the
  ``.rageval-incomplete`` marker.
- ``finish``: removes the marker once report.json is written.
- ``fail``: writes ``error.json`` and removes any ``report.json``, so a failed re-run never leaves
  the old report looking valid beside the new error.
- ``check_complete``: what ``promote`` and ``log`` call before trusting a report.json on disk.
- ``os_errors``: a full disk, a read-only cache or run folder becomes one line, not a traceback.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import socket
import time
from collections.abc import Iterator
from pathlib import Path

from rageval.config_schema import override_key
from rageval.errors import InputError, RagevalError

MARKER = ".rageval-incomplete"
REPORT, ERROR = "report.json", "error.json"


class RunFailed(RagevalError):
    """The run could not finish for a reason outside its inputs (a full disk). Exit code 1."""

    exit_code = 1


class WriteError(RagevalError):
    """A folder rageval must write to is not writable (permissions, read-only file system)."""


def begin(out: Path) -> None:
    """Mark ``out`` incomplete before the run writes anything there."""
    from rageval.formats.atomic import atomic_write_text

    with os_errors(f"the run folder {out}", "set hydra.run.dir to a folder you can write"):
        out.mkdir(parents=True, exist_ok=True)
        stamp = {"pid": os.getpid(), "host": socket.gethostname(), "started": time.time()}
        atomic_write_text(out / MARKER, json.dumps(stamp))
        for stale in (REPORT, ERROR):
            with contextlib.suppress(FileNotFoundError):
                (out / stale).unlink()


def finish(out: Path) -> None:
    """Mark ``out`` complete: call right after report.json is written."""
    with contextlib.suppress(FileNotFoundError):
        (out / MARKER).unlink()


def fail(out: Path, record: dict) -> None:
    """Write error.json (``record``) into ``out`` and remove a stale report.json. Best effort: a
    folder that cannot be written (the very error being reported, perhaps) is left as it is."""
    from rageval.formats.atomic import atomic_write_text

    with contextlib.suppress(OSError, RagevalError):
        out.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(FileNotFoundError):
            (out / REPORT).unlink()
        atomic_write_text(out / ERROR, json.dumps(record))
        finish(out)


def check_complete(report: str | Path) -> None:
    """Refuse a report.json whose run folder says the run failed or never finished."""
    folder = Path(report).parent
    if (folder / ERROR).is_file():
        raise InputError(
            f"the run in {folder} failed (see {folder / ERROR}); its report.json is not a result. "
            "Re-run it, or pick another run",
            path=str(report),
        )
    if (folder / MARKER).is_file():
        raise InputError(
            f"the run in {folder} did not finish (it is marked {MARKER}: still running, or "
            "killed); re-run it, or pick another run",
            path=str(report),
        )


# errors that mean the machine, not the configuration, stopped the run
_RUN_FAILURES = {errno.ENOSPC, errno.EDQUOT, errno.EIO, errno.EFBIG}
# errors about a path the user chose; others (a refused connection) are not ours to reword
_PATH_ERRORS = {errno.EACCES, errno.EPERM, errno.EROFS, errno.ENOTDIR, errno.EISDIR, errno.ENOENT}


@contextlib.contextmanager
def os_errors(what: str = "", hint: str = "") -> Iterator[None]:
    """Turn an ``OSError`` into a one-line RagevalError naming the path: exit 1 for a full disk or
    an I/O error (the run failed), 2 for permissions and read-only folders (fix the setting)."""
    try:
        yield
    except OSError as err:
        if err.errno not in _RUN_FAILURES | _PATH_ERRORS:
            raise
        where = err.filename or what or "a file"
        if err.errno in _RUN_FAILURES:
            raise RunFailed(
                f"cannot write {where}: {err.strerror or err}; nothing half-written was kept. Free "
                "space (or fix the disk) and run again",
            ) from None
        verb = "write" if err.errno == errno.EROFS else "use"
        advice = (
            hint
            or "check that it exists and that you may read and write there "
            "(cache_dir, hydra.run.dir)"
        )
        raise WriteError(f"cannot {verb} {where}: {err.strerror or err}; {advice}") from None


def check_output_dirs(argv: list[str]) -> None:
    """Refuse, before Hydra starts, a ``hydra.run.dir`` or ``hydra.sweep.dir`` given on the
    command line that cannot be created (Hydra would fail with a traceback when making it)."""
    for arg in argv:
        key, sep, value = override_key(arg), *arg.partition("=")[1:]
        if not sep or key not in ("hydra.run.dir", "hydra.sweep.dir") or "${" in value:
            continue
        folder = Path(value).expanduser().absolute()
        existing = next((p for p in (folder, *folder.parents) if os.path.lexists(p)), None)
        if existing is None:
            continue
        if not existing.is_dir():
            raise WriteError(
                f"{key}={value}: cannot create the run folder, {existing} is a file, not a folder; "
                "choose another folder"
            )
        if not os.access(existing, os.W_OK | os.X_OK):
            raise WriteError(
                f"{key}={value}: cannot create the run folder, {existing} is not writable; "
                "choose a folder you can write"
            )
