"""A hostile pull request against a project made by ``rageval init`` (docs/reliability.md, "Files
carry data, never code"): every file a pull request can edit (the baseline above all) is data. Each
attack below ran a command, read files outside the project or leaked a secret before the typed
baseline; now each is refused with exit 2 and one line naming the file and the key, no command
runs and no secret reaches a file, the MLflow store or the step summary.

The project is the template's (its keyword retriever: no embedding model), promoted once and
copied for each attack."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

GH_PAT = "ghp_HOSTILEpat0123456789abcdef"


def rageval(args: list[str], cwd: Path, env: dict[str, str] | None = None):
    full = {**os.environ, "MLFLOW_TRACKING_URI": f"sqlite:///{cwd}/mlflow.db", **(env or {})}
    full.pop("RAGEVAL_PROJECT", None)
    return subprocess.run(
        [sys.executable, "-m", "rageval.cli.main", *args],
        cwd=cwd,
        env=full,
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.fixture(scope="module")
def promoted(tmp_path_factory) -> Path:
    """A project from `rageval init`, one run promoted as its baseline."""
    root = tmp_path_factory.mktemp("pristine") / "proj"
    for args in (
        ["init", str(root)],
        ["run", "mlflow.enabled=false", "hydra.run.dir=outputs/r1"],
        ["promote", "outputs/r1/report.json"],
    ):
        done = rageval(args, root if args[0] != "init" else root.parent)
        assert done.returncode == 0, done.stderr
    shutil.rmtree(root / "outputs")
    return root


@pytest.fixture
def project(promoted, tmp_path) -> Path:
    root = tmp_path / "repo" / "proj"
    shutil.copytree(promoted, root)
    return root


def edit_baseline(root: Path, **changes) -> None:
    path = root / "golden" / "baseline.json"
    data = json.loads(path.read_text())
    for dotted, value in changes.items():
        *parents, last = dotted.split("__")
        node = data
        for p in parents:
            node = node.setdefault(p, {})
        node[last] = value
    path.write_text(json.dumps(data, indent=2))


def refused(done, *words: str) -> str:
    """The check ended with exit 2 and one line naming what it refused."""
    lines = [ln for ln in done.stderr.splitlines() if ln.strip()]
    assert done.returncode == 2, done.stdout + done.stderr
    assert len(lines) == 1, done.stderr
    for w in words:
        assert w in lines[0], lines[0]
    return lines[0]


def no_secret_anywhere(root: Path, secret: str, *extra: Path) -> None:
    """``secret`` in no file under ``root`` (runs, checks, the MLflow store) nor ``extra``."""
    for f in [*root.rglob("*"), *extra]:
        if f.is_file():
            assert secret.encode() not in f.read_bytes(), f


@pytest.mark.parametrize("adapter", ["langchain", "llamaindex"])
def test_h1_a_factory_from_the_baseline_never_runs(project, adapter):
    marker = project.parent / "pwned"
    edit_baseline(
        project,
        choices__backend=adapter,
        config__backend={
            "factory": "subprocess:getoutput",
            "kwargs": {"cmd": f"id > {marker}"},
            "doc_id_key": "doc_id",
        },
    )
    done = rageval(["check"], project)
    assert not marker.exists()  # before: uid=0(root)... in it
    refused(done, "baseline.json", "config: backend.factory names code")


def test_h1_a_function_from_the_baseline_never_runs(project):
    marker = project.parent / "pwned"
    golden = project / "golden" / "retriever.jsonl"
    first = json.loads(golden.read_text().splitlines()[0])
    first["query"] = f"id > {marker}"
    golden.write_text(json.dumps(first) + "\n" + "\n".join(golden.read_text().splitlines()[1:]))
    edit_baseline(project, choices__backend="function", config__backend={"function": "os:system"})
    done = rageval(["check"], project)
    assert not marker.exists()
    refused(done, "config: backend.function names code")
    # the replay key list is no way around: kwargs is code too, at any depth
    edit_baseline(project, config__backend={"kwargs": {"cmd": f"id > {marker}"}})
    refused(rageval(["check"], project), "backend.kwargs names code")
    assert not marker.exists()


def test_h2_a_group_choice_is_an_option_name_never_a_file(project):
    marker = project.parent / "pwned"
    (project / "golden" / "evil.yaml").write_text(
        "_target_: rageval.retrieval.adapters.LangChainRetriever\n"
        "factory: subprocess:getoutput\n"
        f"kwargs: {{cmd: 'id > {marker}'}}\n"
    )
    edit_baseline(project, choices__backend="../../golden/evil")
    done = rageval(["check"], project)
    assert not marker.exists()
    refused(done, "choices: backend: '../../golden/evil'")
    # a plain name that is no option of conf/backend/ or rageval's is refused too
    edit_baseline(project, choices__backend="evil")
    refused(rageval(["check"], project), "choices.backend: 'evil' is not an option")


def test_h3_interpolations_are_refused_never_resolved(project, tmp_path):
    summary = tmp_path / "step_summary.md"
    env = {"GH_PAT": GH_PAT, "GITHUB_STEP_SUMMARY": str(summary)}
    for change in (
        {"config__dataset__name": "${oc.env:GH_PAT}"},
        {"overrides": ["+extra.x=${oc.env:GH_PAT}"]},
        {"config__extra": {"deep": ["${oc.env:GH_PAT}"]}},
    ):
        shutil.copy(project / "golden" / "baseline.json", tmp_path / "b.json")
        edit_baseline(project, **change)
        done = rageval(["check", "--mlflow"], project, env)
        assert GH_PAT not in done.stdout + done.stderr
        no_secret_anywhere(project, GH_PAT, summary)
        refused(done, "interpolation")
        shutil.copy(tmp_path / "b.json", project / "golden" / "baseline.json")


def test_h6_keyword_dsns_and_declared_secrets_are_masked_everywhere(project, tmp_path):
    summary = tmp_path / "step_summary.md"
    env = {"GITHUB_STEP_SUMMARY": str(summary)}
    dsn_pw, mine = "kwDSNpw-771122", "MINE-declared-3344"
    done = rageval(
        [
            "run",
            "hydra.run.dir=outputs/r2",
            "+extra.conninfo='host=db.internal port=5432 password=" + dsn_pw + "'",
            f"+extra.mine={mine}",
            "secrets=[extra.mine]",
        ],
        project,
        env,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads((project / "outputs" / "r2" / "report.json").read_text())
    assert report["config"]["extra"] == {"conninfo": "***", "mine": "***"}
    # what is not declared secret is stored verbatim: the replay is exact
    assert report["config"]["backend"]["min_token_length"] == 2
    assert rageval(["promote", "outputs/r2/report.json", "--force"], project).returncode == 0
    baseline = json.loads((project / "golden" / "baseline.json").read_text())
    assert "conninfo" not in baseline["config"].get("extra", {})  # a mask is never stored
    assert baseline["config"]["backend"]["min_token_length"] == 2
    done = rageval(["check", "--mlflow"], project, env)
    assert done.returncode == 0, done.stderr
    for secret in (dsn_pw, mine):
        assert secret not in done.stdout + done.stderr
        no_secret_anywhere(project, secret, summary)


def test_m1_a_corpus_outside_the_project_is_never_read(project):
    secret_dir = project.parent / "secretdir"
    secret_dir.mkdir()
    (secret_dir / "keys.md").write_text("TOPSECRET-DOCUMENT-TEXT deploy key\n")
    data = json.loads((project / "golden" / "baseline.json").read_text())
    edit_baseline(
        project,
        config__dataset={**data["config"]["dataset"], "corpus": "../../secretdir"},
        relative_paths=[*data.get("relative_paths", []), "config.dataset.corpus"],
    )
    refused(rageval(["check"], project), "config.dataset.corpus", "outside the project")
    no_secret_anywhere(project, "TOPSECRET-DOCUMENT-TEXT")
    # a recorded project root elsewhere does not move the check to another project's config
    edit_baseline(project, project={"root": str(secret_dir)})
    done = rageval(["check"], project)
    assert done.returncode == 2 and "TOPSECRET" not in done.stdout + done.stderr


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"per_query_file": "../../../../etc/passwd"}, ["per_query_file", "sibling"]),
        ({"relative_paths": ["config.ks.99"]}, ["relative_paths", "'config.ks.99'"]),
        ({"per_query": {"a": 1}}, ["per_query: not a baseline key"]),
        ({"k": "5"}, ["k: Input should be a valid integer"]),
        ({"metrics": {"ndcg@5": "high"}}, ["metrics.ndcg@5"]),
        ({"choices": {"backend": 3}}, ["choices.backend"]),
        ({"config": {"chunk": {"_target_": "os.system"}}}, ["config: chunk._target_"]),
        ({"schema": 9}, ["schema"]),
    ],
)
def test_m2_a_malformed_baseline_is_exit_2_naming_the_key(project, change, words):
    edit_baseline(project, **change)
    refused(rageval(["check"], project), "golden/baseline.json", *words)


def test_m2_a_missing_per_query_file_is_exit_2(project):
    (project / "golden" / "baseline.per_query.csv").unlink()
    refused(rageval(["check"], project), "baseline.per_query.csv", "missing")


def test_the_unedited_project_replays_exactly(project):
    done = rageval(["check", "--out", "outputs/c"], project)
    assert done.returncode == 0, done.stderr
    gate = json.loads((project / "outputs" / "c" / "gate.json").read_text())
    assert all(r["delta"] == 0 and r["low"] == 0 == r["high"] for r in gate["rows"]), gate
    assert all(r["losses"] == 0 == r["wins"] for r in gate["rows"])
