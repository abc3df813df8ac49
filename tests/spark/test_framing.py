"""Header-only framing and partition planning (no Spark session needed)."""

from __future__ import annotations

from pathlib import Path

import pytest
from spark_data import legacy_batch, make_records, v2_batch, write_segment

from kproto.spark._framing import (
    FramingError,
    find_segment_files,
    frame_buffer,
    parse_topic_partition,
    scan_file,
    split_file,
)
from kproto.spark._segments import plan_partitions


def _batches(n: int) -> list[bytes]:
    recs = make_records(20 * n)
    return [v2_batch(20 * i, recs[20 * i : 20 * i + 20]) for i in range(n)]


def test_parse_topic_partition() -> None:
    assert parse_topic_partition("/d/orders-eu-12/00000000000000000042.log") == (
        "orders-eu",
        12,
    )
    assert parse_topic_partition("/d/orders/00000000000000000042.log") == (None, None)
    assert parse_topic_partition("/d/orders-1/dump.log") == (None, None)


def test_find_segment_files(tmp_path: Path) -> None:
    a = write_segment(tmp_path, "t", 0, _batches(1))
    b = write_segment(tmp_path / "deep" / "er", "u", 7, _batches(1))
    (tmp_path / "t-0" / "00000000000000000000.index").write_bytes(b"x")
    other = tmp_path / "raw.bin"
    other.write_bytes(b"")
    found = find_segment_files([tmp_path, other, a])
    assert [f.path for f in found] == sorted([str(a), str(b)]) + [str(other)]
    assert [(f.topic, f.partition) for f in found][:2] == [("u", 7), ("t", 0)]
    with pytest.raises(FileNotFoundError):
        find_segment_files([tmp_path / "missing"])


def test_scan_and_split_at_batch_boundaries(tmp_path: Path) -> None:
    batches = _batches(30)
    p = write_segment(tmp_path, "t", 0, batches)
    positions = [item for item in scan_file(str(p))]
    assert [pos for pos, _ in positions] == [
        sum(map(len, batches[:i])) for i in range(30)
    ]
    (seg,) = find_segment_files([p])
    ranges = split_file(seg, 3 * len(batches[0]))
    assert len(ranges) > 5
    assert ranges[0].start == 0 and ranges[-1].end == seg.size
    boundaries = {pos for pos, _ in positions}
    for a, b in zip(ranges, ranges[1:], strict=False):
        assert a.end == b.start and b.start in boundaries


def test_scan_stops_at_bad_header(tmp_path: Path) -> None:
    batches = _batches(3)
    p = write_segment(
        tmp_path, "t", 0, batches + [b"\x00" * 8 + b"\xff\xff\xff\xff" + b"\x00" * 20]
    )
    items = list(scan_file(str(p)))
    assert len(items) == 4 and isinstance(items[-1], FramingError)
    assert items[-1].position == sum(map(len, batches))
    assert "invalid batch length" in items[-1].reason


def test_frame_buffer() -> None:
    batches = _batches(3)
    data = b"".join(batches)
    assert frame_buffer(data, True) == (len(data), None, None)
    # cut in the middle of the last batch: complete prefix, need the rest
    cut = data[: len(data) - 5]
    assert frame_buffer(cut, False) == (
        len(data) - len(batches[-1]),
        None,
        len(batches[-1]),
    )
    complete, err, need = frame_buffer(cut, True)
    assert complete == len(data) - len(batches[-1]) and need is None
    assert err is not None and "truncated batch" in err.reason
    complete, err, _ = frame_buffer(data + b"\x01\x02", True)
    assert complete == len(data) and err is not None and err.length == 2


def test_plan_packs_small_files_and_splits_large(tmp_path: Path) -> None:
    small = [write_segment(tmp_path, "s", i, _batches(1)) for i in range(6)]
    big = write_segment(tmp_path, "big", 0, _batches(40))
    size = small[0].stat().st_size
    parts = plan_partitions([str(tmp_path)], 3 * size)
    ranges = [r for p in parts for r in p.ranges]
    # every byte of every file is covered exactly once
    per_file: dict[str, list[tuple[int, int]]] = {}
    for path, start, end, _, _ in ranges:
        per_file.setdefault(path, []).append((start, end))
    for path, spans in per_file.items():
        spans.sort()
        assert spans[0][0] == 0 and spans[-1][1] == Path(path).stat().st_size
        assert all(a[1] == b[0] for a, b in zip(spans, spans[1:], strict=False))
    assert len(per_file[str(big)]) > 5
    assert any(len({r[0] for r in p.ranges}) > 1 for p in parts)  # small files packed
    assert plan_partitions([str(tmp_path / "s-0")], 1 << 20)[0].ranges[0][3:] == (
        "s",
        0,
    )


def test_legacy_framing(tmp_path: Path) -> None:
    recs = make_records(10)
    data = legacy_batch(0, 0, recs) + legacy_batch(1, 10, recs, "gzip")
    assert frame_buffer(data, True) == (len(data), None, None)


def test_read_range_bounded_batches(tmp_path: Path) -> None:
    """Chunks and Arrow batches stay small however large the file; nothing is lost."""
    from kproto.records import decode_columns
    from kproto.spark._columns import SEGMENT_ARROW_SCHEMA
    from kproto.spark._framing import ByteRange
    from kproto.spark._segments import read_range

    recs = make_records(4000, seed=9)
    p = write_segment(
        tmp_path,
        "t",
        0,
        [v2_batch(100 * i, recs[100 * i : 100 * i + 100], "lz4") for i in range(40)],
    )
    size = p.stat().st_size
    batches = list(
        read_range(
            ByteRange(str(p), 0, size, "t", 0), chunk_bytes=size // 10, max_records=64
        )
    )
    assert all(b.schema.equals(SEGMENT_ARROW_SCHEMA) for b in batches)
    assert max(b.num_rows for b in batches) <= 64 and len(batches) >= 4000 // 64
    offsets = [o for b in batches for o in b.column("offset").to_pylist()]
    assert offsets == decode_columns(p.read_bytes())["offset"] == list(range(4000))
