"""The decoder's fast construction paths: slot-storage bases, varint widths, scratch buffers."""

from __future__ import annotations

import copy
import pickle
import threading
import weakref
from typing import Any

import attrs
import pytest

from kproto.records import (
    Compression,
    Record,
    RecordBatch,
    TimestampType,
    decode_batches,
    decode_columns,
    encode_batch,
)
from kproto.records._types import _RecordBatchSlots, _RecordSlots


@pytest.mark.parametrize(
    ("cls", "base"), [(Record, _RecordSlots), (RecordBatch, _RecordBatchSlots)]
)
def test_slot_base_matches_fields(cls: type, base: type) -> None:
    # The decoder fills the base's slots and then assigns __class__: the two
    # classes must share one layout, and the base must name every field.
    names = [f.name for f in attrs.fields(cls)]
    slots = base.__dict__["__slots__"]
    assert [s for s in slots if s != "__weakref__"] == names
    assert "__weakref__" in slots
    assert cls.__dict__["__slots__"] == ()
    assert cls.__mro__[1] is base


def _records(n: int) -> list[tuple[Any, ...]]:
    """Records whose varints take 1, 2, 3 and more bytes, negative deltas too."""
    t0 = 1_700_000_000_000
    deltas = [0, 1, -1, 63, -64, 64, 200, -300, 8191, -8192, 8192, 1 << 20]
    deltas += [-(1 << 21), 1 << 34, -(1 << 40)]
    out = []
    for i in range(n):
        key = None if i % 11 == 3 else b"k" * (i % 70)
        value = None if i % 13 == 5 else bytes([i % 256]) * (i * 37 % 9000)
        headers = [
            ("h" * (i % 80), b"x" * (i % 90)),
            ("\u00e9t\u00e9", None),
        ][: i % 3]
        out.append((key, value, headers, t0 + deltas[i % len(deltas)]))
    return out


@pytest.mark.parametrize("codec", list(Compression))
def test_varint_widths(codec: Compression) -> None:
    src = _records(300)  # offset deltas up to 299: 2-byte varints
    data = encode_batch(src, compression=codec, base_offset=1000)
    (batch,) = list(decode_batches(data))
    assert type(batch) is RecordBatch
    assert batch.compression == codec
    assert len(batch.records) == len(src)
    for i, (rec, (key, value, headers, ts)) in enumerate(
        zip(batch.records, src, strict=True)
    ):
        assert type(rec) is Record
        assert rec == Record(1000 + i, ts, key, value, tuple(headers))
        assert rec.control is None
    cols = decode_columns(data)
    assert cols["offset"] == [1000 + i for i in range(len(src))]
    assert cols["timestamp"] == [s[3] for s in src]
    assert cols["key"] == [s[0] for s in src]
    assert cols["value"] == [s[1] for s in src]
    assert cols["headers"] == [list(s[2]) for s in src]


def test_decoded_objects_behave_as_constructed() -> None:
    data = encode_batch(
        [(b"k", b"v", [("a", b"1")], 5), (None, None, [], 6)], base_offset=7
    )
    (batch,) = list(decode_batches(data))
    rec = batch.records[0]
    built = Record(7, 5, b"k", b"v", (("a", b"1"),))
    assert rec == built and hash(rec) == hash(built) and repr(rec) == repr(built)
    assert pickle.loads(pickle.dumps(rec)) == rec
    assert copy.copy(rec) == rec and copy.deepcopy(batch) == batch
    assert attrs.evolve(rec, offset=9) == Record(9, 5, b"k", b"v", (("a", b"1"),))
    assert weakref.ref(rec)() is rec and weakref.ref(batch)() is batch
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        rec.offset = 1  # type: ignore[misc]
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        batch.magic = 1  # type: ignore[misc]
    again = attrs.evolve(batch)
    assert again == batch and hash(again) == hash(batch)
    assert repr(again) == repr(batch)
    assert pickle.loads(pickle.dumps(batch)) == batch
    assert batch.timestamp_type is TimestampType.CREATE_TIME
    assert batch.records[1] == Record(8, 6, None, None)


def test_log_append_time_records_built_the_same() -> None:
    data = encode_batch(
        [(b"k", b"v", [], 5)], timestamp_type=TimestampType.LOG_APPEND_TIME
    )
    (batch,) = list(decode_batches(data))
    assert type(batch.records[0]) is Record
    assert batch.records[0] == Record(0, batch.max_timestamp, b"k", b"v")


@pytest.mark.parametrize("codec", [Compression.LZ4, Compression.ZSTD])
def test_scratch_buffer_reuse(codec: Compression) -> None:
    # Decompression goes through a per-thread scratch buffer: a smaller batch
    # after a larger one must not see the larger one's bytes.
    big = encode_batch(_records(200), compression=codec)
    small = encode_batch(_records(3), compression=codec)
    expect_big = [r.value for b in decode_batches(big) for r in b.records]
    expect_small = [r.value for b in decode_batches(small) for r in b.records]
    for _ in range(3):
        assert decode_columns(big)["value"] == expect_big
        assert decode_columns(small)["value"] == expect_small
    errors: list[BaseException] = []

    def work(data: bytes, expect: list[bytes | None]) -> None:
        try:
            for _ in range(30):
                assert decode_columns(data)["value"] == expect
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [
        threading.Thread(target=work, args=(d, e))
        for d, e in [(big, expect_big), (small, expect_small)] * 2
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
