"""The Python blocks of docs/guide/cli-schemas.md run, in order, as written."""

from __future__ import annotations

from tests.guides import run_page


def test_guide_code_blocks_run() -> None:
    assert run_page("cli-schemas.md") >= 1
