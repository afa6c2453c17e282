"""A team's project (rageval.project): found by its marker like pytest's rootdir, its config
folder composed over the packaged configs, its paths resolved from its root, its modules
importable, and what goes wrong said in one line."""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

import pytest

from rageval.errors import ConfigError, InputError
from rageval.project import ENV, find_project, load_project, using


def make_project(root: Path, marker: str = "", backend: str = "mine") -> Path:
    """A project with a backend option of its own and a config.yaml choosing it."""
    (root / "conf" / "backend").mkdir(parents=True)
    (root / "conf" / "dataset").mkdir(parents=True)
    (root / "rageval.yaml").write_text(marker)
    (root / "conf" / "backend" / f"{backend}.yaml").write_text(
        "_target_: team_retriever.Mine\nboost: 2\n"
    )
    (root / "conf" / "dataset" / "docs.yaml").write_text(
        "_target_: rageval.inputs.dataset.files\nname: docs\ncorpus: data/corpus\n"
        "golden: data/golden.jsonl\n"
    )
    (root / "conf" / "config.yaml").write_text(
        "defaults:\n  - rageval\n  - override dataset: docs\n"
        f"  - override backend: {backend}\n  - _self_\nchunk: 64\n"
    )
    return root


@pytest.fixture
def no_project(monkeypatch):
    monkeypatch.delenv(ENV, raising=False)


def test_the_project_is_the_first_folder_upwards_holding_the_marker(tmp_path, no_project):
    root = make_project(tmp_path / "repo")
    deep = root / "src" / "pkg"
    deep.mkdir(parents=True)
    found = find_project(deep)
    assert found.root == root.resolve()
    assert found.config_dir == (root / "conf").resolve()
    assert found.python_path == (root.resolve(),)
    assert found.baseline == root.resolve() / "golden" / "baseline.json"
    assert find_project(tmp_path) is None


def test_the_environment_names_a_project_or_none(tmp_path, monkeypatch):
    root = make_project(tmp_path / "repo")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv(ENV, str(root))
    assert find_project().root == root.resolve()
    monkeypatch.setenv(ENV, "")
    monkeypatch.chdir(root)
    assert find_project() is None  # "no project", even inside one
    monkeypatch.setenv(ENV, str(tmp_path))
    with pytest.raises(InputError, match="holds no rageval.yaml"):
        find_project()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("config_dir: conf\nbaselin: x.json\n", r"rageval.yaml: unknown key 'baselin'"),
        ("config_dir: [conf\n", r"rageval.yaml:\d+: not valid YAML"),
        ("python_path: 3\n", r"python_path must be a list of folders, got 3"),
        ("baseline: 7\n", r"baseline must be a path \(text\), got 7"),
        ("- conf\n", r"expected a mapping of settings"),
        # named but missing: never a silent fall-back to the packaged configs (the demo's data)
        (
            "python_path: [.]\nconfig_dir: confs\n",
            r"rageval.yaml:2: config_dir: 'confs' is not a folder",
        ),
    ],
)
def test_a_bad_marker_is_one_line_naming_the_file_and_key(tmp_path, text, message):
    (tmp_path / "rageval.yaml").write_text(text)
    with pytest.raises(InputError, match=message):
        load_project(tmp_path)


def test_without_a_config_dir_key_a_missing_conf_folder_is_no_error(tmp_path):
    (tmp_path / "rageval.yaml").write_text("baseline: golden/baseline.json\n")
    assert load_project(tmp_path).config_dir is None  # the packaged configs alone


def test_the_cli_says_a_bad_marker_in_one_line_with_exit_2(tmp_path, monkeypatch, capsys):
    from rageval.cli.main import main

    (tmp_path / "rageval.yaml").write_text("unknown: 1\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv(ENV, raising=False)
    assert main(["golden", "stats"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "rageval.yaml: unknown key 'unknown'" in err[0]


def test_a_project_composes_its_config_over_the_packaged_one(tmp_path, monkeypatch):
    from rageval.app.config import compose, config_dirs

    root = make_project(tmp_path / "repo")
    with using(load_project(root)):
        cfg = compose([])
        assert cfg.backend == {"_target_": "team_retriever.Mine", "boost": 2}
        assert cfg.dataset.name == "docs" and cfg.chunk == 64
        assert cfg.k == 5 and cfg.gate.tolerance == 0.03  # the packaged defaults underneath
        assert compose(["backend=faiss"]).backend.faiss.index_type == "flat"
        assert config_dirs()[0] == (root / "conf").resolve()
    cfg = compose([])  # outside the project: the packaged demo
    assert cfg.dataset.name == "demo" and cfg.chunk == 256


@pytest.mark.parametrize(
    "where, text, message",
    [
        # a value of the wrong type: the file, the key's line, the key
        (
            "config.yaml",
            "mlflow:\n  experiment: x\n  enabled: maybe\n",
            r"conf/config.yaml:9: the config does not compose: .*'maybe' is not a valid bool"
            r".*\(key mlflow.enabled\)",
        ),
        # not YAML: the file and the line the parser stopped at
        ("dataset/docs.yaml", "extra: [1, 2\n", r"conf/dataset/docs.yaml:6: not valid YAML"),
    ],
)
def test_a_broken_project_config_file_is_one_line_naming_it(
    tmp_path, monkeypatch, capsys, no_project, where, text, message
):
    """A team's own config file that does not compose: every entry point says which file and
    line, with exit 2 (it was a traceback, exit 1), with or without overrides."""
    from rageval.cli.main import main

    root = make_project(tmp_path / "repo")
    with (root / "conf" / where).open("a") as f:
        f.write(text)
    monkeypatch.chdir(root)
    for argv in (["run"], ["run", "chunk=32"], ["run", "-m", "search=bm25,vector"]):
        assert main(argv) == 2, argv
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and re.search(message, err[0]), err
    from rageval.gate.baseline import write_baseline

    report = {
        "metrics": {"ndcg@5": 0.5},
        "per_query": [{"id": "q1", "query": "x", "ndcg@5": 0.5}],
        "digests": {},
        "k": 5,
        "config": {"chunk": 64},
        "choices": {"dataset": "docs", "backend": "mine"},
    }
    (root / "golden").mkdir()
    write_baseline(report, root / "golden" / "baseline.json", {"file": "report.json"})
    assert main(["check"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and re.search(message, err[0]), err


def test_the_pre_check_knows_the_project_options(tmp_path):
    from rageval.app.config import CONF_DIR, GROUPS
    from rageval.app.preflight import prepare_overrides

    root = make_project(tmp_path / "repo")
    with using(load_project(root)):
        assert prepare_overrides(["backend=mine"], CONF_DIR, GROUPS) == ["backend=mine"]
        with pytest.raises(ConfigError, match=r"no option 'mien'; did you mean mine\?"):
            prepare_overrides(["backend=mien"], CONF_DIR, GROUPS)


def test_config_dir_and_searchpath_add_options_outside_a_project(tmp_path):
    from rageval.app.config import CONF_DIR, GROUPS
    from rageval.app.preflight import prepare_overrides

    root = make_project(tmp_path / "repo")
    (root / "rageval.yaml").unlink()
    conf = str(root / "conf")
    with using(None):
        for extra in (
            ["--config-dir", conf],
            [f"--config-dir={conf}"],
            [f"hydra.searchpath=[file://{conf}]"],
        ):
            out = prepare_overrides([*extra, "backend=mine"], CONF_DIR, GROUPS)
            assert out[-1] == "backend=mine"
            with pytest.raises(ConfigError, match="did you mean mine"):
                prepare_overrides([*extra, "backend=mien"], CONF_DIR, GROUPS)


def test_relative_data_paths_resolve_from_the_project_root(tmp_path, monkeypatch):
    from omegaconf import OmegaConf

    from rageval.app.config import absolute_paths, compose

    root = make_project(tmp_path / "repo")
    (root / "tests").mkdir()
    monkeypatch.chdir(root / "tests")
    with using(load_project(root)):
        cfg = compose(["+judgements=labels/j.jsonl"])
        absolute_paths(cfg)
    assert cfg.dataset.corpus == str(root.resolve() / "data" / "corpus")
    assert cfg.dataset.golden == str(root.resolve() / "data" / "golden.jsonl")
    assert cfg.judgements == str(root.resolve() / "labels" / "j.jsonl")
    other = OmegaConf.create({"dataset": {"corpus": "c", "golden": "/abs/g.jsonl"}})
    with using(None):
        absolute_paths(other)  # outside a project: relative to the working directory, as given
    assert other.dataset == {"corpus": "c", "golden": "/abs/g.jsonl"}


def test_activate_makes_the_project_modules_importable_here_and_in_workers(tmp_path):
    root = make_project(tmp_path / "repo", marker="python_path: [src]\n")
    (root / "src").mkdir()
    (root / "src" / "team_retriever_probe.py").write_text("VALUE = 41\n")
    with using(load_project(root)):
        import team_retriever_probe

        assert team_retriever_probe.VALUE == 41
        assert str((root / "src").resolve()) in os.environ["PYTHONPATH"].split(os.pathsep)
        assert os.environ[ENV] == str(root.resolve())
    sys.modules.pop("team_retriever_probe", None)
    assert str((root / "src").resolve()) not in sys.path


def test_run_help_names_groups_options_and_the_project(tmp_path, capsys):
    from rageval.app.main import run_app

    root = make_project(tmp_path / "repo")
    with using(load_project(root)):
        assert run_app(["--help"]) == 0
    out = capsys.readouterr().out
    assert (
        "backend    azure, faiss, function, langchain, llamaindex, [mine], pgvector, qdrant" in out
    )
    assert "search     bm25, hybrid, semantic, [vector]" in out  # no internal `base`
    assert "chunk=64" in out and f"project: {root.resolve()}" in out
    assert "_target_" not in out and len(out.splitlines()) < 30


def test_default_baseline_is_the_project_s_else_the_working_directory_s_else_the_demo(
    tmp_path, monkeypatch
):
    from rageval.app.config import DEMO_DIR
    from rageval.cli.paths import default_baseline

    root = make_project(tmp_path / "repo", marker="baseline: gate/base.json\n")
    with using(load_project(root)):
        assert default_baseline() == root.resolve() / "gate" / "base.json"
    monkeypatch.chdir(tmp_path)
    with using(None):
        assert default_baseline() == DEMO_DIR / "baseline.json"
        assert default_baseline(write=True) == Path("golden/baseline.json")
        (tmp_path / "golden").mkdir()
        (tmp_path / "golden" / "baseline.json").write_text("{}")
        assert default_baseline() == Path("golden/baseline.json")
