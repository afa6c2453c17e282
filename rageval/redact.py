"""Keep secrets out of params, tags, artifacts, logs and error messages.

A config value is secret when its key looks like ``*key*``, ``*secret*``, ``*token*``,
``*password*``, ``*connection_string*``, ``*credential*`` or ``*authorization*`` (names of
environment variables, ``*_env``, are not), and so is everything below such a key. Credentials
inside URLs (``https://user:pass@host``) and secret-looking query parameters (``?sig=...``,
``&api-key=...``) are masked too. ``scrub`` removes every known secret value from free text such
as an exception message; :class:`ScrubbingStream` does it for everything printed.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Iterable, Mapping
from typing import Any

MASK = "***"
SECRET_KEY = re.compile(
    r"key|secret|token|password|passwd|connection_string|credential|authorization", re.I
)
URL_CREDENTIALS = re.compile(
    r"(?P<scheme>[a-zA-Z][a-zA-Z0-9+.-]*://)(?P<user>[^:/@\s]+):(?P<pw>[^@/\s]+)@"
)
# ?name=value / &name=value in a URL; masked when the name looks secret (sig: Azure SAS tokens)
URL_QUERY = re.compile(r"(?P<lead>[?&;](?P<name>[A-Za-z0-9_.-]+)=)(?P<value>[^&#\s'\"]+)")
SECRET_QUERY = {"sig", "signature", "code", "auth"}
SECRET_ENV = re.compile(r"(KEY|SECRET|TOKEN|PASSWORD|CONNECTION_STRING)", re.I)


def is_secret_key(key: str) -> bool:
    return bool(SECRET_KEY.search(key)) and not key.lower().endswith("_env")


def _secret_query(name: str) -> bool:
    return is_secret_key(name) or name.lower() in SECRET_QUERY


def mask_url(text: str) -> str:
    """``scheme://user:pass@host/?sig=x`` -> ``scheme://user:***@host/?sig=***``."""
    text = URL_CREDENTIALS.sub(lambda m: f"{m['scheme']}{m['user']}:{MASK}@", text)
    return URL_QUERY.sub(
        lambda m: m["lead"] + MASK if _secret_query(m["name"]) else m.group(0), text
    )


def redact(obj: Any, key: str = "") -> Any:
    """A copy of a nested config with secret values masked."""
    if isinstance(obj, Mapping):  # below a secret key everything is secret
        return {k: redact(v, key if is_secret_key(key) else str(k)) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [redact(v, key) for v in obj]
    if isinstance(obj, str):
        if obj and is_secret_key(key):
            return MASK
        return mask_url(obj)
    if obj is not None and is_secret_key(key) and not isinstance(obj, bool | int | float):
        return MASK
    return obj


def secret_values(config: Any = None, environ: Mapping[str, str] | None = None) -> set[str]:
    """Every secret string in ``config`` and in secret-looking environment variables."""
    found: set[str] = set()

    def walk(o: Any, key: str = "") -> None:
        if isinstance(o, Mapping):
            for k, v in o.items():
                walk(v, key if is_secret_key(key) else str(k))
        elif isinstance(o, list | tuple):
            for v in o:
                walk(v, key)
        elif isinstance(o, str):
            if is_secret_key(key) and len(o) >= 4:
                found.add(o)
            found.update(_url_secrets(o))

    walk(config)
    env = os.environ if environ is None else environ
    for name, value in env.items():
        if SECRET_ENV.search(name) and len(value) >= 6:
            found.add(value)
        found.update(_url_secrets(value))
    return found


def override_secrets(overrides: Iterable[str]) -> set[str]:
    """Secret values given as ``key=value`` on a command line (Hydra overrides)."""
    found: set[str] = set()
    for o in overrides:
        key, sep, value = o.partition("=")
        if sep and _secret_override_key(key) and len(value) >= 4:
            found.add(value)
        found.update(_url_secrets(o))
    return found


def _url_secrets(text: str) -> set[str]:
    found = {m["pw"] for m in URL_CREDENTIALS.finditer(text)}
    found.update(m["value"] for m in URL_QUERY.finditer(text) if _secret_query(m["name"]))
    return {s for s in found if len(s) >= 4}


def _secret_override_key(key: str) -> bool:
    return any(is_secret_key(part) for part in key.lstrip("+~").split("."))


def scrub(text: str, secrets: Iterable[str]) -> str:
    """``text`` with each secret (longest first) replaced by the mask, and URL credentials masked."""
    for s in sorted(set(secrets), key=len, reverse=True):
        if s:
            text = text.replace(s, MASK)
    return mask_url(text)


def redact_override(override: str) -> str:
    """A Hydra override ``key=value`` with the value masked when the key looks secret."""
    key, sep, value = override.partition("=")
    if sep and _secret_override_key(key):
        return f"{key}={MASK}"
    return mask_url(override)


class ScrubbingStream:
    """Wraps a text stream (stdout, stderr): every secret is masked in what is written to it."""

    def __init__(self, stream: Any, secrets: Iterable[str]):
        self._stream, self._secrets = stream, set(secrets)

    def write(self, text: str) -> int:
        self._stream.write(scrub(text, self._secrets))
        return len(text)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


class ScrubbingFilter(logging.Filter):
    """A logging filter that masks secrets (and URL credentials) in a record's text."""

    def __init__(self, secrets: Iterable[str]):
        super().__init__()
        self.secrets = set(secrets)

    def filter(self, record: logging.LogRecord) -> bool:
        text = record.getMessage()
        clean = scrub(text, self.secrets)
        if clean != text:
            record.msg, record.args = clean, None
        if record.exc_info and not record.exc_text:
            record.exc_text = scrub(
                logging.Formatter().formatException(record.exc_info), self.secrets
            )
        return True


def scrub_logging(secrets: Iterable[str]) -> None:
    """Mask secrets in everything the root logger's handlers (console, log file) write."""
    for handler in logging.getLogger().handlers:
        for old in [f for f in handler.filters if isinstance(f, ScrubbingFilter)]:
            handler.removeFilter(old)
        handler.addFilter(ScrubbingFilter(secrets))
