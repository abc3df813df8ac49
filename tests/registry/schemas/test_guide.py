"""The Python blocks of docs/guide/schema-formats.md run as written."""

from __future__ import annotations

import pytest

from tests.guides import python_blocks, run_block

PAGE = "schema-formats.md"


def test_the_guide_has_examples() -> None:
    assert len(python_blocks(PAGE)) >= 4


@pytest.mark.parametrize(
    "index", range(len(python_blocks(PAGE))), ids="block-{}".format
)
def test_guide_example_runs(index: int, capsys: pytest.CaptureFixture[str]) -> None:
    run_block(PAGE, index)
