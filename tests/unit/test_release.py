"""The release: .github/workflows/release.yml publishes on a tag what `python -m build` makes,
by trusted publishing, with the tag's CHANGELOG section as the GitHub release's notes
(scripts/release_notes.py)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
NOTES = ROOT / "scripts" / "release_notes.py"


def notes(tag: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, NOTES, tag], capture_output=True, text=True)


def test_a_release_has_its_changelog_section_as_notes():
    done = notes("v0.1.0")
    assert done.returncode == 0 and done.stdout.startswith("### Renamed paths")
    assert "## " not in done.stdout.replace("### ", "")  # the section only, up to the next one
    missing = notes("v9.9.9")
    assert missing.returncode == 2 and missing.stdout == ""
    assert "CHANGELOG.md has no section '## 9.9.9'" in missing.stderr


def test_the_release_workflow_builds_checks_and_publishes_on_a_tag():
    workflow = yaml.safe_load((ROOT / ".github" / "workflows" / "release.yml").read_text())
    assert workflow[True]["push"]["tags"] == ["v*"]  # YAML 1.1 reads `on:` as true
    jobs = workflow["jobs"]
    build = [s.get("run", "") for s in jobs["build"]["steps"]]
    checkout = jobs["build"]["steps"][0]
    assert checkout["uses"].startswith("actions/checkout") and checkout["with"]["fetch-depth"] == 0
    assert build.index('python scripts/release_notes.py "$GITHUB_REF_NAME" > release-notes.md') < (
        build.index("python -m build")
    )
    assert "python -m twine check --strict dist/*" in build
    assert jobs["pypi"]["permissions"] == {"id-token": "write"}  # trusted publishing, no token
    (publish,) = [
        s for s in jobs["pypi"]["steps"] if "pypa/gh-action-pypi-publish" in s.get("uses", "")
    ]
    assert "with" not in publish or "password" not in publish["with"]
    assert jobs["github-release"]["permissions"] == {"contents": "write"}
    (release,) = [s["run"] for s in jobs["github-release"]["steps"] if "run" in s]
    assert "gh release create" in release and "dist/*" in release and "release-notes.md" in release
