"""Reading what the tool did not just write: JSON records and byte ranges, any failure one line
naming the file (the error type the caller gives). Light (standard library only).
"""

from __future__ import annotations

import errno
import json
import os
import re
import stat
from pathlib import Path

from .errors import CorpusError, ModelError


def read_json(path: os.PathLike, error: type[Exception] = ModelError, what: str = "damaged file") -> object:
    """The JSON value in ``path``; any failure to read or parse it (bad UTF-8 or JSON, integers too long
    to convert, arrays nested thousands deep) is ``error("PATH: what (why)")``."""
    path = Path(path)
    try:
        # a directory, or a link to /dev/zero or a pipe, is damage; reading one would fail or never end
        mode = path.stat().st_mode
        if not stat.S_ISREG(mode):
            kind = "a directory" if stat.S_ISDIR(mode) else "a pipe or a device"
            raise error(f"{path}: {what} ({kind} where a file belongs)")
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise error(f"{path}: {what} (missing)") from None
    except OSError as exc:
        raise error(f"{path}: cannot read: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise error(f"{path}: {what} (not UTF-8 text)") from None
    return parse_json(text, path, error, what)


def parse_json(text: str, path: os.PathLike, error: type[Exception] = ModelError, what: str = "damaged file") -> object:
    """The JSON value in ``text`` (read from ``path``), failing as :func:`read_json` does."""
    try:
        return json.loads(text)
    except RecursionError:
        raise error(f"{path}: {what} (JSON nested too deep)") from None
    except ValueError as exc:  # JSONDecodeError, and int() of a number with too many digits
        raise error(f"{path}: {what} (not valid JSON: {short_message(exc, 100)})") from None


def json_kind(value: object) -> str:
    """``null``, ``a number``, ``an array``...: what a parsed JSON value of the wrong type is, for its
    error (the value itself may be too long, or too deep, to show)."""
    names = {dict: "an object", list: "an array", str: "a string", bool: "a boolean", int: "a number", float: "a number"}
    return names.get(type(value), "null")


def short_message(exc: Exception, limit: int = 120) -> str:
    """The first line of an exception's message, cut to ``limit`` characters (for one-line errors)."""
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return text if len(text) <= limit else text[: limit - 3] + "..."


def read_range(path: os.PathLike, start: int, stop: int) -> bytes:
    """Bytes ``start:stop`` of a file; CorpusError("PATH: cannot read: ...") when it cannot be read."""
    try:
        with open(path, "rb") as fh:
            fh.seek(start)
            return fh.read(stop - start)
    except OSError as exc:
        raise CorpusError(f"{path}: cannot read: {exc.strerror or exc}") from None


def path_text(path) -> str:
    """``path`` as text that UTF-8 can hold: bytes that are not UTF-8 shown as ``\\xff``."""
    return os.fsencode(str(path)).decode("utf-8", "backslashreplace")


def os_error_text(exc: OSError) -> str:
    """What an OSError says, in one line: its strerror; numpy's "N requested and M written" (a
    short write, which on a local disk means it is full) as the "No space left on device" it is."""
    written = re.search(r"(\d+) requested and (\d+) written", str(exc))
    if exc.errno == errno.ENOSPC or written:
        wrote = f" (wrote {int(written[2]):,} of {int(written[1]):,} bytes)" if written else ""
        return f"No space left on device{wrote}"
    return exc.strerror or short_message(exc)
