"""Atomic writes follow symlinks and refuse targets that are not regular files; the file lock
for read-modify-write is re-entrant and makes threads take turns."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from rageval.errors import InputError
from rageval.formats.atomic import atomic_write_text, locked, write_target


def test_the_lock_is_reentrant_and_serialises_threads(tmp_path):
    import threading
    import time

    path, order = tmp_path / "g.jsonl", []

    def worker(name):
        with locked(path):
            order.append(f"{name}+")
            time.sleep(0.05)
            with locked(path):  # nested: no deadlock
                order.append(f"{name}-")

    threads = [threading.Thread(target=worker, args=(n,)) for n in "ab"]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert order in (["a+", "a-", "b+", "b-"], ["b+", "b-", "a+", "a-"])


def test_atomic_write_through_a_symlink_replaces_the_target_and_keeps_the_link(tmp_path):
    real = tmp_path / "shared" / "baseline.json"
    real.parent.mkdir()
    real.write_text("old")
    link = tmp_path / "baseline.json"
    link.symlink_to(real)
    atomic_write_text(link, "new")
    assert link.is_symlink() and real.read_text() == "new"
    # a chain of links, and a dangling one (the file it names is created)
    link2 = tmp_path / "again.json"
    link2.symlink_to(link)
    atomic_write_text(link2, "newer")
    assert real.read_text() == "newer" and link2.is_symlink()
    dangling = tmp_path / "dangling.json"
    dangling.symlink_to(tmp_path / "made.json")
    atomic_write_text(dangling, "x")
    assert (tmp_path / "made.json").read_text() == "x" and dangling.is_symlink()


@pytest.mark.parametrize("kind", ["fifo", "folder", "device"])
def test_atomic_write_refuses_a_target_that_is_not_a_regular_file(tmp_path, kind):
    target = {"fifo": tmp_path / "f", "folder": tmp_path / "d", "device": Path("/dev/full")}[kind]
    if kind == "fifo":
        os.mkfifo(target)
    elif kind == "folder":
        target.mkdir()
    with pytest.raises(InputError, match="refusing to write"):
        atomic_write_text(target, "x")
    assert not target.is_file()  # still a device, FIFO or folder
    link = tmp_path / "link"
    link.symlink_to(target)
    with pytest.raises(InputError):
        write_target(link)
