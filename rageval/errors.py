"""The errors rageval raises for anything a user can fix.

Every user-facing failure is a :class:`RagevalError`: the CLI prints its message on one line and
exits with :attr:`RagevalError.exit_code` (2 for bad input). Messages say what was wrong, where
(file, line, key or query id) and what to do.
"""

from __future__ import annotations


class RagevalError(Exception):
    """Base class: a problem the user can fix. Exit code 2."""

    exit_code = 2

    def __init__(self, message: str, *, path: str | None = None, line: int | None = None):
        self.path = path
        self.line = line
        where = ""
        if path is not None:
            where = f"{path}:{line}: " if line is not None else f"{path}: "
        super().__init__(f"{where}{message}")


class InputError(RagevalError):
    """A golden set, corpus, qrels or run file that cannot be used as given."""


class ConfigError(RagevalError):
    """A configuration value that is missing, of the wrong type or out of range."""


class IndexMismatchError(RagevalError):
    """Queries would be embedded by a different model than the one that built the index."""


class BackendError(RagevalError):
    """A retrieval backend failed for some queries even after retries."""

    def __init__(self, message: str, *, failed_queries: list[str] | None = None):
        self.failed_queries = list(failed_queries or [])
        super().__init__(message)


class RegressionError(RagevalError):
    """The regression gate found a metric that dropped beyond its tolerance. Exit code 1."""

    exit_code = 1


class NotConfirmedError(RagevalError):
    """A tuning study's holdout does not confirm its best configuration's gain. Exit code 1."""

    exit_code = 1


def yaml_error(err: Exception, kind: type[RagevalError], path: str | None = None) -> RagevalError:
    """The one line for a YAML syntax error: ``<file>:<line>: not valid YAML (<what the parser
    met>)``; the file is ``path``, else the one the parser read."""
    mark = getattr(err, "problem_mark", None)
    met = [str(p) for p in (getattr(err, "context", None), getattr(err, "problem", None)) if p]
    return kind(
        f"not valid YAML ({' '.join(met) or err})",
        path=path if path is not None else getattr(mark, "name", None),
        line=mark.line + 1 if mark is not None else None,
    )


def yaml_key_line(text: str, dotted: str) -> int | None:
    """The 1-based line of the key ``dotted`` (``a.b``: ``b`` inside ``a``) in the YAML ``text``;
    None when it is not there or the text is not YAML."""
    import yaml

    try:
        node = yaml.compose(text)
    except yaml.YAMLError:
        return None
    for part in dotted.split("."):
        if not isinstance(node, yaml.MappingNode):
            return None
        node = next((v for k, v in node.value if getattr(k, "value", None) == part), None)
        if node is None:
            return None
    return node.start_mark.line + 1


def did_you_mean(
    word: str,
    choices,
    *,
    n: int = 1,
    quoted: bool = False,
    ignore_case: bool = False,
    prefix: str = "",
    first=(),
    clause: bool = False,
) -> str:
    """The one "did you mean" of every message: `` (did you mean x?)`` naming the closest of
    ``choices`` (at most ``n``; ``first``: names to offer before them, e.g. those containing
    ``word``), ``"; did you mean x?"`` when ``clause``; each name ``repr``-quoted when ``quoted``
    and written after ``prefix``; ``""`` when none is close."""
    import difflib

    names = list(choices)
    if ignore_case:
        lower = {c.lower(): c for c in names}
        found = difflib.get_close_matches(word.lower(), list(lower), n=n, cutoff=0.6)
        close = [lower[c] for c in found]
    else:
        close = difflib.get_close_matches(word, names, n=n, cutoff=0.6)
    close = list(dict.fromkeys([*first, *close]))
    if not close:
        return ""
    said = " or ".join(prefix + (repr(c) if quoted else c) for c in close)
    return f"; did you mean {said}?" if clause else f" (did you mean {said}?)"


def install_hint(extra: str | None = None, *, package: str | None = None) -> str:
    """The one install hint: ``pip install 'rageval[extra]'`` for an extra of rageval,
    ``pip install package`` for a package outside it."""
    return f"pip install {package}" if package else f"pip install 'rageval[{extra}]'"
