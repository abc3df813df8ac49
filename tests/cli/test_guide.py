"""The Python blocks of docs/guide/cli-schemas.md run, in order, as written."""

from __future__ import annotations

import re
from pathlib import Path

GUIDE = Path(__file__).parents[2] / "docs" / "guide" / "cli-schemas.md"


def test_guide_code_blocks_run() -> None:
    blocks = re.findall(r"```python\n(.*?)```", GUIDE.read_text(), re.S)
    assert blocks
    for i, block in enumerate(blocks):
        exec(compile(block, f"{GUIDE.name} block {i}", "exec"), {})  # noqa: S102
