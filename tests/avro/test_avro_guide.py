"""The Python blocks of docs/guide/avro-arrow.md run, in order, on both decoders."""

from __future__ import annotations

from tests.guides import run_page


def test_guide_examples_run() -> None:
    assert run_page("avro-arrow.md", {}) >= 3
