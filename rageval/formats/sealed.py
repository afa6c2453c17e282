"""Cached indexes sealed with a digest: a folder written with a sha256 of each file it holds,
checked before the folder is read.

An index folder (FAISS HNSW/IVF, BM25) is built in a temporary folder, sealed (``seal``: a
``rageval-sha256.json`` listing every file's size and sha256) and renamed into place in one step,
so a reader sees a whole folder or none. ``fault`` streams every file through sha256 before the
index is read: a truncated, grown or overwritten file (random bytes of the same size included), a
missing or unreadable one, or a folder without a digest is reported, and ``discard`` removes it
with a warning naming it, so the caller rebuilds instead of scoring a damaged index.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import time
import warnings
from pathlib import Path

DIGEST = "rageval-sha256.json"
_CHUNK = 1 << 20


def file_sha256(path: Path) -> str:
    """The file's sha256, read in 1 MiB pieces (no whole-file copy in memory)."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while piece := f.read(_CHUNK):
            h.update(piece)
    return h.hexdigest()


def temporary(final: Path) -> Path:
    """A fresh folder beside ``final`` to build into before :func:`publish`."""
    tmp = final.with_name(f"{final.name}.{time.time_ns()}.tmp")
    tmp.mkdir(parents=True)
    return tmp


def seal(folder: Path) -> None:
    """Write the digest of every file in ``folder`` (its size and sha256) into it."""
    files = {
        p.relative_to(folder).as_posix(): {"bytes": p.stat().st_size, "sha256": file_sha256(p)}
        for p in sorted(folder.rglob("*"))
        if p.is_file() and p.name != DIGEST
    }
    (folder / DIGEST).write_text(json.dumps({"files": files}, indent=1), encoding="utf-8")


def publish(tmp: Path, final: Path) -> None:
    """Seal ``tmp`` and move it to ``final`` in one rename; when another process published the
    same index first, keep theirs."""
    seal(tmp)
    try:
        tmp.replace(final)
    except OSError:  # ``final`` exists (a non-empty folder cannot be replaced): theirs stays
        shutil.rmtree(tmp, ignore_errors=True)


def fault(folder: Path) -> str | None:
    """None when every file listed in the folder's digest is there with its size and sha256;
    else what is wrong, in words."""
    try:
        listed = json.loads((folder / DIGEST).read_text(encoding="utf-8"))["files"]
        items = [(str(k), int(v["bytes"]), str(v["sha256"])) for k, v in listed.items()]
    except FileNotFoundError:
        return "it has no digest (written by an older rageval, or damaged)"
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return f"its digest {DIGEST} is unreadable"
    if not items:
        return f"its digest {DIGEST} lists no file"
    for name, size, sha in items:
        path = folder / name
        try:
            actual = path.stat().st_size
            if actual != size:
                return f"{name} has {actual:,} bytes, {size:,} were written (truncated or grown)"
            if file_sha256(path) != sha:
                return f"{name} does not match the sha256 written with it (overwritten)"
        except FileNotFoundError:
            return f"{name} is missing"
        except OSError as err:
            return f"{name} cannot be read ({err.strerror or err})"
    return None


def discard(folder: Path, what: str, reason: str) -> None:
    """Warn that the cached ``what`` in ``folder`` is not used (``reason``) and remove it, so it is
    rebuilt (and cached again) instead of read."""
    warnings.warn(
        f"the cached {what} {folder} is damaged ({reason}); it is not used: rebuilding it",
        stacklevel=3,
    )
    if folder.is_dir() and not folder.is_symlink():
        shutil.rmtree(folder, ignore_errors=True)
    else:
        folder.unlink(missing_ok=True)
