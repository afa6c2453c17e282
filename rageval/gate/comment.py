"""The gate's verdict as one comment on the pull request (GitHub) or merge request (GitLab).

A hidden marker (an HTML comment, ``<!-- rageval-gate:<key> -->``) opens the body; a later run
finds the comment holding its marker and updates it in place, so a pull request carries one
verdict, the latest, however many times CI ran. Only the standard library talks to the API
(urllib), at the address the CI system gives (``$GITHUB_API_URL``, ``$CI_API_V4_URL``), so a
test points it at a local stand-in.

GitHub (REST API, the job's ``GITHUB_TOKEN`` with ``pull-requests: write``):
``GET /repos/{repo}/issues/{n}/comments``, ``PATCH /repos/{repo}/issues/comments/{id}``,
``POST /repos/{repo}/issues/{n}/comments``. A pull request from a fork gets a read-only token:
then, as on any 403, the verdict stays in the job summary (``rageval check`` put it there) with a
note saying why, and the step passes.

GitLab (REST API v4, a project access token in ``$RAGEVAL_GITLAB_TOKEN``, ``api`` scope):
``GET``/``POST /projects/{id}/merge_requests/{iid}/notes``, ``PUT .../notes/{note_id}``.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from rageval.errors import RagevalError

# GitHub's limit on a comment's body is 65536 characters; GitLab's on a note is 1000000
MAX_BODY = 65_000
PAGE = 100
TIMEOUT = 30


class CommentError(RagevalError):
    """The API refused or failed the request (other than a token without write access)."""


class ReadOnlyToken(Exception):
    """The token may read the pull request but not comment on it (a fork's)."""


@dataclass
class Posted:
    """What :func:`post_comment` did: ``created``, ``updated``, ``skipped`` (nothing to comment
    on, or no write access; ``note`` says which) and the comment's address when there is one."""

    action: str
    note: str = ""
    url: str = ""


def marker(key: str) -> str:
    """The hidden line that identifies this gate's comment (``key`` tells several gates apart)."""
    return f"<!-- rageval-gate:{key} -->"


def comment_body(markdown: str, key: str, more: str = "") -> str:
    """The marker, then ``markdown`` (cut to the API's limit, saying so and where the rest is)."""
    head = marker(key) + "\n"
    if len(head) + len(markdown) > MAX_BODY:
        cut = MAX_BODY - len(head) - 200
        tail = f"the whole report is {more}" if more else "see the CI job for the whole report"
        markdown = markdown[:cut].rstrip() + f"\n\n*(cut at {cut} characters: {tail})*"
    return head + markdown


class Api:
    """JSON over HTTP with one set of headers; errors become CommentError or ReadOnlyToken."""

    def __init__(self, base: str, headers: dict[str, str]):
        self.base = base.rstrip("/")
        self.headers = {"Accept": "application/json", "User-Agent": "rageval", **headers}

    def __call__(self, method: str, path: str, payload: dict | None = None):
        data = None if payload is None else json.dumps(payload).encode()
        headers = dict(self.headers)
        if data is not None:
            headers["Content-Type"] = "application/json"
        req = urllib.request.Request(self.base + path, data, headers, method=method)
        try:
            with urllib.request.urlopen(req, timeout=TIMEOUT) as resp:
                return json.loads(resp.read() or b"null")
        except urllib.error.HTTPError as err:
            detail = err.read()[:300].decode("utf-8", "replace")
            if err.code == 403 and method != "GET":
                raise ReadOnlyToken(f"{method} {path}: HTTP 403 {detail}") from None
            raise CommentError(
                f"{method} {self.base}{path}: HTTP {err.code} {err.reason}: {detail}"
            ) from None
        except (urllib.error.URLError, OSError) as err:
            raise CommentError(f"{method} {self.base}{path}: {err}") from None

    def pages(self, path: str):
        """Every item of a paginated list (``per_page``/``page`` on both APIs)."""
        page = 1
        while True:
            sep = "&" if "?" in path else "?"
            items = self("GET", f"{path}{sep}per_page={PAGE}&page={page}") or []
            yield from items
            if len(items) < PAGE:
                return
            page += 1


def upsert(api: Api, listing: str, item: str, body: str, key: str, update: str) -> Posted:
    """Update the first comment under ``listing`` holding ``key``'s marker, else create one."""
    tag = marker(key)
    for comment in api.pages(listing):
        if tag in (comment.get("body") or ""):
            done = api(update, item.format(id=comment["id"]), {"body": body})
            return Posted("updated", url=(done or {}).get("html_url", ""))
    done = api("POST", listing, {"body": body})
    return Posted("created", url=(done or {}).get("html_url", ""))


def github_pull_request(env: dict[str, str]) -> tuple[int | None, bool]:
    """(the pull request's number, whether it comes from a fork) from the event payload."""
    path = env.get("GITHUB_EVENT_PATH")
    if not path or not Path(path).is_file():
        return None, False
    event = json.loads(Path(path).read_text(encoding="utf-8"))
    pr = event.get("pull_request") or {}
    if "number" not in pr:
        return None, False
    head = ((pr.get("head") or {}).get("repo") or {}).get("full_name")
    base = ((pr.get("base") or {}).get("repo") or {}).get("full_name")
    return int(pr["number"]), bool(head and base and head != base)


def post_github(markdown: str, key: str, env: dict[str, str], number: int | None = None) -> Posted:
    """gate's ``markdown`` as the pull request's comment (GitHub Actions' environment)."""
    event_number, fork = github_pull_request(env)
    number = number or event_number
    if number is None:
        return Posted("skipped", "not a pull request (no pull_request in $GITHUB_EVENT_PATH)")
    if fork:
        return Posted("skipped", "a pull request from a fork: its token cannot comment")
    token, repo = env.get("GITHUB_TOKEN"), env.get("GITHUB_REPOSITORY")
    if not token or not repo:
        raise CommentError(
            "GITHUB_TOKEN and GITHUB_REPOSITORY must be set: give the step "
            "`env: GITHUB_TOKEN: ${{ github.token }}` and `permissions: pull-requests: write`"
        )
    run = _github_run_url(env)
    api = Api(
        env.get("GITHUB_API_URL") or "https://api.github.com",
        {
            "Authorization": f"Bearer {token}",
            "Accept": "application/vnd.github+json",
            "X-GitHub-Api-Version": "2022-11-28",
        },
    )
    body = comment_body(markdown, key, f"in the job's artifact ({run})" if run else "")
    try:
        return upsert(
            api,
            f"/repos/{repo}/issues/{number}/comments",
            f"/repos/{repo}/issues/comments/{{id}}",
            body,
            key,
            "PATCH",
        )
    except ReadOnlyToken as why:
        return Posted("skipped", f"the token cannot comment on the pull request ({why})")


def _github_run_url(env: dict[str, str]) -> str:
    server, repo, run = (
        env.get(k) for k in ("GITHUB_SERVER_URL", "GITHUB_REPOSITORY", "GITHUB_RUN_ID")
    )
    return f"{server}/{repo}/actions/runs/{run}" if server and repo and run else ""


def post_gitlab(markdown: str, key: str, env: dict[str, str], iid: int | None = None) -> Posted:
    """gate's ``markdown`` as the merge request's note (GitLab CI's environment)."""
    token = env.get("RAGEVAL_GITLAB_TOKEN")
    if not token:
        return Posted(
            "skipped", "RAGEVAL_GITLAB_TOKEN is not set: the report is the job's artifact"
        )
    iid = iid or (int(env["CI_MERGE_REQUEST_IID"]) if env.get("CI_MERGE_REQUEST_IID") else None)
    project = env.get("CI_PROJECT_ID")
    if iid is None or not project:
        return Posted("skipped", "not a merge request pipeline (no $CI_MERGE_REQUEST_IID)")
    api = Api(env.get("CI_API_V4_URL") or "https://gitlab.com/api/v4", {"PRIVATE-TOKEN": token})
    where = env.get("CI_JOB_URL", "")
    body = comment_body(markdown, key, f"in the job's artifacts ({where})" if where else "")
    listing = f"/projects/{urllib.parse.quote(project, safe='')}/merge_requests/{iid}/notes"
    try:
        return upsert(api, listing, listing + "/{id}", body, key, "PUT")
    except ReadOnlyToken as why:
        return Posted("skipped", f"the token cannot post on the merge request ({why})")


def note_in_summary(posted: Posted, env: dict[str, str]) -> Path | None:
    """Say in the job summary why the verdict is not on the pull request (GitHub)."""
    target = env.get("GITHUB_STEP_SUMMARY")
    if not target:
        return None
    path = Path(target)
    with path.open("a", encoding="utf-8") as f:
        f.write(
            f"> **Not posted on the pull request**: {posted.note}. The verdict is the retrieval "
            "gate's table in this summary.\n\n"
        )
    return path
