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


def test_a_full_disk_names_the_file_it_was_writing(tmp_path, monkeypatch):
    import errno

    from rageval.run.folder import os_errors

    def full(fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fsync", full)
    target = tmp_path / "golden" / "baseline.json"
    with pytest.raises(Exception) as err, os_errors():
        atomic_write_text(target, "{}")
    assert f"cannot write {target}: No space left on device" in str(err.value)
    assert list((tmp_path / "golden").iterdir()) == []  # no temporary file left behind


def test_a_second_writer_says_it_waits_for_the_lock_then_takes_its_turn(tmp_path, capsys):
    import fcntl
    import threading

    target = tmp_path / "baseline.json"
    fd = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)  # another process's hold on the folder
    fcntl.flock(fd, fcntl.LOCK_EX)
    order = []

    def second():
        with locked(target, waiting="waiting for the other promote"):
            order.append("second")

    t = threading.Thread(target=second)
    t.start()
    t.join(timeout=1)  # it cannot finish while the lock is held
    order.append("first done")
    os.close(fd)  # released
    t.join()
    assert order == ["first done", "second"]
    assert "waiting for the other promote" in capsys.readouterr().err
