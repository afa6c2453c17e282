"""The package's layout rules, read from the source with ast: no import circles (module level or
inside functions), the edge (app, cli, tracking, gate) depends on the core and never the reverse,
the run (rageval.run) imports no edge module, the root holds no command handler, cli/ only
parses and calls, no function is longer than 80 lines; the repository's top level is the design
card's."""

from __future__ import annotations

import ast
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "rageval"
EDGE_FOLDERS = ("app", "cli", "tracking", "gate")
# Root modules that are entry points, so edge too: `python -m rageval`, the Python API
# (`rageval.evaluate`, loaded by the package on first use) and the pytest helpers
# that run the gate from a user's test suite.
EDGE_ROOT = ("rageval", "rageval.__main__", "rageval.testing", "rageval.api")
# Third-party libraries only the edge may import.
EDGE_LIBRARIES = ("hydra", "omegaconf", "mlflow", "argparse")
# What a cli module may import besides rageval and the standard library.
CLI_LIBRARIES: tuple[str, ...] = ()
# cli modules that still do work instead of parsing and calling (none left)
CLI_PENDING: set[str] = set()
# The longest a function or method may be, from its `def` line to its last line (docstring
# included; a nested function counts in its own length and in the enclosing one's).
MAX_FUNCTION_LINES = 80
# Functions allowed to be longer (none: every orchestrator is split by phase).
LONG_FUNCTIONS_PENDING: set[str] = set()


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


# templates/: files `rageval init` copies into a project, not modules of the package
MODULES = {module_name(p): p for p in sorted(PACKAGE.rglob("*.py")) if "templates" not in p.parts}


def resolve(name: str) -> str:
    """The package module an import names: itself, or its closest parent that is a module."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name


def imports(module: str) -> list[tuple[str, int, bool]]:
    """(imported name, line, at module level) for every import statement of ``module``."""
    tree = ast.parse(MODULES[module].read_text(encoding="utf-8"))
    top = {id(n) for n in tree.body}
    for node in tree.body:  # imports under `if TYPE_CHECKING:` and try/except at module level
        if isinstance(node, ast.If | ast.Try):
            top |= {id(n) for n in ast.walk(node)}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(a.name, node.lineno, id(node) in top) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            assert not node.level, f"{module}:{node.lineno}: relative import"
            base = node.module or ""
            for a in node.names:
                full = f"{base}.{a.name}"
                found.append((full if full in MODULES else base, node.lineno, id(node) in top))
    return found


def graph() -> dict[str, set[str]]:
    return {
        m: {resolve(n) for n, _, _ in imports(m) if n.startswith("rageval")} - {m} for m in MODULES
    }


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


def is_edge(module: str) -> bool:
    parts = module.split(".")
    return module in EDGE_ROOT or (len(parts) > 1 and parts[1] in EDGE_FOLDERS)


def test_the_graph_is_read_from_every_module():
    g = graph()
    assert len(g) > 60 and "rageval.run.evaluation" in g
    assert "rageval.run.score" in g["rageval.run.evaluation"]
    assert "rageval.scoring.metrics" in g["rageval.run.score"]


def test_the_cycle_finder_finds_a_circle_and_the_rules_can_fail():
    # the checks below would pass vacuously if these helpers were broken
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []
    assert is_edge("rageval.cli.main") and is_edge("rageval.testing")
    assert not is_edge("rageval.run.evaluation") and not is_edge("rageval.retrieval.local.dense")


def test_no_import_circles_at_module_level_or_inside_functions():
    assert cycles(graph()) == []


def test_the_core_never_imports_the_edge():
    bad = [
        f"{MODULES[m].relative_to(PACKAGE.parent)}:{line}: {m} imports {resolve(n)}"
        for m in MODULES
        if not is_edge(m)
        for n, line, _ in imports(m)
        if n.startswith("rageval") and is_edge(resolve(n))
    ]
    assert bad == []


def test_the_core_imports_no_edge_library():
    bad = [
        f"{MODULES[m].relative_to(PACKAGE.parent)}:{line}: {m} imports {n}"
        for m in MODULES
        if not is_edge(m)
        for n, line, _ in imports(m)
        if n.split(".")[0] in EDGE_LIBRARIES
    ]
    assert bad == []


# The run: its spec, the stages it sequences, what it measures and its folder.
RUN = sorted(m for m in MODULES if m.startswith("rageval.run."))


def test_the_run_imports_no_edge_module():
    assert {"rageval.run.evaluation", "rageval.run.spec", "rageval.run.folder"} <= set(RUN)
    names = [(m, n) for m in RUN for n, _, _ in imports(m)]
    assert [n for m, n in names if m == "rageval.run.evaluation"], "the run imports nothing?"
    assert not [(m, n) for m, n in names if n.startswith("rageval") and is_edge(resolve(n))]
    assert not [(m, n) for m, n in names if n.split(".")[0] in EDGE_LIBRARIES]


def test_no_module_imports_the_deprecated_pipeline():
    # rageval.pipeline re-exports rageval.run for users' imports, and warns: rageval's own
    # modules import rageval.run
    bad = [
        f"{MODULES[m].relative_to(PACKAGE.parent)}:{line}"
        for m in MODULES
        if m != "rageval.pipeline"
        for n, line, _ in imports(m)
        if resolve(n) == "rageval.pipeline"
    ]
    assert bad == []
    shim = {resolve(n) for n, _, _ in imports("rageval.pipeline") if n.startswith("rageval")}
    assert shim and all(m.startswith("rageval.run.") for m in shim)


# What only tracking/ may call: MlflowClient's methods (a client handed to a module outside
# tracking/ is passed on to tracking/'s functions, never used there).
MLFLOW_CLIENT_METHODS = {
    "create_experiment",
    "create_run",
    "delete_tag",
    "download_artifacts",
    "get_experiment_by_name",
    "get_run",
    "log_artifact",
    "log_artifacts",
    "log_batch",
    "log_inputs",
    "log_table",
    "log_text",
    "search_runs",
    "set_experiment_tag",
    "set_tag",
    "set_terminated",
    "update_run",
}


def outside_tracking(module: str) -> bool:
    return not module.startswith("rageval.tracking")


def test_only_tracking_imports_mlflow():
    bad = [
        f"{MODULES[m].relative_to(PACKAGE.parent)}:{line}: {m} imports {n}"
        for m in MODULES
        if outside_tracking(m)
        for n, line, _ in imports(m)
        if n.split(".")[0] == "mlflow"
    ]
    assert bad == []


def test_only_tracking_calls_the_mlflow_client():
    bad = [
        f"{MODULES[m].relative_to(PACKAGE.parent)}:{node.lineno}: {m} calls .{node.func.attr}()"
        for m in MODULES
        if outside_tracking(m)
        for node in ast.walk(ast.parse(MODULES[m].read_text(encoding="utf-8")))
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in MLFLOW_CLIENT_METHODS
    ]
    assert bad == []


def test_the_mlflow_checks_can_fail():
    # the tracking modules themselves do both, so the checks above would see it elsewhere
    calls = {
        node.func.attr
        for node in ast.walk(ast.parse(MODULES["rageval.tracking.sweep"].read_text()))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
    }
    assert {"set_tag", "create_run", "search_runs"} <= calls & MLFLOW_CLIENT_METHODS
    assert any(n.startswith("mlflow") for n, _, _ in imports("rageval.tracking.client"))


def test_no_package_redirects_names_with_getattr():
    # rageval/__init__.py's lazy rageval.evaluate/compare is the public API; any other module
    # __getattr__ would be a redirect of a renamed module (a deprecated module kept for a
    # release, as rageval.pipeline, re-exports its names by plain imports)
    bad = [
        m
        for m, p in MODULES.items()
        if m != "rageval"
        and any(
            isinstance(n, ast.FunctionDef) and n.name == "__getattr__"
            for n in ast.parse(p.read_text(encoding="utf-8")).body
        )
    ]
    assert bad == []


# The ground the stages stand on: formats/ reads and writes files of the ground types, masks the
# secrets the schema declares (formats/redact.py) and imports nothing but the ground (a stage's
# module imported from formats/ would reach back up the layers).
GROUND = ("rageval.types", "rageval.errors", "rageval.config_schema")


def test_formats_imports_only_the_ground():
    bad = [
        f"{MODULES[m].relative_to(PACKAGE.parent)}:{line}: {m} imports {resolve(n)}"
        for m in MODULES
        if m.startswith("rageval.formats")
        for n, line, _ in imports(m)
        if n.startswith("rageval")
        and not resolve(n).startswith("rageval.formats")
        and resolve(n) not in GROUND
    ]
    assert bad == []


# Stages live in their folders (inputs/, retrieval/, scoring/, ...), and the run that sequences
# them in run/; the root holds the ground, the project and the entry points.
ROOT_MODULES = {
    "rageval.config_schema",
    "rageval.errors",
    "rageval.pipeline",  # deprecated: re-exports rageval.run's names for one release
    "rageval.project",
    "rageval.types",
}


def test_the_package_root_holds_no_stage():
    root = {m for m, p in MODULES.items() if p.parent == PACKAGE and m not in EDGE_ROOT}
    assert root - ROOT_MODULES == set(), "a new root module: does it belong in a stage's folder?"


def test_the_package_root_holds_no_command_handler():
    root = [m for m, p in MODULES.items() if p.parent == PACKAGE and m not in EDGE_ROOT]
    assert "rageval.types" in root and "rageval.project" in root
    for m in root:
        tree = ast.parse(MODULES[m].read_text(encoding="utf-8"))
        defs = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
        assert not defs & {"add_arguments", "handle", "main"}, m
        assert "argparse" not in {n.split(".")[0] for n, _, _ in imports(m)}, m


CLI = sorted(m for m in MODULES if m.startswith("rageval.cli.") and m not in CLI_PENDING)


@pytest.mark.parametrize("module", CLI)
def test_cli_modules_only_parse_and_call(module):
    third_party = {
        n.split(".")[0]
        for n, _, _ in imports(module)
        if not n.startswith("rageval") and n.split(".")[0] not in sys.stdlib_module_names
    }
    assert third_party <= set(CLI_LIBRARIES), f"{module} imports {sorted(third_party)}"
    tree = ast.parse(MODULES[module].read_text(encoding="utf-8"))
    defs = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
    if module not in ("rageval.cli.main", "rageval.cli.paths"):
        assert {"add_arguments", "handle"} <= defs, f"{module} defines {sorted(defs)}"


def test_no_module_imports_a_private_name_of_another():
    bad = [
        f"{MODULES[m].relative_to(PACKAGE.parent)}:{node.lineno}: {node.module}.{a.name}"
        for m in MODULES
        for node in ast.walk(ast.parse(MODULES[m].read_text(encoding="utf-8")))
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("rageval")
        for a in node.names
        if a.name.startswith("_")
    ]
    assert bad == []


def _requirement_name(spec: str) -> str:
    import re

    return re.split(r"[\[<>=!~; ]", spec, maxsplit=1)[0].lower().replace("_", "-")


def declared_distributions() -> tuple[set[str], set[str]]:
    """(the dependencies, the dependencies of the extras) pyproject.toml declares."""
    import tomllib

    project = tomllib.loads((PACKAGE.parent / "pyproject.toml").read_text())["project"]
    base = {_requirement_name(d) for d in project["dependencies"]}
    extras = {
        _requirement_name(d)
        for deps in project["optional-dependencies"].values()
        for d in deps
        if not d.startswith("rageval")
    }
    return base, extras


def third_party_imports() -> dict[str, list[tuple[str, bool]]]:
    """Top-level third-party module -> [(importing module, at module level)]."""
    out: dict[str, list[tuple[str, bool]]] = {}
    for module in MODULES:
        for name, _line, top in imports(module):
            first = name.split(".")[0]
            if first in sys.stdlib_module_names or first in ("rageval", "hydra_plugins", ""):
                continue
            out.setdefault(first, []).append((module, top))
    return out


def test_every_third_party_import_is_a_declared_dependency():
    """A plain `pip install rageval` has every module a default command imports: a module
    imported at module level comes from a dependency, one imported inside a function from a
    dependency or an extra (whose absence that function reports with the install hint)."""
    from importlib.metadata import packages_distributions

    base, extras = declared_distributions()
    dists = packages_distributions()
    problems = []
    for module, places in sorted(third_party_imports().items()):
        names = {d.lower().replace("_", "-") for d in dists.get(module, [])}
        if not names & (base | extras):
            problems.append(f"{module} ({places[0][0]}): from {sorted(names)}, not declared")
        elif any(top for _, top in places) and not names & base:
            where = next(m for m, top in places if top)
            problems.append(f"{module} ({where}): imported at module level, only in an extra")
    assert problems == []


def function_lengths(tree: ast.AST, module: str) -> dict[str, tuple[int, int]]:
    """``module:Class.method`` (nested names joined by dots) -> (line of its ``def``, lines from
    the ``def`` to its last line) for every function and method in ``tree``."""
    out: dict[str, tuple[int, int]] = {}

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                name = f"{prefix}.{child.name}" if prefix else child.name
                if not isinstance(child, ast.ClassDef):
                    out[f"{module}:{name}"] = (child.lineno, child.end_lineno - child.lineno + 1)
                visit(child, name)
            else:
                visit(child, prefix)

    visit(tree, "")
    return out


def test_function_lengths_count_from_def_to_the_last_line():
    source = (
        "import functools\n"
        "@functools.cache\n"
        "def f(x):\n"
        '    """Doc."""\n'
        "    def g():\n"
        "        return x\n"
        "    return g\n"
        "class C:\n"
        "    async def m(self):\n"
        "        if True:\n"
        "            pass\n"
    )
    assert function_lengths(ast.parse(source), "m") == {
        "m:f": (3, 5),
        "m:f.g": (5, 2),
        "m:C.m": (9, 3),
    }


def test_no_function_is_longer_than_80_lines():
    lengths = {
        name: where
        for module, path in MODULES.items()
        for name, where in function_lengths(
            ast.parse(path.read_text(encoding="utf-8")), module
        ).items()
    }
    assert len(lengths) > 500 and "rageval.run.evaluation:evaluate" in lengths
    long = [
        f"{name} (line {line}): {n} lines"
        for name, (line, n) in sorted(lengths.items())
        if n > MAX_FUNCTION_LINES and name not in LONG_FUNCTIONS_PENDING
    ]
    assert long == []


# The one module that parses an override line (its key, its +/++/~ prefix, a sweep's values).
OVERRIDE_PARSER = "rageval.app.override"
# `.lstrip("+~")`, `.lstrip("+")`, `.lstrip('~+')`...: an override's prefix taken off by hand
PREFIX_STRIP = re.compile(r"""\.lstrip\(\s*(['"])[+~]+\1\s*\)""")


def prefix_strips(source: str) -> list[int]:
    """The lines of ``source`` that strip an override's prefix by hand."""
    return [i for i, text in enumerate(source.splitlines(), 1) if PREFIX_STRIP.search(text)]


def test_the_prefix_rule_can_fail():
    for text in ('k = o.lstrip("+~")', "o.lstrip('+')", 'o.lstrip("~+")', 'x.lstrip( "~" )'):
        assert prefix_strips(f"a = 1\n{text}\n") == [2], text
    assert prefix_strips('o.strip()\no.lstrip("-")\no.lstrip()\n') == []


def test_override_prefixes_are_taken_off_in_the_parser_module_only():
    bad = [
        f"{MODULES[m].relative_to(PACKAGE.parent)}:{line}"
        for m in MODULES
        if m != OVERRIDE_PARSER
        for line in prefix_strips(MODULES[m].read_text(encoding="utf-8"))
    ]
    assert bad == []
    assert prefix_strips(MODULES[OVERRIDE_PARSER].read_text(encoding="utf-8")), "moved?"


HYDRA_LIBRARIES = ("hydra", "omegaconf")
PLUGINS = PACKAGE.parent / "hydra_plugins"


def _private(name: str) -> bool:
    return any(p.startswith("_") and not p.startswith("__") for p in name.split("."))


def private_hydra_uses(source: str) -> list[str]:
    """Private Hydra or OmegaConf names ``source`` uses: an import from a ``_module`` or of a
    ``_name``, an imported object's ``_attribute``, or Hydra's config loader (ConfigLoaderImpl)."""
    tree = ast.parse(source)
    imported: set[str] = set()
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name.split(".")[0] in HYDRA_LIBRARIES:
                    imported.add((a.asname or a.name).split(".")[0])
                    if _private(a.name):
                        found.append(f"{node.lineno}: import {a.name}")
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in (
            HYDRA_LIBRARIES
        ):
            for a in node.names:
                imported.add(a.asname or a.name)
                if _private(node.module or "") or _private(a.name):
                    found.append(f"{node.lineno}: from {node.module} import {a.name}")
    for node in ast.walk(tree):
        if isinstance(node, ast.Name | ast.Attribute):
            name = node.id if isinstance(node, ast.Name) else node.attr
            if name == "ConfigLoaderImpl":
                found.append(f"{node.lineno}: {name}")
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id in imported
            and _private(node.attr)
        ):
            found.append(f"{node.lineno}: {node.value.id}.{node.attr}")
    return found


def test_the_private_hydra_rule_can_fail():
    assert private_hydra_uses(
        "from hydra._internal.config_loader_impl import ConfigLoaderImpl\n"
        "ConfigLoaderImpl._apply_overrides_to_config([], cfg)\n"
    )
    assert private_hydra_uses("import hydra\nhydra._internal.x()\n")
    assert private_hydra_uses("from omegaconf import OmegaConf\nOmegaConf._set_flag(c)\n")
    assert private_hydra_uses("from hydra.core.x import _helper\n")
    public = "from omegaconf import OmegaConf\nOmegaConf.update(c, 'k', 1)\n"
    assert private_hydra_uses(public) == []


def test_no_module_uses_a_private_hydra_name():
    files = [*MODULES.values(), *sorted(PLUGINS.rglob("*.py"))]
    bad = [
        f"{p.relative_to(PACKAGE.parent)}:{use}"
        for p in files
        for use in private_hydra_uses(p.read_text(encoding="utf-8"))
    ]
    assert len(files) > 60 and bad == []


# The repository's top level: the design card's entries (pyproject.toml, conf/, rageval/, tests/,
# golden/, scripts/, README.md), then the documentation, the examples, the folders Hydra and
# pytest find plugins in (rageval_pytest/ stays outside rageval, so pytest never imports rageval
# for a suite that does not use it), CI, the project file and git's own.
CARD = {"pyproject.toml", "conf", "rageval", "tests", "golden", "scripts", "README.md"}
BESIDE_THE_CARD = {
    "docs",
    "examples",
    "hydra_plugins",
    "rageval_pytest",
    ".ci",
    ".github",
    "CHANGELOG.md",
    "BENCHMARKS.md",
    "rageval.yaml",
    ".gitignore",
}


def top_level() -> set[str]:
    """The first part of every file git tracks or would track (not ignored) in the checkout."""
    if shutil.which("git") is None or not (PACKAGE.parent / ".git").exists():
        pytest.skip("not a git checkout")
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard"],
        cwd=PACKAGE.parent,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return {line.split("/", 1)[0] for line in listed.splitlines() if line}


def test_the_repository_top_level_is_the_design_card_s():
    top = top_level()
    assert CARD - top == set(), "missing from the top level"
    assert top - CARD - BESIDE_THE_CARD == set(), "a new top-level entry: where does it belong?"


def test_conf_and_golden_are_the_single_sources_of_the_packaged_data():
    from rageval.app.config import CONF_DIR, DEMO_DIR

    # nothing inside the package shadows them (the build copies them there: package data)
    assert not (PACKAGE / "conf").exists() and not (PACKAGE / "demo").exists()
    root = PACKAGE.parent
    assert (root / "conf", root / "golden") == (CONF_DIR, DEMO_DIR)
    assert (CONF_DIR / "config.yaml").is_file() and (DEMO_DIR / "retriever.jsonl").is_file()
    # the repository is a rageval project whose config folder and baseline are those two
    from rageval.project import load_project

    project = load_project(root)
    assert project.config_dir == CONF_DIR and project.baseline == DEMO_DIR / "baseline.json"
