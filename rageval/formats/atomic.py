"""Atomic file writes: a temp file in the target's folder, fsync, then ``os.replace``; and file
locks for read-modify-write of a user's file.

A reader (or a process killed mid-write) sees the old file or the new one, never half of one.
A symlink is followed: the file it points to is replaced and the link stays a link. A target
that exists but is not a regular file (a device such as ``/dev/full``, a FIFO, a folder) is
refused, never replaced.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import stat
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import IO

from rageval.errors import InputError


def write_target(path: str | Path) -> Path:
    """The file a write to ``path`` must replace: symlinks resolved, non-regular files refused."""
    target = Path(os.path.realpath(path)) if os.path.islink(path) else Path(path)
    try:
        mode = os.stat(target).st_mode
    except OSError:  # missing, or its folder is not one: the write itself reports that
        return target
    if not stat.S_ISREG(mode):
        kind = "a folder" if stat.S_ISDIR(mode) else "not a regular file (a device, FIFO or socket)"
        raise InputError(f"refusing to write: the target is {kind}; name a file", path=str(path))
    return target


@contextlib.contextmanager
def atomic_open(path: str | Path, mode: str = "w", encoding: str | None = "utf-8") -> Iterator[IO]:
    """Open a temp file next to ``path``; on clean exit it replaces ``path``, on error it is
    removed."""
    target = write_target(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        os.chmod(tmp, target.stat().st_mode & 0o7777 if target.exists() else 0o666 & ~_umask())
        with os.fdopen(fd, mode, encoding=None if "b" in mode else encoding) as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except OSError as err:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        if err.filename is None and err.errno is not None:  # a write or fsync: name the file
            raise OSError(err.errno, err.strerror, str(target)) from None
        raise
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def atomic_write_text(path: str | Path, text: str) -> None:
    """Replace ``path`` with ``text`` (UTF-8) atomically."""
    with atomic_open(path, "w") as fh:
        fh.write(text)


def atomic_write_bytes(path: str | Path, data: bytes) -> None:
    """Replace ``path`` with ``data`` atomically."""
    with atomic_open(path, "wb") as fh:
        fh.write(data)


_held: dict[str, tuple[threading.RLock, list[int]]] = {}
_held_guard = threading.Lock()


@contextlib.contextmanager
def locked(path: str | Path, waiting: str | None = None) -> Iterator[None]:
    """Hold an exclusive lock for a read-modify-write of ``path`` (``golden add``, ``migrate
    --in-place``): concurrent writers take turns instead of overwriting each other's lines.

    The lock is ``flock`` on the file's folder, not on the file: an atomic write replaces the
    file (a new inode), so a lock on the old one would protect nothing, and a lock file beside it
    would end up in the user's repository. Re-entrant within a process; released if it dies.
    ``waiting``: a line printed (stderr) when another process holds the lock, before waiting."""
    folder = os.path.dirname(os.path.abspath(write_target(path))) or "."
    with _held_guard:
        rlock, depth = _held.setdefault(folder, (threading.RLock(), [0]))
    with rlock:
        fd = None
        if depth[0] == 0:
            os.makedirs(folder, exist_ok=True)
            fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                if waiting:
                    import sys

                    print(waiting, file=sys.stderr, flush=True)
                fcntl.flock(fd, fcntl.LOCK_EX)
        depth[0] += 1
        try:
            yield
        finally:
            depth[0] -= 1
            if fd is not None:
                os.close(fd)  # closing releases the flock


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
