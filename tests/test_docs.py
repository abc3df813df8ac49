"""The documentation's own rules (issue 24): a README of at most 250 lines that still
gives the two commands, and at most 10 code blocks kept out of the executed examples
(Sybil ``skip`` comments; conftest.py runs every other ```python block of README.md
and docs/). The site itself is checked by ``make docs`` (``mkdocs build --strict``)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def test_the_readme_is_short_and_gives_the_two_commands() -> None:
    text = (ROOT / "README.md").read_text()
    assert len(text.splitlines()) <= 250
    assert "make demo" in text and "make test" in text


def test_at_most_ten_blocks_are_skipped() -> None:
    skips = [
        (page.relative_to(ROOT), n)
        for page in PAGES
        for n, line in enumerate(page.read_text().splitlines(), 1)
        if re.match(r"\s*<!--+\s*skip:", line)
    ]
    assert len(skips) <= 10, skips


def test_every_python_block_is_one_sybil_runs() -> None:
    """A ```py or ```python3 fence would be shown but never run: only ```python is."""
    for page in PAGES:
        fences = re.findall(r"^```(\w+)", page.read_text(), re.MULTILINE)
        assert not {"py", "python3", "pycon"} & set(fences), page
