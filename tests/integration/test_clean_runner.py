"""The CI job `rageval init` writes, run as a clean GitHub Actions runner would run it.

What the test stands in for, and how:

- **the runner**: a new virtual environment per workflow run, a HOME of its own, no ``PIP_*``
  variables and no pip config of this machine, the job's ``env:`` and each step's, GitHub's own
  variables (a ``pull_request`` event for pull request 7, ``$GITHUB_STEP_SUMMARY``). The steps are
  the workflow's ``run:`` steps, read from the YAML `init` wrote and run in their order with
  GitHub's shell (``bash --noprofile --norc -eo pipefail``); a step runs when its ``if:`` holds
  (the few expressions the workflow uses are evaluated here; any other stops the test), and the
  job fails with the first failing step as on GitHub. ``uses:`` steps (checkout, setup-python,
  the caches, the artifact upload) are GitHub's own actions and are not run.
- **no network**: every HTTP(S) client (pip, urllib, huggingface_hub) is sent to a closed local
  proxy, so a step that reaches for PyPI or download.pytorch.org fails; only 127.0.0.1 (the API
  stand-in) answers.
- **the package index**: the repository variable ``RAGEVAL_FROM`` is set to
  ``--no-index --find-links <folder>``, a folder holding the sdist and wheel built from this
  checkout (``python -m build``, as the release workflow does): the documented way to install
  rageval from a wheel folder. Its dependencies (torch's CPU build first, as the workflow
  installs it) cannot come from a download here, and a wheel folder of them would be gigabytes:
  they are the ones already installed in the test environment, seen by the new environment
  through a path line to a folder of links to them (rageval's own editable install left out),
  so pip finds each one "already satisfied" and installs rageval alone, from the wheel.
- **GitHub's REST API**: a local stand-in (tests/support/fakes/github_api.py) answering the three
  endpoints the comment step calls with GitHub's paths, methods and payloads. It is not GitHub.

Asserts: the unchanged project passes and its verdict is created as one pull-request comment;
after a change that makes the team's retriever worse the gate step exits 1, the job fails, and
the comment step (``if: always()``) updates that same comment in place with the failing verdict.
The GitLab job of the same project, on that worse branch (its ``script`` lines in one shell that
stops at the first failure, then its ``after_script``, against a GitLab API stand-in): the job
fails, the report is where its artifact paths say, and the note is posted.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from fakes.github_api import FakeGitHub, FakeGitLab
from release_build import build_release, purelib_of, site_packages_here

pytestmark = [pytest.mark.integration, pytest.mark.long_module]
REPO = "acme/search"
TOKEN = "ghs_stand-in-token"
SHELL = ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c"]


def sh(args, cwd, env, code=0):
    done = subprocess.run(
        [str(a) for a in args], cwd=cwd, env=env, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == code, f"{args}: exit {done.returncode}\n{done.stdout}\n{done.stderr}"
    return done.stdout + done.stderr


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """(the wheel folder, the dependencies' folder, a clean base environment, tmp)."""
    tmp = tmp_path_factory.mktemp("runner")
    wheel = build_release(tmp / "packages")
    deps = tmp / "dependencies"
    deps.mkdir()
    for entry in site_packages_here().iterdir():
        name = entry.name
        if name.startswith(("rageval", "__editable__")) or name.endswith(".pth"):
            continue  # rageval comes from the wheel alone
        (deps / name).symlink_to(entry)
    keep = ("LANG", "LC_ALL", "TZ", "TMPDIR")
    base = {k: v for k, v in os.environ.items() if k in keep}
    base |= {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "PIP_CONFIG_FILE": os.devnull,  # this machine's pip config is not the runner's
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
        "PIP_RETRIES": "0",
        "http_proxy": "http://127.0.0.1:9",  # a closed port: no network
        "https_proxy": "http://127.0.0.1:9",
        "HTTP_PROXY": "http://127.0.0.1:9",
        "HTTPS_PROXY": "http://127.0.0.1:9",
        "no_proxy": "127.0.0.1,localhost",
        "NO_PROXY": "127.0.0.1,localhost",
    }
    return wheel, deps, base, tmp


def new_runner(world, name):
    """A fresh environment and HOME: the runner's python, with pip, and nothing installed."""
    _, deps, base, tmp = world
    home = tmp / name / "home"
    home.mkdir(parents=True)
    env_dir = tmp / name / "python"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", env_dir], check=True)
    (purelib_of(env_dir / "bin" / "python") / "dependencies.pth").write_text(f"{deps}\n")
    pip = env_dir / "bin" / "pip"  # pip itself is among the dependencies
    pip.write_text('#!/bin/sh\nexec "$(dirname "$0")/python" -m pip "$@"\n')
    pip.chmod(0o755)
    return {**base, "HOME": str(home), "PATH": f"{env_dir / 'bin'}:{base['PATH']}"}


def expression(text: str, values: dict[str, str]) -> str:
    """``${{ name }}`` replaced by ``values[name]``; one the test does not know stops it."""

    def value(m):
        assert m.group(1) in values, f"the test does not simulate ${{{{ {m.group(1)} }}}}"
        return values[m.group(1)]

    return re.sub(r"\$\{\{\s*([\w.]+)\s*\}\}", value, str(text))


def condition(text: str | None, failed: bool, event: str, cwd: Path) -> bool:
    """A step's ``if:`` as GitHub evaluates it, for the terms the workflow uses."""
    if not text:
        return not failed  # success()
    terms = [t.strip() for t in text.split("&&")]
    ok = "always()" in terms or not failed
    for term in terms:
        if term == "always()":
            continue
        if m := re.fullmatch(r"github\.event_name == '(\w+)'", term):
            ok = ok and event == m.group(1)
        elif m := re.fullmatch(r"hashFiles\('([^']+)'\) != ''", term):
            ok = ok and any(cwd.glob(m.group(1)))
        else:
            pytest.fail(f"the test does not simulate the condition {term!r}")
    return ok


def run_workflow(workflow: dict, checkout: Path, env: dict, github: dict) -> dict:
    """The job's ``run:`` steps in order; returns each run step's exit code and output, the job
    summary and whether the job failed."""
    values = {"vars.RAGEVAL_FROM": github["RAGEVAL_FROM"], "github.token": TOKEN}
    (job,) = workflow["jobs"].values()
    job_env = {k: expression(v, values) for k, v in (job.get("env") or {}).items()}
    failed, steps, summary = False, [], ""
    for i, step in enumerate(job["steps"]):
        if "run" not in step or not condition(step.get("if"), failed, "pull_request", checkout):
            continue
        step_summary = checkout.parent / f"summary-{i}.md"
        step_env = {k: expression(v, values) for k, v in (step.get("env") or {}).items()}
        full = {**env, **github["variables"], **job_env, **step_env}
        full["GITHUB_STEP_SUMMARY"] = str(step_summary)
        done = subprocess.run(
            SHELL + [step["run"]],
            cwd=checkout,
            env=full,
            capture_output=True,
            text=True,
            timeout=600,
        )
        steps.append((step["run"], done.returncode, done.stdout + done.stderr))
        failed = failed or done.returncode != 0
        if step_summary.is_file():
            summary += step_summary.read_text()
    return {"steps": steps, "summary": summary, "failed": failed}


def github_variables(tmp: Path, api: FakeGitHub, wheels: Path) -> dict:
    event = {
        "pull_request": {
            "number": 7,
            "head": {"repo": {"full_name": REPO}},
            "base": {"repo": {"full_name": REPO}},
        }
    }
    (tmp / "event.json").write_text(json.dumps(event))
    return {
        "RAGEVAL_FROM": f"--no-index --find-links {wheels}",
        "variables": {
            "CI": "true",
            "GITHUB_ACTIONS": "true",
            "GITHUB_EVENT_NAME": "pull_request",
            "GITHUB_EVENT_PATH": str(tmp / "event.json"),
            "GITHUB_REPOSITORY": REPO,
            "GITHUB_API_URL": api.url,
            "GITHUB_SERVER_URL": "https://github.com",
            "GITHUB_RUN_ID": "1",
        },
    }


@pytest.fixture(scope="module")
def team_repo(world):
    """The team's repository as committed: rageval from the wheel, `rageval init`, a first run
    promoted to the baseline (the run folders are not committed)."""
    wheel, _, _, tmp = world
    team = new_runner(world, "team")
    sh(["pip", "install", "-q", "--no-index", "--find-links", wheel.parent, "rageval"], tmp, team)
    repo = tmp / "repo"
    sh(["rageval", "init", repo], tmp, team)
    out = sh(["rageval", "mlflow.enabled=false"], repo, team)
    report = re.findall(r"report: (\S+report\.json)", out)[-1]
    sh(["rageval", "promote", report], repo, team)
    shutil.rmtree(repo / "outputs")
    return repo


def branch(team_repo: Path, name: str, worse: bool = False) -> Path:
    """A copy of the team's repository; ``worse``: its retriever's rankings reversed."""
    repo = team_repo.parent / name
    shutil.copytree(team_repo, repo)
    if worse:
        code = repo / "my_retriever.py"
        code.write_text(
            code.read_text().replace("scored.sort(key=lambda s: (-s[0], s[1]))", "scored.sort()")
        )
    return repo


def test_the_scaffolded_workflow_gates_a_pull_request_on_a_clean_runner(world, team_repo):
    wheel, _, _, tmp = world
    repo = branch(team_repo, "gh-branch")
    pin = (repo / "requirements-retrieval.txt").read_text()
    version = wheel.name.split("-")[1]
    assert f"\nrageval=={version}\n" in pin
    workflow = yaml.safe_load((repo / ".github" / "workflows" / "retrieval.yml").read_text())
    api = FakeGitHub(token=TOKEN)
    try:
        github = github_variables(tmp, api, wheel.parent)

        def pull_request_run(name: str, files: Path) -> dict:
            checkout = tmp / name / "checkout"
            shutil.copytree(files, checkout)  # actions/checkout: the branch's files
            return run_workflow(workflow, checkout, new_runner(world, name), github)

        first = pull_request_run("run-1", repo)
        codes = [code for _, code, _ in first["steps"]]
        assert not first["failed"] and codes == [0, 0, 0, 0], first["steps"]
        install, gate, posted = first["steps"][1][2], first["steps"][2][2], first["steps"][3][2]
        assert f"Successfully installed rageval-{version}" in install
        assert "PASS" in gate and "::notice" in gate
        assert "created https://github.com/acme/search/pull/7#issuecomment-" in posted
        (only,) = api.on(REPO, 7)
        gate_md = (tmp / "run-1" / "checkout" / "rageval-check" / "gate.md").read_text()
        assert only["body"].endswith(gate_md) and "<!-- rageval-gate:retrieval -->" in only["body"]
        assert gate_md.rstrip() in first["summary"]  # and the job summary has it

        # a push to the pull request makes the team's retriever worse
        second = pull_request_run("run-2", branch(team_repo, "gh-branch-worse", worse=True))
        codes = [code for _, code, _ in second["steps"]]
        assert second["failed"] and codes == [0, 0, 1, 0], second["steps"]
        assert "::error" in second["steps"][2][2] and "FAIL" in second["steps"][2][2]
        assert (
            "updated https://github.com/acme/search/pull/7#issuecomment-" in second["steps"][3][2]
        )
        (only_again,) = api.on(REPO, 7)  # one comment, updated in place
        gate_md = (tmp / "run-2" / "checkout" / "rageval-check" / "gate.md").read_text()
        assert only_again["id"] == only["id"] and only_again["body"].endswith(gate_md)
        assert "Retrieval regressed" in gate_md and "ndcg@5" in gate_md
        assert [m for m, _ in api.requests if m != "GET"] == ["POST", "PATCH"]
    finally:
        api.stop()


def run_gitlab_job(job: dict, checkout: Path, env: dict, variables: dict) -> dict:
    """A GitLab job: ``script`` in one shell (stops at the first failing line), then
    ``after_script`` in another, whatever the script's outcome; job variables first, then the
    project's CI/CD variables (which take precedence, as on GitLab)."""
    full = {**env, **variables}
    for key, value in (job.get("variables") or {}).items():
        if key not in variables:
            full[key] = re.sub(r"\$(\w+)", lambda m: full.get(m.group(1), ""), str(value))
    script = subprocess.run(
        ["bash", "-e", "-c", "\n".join(job["script"])],
        cwd=checkout,
        env=full,
        capture_output=True,
        text=True,
        timeout=600,
    )
    after = subprocess.run(
        ["bash", "-c", "\n".join(job["after_script"])],
        cwd=checkout,
        env=full,
        capture_output=True,
        text=True,
        timeout=600,
    )
    return {
        "code": script.returncode,
        "out": script.stdout + script.stderr,
        "after": after.stdout + after.stderr,
    }


def test_the_gitlab_job_fails_a_worse_branch_and_notes_the_merge_request(world, team_repo):
    wheel, _, _, tmp = world
    repo = branch(team_repo, "gl-branch", worse=True)
    (job,) = yaml.safe_load((repo / ".gitlab-ci.yml").read_text()).values()
    assert {"if": '$CI_PIPELINE_SOURCE == "merge_request_event"'} in job["rules"]
    api = FakeGitLab(token="glpat-stand-in")
    try:
        checkout = tmp / "gl-run" / "checkout"
        shutil.copytree(repo, checkout)
        variables = {
            "CI": "true",
            "GITLAB_CI": "true",
            "CI_PROJECT_DIR": str(checkout),
            "CI_PIPELINE_SOURCE": "merge_request_event",
            "CI_API_V4_URL": api.url,
            "CI_PROJECT_ID": "42",
            "CI_MERGE_REQUEST_IID": "5",
            "RAGEVAL_GITLAB_TOKEN": "glpat-stand-in",  # the project's masked CI/CD variable
            "RAGEVAL_FROM": f"--no-index --find-links {wheel.parent}",
        }
        done = run_gitlab_job(job, checkout, new_runner(world, "gl-run"), variables)
        assert done["code"] == 1 and "FAIL" in done["out"], done
        assert "rageval comment: created" in done["after"], done["after"]
        (artifacts,) = job["artifacts"]["paths"]
        report = checkout / artifacts
        assert (report / "gate.md").is_file() and (report / "gate.html").is_file()
        (note,) = api.notes
        assert note["_mr"] == ("42", 5) and note["body"].endswith((report / "gate.md").read_text())
    finally:
        api.stop()
