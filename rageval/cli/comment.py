"""``rageval comment --github|--gitlab [GATE_MD]``: the gate's verdict on the pull request.

Posts gate.md (``rageval check --out DIR`` writes DIR/gate.md) as one comment that later runs
update in place (rageval.gate.comment). Exit 0 when posted or when there is nothing it may post
on (not a pull request, a fork's read-only token, no GitLab token: it says which, and on GitHub
adds a note to the job summary); 2 when the file is missing or the API fails.
"""

from __future__ import annotations

import argparse


def add_arguments(p: argparse.ArgumentParser) -> None:
    """Add the ``comment`` options to ``p``."""
    where = p.add_mutually_exclusive_group(required=True)
    where.add_argument(
        "--github",
        action="store_true",
        help="a GitHub pull request: $GITHUB_TOKEN (pull-requests: write), $GITHUB_REPOSITORY, "
        "$GITHUB_EVENT_PATH, $GITHUB_API_URL, as GitHub Actions sets them",
    )
    where.add_argument(
        "--gitlab",
        action="store_true",
        help="a GitLab merge request: $RAGEVAL_GITLAB_TOKEN (api scope), $CI_API_V4_URL, "
        "$CI_PROJECT_ID, $CI_MERGE_REQUEST_IID, as GitLab CI sets them",
    )
    p.add_argument(
        "gate_md",
        nargs="?",
        default="rageval-check/gate.md",
        help="the verdict to post (default rageval-check/gate.md, from `rageval check --out "
        "rageval-check`)",
    )
    p.add_argument(
        "--number",
        type=int,
        help="the pull or merge request's number (default: the CI event's)",
    )
    p.add_argument(
        "--key",
        default="retrieval",
        help="tells this gate's comment from another's on the same pull request "
        "(default retrieval)",
    )


def handle(args: argparse.Namespace) -> int:
    """Post or update the comment and say what happened."""
    import os
    from pathlib import Path

    from rageval.errors import InputError
    from rageval.gate.comment import note_in_summary, post_github, post_gitlab

    path = Path(args.gate_md)
    if not path.is_file():
        raise InputError(
            "no such file; run `rageval check --out rageval-check` first (it writes gate.md)",
            path=str(path),
        )
    markdown = path.read_text(encoding="utf-8")
    env = dict(os.environ)
    post = post_github if args.github else post_gitlab
    posted = post(markdown, args.key, env, args.number)
    if posted.action == "skipped":
        print(f"rageval comment: not posted: {posted.note}")
        if args.github and note_in_summary(posted, env) is not None:
            print("rageval comment: the job summary says so, under the gate's verdict")
        return 0
    print(f"rageval comment: {posted.action} {posted.url or 'the comment'}")
    return 0
