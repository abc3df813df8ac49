"""``docs/guide/broker-configuration.md``: its tables are what the definitions
generate (its Python examples run with the other pages', ``make test-docs``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kproto.broker.config_docs import BEGIN, END, render_tables, rewrite

GUIDE = Path(__file__).parents[2] / "docs" / "guide" / "broker-configuration.md"


def test_the_tables_are_current() -> None:
    text = GUIDE.read_text()
    generated = text.split(BEGIN, 1)[1].split(END, 1)[0]
    assert (
        generated == "\n" + render_tables()
    ), "run: python -m kproto.broker.config_docs docs/guide/broker-configuration.md"


def test_rewrite_fills_the_section_and_needs_the_markers(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(f"# Title\n\n{BEGIN}\nstale\n{END}\nafter\n")
    assert rewrite(page) is True
    assert "stale" not in page.read_text() and "| `node.id` |" in page.read_text()
    assert page.read_text().endswith(f"{END}\nafter\n")
    assert rewrite(page) is False
    page.write_text("no markers")
    with pytest.raises(ValueError, match="no <!-- generated"):
        rewrite(page)
