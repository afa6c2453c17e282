"""rageval's release, built from this checkout as .github/workflows/release.yml builds it (once
per test session), and a fresh environment that takes rageval from it
(tests/integration/test_installed.py and test_clean_runner.py)."""

from __future__ import annotations

import hashlib
import os
import shutil
import site
import subprocess
import sys
import tempfile
from pathlib import Path

from filelock import FileLock

ROOT = Path(__file__).resolve().parents[2]
SESSION_RELEASE = "RAGEVAL_TEST_SESSION_RELEASE"


def build_release(dist: Path) -> Path:
    """rageval's sdist and wheel in ``dist`` (made if need be); returns the wheel. Built once per
    test session (_build) into the session's release folder (``$RAGEVAL_TEST_SESSION_RELEASE``,
    made by tests/conftest.py and shared by the xdist workers) and copied from there; built
    straight into ``dist`` when there is no such folder."""
    shared = os.environ.get(SESSION_RELEASE)
    if not shared:
        return _build(dist)
    built = Path(shared) / "dist"
    with FileLock(Path(shared) / "build.lock"):
        if not (Path(shared) / "checked").is_file():
            shutil.rmtree(built, ignore_errors=True)  # a build that failed half-way
            _build(built)
            (Path(shared) / "checked").touch()
    dist.mkdir(parents=True, exist_ok=True)
    for made in (*built.glob("rageval-*.tar.gz"), *built.glob("rageval-*.whl")):
        shutil.copy2(made, dist / made.name)
    (wheel,) = dist.glob("rageval-*.whl")
    return wheel


def _build(dist: Path) -> Path:
    """``python -m build`` into ``dist`` (the sdist, then the wheel built from that sdist, so
    package data missing from the sdist is missing from the wheel; no build isolation: nothing
    downloaded), checked by ``twine check --strict``; returns the wheel."""
    dist.mkdir(parents=True, exist_ok=True)
    egg_info = ROOT / "rageval.egg-info"
    # The sdist step writes rageval.egg-info into the checkout: two test modules building at once
    # (xdist workers) would remove it under each other's build, so builds of one checkout take
    # turns on a lock outside it.
    digest = hashlib.sha256(str(ROOT).encode()).hexdigest()[:12]
    with FileLock(Path(tempfile.gettempdir()) / f"rageval-release-build-{digest}.lock"):
        had_egg_info = egg_info.exists()
        try:
            subprocess.run(
                [sys.executable, "-m", "build", "--no-isolation", "--outdir", str(dist), str(ROOT)],
                check=True,
                capture_output=True,
                cwd=dist.parent,
            )
        finally:
            # on sys.path (a `python -m` from the root), the egg-info's frozen version would
            # shadow the editable install's
            if not had_egg_info:
                shutil.rmtree(egg_info, ignore_errors=True)
    (sdist,) = dist.glob("rageval-*.tar.gz")
    (wheel,) = dist.glob("rageval-*.whl")
    checked = subprocess.run(
        [sys.executable, "-m", "twine", "check", "--strict", sdist, wheel],
        capture_output=True,
        text=True,
    )
    assert checked.returncode == 0 and checked.stdout.count("PASSED") == 2, checked.stdout
    return wheel


def site_packages_here() -> Path:
    """This environment's site-packages (where rageval's dependencies are installed)."""
    (purelib,) = {p for p in site.getsitepackages() if p.endswith("site-packages")}
    return Path(purelib)


def purelib_of(python: Path) -> Path:
    """The site-packages folder of the environment of ``python``."""
    out = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return Path(out.strip())
