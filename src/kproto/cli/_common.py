"""What the ``kproto`` subcommands share: the usage error, its one-line rendering,
and input reading."""

from __future__ import annotations

import sys
from pathlib import Path

__all__ = ["CliError", "error_line", "read_input"]


class CliError(Exception):
    """A usage or input problem: printed as ``kproto: error: ...``, exit status 2."""


def error_line(exc: BaseException) -> str:
    """What goes after ``kproto: error:`` for an error the user caused: an
    :class:`OSError` as ``FILE: reason`` (``reason`` alone when it names no file),
    anything else as its message.

    >>> error_line(FileNotFoundError(2, "No such file or directory", "x.log"))
    'x.log: No such file or directory'
    """
    if isinstance(exc, OSError) and exc.strerror:
        if exc.filename is not None:
            return f"{exc.filename}: {exc.strerror}"
        return exc.strerror
    return str(exc) or type(exc).__name__


def read_input(name: str) -> bytes:
    """The bytes of file ``name`` (``-``: standard input).

    Raises:
        CliError: the file cannot be read.
    """
    if name == "-":
        return sys.stdin.buffer.read()
    try:
        return Path(name).read_bytes()
    except OSError as exc:
        raise CliError(f"cannot read {name}: {exc.strerror or exc}") from None
