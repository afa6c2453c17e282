"""A local stand-in for an OpenAI-compatible chat-completions endpoint, on 127.0.0.1.

Answers ``POST <prefix>/chat/completions`` (OpenAI, vLLM and Ollama style) and
``POST /openai/deployments/<name>/chat/completions?api-version=...`` (Azure style). It checks the
key (``Authorization: Bearer`` or ``api-key``), records every request, and plays scripted
answers first (429 with Retry-After, 5xx, malformed bodies, redirects, error bodies) before its
default answer: questions about the passage in the prompt, each quoting one of its sentences.
It is not a language model: the questions are templates.
"""

from __future__ import annotations

import json
import re
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

# the API key the judging tests give the client and the stand-in checks (tests/conftest.py llm_env)
JUDGE_KEY = "sk-judge-0123456789abcdef"

AZURE_PATH = re.compile(r"^/openai/deployments/([^/]+)/chat/completions$")


@dataclass
class Seen:
    """One request as received."""

    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: Any


@dataclass
class Reply:
    """A scripted answer: ``content`` wrapped in a chat completion, or a raw ``body`` as given."""

    status: int = 200
    content: str | None = None
    body: bytes | None = None
    headers: dict[str, str] = field(default_factory=dict)
    usage: int | None = None


def passage_of(body: dict) -> str:
    """The text between <passage> and </passage> in the last user message."""
    text = body["messages"][-1]["content"]
    m = re.search(r"<passage>\n(.*)\n</passage>", text, re.S)
    return m.group(1) if m else ""


def template_questions(body: dict) -> str:
    """The default answer: one question per sentence of the passage (of 6+ words), as many as
    asked."""
    n = int(re.search(r"Write (\d+)", body["messages"][-1]["content"]).group(1))
    sentences = [s.strip() for s in re.split(r"(?<=[.!?])\s+|\n+", passage_of(body))]
    sentences = [s for s in sentences if len(s.split()) >= 6 and not s.startswith("#")]
    items = [
        {"question": f"What does it say about {' '.join(s.split()[:4]).lower()}?", "quote": s}
        for s in sentences[:n]
    ]
    return json.dumps({"questions": items})


class ChatServer:
    """``with ChatServer(key="k") as srv:`` then point the client at ``srv.base_url``."""

    def __init__(
        self,
        key: str | None = None,
        style: str = "openai",
        usage: int | None = 100,
        responder: Callable[[dict], str] = template_questions,
    ):
        self.key, self.style, self.usage, self.responder = key, style, usage, responder
        self.script: deque[Reply] = deque()
        self.seen: list[Seen] = []
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    def __enter__(self) -> ChatServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    @property
    def root(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    @property
    def base_url(self) -> str:
        """What a user passes as --base-url: with /v1 for the OpenAI style, the bare host for
        Azure."""
        return self.root if self.style == "azure" else self.root + "/v1"

    def then(self, *replies: Reply) -> ChatServer:
        """Play these answers, in order, before the default one."""
        self.script.extend(replies)
        return self

    def answer(self, path: str, headers: dict[str, str], raw: bytes) -> Reply:
        url = urlsplit(path)
        try:
            body = json.loads(raw)
        except ValueError:
            body = None
        with self._lock:
            self.seen.append(Seen(url.path, parse_qs(url.query), headers, body))
            scripted = self.script.popleft() if self.script else None
        if self.style == "azure":
            ok_path = AZURE_PATH.match(url.path) and "api-version" in parse_qs(url.query)
            given = headers.get("api-key")
        else:
            ok_path = url.path == "/v1/chat/completions"
            auth = headers.get("authorization", "")
            given = auth[len("Bearer ") :] if auth.startswith("Bearer ") else None
        if not ok_path:
            return Reply(404, body=b'{"error": {"message": "Resource not found"}}')
        if self.key is not None and given != self.key:
            return Reply(401, body=b'{"error": {"message": "Incorrect API key provided"}}')
        if scripted is not None:
            return scripted
        if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
            return Reply(400, body=b'{"error": {"message": "messages is required"}}')
        return Reply(content=self.responder(body), usage=self.usage)

    def _handler(self):
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                headers = {k.lower(): v for k, v in self.headers.items()}
                reply = server.answer(self.path, headers, raw)
                body = reply.body
                if body is None:
                    completion: dict[str, Any] = {
                        "id": "chatcmpl-fake",
                        "object": "chat.completion",
                        "choices": [
                            {
                                "index": 0,
                                "message": {"role": "assistant", "content": reply.content},
                                "finish_reason": "stop",
                            }
                        ],
                    }
                    if reply.usage is not None:
                        completion["usage"] = {"total_tokens": reply.usage}
                    body = json.dumps(completion).encode()
                self.send_response(reply.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                for k, v in reply.headers.items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        return Handler
