"""The ```python blocks of a page of docs/guide/, for the tests that run a guide's
examples as written (so they run in ``make test-pure`` too, which Sybil's run of
docs/ in ``make test-docs`` does not)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

GUIDE = Path(__file__).resolve().parents[1] / "docs" / "guide"


def python_blocks(page: str) -> list[str]:
    """The ```python blocks of ``docs/guide/<page>``, in order."""
    return re.findall(r"```python\n(.*?)```", (GUIDE / page).read_text(), re.S)


def run_block(page: str, index: int, namespace: dict[str, Any] | None = None) -> None:
    """Run block ``index`` of ``page`` in ``namespace`` (a fresh one by default)."""
    code = compile(python_blocks(page)[index], f"{page} block {index}", "exec")
    exec(code, {} if namespace is None else namespace)  # noqa: S102


def run_page(page: str, namespace: dict[str, Any] | None = None) -> int:
    """Run every block of ``page`` in order, each in a fresh namespace or all in
    ``namespace``; returns how many blocks ran."""
    count = len(python_blocks(page))
    for index in range(count):
        run_block(page, index, namespace)
    return count
