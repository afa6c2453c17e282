"""Reading text and JSONL input files that may be hostile: every problem is an InputError naming
the file and, where there is one, the line.

- UTF-8, with or without a byte-order mark; an invalid byte is reported with its line.
- Lines end at ``\\n`` only: U+2028, form feeds and the like may sit inside a JSON string.
- Malformed JSON, ``NaN``/``Infinity`` (not JSON), integers too long to convert, nesting too deep
  for the parser and lone surrogate escapes (``"\\ud800"``: no UTF-8 file can hold one, and every
  later ``.encode()`` would fail) are reported with their line, never as a traceback.
"""

from __future__ import annotations

import codecs
import json
import os
import re
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from rageval.errors import InputError

_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def read_text(path: str | Path, hint: str = "re-save the file as UTF-8") -> str:
    """The file's text, decoded as UTF-8 (a leading byte-order mark is dropped). Only a regular
    file is read: a FIFO would block forever and a device such as ``/dev/zero`` never ends."""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            raise InputError(
                "not a regular file (a FIFO, socket or device); pass a file", path=str(path)
            )
        data = Path(path).read_bytes()
    except OSError as err:
        raise InputError(f"cannot read the file: {err.strerror or err}", path=str(path)) from None
    if data.startswith(codecs.BOM_UTF8):
        data = data[len(codecs.BOM_UTF8) :]
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise InputError(
            f"not valid UTF-8 (byte {data[err.start]:#04x}); {hint}",
            path=str(path),
            line=data.count(b"\n", 0, err.start) + 1,
        ) from None


def lines(text: str) -> Iterator[tuple[int, str]]:
    """(1-based line number, line) for each line that is not blank; lines end at ``\\n`` only."""
    for number, raw in enumerate(text.split("\n"), start=1):
        if raw.strip():
            yield number, raw


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON; write a number or null")


def loads(raw: str, *, path: str, line: int | None) -> Any:
    """One JSON value from one line; InputError (with file and line) for anything unreadable."""
    try:
        value = json.loads(raw, parse_constant=_reject_constant)
    except json.JSONDecodeError as err:
        raise InputError(
            f"malformed JSON: {err.msg} (column {err.colno})", path=path, line=line
        ) from None
    except ValueError as err:  # NaN/Infinity, or an integer of thousands of digits
        raise InputError(
            f"malformed JSON: {str(err).split(';')[0]}", path=path, line=line
        ) from None
    except RecursionError:
        raise InputError("malformed JSON: nested too deeply", path=path, line=line) from None
    if _SURROGATE_ESCAPE.search(raw):
        try:
            json.dumps(value, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError:
            raise InputError(
                "holds a lone surrogate escape (\\ud800-\\udfff without its pair), which is not "
                "valid Unicode; fix or remove the escape",
                path=path,
                line=line,
            ) from None
    return value


def jsonl_objects(
    path: str | Path, max_line_chars: int | None = None, what: str = "line"
) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) for each non-blank line of a JSONL file of objects; a line longer
    than ``max_line_chars`` is refused before it is parsed (parsing holds it twice)."""
    for number, raw in lines(read_text(path)):
        if max_line_chars is not None and len(raw) > max_line_chars:
            raise InputError(
                f"the {what} on this line is {len(raw) / 1e6:.1f} million characters, above "
                f"the {max_line_chars / 1e6:g} million a line may hold; split it",
                path=str(path),
                line=number,
            )
        value = loads(raw, path=str(path), line=number)
        if not isinstance(value, dict):
            raise InputError("expected a JSON object per line", path=str(path), line=number)
        yield number, value


def printable(text: object) -> str:
    """User text (a query, an id, a slice value) safe on a terminal: control and format
    characters (ESC, NUL, newlines, U+202E...) shown as their escapes, so a golden set cannot
    move the cursor, recolour the screen or reverse what follows."""
    return "".join(
        c if c.isprintable() or c == " " else c.encode("unicode_escape").decode("ascii")
        for c in str(text)
    )
