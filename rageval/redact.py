"""Keep secrets out of params, tags, artifacts, logs and error messages.

A config value is secret when its key looks like ``*key*``, ``*secret*``, ``*token*``,
``*password*`` or ``*connection_string*`` (names of environment variables, ``*_env``, are not).
Credentials inside URLs (``https://user:pass@host``) are masked too. ``scrub`` removes every
known secret value from free text such as an exception message.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from typing import Any

MASK = "***"
SECRET_KEY = re.compile(r"key|secret|token|password|passwd|connection_string|credential", re.I)
URL_CREDENTIALS = re.compile(
    r"(?P<scheme>[a-zA-Z][a-zA-Z0-9+.-]*://)(?P<user>[^:/@\s]+):(?P<pw>[^@/\s]+)@"
)
SECRET_ENV = re.compile(r"(KEY|SECRET|TOKEN|PASSWORD|CONNECTION_STRING)", re.I)


def is_secret_key(key: str) -> bool:
    return bool(SECRET_KEY.search(key)) and not key.lower().endswith("_env")


def mask_url(text: str) -> str:
    """``scheme://user:pass@host`` -> ``scheme://user:***@host``."""
    return URL_CREDENTIALS.sub(lambda m: f"{m['scheme']}{m['user']}:{MASK}@", text)


def redact(obj: Any, key: str = "") -> Any:
    """A copy of a nested config with secret values masked."""
    if isinstance(obj, Mapping):
        return {k: redact(v, str(k)) for k, v in obj.items()}
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
                walk(v, str(k))
        elif isinstance(o, list | tuple):
            for v in o:
                walk(v, key)
        elif isinstance(o, str):
            if is_secret_key(key) and len(o) >= 4:
                found.add(o)
            for m in URL_CREDENTIALS.finditer(o):
                found.add(m["pw"])

    walk(config)
    env = os.environ if environ is None else environ
    for name, value in env.items():
        if SECRET_ENV.search(name) and len(value) >= 6:
            found.add(value)
    return found


def scrub(text: str, secrets: Iterable[str]) -> str:
    """``text`` with each secret (longest first) replaced by the mask, and URL credentials masked."""
    for s in sorted(set(secrets), key=len, reverse=True):
        if s:
            text = text.replace(s, MASK)
    return mask_url(text)


def redact_override(override: str) -> str:
    """A Hydra override ``key=value`` with the value masked when the key looks secret."""
    key, sep, value = override.partition("=")
    if sep and is_secret_key(key.lstrip("+~").rsplit(".", 1)[-1]):
        return f"{key}={MASK}"
    return mask_url(override)
