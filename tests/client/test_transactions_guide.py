"""The Python blocks of docs/guide/transactions.md run, in order, as written."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

GUIDE = Path(__file__).parents[2] / "docs" / "guide" / "transactions.md"


def test_guide_code_blocks_run() -> None:
    blocks = re.findall(r"```python\n(.*?)```", GUIDE.read_text(), re.S)
    assert len(blocks) >= 1
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        for i, block in enumerate(blocks):
            exec(compile(block, f"{GUIDE.name} block {i}", "exec"), {})  # noqa: S102
    printed = out.getvalue().splitlines()
    assert printed[0].startswith("<TransactionalProducer 'invoicer' READY TV2")
    assert printed[1] == "[b'invoice for 2 apples']"
    assert printed[2] == "{TopicPartition(topic='orders', partition=0): 1}"
