"""The Python examples of docs/guide/schema-registry.md run as written."""

from __future__ import annotations

import pytest

from tests.guides import python_blocks, run_block

PAGE = "schema-registry.md"


def test_the_guide_has_examples() -> None:
    assert len(python_blocks(PAGE)) >= 2


@pytest.mark.parametrize("index", range(len(python_blocks(PAGE))), ids="block{}".format)
def test_example_runs(index: int) -> None:
    run_block(PAGE, index, {"__name__": "guide"})
