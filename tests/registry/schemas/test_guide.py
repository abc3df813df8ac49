"""The Python blocks of docs/guide/schema-formats.md run as written."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

GUIDE = Path(__file__).resolve().parents[3] / "docs" / "guide" / "schema-formats.md"
BLOCKS = re.findall(r"```python\n(.*?)```", GUIDE.read_text(encoding="utf-8"), re.S)


def test_the_guide_has_examples() -> None:
    assert len(BLOCKS) >= 4


@pytest.mark.parametrize(
    "block", BLOCKS, ids=[f"block-{i}" for i in range(len(BLOCKS))]
)
def test_guide_example_runs(block: str, capsys: pytest.CaptureFixture[str]) -> None:
    exec(compile(block, str(GUIDE), "exec"), {})
