"""A small client for OpenAI-compatible chat-completions endpoints: OpenAI, Azure OpenAI, vLLM,
Ollama. Plain ``urllib``; a per-run budget on requests and tokens; retries with backoff.

Two URL and header styles: ``openai`` (``<base_url>/chat/completions``, ``Authorization: Bearer``,
the model in the body) and ``azure`` (``<base_url>/openai/deployments/<model>/chat/completions
?api-version=...``, ``api-key`` header). The key is read from the environment variable named by
``api_key_env``; it is sent in a header only, never printed or written: every message this module
raises goes through :func:`rageval.formats.redact.scrub`. Redirects are not followed (they would
carry the key to another host).
"""

from __future__ import annotations

import email.utils
import json
import os
import time
import urllib.error
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any
from urllib.parse import quote

from rageval.errors import ConfigError, RagevalError, yaml_error
from rageval.formats.redact import scrub, secret_values

API_STYLES = ("openai", "azure")
RETRY_STATUS = frozenset({408, 409, 429, 500, 502, 503, 504})
AZURE_API_VERSION = "2024-10-21"
_sleep = time.sleep  # tests replace this


class EndpointError(RagevalError):
    """The endpoint kept failing (429, 5xx, timeouts) after every retry."""


class BudgetExhausted(Exception):
    """The run's request or token budget is spent; no request was sent."""


class MalformedAnswer(Exception):
    """HTTP 200, but the body is not a chat completion (or its content is unusable)."""


class Rejected(Exception):
    """The endpoint refused this one prompt (e.g. Azure's content filter); others may pass."""


@dataclass(frozen=True)
class EndpointConfig:
    """Where and how to call the chat endpoint. ``model`` is the Azure deployment name for azure."""

    base_url: str
    model: str
    api_style: str = "openai"
    api_key_env: str = "OPENAI_API_KEY"
    api_version: str = AZURE_API_VERSION
    timeout: float = 60.0
    max_retries: int = 4
    backoff: float = 1.0
    max_backoff: float = 60.0
    temperature: float | None = 0.7  # None: not sent (some reasoning models accept only 1)
    max_answer_tokens: int = 1024  # 0: not sent
    # a chat answer is kilobytes; a larger body is refused unread (a broken or hostile endpoint)
    max_response_bytes: int = 4_000_000

    def __post_init__(self) -> None:
        if self.api_style not in API_STYLES:
            raise ConfigError(
                f"api_style must be one of {', '.join(API_STYLES)}, got {self.api_style!r}"
            )
        if not self.base_url.startswith(("http://", "https://")):
            raise ConfigError(
                f"base_url must start with http:// or https://, got {self.base_url!r} "
                "(e.g. http://localhost:11434/v1 for Ollama, "
                "https://<resource>.openai.azure.com for Azure)"
            )
        for name in (
            "timeout",
            "max_retries",
            "backoff",
            "max_backoff",
            "max_answer_tokens",
            "max_response_bytes",
        ):
            if getattr(self, name) < 0:
                raise ConfigError(f"{name} must be >= 0, got {getattr(self, name)!r}")

    @property
    def url(self) -> str:
        """The chat-completions URL (Azure: the deployment's, with ``api-version``)."""
        base = self.base_url.rstrip("/")
        if self.api_style == "azure":
            return (
                f"{base}/openai/deployments/{quote(self.model, safe='')}/chat/completions"
                f"?api-version={quote(self.api_version, safe='')}"
            )
        return f"{base}/chat/completions"


@dataclass
class Budget:
    """Requests (every HTTP attempt, retries included) and tokens (as the endpoint reports them in
    ``usage``, else estimated at 4 characters a token) a run may spend. Checked before each request
    against what that request may cost at most (its prompt, estimated, plus the answer tokens it
    asks for), so an endpoint that honours ``max_tokens`` cannot take the run past its budget."""

    max_requests: int = 100
    max_tokens: int = 200_000
    requests: int = 0
    tokens: int = 0

    def exhausted(self, next_cost: int = 0) -> str | None:
        """Why no further request (costing up to ``next_cost`` tokens) may be sent, or None."""
        if self.requests >= self.max_requests:
            return f"request budget of {self.max_requests} spent"
        if self.tokens >= self.max_tokens:
            return f"token budget of {self.max_tokens:,} spent ({self.tokens:,} used)"
        if self.tokens + next_cost > self.max_tokens:
            return (
                f"token budget of {self.max_tokens:,} nearly spent ({self.tokens:,} used; the next "
                f"request may cost up to {next_cost:,})"
            )
        return None


class _Deadline(Exception):
    """The request's total time ran out while the body was still arriving."""


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, req, fp, code, msg, headers, newurl):
        return None


class ChatClient:
    """``complete(messages)`` returns the answer's text, spending from ``budget``."""

    def __init__(
        self,
        cfg: EndpointConfig,
        budget: Budget | None = None,
        environ: Mapping[str, str] | None = None,
        sleep=None,
    ):
        env = os.environ if environ is None else environ
        self.cfg = cfg
        self.budget = budget or Budget()
        self.key = env.get(cfg.api_key_env, "")
        if cfg.api_style == "azure" and not self.key:
            raise ConfigError(
                f"Azure OpenAI needs an API key: export it in ${cfg.api_key_env} "
                "(or name another variable with --api-key-env)"
            )
        self._secrets = secret_values(None, env) | ({self.key} if self.key else set())
        self._sleep = sleep
        self._opener = urllib.request.build_opener(_NoRedirect)

    def scrub(self, text: str) -> str:
        """``text`` with the API key and every secret from the environment masked."""
        return scrub(text, self._secrets)

    def _headers(self) -> dict[str, str]:
        h = {"Content-Type": "application/json", "User-Agent": "rageval"}
        if self.key:
            azure = self.cfg.api_style == "azure"
            h["api-key" if azure else "Authorization"] = self.key if azure else f"Bearer {self.key}"
        return h

    def complete(self, messages: list[dict[str, str]]) -> str:
        """The text of the first choice. Raises BudgetExhausted, MalformedAnswer, Rejected,
        EndpointError (retries spent) or ConfigError (401/403/404, redirects, other 4xx)."""
        body: dict = {"messages": messages}
        if self.cfg.temperature is not None:
            body["temperature"] = self.cfg.temperature
        if self.cfg.max_answer_tokens:
            body["max_tokens"] = self.cfg.max_answer_tokens
        if self.cfg.api_style == "openai":
            body["model"] = self.cfg.model
        data = json.dumps(body).encode()
        prompt_chars = sum(len(m.get("content", "")) for m in messages)
        worst_case = prompt_chars // 4 + self.cfg.max_answer_tokens
        attempt = 0
        while True:
            reason = self.budget.exhausted(worst_case)
            if reason:
                raise BudgetExhausted(reason)
            self.budget.requests += 1
            status, headers, raw, problem = self._post(data)
            if status == 200 and raw is None:
                self.budget.tokens += worst_case  # what it may have cost; unknown, so the most
                raise MalformedAnswer(problem)
            if status == 200:
                return self._parse(raw, prompt_chars)
            if status is not None and status not in RETRY_STATUS:
                self._fail(status, headers, raw)
            if attempt >= self.cfg.max_retries:
                what = f"HTTP {status}" if status else problem
                raise EndpointError(
                    self.scrub(
                        f"{self.cfg.url}: still failing after {attempt + 1} attempts ({what}); "
                        "wait and re-run, lower the request rate, or raise --retries"
                    )
                )
            (self._sleep or _sleep)(self._delay(attempt, headers))
            attempt += 1

    def _post(self, data: bytes):
        req = urllib.request.Request(
            self.cfg.url, data=data, headers=self._headers(), method="POST"
        )
        deadline = time.monotonic() + self.cfg.timeout
        try:
            with self._opener.open(req, timeout=self.cfg.timeout) as resp:
                raw, problem = self._read(resp, deadline)
                return resp.status, resp.headers, raw, problem
        except urllib.error.HTTPError as err:
            raw = self._read(err, deadline)[0] if err.fp else b""
            return err.code, err.headers or {}, raw or b"", None
        except _Deadline as err:
            return None, {}, b"", str(err)
        except (OSError, ValueError) as err:  # URLError, timeouts, refused or reset connections
            return None, {}, b"", f"{type(err).__name__}: {getattr(err, 'reason', err)}"

    def _read(self, resp, deadline: float) -> tuple[bytes | None, str | None]:
        """The body, read in pieces: at most ``max_response_bytes`` (else (None, why)), and by the
        request's total deadline (``timeout`` seconds from sending), however slowly it drips."""
        cap, parts, size = self.cfg.max_response_bytes, [], 0
        length = resp.headers.get("Content-Length") if resp.headers else None
        if length and length.isdigit() and int(length) > cap:
            return None, f"the answer is {int(length):,} bytes, above the {cap:,}-byte limit"
        while True:
            if time.monotonic() > deadline:
                raise _Deadline(
                    f"no complete answer within {self.cfg.timeout:g} s (the endpoint sent "
                    f"{size:,} bytes so far); raise --timeout if answers are really that slow"
                )
            part = resp.read1(65536) if hasattr(resp, "read1") else resp.read(65536)
            if not part:
                return b"".join(parts), None
            size += len(part)
            if size > cap:
                return None, f"the answer is more than {cap:,} bytes; refused unread"
            parts.append(part)

    def _delay(self, attempt: int, headers) -> float:
        """Retry-After (seconds, milliseconds or an HTTP date) if given, else exponential
        backoff."""
        wait = None
        if headers.get("retry-after-ms"):
            wait = _number(headers["retry-after-ms"], 1000.0)
        elif headers.get("Retry-After"):
            value = headers["Retry-After"]
            wait = _number(value, 1.0)
            if wait is None:
                try:
                    wait = email.utils.parsedate_to_datetime(value).timestamp() - time.time()
                except (TypeError, ValueError):
                    wait = None
        if wait is None:
            wait = self.cfg.backoff * 2**attempt
        return max(0.0, min(wait, self.cfg.max_backoff))

    def _parse(self, raw: bytes, prompt_chars: int) -> str:
        try:
            obj = json.loads(raw.decode("utf-8"))
            content = obj["choices"][0]["message"]["content"]
        except (UnicodeDecodeError, ValueError, KeyError, IndexError, TypeError):
            obj, content = None, None
        usage = obj.get("usage") if isinstance(obj, dict) else None
        total = usage.get("total_tokens") if isinstance(usage, dict) else None
        if isinstance(total, int) and not isinstance(total, bool) and total >= 0:
            self.budget.tokens += total
        else:
            self.budget.tokens += (prompt_chars + len(content or "")) // 4
        if not isinstance(content, str):
            raise MalformedAnswer(
                "not a chat completion with text in choices[0].message.content: "
                + self.scrub(_snippet(raw))
            )
        return content

    def _fail(self, status: int, headers, raw: bytes):
        detail = self.scrub(_snippet(raw))
        url = self.scrub(self.cfg.url)
        if status in (401, 403):
            unset = "" if self.key else f" (${self.cfg.api_key_env} is not set)"
            msg = (
                f"{url}: the endpoint refused the credentials (HTTP {status}){unset}: export a "
                f"valid key in ${self.cfg.api_key_env}, or name another variable with --api-key-env"
            )
        elif status == 404:
            msg = (
                f"{url}: not found (HTTP 404): check --base-url (OpenAI style includes /v1, e.g. "
                "http://localhost:11434/v1), --model (the deployment name for Azure) and "
                "--api-style"
            )
        elif 300 <= status < 400:
            where = self.scrub(str(headers.get("Location", "?")))
            msg = (
                f"{url}: redirected (HTTP {status}) to {where}; set --base-url to the final address"
            )
        elif status == 400 and "content_filter" in detail:
            raise Rejected(f"HTTP 400 content filter: {detail}")
        else:
            msg = f"{url}: HTTP {status}: {detail}; check the endpoint settings"
        raise ConfigError(self.scrub(msg))


def _number(value: str, per_second: float) -> float | None:
    try:
        return float(value) / per_second
    except (TypeError, ValueError):
        return None


def _snippet(raw: bytes, n: int = 200) -> str:
    text = raw.decode("utf-8", "replace").strip()
    try:
        err = json.loads(text).get("error")
        if isinstance(err, dict) and isinstance(err.get("message"), str):
            text = f"{err.get('code') or ''} {err['message']}".strip()
    except (ValueError, AttributeError):
        pass
    text = " ".join(text.split())
    return text if len(text) <= n else text[: n - 3] + "..."


# Endpoint settings: the command line, else a YAML file, else the environment, else the defaults.
# The API key only ever comes from the environment variable named by ``api_key_env``.
SETTING_TYPES = {f.name: f.type for f in fields(EndpointConfig)} | {
    "max_requests": "int",
    "max_tokens": "int",
}
SETTING_ENV = {
    "base_url": ("RAGEVAL_LLM_BASE_URL", "OPENAI_BASE_URL"),
    "model": ("RAGEVAL_LLM_MODEL",),
}
AZURE_SETTING_ENV = {
    "base_url": ("RAGEVAL_LLM_BASE_URL", "AZURE_OPENAI_ENDPOINT"),
    "model": ("RAGEVAL_LLM_MODEL",),
}


def read_settings_file(path: str) -> dict[str, Any]:
    """Endpoint and budget settings from a YAML mapping; errors name the file, line and key."""
    import yaml

    from rageval.formats.redact import is_secret_key

    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
        node, data = yaml.compose(text), yaml.safe_load(text)
    except OSError as err:
        raise ConfigError(f"cannot read the config: {err.strerror}", path=path) from None
    except yaml.YAMLError as err:
        raise yaml_error(err, ConfigError, path) from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(
            "expected a mapping such as 'base_url: http://localhost:11434/v1'", path=path
        )
    lines = {k.value: k.start_mark.line + 1 for k, _ in node.value}
    for key, value in data.items():
        line = lines.get(key)
        if key not in SETTING_TYPES:
            if is_secret_key(str(key)):
                raise ConfigError(
                    f"{key!r}: never put an API key in a file; export it in an environment "
                    "variable and name that variable with api_key_env",
                    path=path,
                    line=line,
                )
            raise ConfigError(
                f"unknown key {key!r}; valid keys: {', '.join(sorted(SETTING_TYPES))}",
                path=path,
                line=line,
            )
        if not _type_ok(value, SETTING_TYPES[key]):
            want = SETTING_TYPES[key].replace(" | None", " or null")
            raise ConfigError(f"{key!r} must be {want}, got {value!r}", path=path, line=line)
    return data


def _type_ok(value: Any, want: str) -> bool:
    if value is None:
        return "None" in want
    if "str" in want:
        return isinstance(value, str)
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    return "float" in want or isinstance(value, int)


def endpoint_settings(
    given: Mapping[str, Any],
    settings_file: str | None = None,
    environ: Mapping[str, str] | None = None,
) -> tuple[EndpointConfig, Budget]:
    """The endpoint and budget: ``given`` (settings from the command line, None = not given), else
    ``settings_file``, else the environment, else the defaults. ConfigError says where to set a
    missing base_url or model (``--base-url`` style option names)."""
    env = os.environ if environ is None else environ
    values = read_settings_file(settings_file) if settings_file else {}
    values.update({k: v for k, v in given.items() if v is not None})
    sources = AZURE_SETTING_ENV if values.get("api_style") == "azure" else SETTING_ENV
    for key, names in sources.items():
        for name in names:
            if not values.get(key) and env.get(name):
                values[key] = env[name]
        if not values.get(key):
            opt = key.replace("_", "-")
            raise ConfigError(
                f"no {key} for the chat endpoint: pass --{opt}, set {key} in a --config file, "
                f"or export {' or '.join(names)}"
            )
    budget = Budget(values.pop("max_requests", 100), values.pop("max_tokens", 200_000))
    if budget.max_requests < 1 or budget.max_tokens < 1:
        raise ConfigError("--max-requests and --max-tokens must be >= 1")
    return EndpointConfig(**values), budget
