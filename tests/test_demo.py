"""The demo, run as a test: its broker section end to end (the only test that imports demo)."""

from __future__ import annotations

import io
from pathlib import Path

from kproto.records import decode_records


def test_broker_step_leaves_topic_and_offsets_logs(tmp_path: Path) -> None:
    import demo.broker
    from demo.tables import Printer

    out = io.StringIO()
    data_dir = demo.broker.broker_step(tmp_path, out=Printer(out))
    assert f"consumed {demo.broker.N} in group" in out.getvalue()
    values = sorted(
        r.value
        for part in data_dir.glob(f"{demo.broker.TOPIC}-*")
        for seg in part.glob("*.log")
        for r in decode_records(seg.read_bytes())
    )
    assert values == sorted(b"order %d" % i for i in range(demo.broker.N))
    offsets = [
        r for d in data_dir.glob("__consumer_offsets-*") for s in d.glob("*.log")
        for r in decode_records(s.read_bytes())
    ]  # fmt: skip
    assert offsets, "the group's commits are in __consumer_offsets"
    assert "baseOffset: 0" in out.getvalue()  # the dump-log excerpt
