"""``docs/guide/test-controls.md``: its Python examples run against the broker."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

GUIDE = Path(__file__).parents[2] / "docs" / "guide" / "test-controls.md"


@pytest.mark.parametrize(
    "block",
    re.findall(r"```python\n(.*?)```", GUIDE.read_text(), re.S),
    ids=lambda block: block.splitlines()[-1][:40],
)
def test_the_examples_run(block: str) -> None:
    exec(compile(block, str(GUIDE), "exec"), {"__name__": "guide"})


def test_every_control_in_the_tables_exists() -> None:
    from kproto.broker import Cluster

    rows = re.findall(r"^\| `([a-z_]+)\(", GUIDE.read_text(), re.M)
    assert len(rows) > 20
    missing = [name for name in rows if not hasattr(Cluster, name)]
    assert missing == []
