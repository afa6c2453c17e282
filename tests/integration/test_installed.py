"""rageval as a team installs it: a release built from this checkout (the sdist, then the wheel
from it), in an environment where rageval comes only from that wheel (its dependencies are reused
from the test environment, so the test stays fast), used from empty folders far from the checkout.

The demo runs from anywhere (its numbers equal the checkout's); ``rageval init`` makes a project
whose own backend option (its example retriever) runs under ``python -m rageval`` and the
``rageval`` script, in a 2x2 sweep, is promoted, is checked from another working directory (pass,
then fail once the project's retriever is made worse), and its scaffolded pytest test passes.
"""

from __future__ import annotations

import os
import re
import site
import subprocess
import sys
from pathlib import Path

import pytest
from release_build import build_release

pytestmark = [pytest.mark.integration, pytest.mark.long_module]
ROOT = Path(__file__).resolve().parents[2]


def run(args, cwd, env, code=0, timeout=300):
    done = subprocess.run(
        [str(a) for a in args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert done.returncode == code, (
        f"{' '.join(map(str, args))} in {cwd}: exit {done.returncode}\n"
        f"{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    )
    return done.stdout + done.stderr


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """(the environment's python, its bin folder, an environment for subprocesses)."""
    tmp = tmp_path_factory.mktemp("installed")
    wheels = tmp / "wheels"
    wheel = build_release(wheels)
    env_dir = tmp / "env"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", env_dir], check=True)
    python = env_dir / "bin" / "python"
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", python, "install", "-q", "--no-deps", wheel],
        check=True,
        capture_output=True,
    )
    # the dependencies: the test environment's site-packages, after the new environment's own
    # (a plain path line: that folder's .pth files, the checkout's editable install among them,
    # are not read)
    (purelib,) = {p for p in site.getsitepackages() if p.endswith("site-packages")}
    ours = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    (Path(ours) / "test_dependencies.pth").write_text(purelib + "\n")
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("PYTEST", "RAGEVAL_PROJECT", "GITHUB_")) and k != "PYTHONPATH"
    }
    env["PATH"] = f"{env_dir / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    env["MLFLOW_TRACKING_URI"] = f"sqlite:///{tmp / 'mlflow.db'}"
    return python, env_dir / "bin", env, tmp


def test_rageval_comes_from_the_wheel_with_its_configs_and_demo(installed):
    python, bin_dir, env, tmp = installed
    empty = tmp / "empty"
    empty.mkdir()
    # one version, the checkout's git tag (or the commits since it): setuptools-scm's, the
    # files' names, `rageval --version` and rageval.__version__ of the installed wheel
    scm = run([sys.executable, "-m", "setuptools_scm"], ROOT, env).strip().splitlines()[-1]
    names = {p.name.removeprefix("rageval-") for p in (tmp / "wheels").iterdir()}
    assert names == {f"{scm}.tar.gz", f"{scm}-py3-none-any.whl"}
    assert run([bin_dir / "rageval", "--version"], empty, env).strip() == f"rageval {scm}"
    out = run([python, "-c", "import rageval; print(rageval.__version__)"], empty, env)
    assert out.strip() == scm
    out = run(
        [python, "-c", "import rageval.app.config as c; print(c.CONF_DIR, c.DEMO_DIR)"],
        empty,
        env,
    )
    conf, demo = out.split()
    assert str(ROOT) not in out and "site-packages" in conf
    assert (Path(conf) / "rageval.yaml").is_file() and (Path(conf) / "hydra" / "sweeper").is_dir()
    assert (Path(demo) / "retriever.jsonl").is_file() and (Path(demo) / "baseline.json").is_file()
    assert len(list((Path(demo) / "corpus").rglob("*.md"))) == 41
    # the pages' templates, scripts and styles (package data of rageval.report.pages)
    out = run([python, "-c", "import rageval.report.pages as p; print(p.FOLDER)"], empty, env)
    folder = Path(out.strip().splitlines()[-1])
    assert str(ROOT) not in str(folder) and "site-packages" in str(folder)
    checkout = ROOT / "rageval" / "report" / "pages"
    assert all((folder / f.name).is_file() for f in checkout.iterdir() if f.is_file())


def test_the_demo_runs_from_an_empty_folder(installed):
    import rageval
    from rageval.app.config import DEMO_DIR

    python, _, env, tmp = installed
    empty = tmp / "demo-here"
    empty.mkdir()
    # BM25: the packaged configs and demo data are what this checks, and BM25 embeds nothing
    # (the vector demo's numbers are gated by test_retriever_regression)
    out = run([python, "-m", "rageval", "search=bm25", "mlflow.enabled=false"], empty, env)
    here = rageval.evaluate("bm25", DEMO_DIR / "retriever.jsonl", chunk=256)
    assert re.search(rf"ndcg@5\s+{here.metrics['ndcg@5']:.4f}", out), out[-2000:]
    assert "labels: gold (golden set + 63 human judgements" in out and "Traceback" not in out
    (page,) = empty.rglob("report.html")  # rendered from the installed templates
    assert '<table id="q"' in page.read_text(encoding="utf-8")
    out = run([python, "-m", "rageval", "run", "--help"], empty, env)
    assert "search     bm25, hybrid, semantic, [vector]" in out


def test_a_project_of_its_own_runs_sweeps_promotes_and_gates(installed):
    python, bin_dir, env, tmp = installed
    work = tmp / "team"
    work.mkdir()
    out = run([bin_dir / "rageval", "init", "proj"], work, env)
    assert "wrote 18 files" in out
    proj = work / "proj"
    off = "mlflow.enabled=false"
    # both entry points, from a subfolder: the project's config and its own backend option
    for cmd in ([python, "-m", "rageval", off], [bin_dir / "rageval", off]):
        out = run(cmd, proj / "tests", env)
        assert "labels: gold" in out and "0 texts embedded" in out, out[-2000:]
    report = re.findall(r"report: (\S+report\.json)", out)[-1]
    out = run(
        [bin_dir / "rageval", "-m", "chunk=128,256", "backend=keyword,faiss", "search=bm25", off],
        proj,
        env,
    )
    assert "Sweep of 4 jobs (0 failed)" in out, out[-3000:]
    out = run([bin_dir / "rageval", "promote", report], proj / "corpus", env)
    assert "backend=keyword" in out and (proj / "golden" / "baseline.json").is_file()
    elsewhere = tmp / "elsewhere"
    elsewhere.mkdir()
    baseline = proj / "golden" / "baseline.json"
    check = [bin_dir / "rageval", "check", "--baseline", baseline]
    out = run(check, elsewhere, env)
    assert "PASS" in out and "dataset=docs" in out and "backend=keyword" in out
    run(
        [
            python,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:randomly",
            "-p",
            "no:xdist",
            "-p",
            "no:cacheprovider",
        ]
        + ["tests/test_retrieval.py"],
        proj,
        env,
    )
    # the team's retriever gets worse: its rankings reversed
    code = proj / "my_retriever.py"
    code.write_text(
        code.read_text().replace("scored.sort(key=lambda s: (-s[0], s[1]))", "scored.sort()")
    )
    out = run(check, elsewhere, env, code=1)
    assert "FAIL:" in out and "regressed" in out
