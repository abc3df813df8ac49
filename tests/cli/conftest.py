"""Shared fixtures of the CLI tests: ``kproto`` runs the command line in this process."""

from __future__ import annotations

import io
import sys
from typing import Protocol

import pytest

from kproto.cli import main


class Kproto(Protocol):
    """``kproto ARGV...`` with ``stdin`` as its standard input; returns (exit code,
    stdout, stderr)."""

    def __call__(self, *argv: str, stdin: str = "") -> tuple[int, str, str]: ...


@pytest.fixture
def kproto(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> Kproto:
    def run(*argv: str, stdin: str = "") -> tuple[int, str, str]:
        monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
        code = main(list(argv))
        captured = capsys.readouterr()
        return code, captured.out, captured.err

    return run
