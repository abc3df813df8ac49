"""What the ``kproto`` subcommands share: the usage error and input reading."""

from __future__ import annotations

import sys
from pathlib import Path

__all__ = ["CliError", "read_input"]


class CliError(Exception):
    """A usage or input problem: printed as ``kproto: error: ...``, exit status 2."""


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
