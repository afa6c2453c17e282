"""``rageval init``: write a project that runs as created (rageval.project).

The template (rageval/templates/project) holds the project file, a config folder layered on the
packaged configs (a dataset and a backend of the project's own), a small corpus and golden set in
the evidence-quote format, an example retriever, a pytest test of the gate, CI jobs for GitHub
Actions and GitLab and the requirements file they install (rageval pinned to the version that
wrote the project, pytest, the retriever's own dependencies). Files that exist are kept, never
overwritten; .gitignore gains the lines of rageval's outputs it lacks.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from rageval.errors import InputError

TEMPLATE = Path(__file__).resolve().parents[1] / "templates" / "project"
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


# --retriever: the adapter the team's retriever runs under (docs/your-retriever.md) -> the lines
# requirements-retrieval.txt starts its retriever section with
RETRIEVERS: dict[str, tuple[str, ...]] = {
    "class": (
        "# (the example retriever, my_retriever.py, needs nothing more; add your own packages)",
    ),
    "function": (
        "# backend=function imports your search function: its package and what it imports,",
        "# e.g. `-e .` for this repository's own package, or myapp==1.4.2",
    ),
    "langchain": (
        "langchain-core>=0.3",
        "# and what your factory's retriever imports, e.g. langchain-community (BM25Retriever,",
        "# vector stores), rank-bm25, your embedding provider's package",
    ),
    "llamaindex": (
        "llama-index-core>=0.12",
        "# and what your factory's retriever imports, e.g. llama-index-retrievers-bm25,",
        "# your vector store's and embedding provider's llama-index-* packages",
    ),
}


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
            "in CI: pip install -r requirements-retrieval.txt (after CPU torch; add your "
            "retriever's dependencies there)",
        ]
        return "\n".join(lines)


def project_name(root: Path) -> str:
    """A name for the project's MLflow experiment: its folder's, in safe characters."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", root.resolve().name).strip("-") or "rageval"


def target_of(relative: Path) -> Path:
    """A template file's place in the project: ``dot-github`` -> ``.github`` (a wheel's package
    data leaves out names starting with a dot)."""
    return Path(*(p.replace("dot-", ".", 1) if p.startswith("dot-") else p for p in relative.parts))


def installed_version() -> str:
    """The installed rageval's version (``rageval.__version__``): the git tag it was built from
    (setuptools-scm), or the commits since (``0.2.1.dev3+g<commit>``)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("rageval")
    except PackageNotFoundError:  # imported from a source tree that was never installed
        return "0+unknown"


def rageval_requirement() -> str:
    """``rageval==<the version running>``: what the project's CI installs."""
    return f"rageval=={installed_version()}"


def init_project(folder: str | Path, retriever: str = "class") -> Scaffolded:
    """Write the template into ``folder`` (created when missing); existing files are kept.
    ``retriever`` (a key of RETRIEVERS) pre-fills the retriever's dependencies."""
    if retriever not in RETRIEVERS:
        raise InputError(f"unknown retriever {retriever!r}; one of {', '.join(RETRIEVERS)}")
    root = Path(folder).expanduser()
    if root.exists() and not root.is_dir():
        raise InputError("is a file; name a folder for the project", path=str(root))
    done = Scaffolded(root)
    values = {
        "project": project_name(root),
        "rageval_requirement": rageval_requirement(),
        "retriever_requirements": "\n".join(RETRIEVERS[retriever]),
    }
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
        text = source.read_text(encoding="utf-8")
        for key, value in values.items():
            text = text.replace("{{" + key + "}}", value)
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
