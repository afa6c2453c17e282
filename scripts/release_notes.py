"""A release's notes: its section of CHANGELOG.md, printed for the GitHub release.

    python scripts/release_notes.py v0.2.0 > release-notes.md

The tag (``v0.2.0`` or ``0.2.0``) names the version; the section is the one headed ``## 0.2.0``
(a date or words may follow on that line), up to the next ``## `` heading. No such section, or an
empty one, exits 2 naming what to add: a release is not published without its changelog.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

CHANGELOG = Path(__file__).resolve().parents[1] / "CHANGELOG.md"


def section(text: str, version: str) -> str | None:
    """The body of the ``## <version>`` section of ``text``, or None when it has none."""
    heading = re.compile(rf"^## v?{re.escape(version)}(?:\s|$)")
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if heading.match(line):
            body = []
            for later in lines[i + 1 :]:
                if later.startswith("## "):
                    break
                body.append(later)
            return "\n".join(body).strip()
    return None


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: release_notes.py TAG (v0.2.0)", file=sys.stderr)
        return 2
    version = argv[0].removeprefix("refs/tags/").removeprefix("v")
    body = section(CHANGELOG.read_text(encoding="utf-8"), version)
    if not body:
        print(
            f"release_notes: {CHANGELOG.name} has no section '## {version}' with notes; rename "
            f"'## Unreleased' to '## {version}' (and start a new Unreleased) before tagging",
            file=sys.stderr,
        )
        return 2
    print(body)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
