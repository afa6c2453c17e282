"""Bit-stable embedding batches: MKL's reproducible mode is asked for on import, and its absence
is reported once."""

from __future__ import annotations

import os
import subprocess
import sys
import warnings

import pytest

from rageval.embedding import batching


def mkl_mode_after_import(**env: str) -> str:
    base = {k: v for k, v in os.environ.items() if k != "MKL_CBWR"}
    code = "import os, rageval; print(os.environ.get('MKL_CBWR', '<unset>'))"
    out = subprocess.run(
        [sys.executable, "-c", code],
        env={**base, **env},
        capture_output=True,
        text=True,
        check=True,
    )
    return out.stdout.strip()


def test_import_asks_mkl_for_strict_reproducibility_unless_the_user_chose_a_mode():
    assert mkl_mode_after_import() == "AUTO,STRICT"
    assert mkl_mode_after_import(MKL_CBWR="COMPATIBLE") == "COMPATIBLE"


def test_an_unpinned_mkl_is_reported_once(monkeypatch):
    monkeypatch.setattr(batching, "_warned", False)
    monkeypatch.delenv("MKL_CBWR")
    with pytest.warns(UserWarning, match="MKL_CBWR=AUTO,STRICT"):
        batching.warn_if_mkl_unpinned()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        batching.warn_if_mkl_unpinned()  # once: a second call is silent


def test_a_pinned_mkl_is_not_reported(monkeypatch, recwarn):
    monkeypatch.setattr(batching, "_warned", False)
    monkeypatch.setenv("MKL_CBWR", "AUTO,STRICT")
    batching.warn_if_mkl_unpinned()
    assert not recwarn.list
