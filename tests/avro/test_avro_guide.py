"""The Python blocks of docs/guide/avro-arrow.md run, in order, on both decoders."""

from __future__ import annotations

import re
from pathlib import Path

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "guide" / "avro-arrow.md"


def test_guide_examples_run() -> None:
    blocks = re.findall(r"```python\n(.*?)```", GUIDE.read_text(), re.S)
    assert len(blocks) >= 3
    namespace: dict[str, object] = {}
    for block in blocks:
        exec(compile(block, str(GUIDE), "exec"), namespace)  # noqa: S102
