"""`import beir --force` swaps the new corpus in only when it is complete."""

from __future__ import annotations

import errno
from pathlib import Path

import pytest


def test_import_beir_force_keeps_the_old_corpus_until_the_new_one_is_complete(
    tmp_path, monkeypatch
):
    from beir_fixture import make_beir

    from rageval.cli import import_beir as mod

    src = make_beir(tmp_path / "beir")
    out = tmp_path / "out"
    mod.import_beir(src, out, corpus_format="folder")
    before = sorted(p.relative_to(out) for p in out.rglob("*"))
    golden_before = (out / "retriever.jsonl").read_bytes()
    calls = {"n": 0}
    real = Path.write_bytes

    def flaky(self, data):
        calls["n"] += 1
        if calls["n"] == 2:
            raise OSError(errno.ENOSPC, "No space left on device", str(self))
        return real(self, data)

    monkeypatch.setattr(Path, "write_bytes", flaky)
    with pytest.raises(OSError):
        mod.import_beir(src, out, corpus_format="folder", force=True)
    monkeypatch.undo()
    assert sorted(p.relative_to(out) for p in out.rglob("*")) == before
    assert (out / "retriever.jsonl").read_bytes() == golden_before
    mod.import_beir(src, out, corpus_format="folder", force=True)
    assert sorted(p.relative_to(out) for p in out.rglob("*")) == before
