"""``python -m rageval.retrieval.pgvector.watchdog RUN_PID PGDATA BIN_PATH``: started beside an
embedded PostgreSQL in a session of its own; when the run's process is gone and the server's
folder still exists (the run was killed before it could stop it), stops the server and deletes
the folder. Exits as soon as the folder is gone (the run stopped it itself)."""

from __future__ import annotations

import sys
import time
from pathlib import Path


def main(argv: list[str]) -> int:
    from rageval.retrieval.pgvector.server import alive, stop_folder

    run_pid, pgdata, bin_path = int(argv[0]), Path(argv[1]), argv[2]
    while pgdata.exists() and alive(run_pid):
        time.sleep(0.5)
    if pgdata.exists():
        stop_folder(pgdata, bin_path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
