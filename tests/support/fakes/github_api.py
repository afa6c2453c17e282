"""A local stand-in for the part of GitHub's REST API a pull-request comment uses, on 127.0.0.1.

It is not GitHub: it keeps issue comments in memory and answers the three endpoints
``rageval comment --github`` calls, with GitHub's paths, methods, status codes and the fields of
its JSON the command reads or a reviewer would check:

- ``GET /repos/{owner}/{repo}/issues/{number}/comments?per_page=&page=`` (a page of comments)
- ``POST /repos/{owner}/{repo}/issues/{number}/comments`` ``{"body"}`` -> 201, the comment
- ``PATCH /repos/{owner}/{repo}/issues/comments/{id}`` ``{"body"}`` -> 200, the comment

It checks ``Authorization: Bearer <token>`` (401 otherwise); a server made with
``read_only=True`` answers writes with 403 "Resource not accessible by integration", as GitHub
does for the token of a pull request from a fork. Every request is recorded.
"""

from __future__ import annotations

import json
import re
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

LIST = re.compile(r"^/repos/([^/]+/[^/]+)/issues/(\d+)/comments$")
ONE = re.compile(r"^/repos/([^/]+/[^/]+)/issues/comments/(\d+)$")


@dataclass
class FakeGitHub:
    token: str
    read_only: bool = False
    comments: list[dict] = field(default_factory=list)  # every issue's, in creation order
    requests: list[tuple[str, str]] = field(default_factory=list)  # (method, path with query)

    def __post_init__(self):
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def on(self, repo: str, number: int) -> list[dict]:
        """The comments of one pull request."""
        return [c for c in self.comments if c["_where"] == (repo, number)]


def _handler(fake: FakeGitHub):
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):  # quiet
            pass

        def _send(self, status: int, payload) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json; charset=utf-8")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _authorized(self) -> bool:
            fake.requests.append((self.command, self.path))
            if self.headers.get("Authorization") != f"Bearer {fake.token}":
                self._send(401, {"message": "Bad credentials"})
                return False
            return True

        def _body(self) -> dict:
            return json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))

        def _public(self, c: dict) -> dict:
            return {k: v for k, v in c.items() if not k.startswith("_")}

        def do_GET(self):
            if not self._authorized():
                return
            url = urlsplit(self.path)
            m = LIST.match(url.path)
            if not m:
                return self._send(404, {"message": "Not Found"})
            query = parse_qs(url.query)
            per_page = int(query.get("per_page", ["30"])[0])
            page = int(query.get("page", ["1"])[0])
            mine = fake.on(m.group(1), int(m.group(2)))
            chunk = mine[(page - 1) * per_page : page * per_page]
            self._send(200, [self._public(c) for c in chunk])

        def do_POST(self):
            if not self._authorized():
                return
            m = LIST.match(urlsplit(self.path).path)
            if not m:
                return self._send(404, {"message": "Not Found"})
            if fake.read_only:
                return self._send(403, {"message": "Resource not accessible by integration"})
            repo, number = m.group(1), int(m.group(2))
            cid = 1000 + len(fake.comments)
            comment = {
                "id": cid,
                "body": self._body()["body"],
                "html_url": f"https://github.com/{repo}/pull/{number}#issuecomment-{cid}",
                "user": {"login": "github-actions[bot]", "type": "Bot"},
                "_where": (repo, number),
            }
            fake.comments.append(comment)
            self._send(201, self._public(comment))

        def do_PATCH(self):
            if not self._authorized():
                return
            m = ONE.match(urlsplit(self.path).path)
            found = [c for c in fake.comments if m and c["id"] == int(m.group(2))]
            if not found:
                return self._send(404, {"message": "Not Found"})
            if fake.read_only:
                return self._send(403, {"message": "Resource not accessible by integration"})
            found[0]["body"] = self._body()["body"]
            self._send(200, self._public(found[0]))

    return Handler


NOTES = re.compile(r"^/projects/([^/]+)/merge_requests/(\d+)/notes(?:/(\d+))?$")


@dataclass
class FakeGitLab:
    """The same for GitLab's merge-request notes (REST API v4, under ``/api/v4``):
    ``GET``/``POST /projects/{id}/merge_requests/{iid}/notes``, ``PUT .../notes/{note_id}``,
    checking ``PRIVATE-TOKEN``."""

    token: str
    notes: list[dict] = field(default_factory=list)
    requests: list[tuple[str, str]] = field(default_factory=list)

    def __post_init__(self):
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), _gitlab_handler(self))
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/api/v4"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def _gitlab_handler(fake: FakeGitLab):
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def _send(self, status: int, payload) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _route(self):
            fake.requests.append((self.command, self.path))
            if self.headers.get("PRIVATE-TOKEN") != fake.token:
                self._send(401, {"message": "401 Unauthorized"})
                return None
            url = urlsplit(self.path)
            m = NOTES.match(url.path.removeprefix("/api/v4"))
            if not m:
                self._send(404, {"message": "404 Not Found"})
                return None
            return m, parse_qs(url.query)

        def _body(self) -> dict:
            return json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))

        def do_GET(self):
            if not (found := self._route()):
                return
            m, query = found
            per_page, page = int(query["per_page"][0]), int(query["page"][0])
            mine = [n for n in fake.notes if n["_mr"] == (m.group(1), int(m.group(2)))]
            chunk = mine[(page - 1) * per_page : page * per_page]
            self._send(200, [{k: v for k, v in n.items() if k != "_mr"} for n in chunk])

        def do_POST(self):
            if not (found := self._route()):
                return
            m, _ = found
            note = {"id": 500 + len(fake.notes), "body": self._body()["body"], "system": False}
            fake.notes.append({**note, "_mr": (m.group(1), int(m.group(2)))})
            self._send(201, note)

        def do_PUT(self):
            if not (found := self._route()):
                return
            m, _ = found
            hit = [n for n in fake.notes if m.group(3) and n["id"] == int(m.group(3))]
            if not hit:
                return self._send(404, {"message": "404 Not found"})
            hit[0]["body"] = self._body()["body"]
            self._send(200, {k: v for k, v in hit[0].items() if k != "_mr"})

    return Handler
