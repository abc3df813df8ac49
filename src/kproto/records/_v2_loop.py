"""The magic 2 record loop: decode the records region of a batch, fast.

Layout: Kafka's ``DefaultRecord.java`` (KIP-98)::

    length varint, attributes int8, timestamp_delta varlong, offset_delta varint,
    key (varint length, -1 = null), value (likewise),
    header count varint, then per header: name (varint length, UTF-8), value

The loop is written out twice, as plain Python: :func:`v2_columns_fast` appends to
column lists (for ``decode_columns``), :func:`v2_records_fast` fills
:class:`~kproto.records.Record` slots (for ``decode_batches``). A single loop with a
sink argument costs ~30% more, and generating the two at import hid them from the
linters and coverage. The lines where they differ end in ``# sink``; every other line
is the same in both, which ``tests/records/test_records_loop.py`` checks.

Few checks of its own: slices of ``bytes`` never over-read, so damage surfaces as
:class:`Bad` (a length, count or sign that cannot be right), ``IndexError`` (the input
ends), :class:`~kproto._varint.VarintError` or ``UnicodeDecodeError`` (a header name).
The caller then re-reads the batch with the careful decoder
(:mod:`kproto.records._v2_checked`) to name the exact record, field and byte offset.
Each zigzag varint is read inline when it has 1 byte (and, for lengths and offset
deltas, 2 bytes); zigzag-odd lengths are negative, and 1 (-1) means null.

This module is the reference implementation: ``src/kproto/_speedups.c`` restates both
loops in C (used when built; see :mod:`kproto.speedups`), accepting exactly the batches
accepted here and returning equal values, and ``tests/records/test_records_native.py``
holds the two to that.

Records are built as instances of their slot-storage base (``_RecordSlots``, same
layout), filled with plain slot stores, then given their frozen class by assigning
``__class__``: calling the frozen class's slot descriptors costs ~4x more, attrs'
frozen ``__init__`` more still.
"""

from __future__ import annotations

from typing import Any

from kproto._varint import read_uvarint, read_uvarlong

from ._types import Record, _RecordSlots

__all__ = ["Bad", "Columns", "Header", "v2_columns_fast", "v2_records_fast"]

Header = tuple[str, bytes | None]
#: Record-level columns of one batch: offsets, timestamps, keys, values, headers.
Columns = tuple[
    list[int], list[int], list[bytes | None], list[bytes | None], list[list[Header]]
]

_new = object.__new__


class Bad(Exception):
    """The fast loop rejects the batch; re-read it with the careful decoder."""


def v2_columns_fast(
    data: bytes, pos: int, end: int, count: int, base_offset: int, base_ts: int
) -> Columns:
    """Decode ``count`` records of ``data[pos:end]`` into column lists.

    Returns ``(offsets, timestamps, keys, values, headers)``: absolute offsets
    (``base_offset`` + delta), timestamps in ms (``base_ts`` + delta), and per record a
    list of ``(name, value)`` headers.

    Raises:
        Bad, IndexError, VarintError, UnicodeDecodeError: malformed records (see the
            module doc).
    """
    offsets: list[int] = []  # sink
    timestamps: list[int] = []  # sink
    keys: list[bytes | None] = []  # sink
    values: list[bytes | None] = []  # sink
    headers: list[list[Header]] = []  # sink
    add_offset = offsets.append  # sink
    add_timestamp = timestamps.append  # sink
    add_key = keys.append  # sink
    add_value = values.append  # sink
    add_headers = headers.append  # sink
    uvarint = read_uvarint
    uvarlong = read_uvarlong
    if count < 0:
        raise Bad
    for _ in range(count):
        # length: positive, inside the batch
        v = data[pos]
        if v < 0x80:
            pos += 1
        else:
            w = data[pos + 1]
            if w < 0x80:
                v = (v & 0x7F) | (w << 7)
                pos += 2
            else:
                v, pos = uvarint(data, pos)
        rec_end = pos + ((v >> 1) ^ -(v & 1))
        if not pos < rec_end <= end:
            raise Bad
        # attributes (int8, unused), then timestamp delta
        v = data[pos + 1]
        if v < 0x80:
            pos += 2
        else:
            w = data[pos + 2]
            if w < 0x80:
                v = (v & 0x7F) | (w << 7)
                pos += 3
            else:
                v, pos = uvarlong(data, pos + 1)
        add_timestamp(base_ts + ((v >> 1) ^ -(v & 1)))  # sink
        # offset delta
        v = data[pos]
        if v < 0x80:
            pos += 1
        else:
            w = data[pos + 1]
            if w < 0x80:
                v = (v & 0x7F) | (w << 7)
                pos += 2
            else:
                v, pos = uvarint(data, pos)
        add_offset(base_offset + ((v >> 1) ^ -(v & 1)))  # sink
        # key
        v = data[pos]
        if not v & 0x81:
            v = pos + 1 + (v >> 1)
            add_key(data[pos + 1 : v])  # sink
            pos = v
        elif v == 1:
            pos += 1
            add_key(None)  # sink
        else:
            if v & 1:
                raise Bad
            v, pos = uvarint(data, pos)
            v = pos + (v >> 1)
            add_key(data[pos:v])  # sink
            pos = v
        # value
        v = data[pos]
        if v & 1:  # negative: only -1 (null) is allowed
            if v != 1:
                raise Bad
            pos += 1
            add_value(None)  # sink
        else:
            if v < 0x80:
                pos += 1
            else:
                w = data[pos + 1]
                if w < 0x80:
                    v = (v & 0x7F) | (w << 7)
                    pos += 2
                else:
                    v, pos = uvarint(data, pos)
            v = pos + (v >> 1)
            add_value(data[pos:v])  # sink
            pos = v
        # headers: count, then (name, value) pairs
        v = data[pos]
        if v == 0:
            pos += 1
            add_headers([])  # sink
        else:
            if v < 0x80:
                pos += 1
            else:
                v, pos = uvarint(data, pos)
            if v & 1 or v > rec_end - pos:  # negative, or more than fit
                raise Bad
            hl: list[Header] = []  # sink
            for _ in range(v >> 1):
                # name (not null), ending at v; then value, ending at pos
                v = data[pos]
                if not v & 0x81:
                    v = pos + 1 + (v >> 1)
                    name = data[pos + 1 : v].decode()
                else:  # several bytes, or negative
                    if v & 1:
                        raise Bad
                    v, pos = uvarint(data, pos)
                    v = pos + (v >> 1)
                    name = data[pos:v].decode()
                w = data[v]
                if not w & 0x81:
                    pos = v + 1 + (w >> 1)
                    hl.append((name, data[v + 1 : pos]))  # sink
                elif w == 1:
                    pos = v + 1
                    hl.append((name, None))  # sink
                else:
                    if w & 1:
                        raise Bad
                    w, pos = uvarint(data, v)
                    v = pos + (w >> 1)
                    hl.append((name, data[pos:v]))  # sink
                    pos = v
            add_headers(hl)  # sink
        if pos != rec_end:
            raise Bad
    if pos != end:
        raise Bad
    return offsets, timestamps, keys, values, headers  # sink


def v2_records_fast(
    data: bytes, pos: int, end: int, count: int, base_offset: int, base_ts: int
) -> tuple[Record, ...]:
    """As :func:`v2_columns_fast`, building Records (CREATE_TIME, not control).

    Raises:
        Bad, IndexError, VarintError, UnicodeDecodeError: as :func:`v2_columns_fast`.
    """
    out: list[Record] = []  # sink
    add = out.append  # sink
    new = _new  # sink
    slots = _RecordSlots  # sink
    cls = Record  # sink
    uvarint = read_uvarint
    uvarlong = read_uvarlong
    if count < 0:
        raise Bad
    for _ in range(count):
        rec: Any = new(slots)  # sink
        rec.control = None  # sink
        # length: positive, inside the batch
        v = data[pos]
        if v < 0x80:
            pos += 1
        else:
            w = data[pos + 1]
            if w < 0x80:
                v = (v & 0x7F) | (w << 7)
                pos += 2
            else:
                v, pos = uvarint(data, pos)
        rec_end = pos + ((v >> 1) ^ -(v & 1))
        if not pos < rec_end <= end:
            raise Bad
        # attributes (int8, unused), then timestamp delta
        v = data[pos + 1]
        if v < 0x80:
            pos += 2
        else:
            w = data[pos + 2]
            if w < 0x80:
                v = (v & 0x7F) | (w << 7)
                pos += 3
            else:
                v, pos = uvarlong(data, pos + 1)
        rec.timestamp = base_ts + ((v >> 1) ^ -(v & 1))  # sink
        # offset delta
        v = data[pos]
        if v < 0x80:
            pos += 1
        else:
            w = data[pos + 1]
            if w < 0x80:
                v = (v & 0x7F) | (w << 7)
                pos += 2
            else:
                v, pos = uvarint(data, pos)
        rec.offset = base_offset + ((v >> 1) ^ -(v & 1))  # sink
        # key
        v = data[pos]
        if not v & 0x81:
            v = pos + 1 + (v >> 1)
            rec.key = data[pos + 1 : v]  # sink
            pos = v
        elif v == 1:
            pos += 1
            rec.key = None  # sink
        else:
            if v & 1:
                raise Bad
            v, pos = uvarint(data, pos)
            v = pos + (v >> 1)
            rec.key = data[pos:v]  # sink
            pos = v
        # value
        v = data[pos]
        if v & 1:  # negative: only -1 (null) is allowed
            if v != 1:
                raise Bad
            pos += 1
            rec.value = None  # sink
        else:
            if v < 0x80:
                pos += 1
            else:
                w = data[pos + 1]
                if w < 0x80:
                    v = (v & 0x7F) | (w << 7)
                    pos += 2
                else:
                    v, pos = uvarint(data, pos)
            v = pos + (v >> 1)
            rec.value = data[pos:v]  # sink
            pos = v
        # headers: count, then (name, value) pairs
        v = data[pos]
        if v == 0:
            pos += 1
            rec.headers = ()  # sink
        else:
            if v < 0x80:
                pos += 1
            else:
                v, pos = uvarint(data, pos)
            if v & 1 or v > rec_end - pos:  # negative, or more than fit
                raise Bad
            hl: tuple[Header, ...] = ()  # sink
            for _ in range(v >> 1):
                # name (not null), ending at v; then value, ending at pos
                v = data[pos]
                if not v & 0x81:
                    v = pos + 1 + (v >> 1)
                    name = data[pos + 1 : v].decode()
                else:  # several bytes, or negative
                    if v & 1:
                        raise Bad
                    v, pos = uvarint(data, pos)
                    v = pos + (v >> 1)
                    name = data[pos:v].decode()
                w = data[v]
                if not w & 0x81:
                    pos = v + 1 + (w >> 1)
                    hl += ((name, data[v + 1 : pos]),)  # sink
                elif w == 1:
                    pos = v + 1
                    hl += ((name, None),)  # sink
                else:
                    if w & 1:
                        raise Bad
                    w, pos = uvarint(data, v)
                    v = pos + (w >> 1)
                    hl += ((name, data[pos:v]),)  # sink
                    pos = v
            rec.headers = hl  # sink
        if pos != rec_end:
            raise Bad
        rec.__class__ = cls  # sink
        add(rec)  # sink
    if pos != end:
        raise Bad
    return tuple(out)  # sink
