"""``rageval init``: write a project that runs as created (rageval.project).

The template (rageval/templates/project) holds the project file, a config folder layered on the
packaged configs (a dataset and a backend of the project's own), a small corpus and golden set in
the evidence-quote format, an example retriever, a pytest test of the gate and CI jobs for GitHub
Actions and GitLab. Files that exist are kept, never overwritten; .gitignore gains the lines of
rageval's outputs it lacks.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from rageval.errors import InputError

TEMPLATE = Path(__file__).resolve().parent / "templates" / "project"
# what a project's outputs are: run and sweep folders, the local MLflow store, the embedding cache
GITIGNORE = (
    "outputs/",
    "multirun/",
    "mlflow.db",
    "mlruns/",
    "optuna.db",
    "optuna.db.*.lock",
    ".rageval-cache/",
)


@dataclass
class Scaffolded:
    """What ``init`` did: the project folder, the files written and the ones kept."""

    root: Path
    written: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)
    gitignore: list[str] = field(default_factory=list)

    def summary(self) -> str:
        lines = [f"rageval project in {self.root}"]
        if self.written:
            lines.append(f"  wrote {len(self.written)} files: {', '.join(self.written)}")
        if self.kept:
            lines.append(f"  kept your {', '.join(self.kept)} (not overwritten)")
        if self.gitignore:
            lines.append(f"  .gitignore: added {' '.join(self.gitignore)}")
        lines += [
            "next:",
            f"  cd {self.root}",
            "  rageval                          # evaluate (python -m rageval works too)",
            "  rageval -m chunk=128,256 backend=keyword,faiss    # a sweep, compared in MLflow",
            "  rageval promote --best ndcg@5    # the best run becomes golden/baseline.json",
            "  rageval check                    # the gate: exit 1 when retrieval got worse",
            "  pytest tests/test_retrieval.py   # the same gate from your test suite",
        ]
        return "\n".join(lines)


def project_name(root: Path) -> str:
    """A name for the project's MLflow experiment: its folder's, in safe characters."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", root.resolve().name).strip("-") or "rageval"


def target_of(relative: Path) -> Path:
    """A template file's place in the project: ``dot-github`` -> ``.github`` (a wheel's package
    data leaves out names starting with a dot)."""
    return Path(*(p.replace("dot-", ".", 1) if p.startswith("dot-") else p for p in relative.parts))


def init_project(folder: str | Path) -> Scaffolded:
    """Write the template into ``folder`` (created when missing); existing files are kept."""
    root = Path(folder).expanduser()
    if root.exists() and not root.is_dir():
        raise InputError("is a file; name a folder for the project", path=str(root))
    done = Scaffolded(root)
    name = project_name(root)
    for source in sorted(p for p in TEMPLATE.rglob("*") if p.is_file()):
        if "__pycache__" in source.parts:
            continue
        relative = target_of(source.relative_to(TEMPLATE))
        target = root / relative
        _refuse_links_out(root, relative)
        if target.exists():
            done.kept.append(relative.as_posix())
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        text = source.read_text(encoding="utf-8").replace("{{project}}", name)
        target.write_text(text, encoding="utf-8")
        done.written.append(relative.as_posix())
    _refuse_links_out(root, Path(".gitignore"))
    done.gitignore = _extend_gitignore(root / ".gitignore")
    return done


def _refuse_links_out(root: Path, relative: Path) -> None:
    """InputError when writing ``root / relative`` would follow a symlink (the file, dangling
    or not, or a folder on the way) to a place outside the project: init writes only inside."""
    inside = root.resolve()
    node = root
    for part in relative.parts:
        node = node / part
        if node.is_symlink() and not Path(os.path.realpath(node)).is_relative_to(inside):
            raise InputError(
                f"is a symbolic link to {os.readlink(node)}, outside the project; init never "
                "writes through it: remove the link or init another folder",
                path=str(node),
            )


def _extend_gitignore(path: Path) -> list[str]:
    """Append the GITIGNORE lines ``path`` lacks; returns them."""
    text = path.read_text(encoding="utf-8") if path.is_file() else ""
    have = {line.strip() for line in text.splitlines()}
    missing = [line for line in GITIGNORE if line not in have]
    if missing:
        head = "" if not text or text.endswith("\n") else "\n"
        path.write_text(f"{text}{head}# rageval's outputs\n" + "\n".join(missing) + "\n")
    return missing
