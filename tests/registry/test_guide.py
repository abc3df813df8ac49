"""The Python examples of docs/guide/schema-registry.md run as written."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

GUIDE = Path(__file__).parents[2] / "docs" / "guide" / "schema-registry.md"
BLOCKS = re.findall(r"```python\n(.*?)```", GUIDE.read_text(), re.S)


def test_the_guide_has_examples() -> None:
    assert len(BLOCKS) >= 2


@pytest.mark.parametrize("code", BLOCKS, ids=[f"block{i}" for i in range(len(BLOCKS))])
def test_example_runs(code: str) -> None:
    exec(compile(code, str(GUIDE), "exec"), {"__name__": "guide"})
