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
