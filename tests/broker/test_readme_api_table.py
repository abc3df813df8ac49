"""The README's "APIs served" table lists every API in ``HANDLERS`` with the
versions served (issue 16: the table is the documentation of record)."""

from __future__ import annotations

import re
from pathlib import Path

from kproto.broker.dispatch import SERVED_APIS
from kproto.broker.handlers import HANDLERS
from kproto.broker.handlers.cluster_info import MIN_VERSIONS
from kproto.index import ApiKey

README = Path(__file__).resolve().parents[2] / "README.md"


def _expand(keys: str) -> list[int]:
    out: list[int] = []
    for part in keys.split(","):
        low, _, high = part.strip().partition("-")
        out += range(int(low), int(high or low) + 1)
    return out


def table() -> dict[int, tuple[int, int]]:
    text = README.read_text()
    section = text[text.index("### APIs served") :]
    section = section[: section.index("\n\n", section.index("| API |"))]
    rows: dict[int, tuple[int, int]] = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 3 or not re.fullmatch(r"\d[\d ,\-]*", cells[1]):
            continue
        keys = _expand(cells[1])
        ranges = [r.strip() for r in cells[2].split("(")[0].split(",")]
        if len(ranges) == 1:
            ranges *= len(keys)
        for key, versions in zip(keys, ranges, strict=True):
            low, _, high = versions.partition("-")
            rows[key] = (int(low), int(high or low))
    return rows


def test_every_served_api_and_version_is_in_the_readme_table() -> None:
    rows = table()
    for api_key in HANDLERS:
        low, high = SERVED_APIS[api_key]  # what ApiVersions advertises
        served = (MIN_VERSIONS.get(api_key, low), high)
        assert rows.get(api_key) == served, ApiKey(api_key).name
    assert set(rows) == set(HANDLERS)
