"""Keep secrets out of params, tags, artifacts, logs and error messages.

Which settings hold secrets is declared, not guessed (rageval.config_schema.SECRET_NAMES and a
project's ``secrets`` list): ``backend.api_key``, ``extra.db_password``, ``extra.conninfo`` when
listed, and everything below such a key. Every other value is kept verbatim
(``backend.doc_id_key``, ``backend.min_token_length``), so a replay is exact. Credentials are
also masked by where they stand in a value: inside URLs (``https://user:pass@host``, a password
holding ``@`` included), in secret query parameters (``?sig=...``, ``&api-key=...``) and in
keyword DSNs (``host=h password=...``, ``Pwd=...;``). ``scrub`` removes every known secret value
from free text such as a driver's exception message; :class:`ScrubbingStream` does it for
everything printed. :class:`Secret` holds a secret that prints masked.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from rageval.config_schema import is_secret_setting, override_key

MASK = "***"
# scheme://USERINFO@host: USERINFO may be user:password, a bare token (https://TOKEN@github.com)
# or anything else before the last @ of the authority (a password may hold @)
URL_CREDENTIALS = re.compile(r"(?P<scheme>[a-zA-Z][a-zA-Z0-9+.-]*://)(?P<userinfo>[^/\s?#'\"]+)@")
# ?name=value, &name=value, ;name=value, #name=value in a URL (a fragment carries OAuth tokens);
# masked when the name looks secret
URL_QUERY = re.compile(r"(?P<lead>[?&;#](?P<name>[A-Za-z0-9_.-]+)=)(?P<value>[^&#\s'\"]+)")
# a keyword DSN's password (libpq `host=h password=p`, quoted 'p w' too; ODBC `Pwd=p;`)
KEYWORD_DSN = re.compile(
    r"(?P<lead>(?:^|(?<=[\s;'\"=]))(?:password|passwd|pwd|sslpassword)\s*=\s*)"
    r"(?P<value>'(?:[^'\\]|\\.)*'|[^\s;'\"]+)",
    re.I,
)
# signed URLs: Azure SAS (sig), AWS SigV4 (X-Amz-Signature, X-Amz-Credential,
# X-Amz-Security-Token), Google (X-Goog-Signature, key), OAuth codes and bare auth parameters
SECRET_QUERY = {"sig", "signature", "code", "auth", "pass", "pwd", "session", "jwt", "sas", "key"}
SECRET_QUERY_SUFFIX = ("signature", "-credential", "_credential")
# environment variables (not settings) whose values are masked wherever they appear
SECRET_ENV = re.compile(
    r"(KEY|SECRET|TOKEN|PASSWORD|PASSWD|CONNECTION_STRING|CONNINFO|DSN|CREDENTIAL|(^|_)PAT($|_))",
    re.I,
)


def is_secret_key(key: str, declared: Iterable[str] = ()) -> bool:
    """True when the setting ``key`` holds a secret by declaration
    (rageval.config_schema.is_secret_setting); ``*_env`` names never do."""
    return is_secret_setting(key, declared)


class Secret:
    """A secret value that prints masked (``str``, ``repr``, f-strings, logs); the value itself
    only through :meth:`reveal`, on purpose."""

    __slots__ = ("_value",)

    def __init__(self, value: str):
        self._value = str(value)

    def reveal(self) -> str:
        """The secret itself: pass it to the driver, never to a message."""
        return self._value

    def __str__(self) -> str:
        return MASK

    def __repr__(self) -> str:
        return f"Secret({MASK!r})"

    def __bool__(self) -> bool:
        return bool(self._value)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Secret) and other._value == self._value

    def __hash__(self) -> int:
        return hash(("Secret", self._value))


def secret_from_env(name: str | None) -> Secret | None:
    """The environment variable ``name`` as a :class:`Secret` (None when unset or empty)."""
    value = os.environ.get(name) if name else None
    return Secret(value) if value else None


# query names that look secret and are not: MLflow's shared view of a runs table names an
# experiment tag (rageval prints one after a sweep)
PUBLIC_QUERY = {"viewstatesharekey"}


def _secret_query(name: str) -> bool:
    low = name.lower()
    if low in PUBLIC_QUERY:
        return False
    return is_secret_key(name) or low in SECRET_QUERY or low.endswith(SECRET_QUERY_SUFFIX)


def _mask_userinfo(m: re.Match) -> str:
    user, colon, _ = m["userinfo"].partition(":")
    return f"{m['scheme']}{user}:{MASK}@" if colon else f"{m['scheme']}{MASK}@"


def _mask_keyword(m: re.Match) -> str:
    return m["lead"] + MASK


def mask_url(text: str) -> str:
    """Credentials in URLs masked by their place, whatever they look like:
    ``scheme://user:pass@host/?sig=x`` -> ``scheme://user:***@host/?sig=***``,
    ``https://TOKEN@github.com`` -> ``https://***@github.com``, and any query or fragment
    parameter whose name looks secret (``X-Amz-Signature``, ``access_token``, ``sig``, ``code``)."""
    text = URL_CREDENTIALS.sub(_mask_userinfo, text)
    text = KEYWORD_DSN.sub(_mask_keyword, text)
    return URL_QUERY.sub(
        lambda m: m["lead"] + MASK if _secret_query(m["name"]) else m.group(0), text
    )


def declared_secrets(config: Any) -> tuple[str, ...]:
    """The dotted keys a config's ``secrets`` list declares secret."""
    listed = config.get("secrets") if isinstance(config, Mapping) else None
    return tuple(str(x) for x in listed) if isinstance(listed, list | tuple) else ()


def redact(obj: Any, key: str = "", declared: Iterable[str] | None = None, at: str = "") -> Any:
    """A copy of a nested config with its secret values masked: declared secret settings (and
    everything below one), URL and keyword-DSN credentials in any value. ``key``: the name of
    ``obj`` (``at``: its dotted path); ``declared``: the config's own ``secrets`` list unless
    given."""
    if declared is None:
        declared = declared_secrets(obj)
    secret = bool(key) and (is_secret_key(key) or is_secret_key(at or key, declared))
    return _redact(obj, secret, tuple(declared), at)


def _redact(obj: Any, secret: bool, declared: tuple[str, ...], at: str) -> Any:
    if isinstance(obj, Mapping):  # below a secret key everything is secret
        out = {}
        for k, v in obj.items():
            path = f"{at}.{k}" if at else str(k)
            inner = secret or is_secret_key(str(k)) or is_secret_key(path, declared)
            out[k] = _redact(v, inner, declared, path)
        return out
    if isinstance(obj, list | tuple):
        return [_redact(v, secret, declared, at) for v in obj]
    if isinstance(obj, str):
        return MASK if obj and secret else mask_url(obj)
    if obj is not None and secret and not isinstance(obj, bool | int | float):
        return MASK
    return obj


def secret_values(config: Any = None, environ: Mapping[str, str] | None = None) -> set[str]:
    """Every secret string in ``config`` (declared settings, URL and DSN credentials) and in
    secret-looking environment variables."""
    found: set[str] = set()
    declared = declared_secrets(config)

    def walk(o: Any, key: str = "", at: str = "", secret: bool = False) -> None:
        secret = secret or bool(key) and (is_secret_key(at, declared) or is_secret_key(key))
        if isinstance(o, Mapping):
            for k, v in o.items():
                walk(v, str(k), f"{at}.{k}".lstrip("."), secret)
        elif isinstance(o, list | tuple):
            for v in o:
                walk(v, key, at, secret)
        elif isinstance(o, str):
            if secret and len(o) >= 4:
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
    """Secret values given as ``key=value`` on a command line (Hydra overrides): the value of a
    secret-looking key, each value of a sweep over one (``+x.api_key=A,B``), and secrets inside
    dict- and list-valued overrides (``'+extra.creds={user: bob, password: P}'``)."""
    found: set[str] = set()
    overrides = list(overrides)
    declared: list[str] = []
    for o in overrides:  # `secrets=[extra.conninfo]` on the same command line declares
        if override_key(o) == "secrets":
            listed = _parse_override_value(o)
            declared += [str(x) for x in listed] if isinstance(listed, list) else []
    for o in overrides:
        key, sep, value = o.partition("=")
        if not sep:
            continue
        secret_key = _secret_override_key(key, declared)
        if secret_key and len(value) >= 4:
            found.add(value)
        found.update(_url_secrets(o))
        parsed = _parse_override_value(o) if _structured(value) else _UNPARSED
        if parsed is not _UNPARSED:
            found |= secret_values({"secret" if secret_key else "value": parsed}, {})
    return found


def command_line_secrets(argv: Iterable[str], environ: Mapping[str, str] | None = None) -> set[str]:
    """The secrets of a command line, taken out of it once for everything that prints or logs it
    (the CLI's errors, the Hydra app's console, a job's log): each override's secret values
    (:func:`override_secrets`) and the secret-looking environment variables."""
    return override_secrets(argv) | secret_values(None, environ)


def _structured(value: str) -> bool:
    """A dict, list or sweep value, whose parts must be looked at one by one."""
    return value[:1] in "{[" or "," in value or value.startswith(("choice(", "range(", "glob("))


_UNPARSED = object()
# Hydra writes dict items as `key:value` (it records overrides without the space YAML needs)
_FLOW_KEY = re.compile(r"([{,]\s*)([A-Za-z_][\w.-]*):(?! )")
_SWEEP_FN = re.compile(r"^(choice|glob)\((?P<args>.*)\)$", re.S)


def _parse_override_value(override: str) -> Any:
    """The value of an override (``key=value``) as plain Python: a dict or list value as YAML
    flow syntax reads it (Hydra's grammar for them is a subset), a sweep (``a,b`` or
    ``choice(a,b)``) as the list of its values; ``_UNPARSED`` when it cannot be read (then only
    the URL rules apply). No Hydra import: this runs in the core, on any command line."""
    import yaml

    value = override.partition("=")[2].strip()
    m = _SWEEP_FN.match(value)
    parts = _split_top_level(m["args"] if m else value)
    try:
        items = [
            yaml.safe_load(_FLOW_KEY.sub(r"\1\2: ", p)) if p[:1] in "{['\"" else p for p in parts
        ]
    except yaml.YAMLError:
        return _UNPARSED
    return _plain(items[0] if len(items) == 1 and not m else items)


def _split_top_level(text: str) -> list[str]:
    """``text`` split at commas outside brackets and quotes: the values of a sweep."""
    parts, depth, quote, start = [], 0, "", 0
    for i, ch in enumerate(text):
        if quote:
            quote = "" if ch == quote and text[i - 1] != "\\" else quote
        elif ch in "'\"":
            quote = ch
        elif ch in "{[(":
            depth += 1
        elif ch in "}])":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(text[start:i].strip())
            start = i + 1
    parts.append(text[start:].strip())
    return [p for p in parts if p]


def _plain(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, str | int | float | bool) or value is None:
        return value
    return str(value)


def _url_secrets(text: str) -> set[str]:
    """The credentials inside ``text``'s URLs and keyword DSNs; for a password holding ``@``
    also its tail before a host (``ss@``: a driver that splits at the first ``@`` names
    ``ss@host`` as the host it could not resolve)."""
    found = set()
    for m in URL_CREDENTIALS.finditer(text):
        user, colon, pw = m["userinfo"].partition(":")
        secret = pw if colon else user
        found.add(secret)
        parts = secret.split("@")
        found.update("@".join(parts[i:]) + "@" for i in range(1, len(parts)))
    found.update(m["value"] for m in URL_QUERY.finditer(text) if _secret_query(m["name"]))
    found.update(m["value"].strip("'") for m in KEYWORD_DSN.finditer(text))
    return {s for s in found if len(s) >= 4 or s.endswith("@") and len(s) >= 2}


def _secret_override_key(key: str, declared: Iterable[str] = ()) -> bool:
    path = override_key(key)
    return is_secret_key(path, declared) or any(is_secret_key(p) for p in path.split("."))


def scrub(text: str, secrets: Iterable[str]) -> str:
    """``text`` with each secret (longest first) replaced by the mask, and URL credentials
    masked."""
    for s in sorted(set(secrets), key=len, reverse=True):
        if s:
            text = text.replace(s, MASK + "@" if s.endswith("@") else MASK)
    return mask_url(text)


def redact_override(override: str, declared: Iterable[str] = ()) -> str:
    """A Hydra override ``key=value`` with the value masked when the key is a secret setting
    (``declared``: a config's ``secrets`` list), and the secrets inside a dict or list value
    masked where they stand."""
    key, sep, value = override.partition("=")
    if sep and _secret_override_key(key, declared):
        return f"{key}={MASK}"
    if sep and value[:1] in "{[":
        parsed = _parse_override_value(override)
        if isinstance(parsed, dict | list):
            return f"{key}={_flow(redact(parsed, key.split('.')[-1]))}"
    return scrub(override, override_secrets([override]))


def _flow(value: Any) -> str:
    """``value`` in Hydra's (YAML flow) override syntax."""
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {_flow(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(_flow(v) for v in value) + "]"
    if value is None:
        return "null"
    if isinstance(value, bool):
        return str(value).lower()
    text = str(value)
    if isinstance(value, str) and text != MASK and re.search(r"[\s:,{}\[\]'\"=#]", text):
        return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"  # Hydra's quoting
    return text


def redact_yaml_file(path: str | Path, overrides: Iterable[str] = ()) -> bool:
    """Rewrite a YAML config dump that Hydra wrote (``multirun.yaml``) with its secrets masked:
    secret keys, URL credentials, the command-line overrides it lists, and every secret value
    found in it or in ``overrides`` wherever else it appears. Returns True if it changed."""
    import yaml

    from rageval.formats.atomic import atomic_write_text

    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
        data = yaml.safe_load(text)
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return False
    secrets = secret_values(data, {}) | override_secrets(overrides)
    hydra = data.get("hydra") if isinstance(data, dict) else None
    listed = (hydra or {}).get("overrides") or {}
    for group in ("task", "hydra"):
        secrets |= override_secrets(listed.get(group) or [])
    clean = redact(data)
    clean_listed = ((clean.get("hydra") or {}).get("overrides")) if hydra else None
    for group in ("task", "hydra"):
        if clean_listed and isinstance(clean_listed.get(group), list):
            clean_listed[group] = [redact_override(str(o)) for o in listed[group]]
    out = scrub(yaml.safe_dump(clean, sort_keys=False, allow_unicode=True), secrets)
    if out == text:
        return False
    atomic_write_text(p, out)
    return True


class ScrubbingStream:
    """Wraps a text stream (stdout, stderr): every secret is masked in what is written to it."""

    def __init__(self, stream: Any, secrets: Iterable[str]):
        self._stream, self._secrets = stream, set(secrets)

    def write(self, text: str) -> int:
        """Write ``text`` with secrets masked; returns the length of the unmasked text."""
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
        """Mask secrets in the record's message and traceback; always keeps it."""
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
