"""Printing sections and plain-text tables."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import IO, Any


def cell(value: Any) -> str:
    """``-`` for None, text for printable bytes (else hex), joined sequences."""
    if value is None:
        return "-"
    if isinstance(value, bytes):
        text = value.decode(errors="replace")  # printable text, else hex
        return text if text.isprintable() else "0x" + value.hex()
    if isinstance(value, list | tuple):
        return ",".join(cell(v) for v in value) or "-"
    return str(value)


class Printer:  # section titles, lines and tables, to ``out``
    def __init__(self, out: IO[str]) -> None:
        self.out = out

    def section(self, title: str) -> None:
        self.line(f"\n== {title} " + "=" * max(0, 70 - len(title)))

    def line(self, text: str = "") -> None:
        print(text, file=self.out)

    def table(self, headers: str, rows: Iterable[Sequence[Any]]) -> None:
        """``rows`` under ``headers`` (``|``-separated), with a rule between."""
        cells = [headers.split("|")] + [[cell(c) for c in row] for row in rows]
        widths = [max(len(r[i]) for r in cells) for i in range(len(cells[0]))]
        for n, row in enumerate(cells):
            self.line("  ".join(c.ljust(widths[i]) for i, c in enumerate(row)).rstrip())
            if n == 0:
                self.line("  ".join("-" * w for w in widths))
