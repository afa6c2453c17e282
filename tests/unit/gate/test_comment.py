"""``rageval comment``: gate.md as one pull-request comment (merge-request note) that later runs
update in place, against local stand-ins of GitHub's and GitLab's REST APIs
(tests/support/fakes/github_api.py: the same endpoints and payloads, not the services)."""

from __future__ import annotations

import json

import pytest
from fakes.github_api import FakeGitHub, FakeGitLab

from rageval.gate.comment import MAX_BODY, comment_body, marker

REPO = "acme/search"


@pytest.fixture
def github():
    fake = FakeGitHub(token="t0ken")
    yield fake
    fake.stop()


def actions_env(tmp_path, api_url, number=7, fork=False):
    """The variables GitHub Actions sets for a pull_request event."""
    head = "someone/search" if fork else REPO
    event = {
        "pull_request": {
            "number": number,
            "head": {"repo": {"full_name": head}},
            "base": {"repo": {"full_name": REPO}},
        }
    }
    (tmp_path / "event.json").write_text(json.dumps(event))
    return {
        "GITHUB_API_URL": api_url,
        "GITHUB_REPOSITORY": REPO,
        "GITHUB_EVENT_PATH": str(tmp_path / "event.json"),
        "GITHUB_TOKEN": "t0ken",
        "GITHUB_STEP_SUMMARY": str(tmp_path / "summary.md"),
        "GITHUB_SERVER_URL": "https://github.com",
        "GITHUB_RUN_ID": "42",
    }


def comment(monkeypatch, env, *args):
    from rageval.cli.main import main

    for k, v in env.items():
        monkeypatch.setenv(k, v)
    return main(["comment", *args])


def test_the_verdict_is_one_comment_updated_in_place(github, tmp_path, monkeypatch, capsys):
    env = actions_env(tmp_path, github.url)
    # 130 comments of people before it: the marker is looked for on every page
    for i in range(130):
        github.comments.append({"id": i, "body": f"review {i}", "_where": (REPO, 7)})
    github.comments.append({"id": 999, "body": "other PR", "_where": (REPO, 8)})
    gate = tmp_path / "gate.md"
    gate.write_text("## Retrieval gate: PASS\n| metric | base |\n")
    assert comment(monkeypatch, env, "--github", str(gate)) == 0
    assert "created https://github.com/acme/search/pull/7#issuecomment-" in capsys.readouterr().out
    ours = [c for c in github.on(REPO, 7) if marker("retrieval") in c["body"]]
    assert len(ours) == 1 and ours[0]["body"].endswith("| metric | base |\n")
    gate.write_text("## Retrieval gate: FAIL: ndcg@5\n")
    assert comment(monkeypatch, env, "--github", str(gate)) == 0
    assert "updated" in capsys.readouterr().out
    ours = [c for c in github.on(REPO, 7) if marker("retrieval") in c["body"]]
    assert len(ours) == 1 and "FAIL: ndcg@5" in ours[0]["body"] and "PASS" not in ours[0]["body"]
    assert len(github.on(REPO, 7)) == 131
    writes = [(m, p) for m, p in github.requests if m != "GET"]
    assert writes == [
        ("POST", f"/repos/{REPO}/issues/7/comments"),
        ("PATCH", f"/repos/{REPO}/issues/comments/{ours[0]['id']}"),
    ]
    pages = [p for m, p in github.requests if m == "GET"]
    assert f"/repos/{REPO}/issues/7/comments?per_page=100&page=2" in pages
    # another gate's comment on the same pull request is its own
    assert comment(monkeypatch, env, "--github", str(gate), "--key", "hybrid") == 0
    assert len(github.on(REPO, 7)) == 132


def test_a_fork_falls_back_to_the_job_summary_with_a_note(github, tmp_path, monkeypatch, capsys):
    env = actions_env(tmp_path, github.url, fork=True)
    (tmp_path / "summary.md").write_text("## Retrieval gate: PASS\n")  # rageval check's
    (tmp_path / "gate.md").write_text("## Retrieval gate: PASS\n")
    assert comment(monkeypatch, env, "--github", str(tmp_path / "gate.md")) == 0
    assert "not posted: a pull request from a fork" in capsys.readouterr().out
    summary = (tmp_path / "summary.md").read_text()
    assert summary.startswith("## Retrieval gate: PASS\n") and "Not posted on the pull" in summary
    assert github.requests == [] and github.comments == []


def test_a_read_only_token_falls_back_too(tmp_path, monkeypatch, capsys):
    fake = FakeGitHub(token="t0ken", read_only=True)
    try:
        env = actions_env(tmp_path, fake.url)
        (tmp_path / "gate.md").write_text("verdict\n")
        assert comment(monkeypatch, env, "--github", str(tmp_path / "gate.md")) == 0
        out = capsys.readouterr().out
        assert "cannot comment" in out and "Resource not accessible by integration" in out
        assert "Not posted on the pull request" in (tmp_path / "summary.md").read_text()
    finally:
        fake.stop()


def test_bad_credentials_a_missing_file_and_no_pull_request(github, tmp_path, monkeypatch, capsys):
    env = actions_env(tmp_path, github.url)
    gate = tmp_path / "gate.md"
    assert comment(monkeypatch, env, "--github", str(gate)) == 2
    assert "gate.md: no such file; run `rageval check --out" in capsys.readouterr().err
    gate.write_text("x\n")
    env["GITHUB_TOKEN"] = "wrong"
    assert comment(monkeypatch, env, "--github", str(gate)) == 2
    err = capsys.readouterr().err
    assert "HTTP 401" in err and "Bad credentials" in err and "wrong" not in err
    monkeypatch.delenv("GITHUB_EVENT_PATH")
    env.pop("GITHUB_EVENT_PATH")
    assert comment(monkeypatch, env, "--github", str(gate)) == 0
    assert "not a pull request" in capsys.readouterr().out


def test_a_long_report_is_cut_to_the_apis_limit_and_says_where_the_rest_is():
    body = comment_body("x" * 100_000, "retrieval", "in the job's artifact (https://ci/1)")
    assert len(body) <= MAX_BODY and body.startswith(marker("retrieval"))
    assert body.endswith("the whole report is in the job's artifact (https://ci/1))*")
    assert comment_body("short", "retrieval") == marker("retrieval") + "\nshort"


def test_gitlab_posts_a_note_only_with_a_token_and_updates_it(tmp_path, monkeypatch, capsys):
    fake = FakeGitLab(token="glpat")
    try:
        env = {"CI_API_V4_URL": fake.url, "CI_PROJECT_ID": "12", "CI_MERGE_REQUEST_IID": "3"}
        gate = tmp_path / "gate.md"
        gate.write_text("## Retrieval gate: PASS\n")
        monkeypatch.delenv("RAGEVAL_GITLAB_TOKEN", raising=False)
        assert comment(monkeypatch, env, "--gitlab", str(gate)) == 0
        assert "RAGEVAL_GITLAB_TOKEN is not set" in capsys.readouterr().out
        assert fake.requests == []
        env["RAGEVAL_GITLAB_TOKEN"] = "glpat"
        fake.notes.append({"id": 1, "body": "LGTM", "_mr": ("12", 3)})
        assert comment(monkeypatch, env, "--gitlab", str(gate)) == 0
        gate.write_text("## Retrieval gate: FAIL\n")
        assert comment(monkeypatch, env, "--gitlab", str(gate)) == 0
        assert [n["body"] for n in fake.notes] == [
            "LGTM",
            marker("retrieval") + "\n" + gate.read_text(),
        ]
        assert [m for m, _ in fake.requests if m != "GET"] == ["POST", "PUT"]
    finally:
        fake.stop()
