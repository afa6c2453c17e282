"""``rageval init`` writes a project that runs as created, keeps what exists; the gate's verdict
reaches GitHub Actions (job summary, annotations)."""

from __future__ import annotations

import json
import os

import pytest

from rageval.project import load_project


def test_init_writes_a_whole_project_and_keeps_existing_files(tmp_path, capsys):
    from rageval.cli.main import main

    root = tmp_path / "team repo"
    root.mkdir()
    (root / ".gitignore").write_text("outputs/\n*.pyc")  # no newline at the end
    (root / "my_retriever.py").write_text("# ours\n")
    assert main(["init", str(root)]) == 0
    out = capsys.readouterr().out
    assert "kept your my_retriever.py" in out and "rageval promote --best" in out
    assert (root / "my_retriever.py").read_text() == "# ours\n"
    for name in (
        "rageval.yaml",
        "conf/config.yaml",
        "conf/backend/keyword.yaml",
        "conf/dataset/docs.yaml",
        "tests/test_retrieval.py",
        ".github/workflows/retrieval.yml",
        ".gitlab-ci.yml",
        "requirements-retrieval.txt",
        "golden/retriever.jsonl",
    ):
        assert (root / name).is_file(), name
    assert not list(root.rglob("dot-*")) and not list(root.rglob("__pycache__"))
    assert len(list((root / "corpus").glob("*.md"))) == 8
    config = (root / "conf" / "config.yaml").read_text()
    assert "experiment: team-repo" in config and "{{" not in config
    gitignore = (root / ".gitignore").read_text().splitlines()
    assert gitignore[:2] == ["outputs/", "*.pyc"] and gitignore.count("outputs/") == 1
    assert {"multirun/", "mlflow.db", ".rageval-cache/"} <= set(gitignore)
    project = load_project(root)
    assert project.config_dir == (root / "conf").resolve()
    # again: nothing overwritten, nothing added twice
    assert main(["init", str(root)]) == 0
    assert "wrote" not in capsys.readouterr().out
    assert (root / ".gitignore").read_text().splitlines() == gitignore


def test_the_template_golden_set_validates_against_its_corpus(tmp_path, capsys, monkeypatch):
    from rageval.cli.main import main
    from rageval.project import ENV
    from rageval.scaffold import init_project

    init_project(tmp_path / "p")
    golden = tmp_path / "p" / "golden" / "retriever.jsonl"
    monkeypatch.delenv(ENV, raising=False)
    monkeypatch.chdir(tmp_path / "p" / "tests")  # the project's golden set and corpus, found
    assert main(["golden", "validate"]) == 0, capsys.readouterr()
    assert "16 queries" in capsys.readouterr().out
    assert ENV not in os.environ  # main() leaves the caller's environment as it was
    lines = [json.loads(x) for x in golden.read_text().splitlines()]
    assert len(lines) == 16 and all(q["evidence"] for q in lines)


def test_the_template_retriever_ranks_by_shared_words(tmp_path, monkeypatch):
    import importlib.util

    from rageval.scaffold import init_project
    from rageval.types import Chunk

    init_project(tmp_path / "p")
    spec = importlib.util.spec_from_file_location("t_ret", tmp_path / "p" / "my_retriever.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    r = module.KeywordRetriever()
    texts = ["refunds within 14 days", "single sign-on with okta", "refunds refunds billing"]
    r.index([Chunk(f"c{i}", "d", i, t, 0, len(t), 3) for i, t in enumerate(texts)])
    (hits,) = r.search(["how do refunds work"], 5)
    assert hits.ids == ("c2", "c0") and hits.scores[0] > hits.scores[1] > 0
    assert r.search(["nothing matches"], 5)[0].ids == ()


def requirements(path):
    lines = [x.split("#")[0].strip() for x in path.read_text().splitlines()]
    return [x for x in lines if x]


@pytest.mark.parametrize(
    ("retriever", "extra"),
    [
        (None, []),
        ("function", []),
        ("langchain", ["langchain-core>=0.3"]),
        ("llamaindex", ["llama-index-core>=0.12"]),
    ],
)
def test_init_pins_rageval_and_fills_in_the_retrievers_dependencies(tmp_path, retriever, extra):
    import rageval
    from rageval.cli.main import main

    args = ["init", str(tmp_path / "p")] + (["--retriever", retriever] if retriever else [])
    assert main(args) == 0
    text = (tmp_path / "p" / "requirements-retrieval.txt").read_text()
    assert requirements(tmp_path / "p" / "requirements-retrieval.txt") == [
        f"rageval=={rageval.__version__}",
        "pytest>=8",
        *extra,
    ]
    # the marked place for the team's own dependencies is the file's last section
    assert "your retriever's own dependencies" in text.split("pytest>=8")[1] and "{{" not in text


def test_the_ci_jobs_install_from_the_requirements_file_and_cache_on_it(tmp_path):
    import yaml

    from rageval.scaffold import init_project

    init_project(tmp_path / "p")
    workflow = yaml.safe_load((tmp_path / "p" / ".github/workflows/retrieval.yml").read_text())
    assert workflow["permissions"]["pull-requests"] == "write"
    (job,) = workflow["jobs"].values()
    steps = job["steps"]
    (python,) = [s for s in steps if s.get("uses", "").startswith("actions/setup-python")]
    assert python["with"]["cache"] == "pip"
    assert python["with"]["cache-dependency-path"] == "requirements-retrieval.txt"
    (cache,) = [s for s in steps if s.get("uses", "").startswith("actions/cache")]
    assert cache["with"]["path"] == job["env"]["RAGEVAL_CACHE_DIR"]
    runs = [s["run"] for s in steps if "run" in s]
    assert runs[0].startswith("pip install torch==2.13.0 --index-url")  # CPU torch first
    assert runs[1] == "pip install $RAGEVAL_FROM -r requirements-retrieval.txt"
    assert job["env"]["RAGEVAL_FROM"] == "${{ vars.RAGEVAL_FROM }}"
    assert "rageval check --format github" in runs[2] and "rageval comment --github" in runs[3]
    gitlab = yaml.safe_load((tmp_path / "p" / ".gitlab-ci.yml").read_text())["retrieval-gate"]
    assert gitlab["script"][:2] == runs[:2]
    assert {"files": ["requirements-retrieval.txt"]} in [c["key"] for c in gitlab["cache"]]
    assert "rageval comment --gitlab" in gitlab["after_script"][0]
    assert gitlab["artifacts"]["expose_as"] and gitlab["artifacts"]["when"] == "always"


def test_the_readme_shows_the_steps_the_workflow_runs(tmp_path):
    import re
    from pathlib import Path

    import yaml

    from rageval.scaffold import init_project

    readme = (Path(__file__).resolve().parents[3] / "README.md").read_text()
    section = readme.split("### In your CI", 1)[1]
    block = re.search(r"```bash\n(.*?)```", section, re.S).group(1)
    shown = [line.split("  #")[0].strip() for line in block.splitlines() if line.strip()]
    init_project(tmp_path / "p")
    workflow = yaml.safe_load((tmp_path / "p" / ".github/workflows/retrieval.yml").read_text())
    (job,) = workflow["jobs"].values()
    assert shown == [s["run"].strip() for s in job["steps"] if "run" in s]


def test_init_refuses_a_file(tmp_path, capsys):
    from rageval.cli.main import main

    (tmp_path / "f").write_text("x")
    assert main(["init", str(tmp_path / "f")]) == 2
    assert "is a file" in capsys.readouterr().err


def _comparison(status="regressed"):
    from rageval.gate.compare import Comparison, MetricRow

    rows = [
        MetricRow("ndcg@5", 0.8, 0.7, -0.1, 0.03, 0.01, "regressed", 1, 2, 3),
        MetricRow("recall@5", 0.5, 0.6, 0.1, 0.03, 0.02, "improved"),
        MetricRow("mrr@5", 0.5, 0.5, 0.0, 0.03, 1.0, "ok"),
    ]
    return Comparison(status=status, rows=rows, k=5, n_queries=6)


def test_github_annotations_name_each_regression_and_escape_their_text():
    from rageval.gate.ci import github_annotations

    lines = github_annotations(_comparison(), "golden/base,line:1.json")
    assert lines[0].startswith("::error file=golden/base%2Cline%3A1.json,title=retrieval gate::")
    assert "ndcg@5 0.8000 -> 0.7000 (-0.1000; tolerance 0.03, p 0.01): regressed" in lines[0]
    assert lines[1].startswith("::notice ") and "improved" in lines[1]
    assert lines[-1].endswith("::FAIL: ndcg@5") and len(lines) == 3
    passed = github_annotations(_comparison("pass"), "b.json")[-1]
    assert passed.startswith("::notice") and "PASS" in passed
    from rageval.gate.ci import _data

    assert _data("50%\nnext") == "50%25%0Anext"


def test_the_job_summary_gets_the_gate_markdown_when_github_sets_it(tmp_path, monkeypatch):
    from rageval.gate.ci import append_step_summary

    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    assert append_step_summary(_comparison()) is None
    summary = tmp_path / "summary.md"
    summary.write_text("earlier step\n")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    assert append_step_summary(_comparison()) == summary
    text = summary.read_text()
    assert text.startswith("earlier step\n") and "ndcg@5" in text and "regressed" in text.lower()


@pytest.mark.parametrize("fmt", ["text", "github"])
def test_check_prints_annotations_only_when_asked(fmt, monkeypatch, capsys, tmp_path):
    import rageval.app.check as check
    from rageval.cli.main import main

    monkeypatch.setattr(check, "run_check", lambda *a, **k: (_comparison(), tmp_path))
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(tmp_path / "s.md"))
    assert main(["check", "--baseline", "b.json", "--format", fmt]) == 1
    out = capsys.readouterr().out
    assert ("::error file=b.json" in out) == (fmt == "github")
    assert "appended to the job summary" in out and (tmp_path / "s.md").is_file()


def test_init_never_writes_through_a_link_out_of_the_project(tmp_path):
    import os

    from rageval.errors import InputError
    from rageval.scaffold import init_project

    outside = tmp_path / "outside"
    outside.mkdir()
    root = tmp_path / "proj"
    (root / "conf").mkdir(parents=True)
    os.symlink(outside / "planted.yaml", root / "conf" / "config.yaml")  # dangling
    with pytest.raises(InputError, match="symbolic link to .*outside the project"):
        init_project(root)
    assert list(outside.iterdir()) == []
    os.unlink(root / "conf" / "config.yaml")
    os.symlink(outside, root / "golden")  # a folder on the way
    with pytest.raises(InputError, match="golden: is a symbolic link"):
        init_project(root)
    assert list(outside.iterdir()) == []
    os.unlink(root / "golden")
    (root / "mine").mkdir()
    os.symlink(root / "mine", root / "golden")  # a link inside the project is the user's choice
    init_project(root)
    assert (root / "mine" / "retriever.jsonl").is_file()
