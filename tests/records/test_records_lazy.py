"""``RecordBatch.records`` on both paths: a tuple (Python) or the C path's lazy sequence.

The C path returns a ``RecordSequence`` for plain batches: checked whole before it is
returned, its records built one at a time as it is iterated. These tests hold on both
paths (the conftest runs the module once per path) and pin what users rely on: it
behaves as the tuple of records (indexing, slicing, len, ==, hash, in, +, repr,
pickle, copy), records are frozen attrs ``Record``s (evolve, fields, pickle), and a
damaged batch raises its DecodeError before any record is handed out.
"""

from __future__ import annotations

import copy
import pickle
from collections.abc import Sequence
from typing import Any

import attrs
import pytest

from kproto import speedups
from kproto.exceptions import DecodeError
from kproto.records import (
    Compression,
    Record,
    RecordBatch,
    decode_batches,
    decode_records,
    encode_batch,
    encode_control_batch,
)
from kproto.records._header import RECORDS_AT, BatchHead

SRC = [
    (b"k%d" % i, b"v" * i, [("trace", b"%d" % i), ("ct", b"json")], 1_000 + i)
    for i in range(20)
]


def _python_records(data: bytes) -> tuple[Record, ...]:
    with speedups.using(False):
        (batch,) = decode_batches(data)
    assert type(batch.records) is tuple
    return batch.records


@pytest.fixture(params=list(Compression), ids=lambda c: c.label)
def data(request: pytest.FixtureRequest) -> bytes:
    return encode_batch(SRC, compression=request.param, base_offset=50)


def _batch(data: bytes) -> RecordBatch:
    (batch,) = decode_batches(data)
    return batch


def test_type_per_path(records_path: str, data: bytes) -> None:
    records = _batch(data).records
    if records_path == "native":
        assert type(records).__name__ == "RecordSequence"
    else:
        assert type(records) is tuple
    assert isinstance(records, Sequence)


def test_iterating_builds_the_same_records_every_time(data: bytes) -> None:
    want = _python_records(data)
    records = _batch(data).records
    first = list(records)
    assert first == list(want) and list(records) == first  # again, from the start
    assert all(type(r) is Record and type(r.headers) is tuple for r in first)
    it = iter(records)
    assert next(it) == want[0]
    assert records[1] == want[1]  # indexing mid-iteration
    assert list(it) == list(want[1:])


def test_behaves_as_the_tuple(data: bytes) -> None:
    want = _python_records(data)
    records = _batch(data).records
    assert len(records) == 20 and bool(records)
    assert records[0] == want[0] and records[-1] == want[-1]
    assert records[2:5] == want[2:5] and type(records[2:5]) is tuple
    with pytest.raises(IndexError):
        records[20]  # noqa: B018
    assert records == want and want == records and not records != want
    assert records != want[:-1] and records != list(want)  # a list is not a tuple
    assert records < want + (want[0],)
    assert hash(records) == hash(want)
    assert want[3] in records and Record(0, 0, None, None) not in records
    assert records.index(want[4]) == 4 and records.count(want[4]) == 1
    assert records + () == want and () + records == want  # noqa: RUF005
    assert repr(records) == repr(want)
    assert tuple(records) == want and list(reversed(records)) == list(reversed(want))
    assert records[0] is records[0]  # once built, the tuple's own records


def test_pickle_copy_and_evolve(data: bytes) -> None:
    want = _python_records(data)
    batch = _batch(data)
    for clone in (
        pickle.loads(pickle.dumps(batch)),
        copy.copy(batch),
        copy.deepcopy(batch),
    ):
        assert clone == batch and hash(clone) == hash(batch)
    restored = pickle.loads(pickle.dumps(batch.records))
    assert type(restored) is tuple and restored == want
    moved = attrs.evolve(batch, base_offset=7)
    assert moved.records == want and moved != batch
    assert batch == _batch(data)  # batches from either path compare equal


def test_records_are_frozen_attrs(data: bytes) -> None:
    rec = next(iter(_batch(data).records))
    assert type(rec) is Record
    assert [f.name for f in attrs.fields(Record)] == [
        "offset",
        "timestamp",
        "key",
        "value",
        "headers",
        "control",
    ]
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        rec.key = b"x"  # type: ignore[misc]
    assert attrs.evolve(rec, key=b"x") == Record(
        rec.offset, rec.timestamp, b"x", rec.value, rec.headers
    )
    assert pickle.loads(pickle.dumps(rec)) == rec and hash(rec) == hash(
        Record(rec.offset, rec.timestamp, rec.key, rec.value, rec.headers)
    )
    assert rec == _python_records(data)[0]


def test_control_batches_are_tuples() -> None:
    # Control (and log-append-time) batches go through the columns loop on both paths.
    data = encode_control_batch(
        1, coordinator_epoch=3, producer_id=5, producer_epoch=1, timestamp=9
    )
    (batch,) = decode_batches(data)
    assert type(batch.records) is tuple and batch.records[0].control is not None


def _damage_last_record(data: bytes) -> bytes:
    """The batch with its last record's header count made negative (CRC not fixed)."""
    bad = bytearray(data)
    bad[-9] = 0x01  # the header count's varint: -1
    return bytes(bad)


def _outcome(fn: Any) -> Any:
    try:
        return ("ok", fn())
    except DecodeError as exc:
        return ("error", str(exc), exc.path, exc.offset)


def test_damaged_batch_raises_before_any_record(records_path: str) -> None:
    data = encode_batch([(b"k", b"v", [("h", b"12345")], 5)] * 30)
    bad = _damage_last_record(data)
    seen: list[Record] = []

    def consume() -> None:
        for r in decode_records(bad, check_crc=False):
            seen.append(r)

    got = _outcome(consume)
    assert got[0] == "error" and seen == []  # nothing handed out first
    assert "records[29]" in got[2]
    with speedups.using(False):
        want = _outcome(lambda: list(decode_records(bad, check_crc=False)))
    assert got == want
    # decode_batches: the error comes with the batch, before its records exist
    assert _outcome(lambda: list(decode_batches(bad, check_crc=False))) == want


def test_batch_head_order_is_record_batch_order() -> None:
    # _decode._make_batch unpacks a BatchHead into RecordBatch's slots by position.
    names = [a.name for a in attrs.fields(RecordBatch)]
    assert list(BatchHead._fields) == names[: len(BatchHead._fields)]
    assert names[len(BatchHead._fields) :] == ["records"]


def test_lazy_loop_keeps_no_copy_of_a_region_it_rejects() -> None:
    # A count the region cannot hold is refused before anything is built, as by the
    # records loop (Bad, which the careful reader turns into the DecodeError).
    if not speedups.available():
        pytest.skip(speedups.reason())
    from kproto.records import _native
    from kproto.records._v2_loop import Bad

    data = encode_batch([(b"k", b"v")])
    with speedups.using(True):
        lazy = _native.v2_lazy()
    assert lazy is not None
    with pytest.raises(Bad):
        lazy(data, RECORDS_AT, len(data), 2, 0, 0)
    assert list(lazy(data, RECORDS_AT, len(data), 1, 0, 0)) == [
        Record(0, 0, b"k", b"v")
    ]
    empty = lazy(data, RECORDS_AT, RECORDS_AT, 0, 0, 0)
    assert empty == () and not empty and list(empty) == []
