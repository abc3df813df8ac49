"""One magic 2 record batch: header, CRC, codec, records, control records.

Layout: Kafka's ``DefaultRecordBatch.java`` (see :mod:`kproto.records._header`);
control records (transaction markers and KRaft control types) follow
``ControlRecordType.java`` and ``EndTransactionMarker.java``.
"""

from __future__ import annotations

import struct
from typing import Any, NamedTuple

import crc32c as _crc32c_module

from kproto._varint import VarintError
from kproto.exceptions import DecodeError

from . import _native
from ._codecs import SizeLimitError, decompress
from ._header import (
    ATTR_COMPRESSION_MASK,
    ATTR_CONTROL,
    ATTR_LOG_APPEND_TIME,
    ATTRIBUTES_AT,
    CRC_AT,
    RECORDS_AT,
    RECORDS_COUNT_AT,
    V2_HEADER,
    BatchHead,
    V2Header,
    batch_path,
    v2_head,
)
from ._types import ControlRecord, ControlRecordType, Record, _RecordSlots
from ._v2_checked import v2_records_checked
from ._v2_loop import Bad, Columns

__all__ = [
    "OpenedV2",
    "add_to_arrow",
    "decode_v2",
    "decode_v2_arrow",
    "make_records",
    "open_v2",
]

_crc32c = _crc32c_module.crc32c
_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")
_SPECIAL = ATTR_LOG_APPEND_TIME | ATTR_CONTROL
_new = object.__new__


class OpenedV2(NamedTuple):
    """A magic 2 batch whose header :func:`open_v2` checked: its ``position`` in
    the input, its ``header``, and its records region ``buf[start:end]`` (``buf``
    the decompressed records, ``where`` then " (in decompressed data)", or the
    input itself)."""

    position: int
    header: V2Header
    buf: bytes
    start: int
    end: int
    where: str


def decode_v2(batch: OpenedV2, want_records: bool) -> tuple[BatchHead, Any]:
    """Decode the records of a batch :func:`open_v2` opened.

    Returns its :class:`BatchHead` and its records: a tuple of
    :class:`~kproto.records.Record` if ``want_records``, else columns.

    Raises:
        DecodeError: malformed records (named by
            :func:`~kproto.records._v2_checked.v2_records_checked`).
    """
    pos, h, buf, rpos, rend, where = batch
    attributes = h.attributes
    count = h.records_count
    special = attributes & _SPECIAL
    base_offset = h.base_offset
    # The C loops (kproto.speedups) when built and enabled, else _v2_loop's; both
    # reject the same batches, which the careful Python reader then explains.
    if want_records and not special:
        # C: checked now, Records built as they are iterated (see _native.v2_lazy)
        loop = _native.v2_lazy() or _native.v2_loops()[1]
    else:
        loop = _native.v2_loops()[0]
    try:
        payload: Any = loop(buf, rpos, rend, count, base_offset, h.base_timestamp)
    except (Bad, IndexError, VarintError, UnicodeDecodeError):
        raise v2_records_checked(
            buf, rpos, rend, count, batch_path(pos, base_offset), 0, where
        ) from None
    if special:
        cols: Columns = payload
        if attributes & ATTR_LOG_APPEND_TIME:
            cols = (
                cols[0],
                [h.max_timestamp] * len(cols[0]),
                cols[2],
                cols[3],
                cols[4],
            )
        controls = None
        if attributes & ATTR_CONTROL:
            controls = _control_records(cols[2], cols[3], batch_path(pos, base_offset))
        payload = make_records(cols, controls) if want_records else cols
    return v2_head(pos, h), payload


def decode_v2_arrow(batch: OpenedV2, builder: Any) -> tuple[BatchHead, int]:
    """As :func:`decode_v2`, appending the records to the Arrow ``builder``
    (:mod:`kproto.records._arrow`) instead; returns the head and the record count.

    Raises:
        DecodeError: as :func:`decode_v2`; also for offsets or timestamps outside
            int64 and a column past Arrow's int32 offsets (the builder's
            OverflowError).
    """
    pos, h, buf, rpos, rend, where = batch
    attributes = h.attributes
    count = h.records_count
    base_offset = h.base_offset
    path = batch_path(pos, base_offset)
    lat = h.max_timestamp if attributes & ATTR_LOG_APPEND_TIME else None
    try:
        if attributes & ATTR_CONTROL:  # rare: checked through the column lists
            cols = _native.v2_loops()[0](
                buf, rpos, rend, count, base_offset, h.base_timestamp
            )
            if lat is not None:
                cols = (cols[0], [lat] * len(cols[0]), cols[2], cols[3], cols[4])
            _control_records(cols[2], cols[3], path)
            add_to_arrow(builder, cols, path, rpos, where)
        else:
            builder.add_v2(buf, rpos, rend, count, base_offset, h.base_timestamp, lat)
    except (Bad, IndexError, VarintError, UnicodeDecodeError):
        raise v2_records_checked(buf, rpos, rend, count, path, 0, where) from None
    except OverflowError as exc:
        raise DecodeError(
            f"{exc}{where}", path=path + ".records", offset=rpos
        ) from None
    return v2_head(pos, h), count


def add_to_arrow(
    builder: Any, cols: Columns, path: str, offset: int, where: str = ""
) -> None:
    """``builder.add_lists(*cols)``, its OverflowError as a :class:`DecodeError`
    naming ``path`` (a batch) and ``offset``."""
    try:
        builder.add_lists(*cols)
    except OverflowError as exc:
        raise DecodeError(
            f"{exc}{where}", path=path + ".records", offset=offset
        ) from None


def open_v2(
    data: bytes,
    mv: memoryview,
    pos: int,
    end: int,
    check_crc: bool,
    max_bytes: int,
    max_records: int,
) -> OpenedV2:
    """The magic 2 batch ``data[pos:end]`` (``mv`` a view of ``data``) with its
    header checked and its records decompressed, for :func:`decode_v2` or
    :func:`decode_v2_arrow`.

    Raises:
        DecodeError: CRC mismatch, unknown codec, more than ``max_records`` records
            declared, records decompressing to more than ``max_bytes``.
    """
    h = V2Header._make(V2_HEADER.unpack_from(data, pos))
    if check_crc:
        actual = _crc32c(mv[pos + ATTRIBUTES_AT : end])
        if actual != h.crc:
            raise DecodeError(
                f"CRC-32C mismatch: stored 0x{h.crc:08x}, computed 0x{actual:08x}",
                path=batch_path(pos, h.base_offset) + ".crc",
                offset=pos + CRC_AT,
            )
    attributes = h.attributes
    codec = attributes & ATTR_COMPRESSION_MASK
    if codec > 4:
        raise DecodeError(
            f"unknown compression codec {codec}",
            path=batch_path(pos, h.base_offset) + ".attributes",
            offset=pos + ATTRIBUTES_AT,
        )
    count = h.records_count
    if count > max_records:
        # Checked before decompressing: a few KiB of zstd can hold millions of
        # empty records, each costing ~150 bytes of Python objects.
        raise DecodeError(
            f"batch declares {count} records, more than max_records ({max_records})",
            path=batch_path(pos, h.base_offset) + ".records_count",
            offset=pos + RECORDS_COUNT_AT,
        )
    start = pos + RECORDS_AT
    buf: bytes
    if codec:
        try:
            buf = decompress(codec, data[start:end], max_bytes)
        except DecodeError as exc:
            reason = exc.reason
            if isinstance(exc, SizeLimitError):
                reason = (
                    f"{exc.codec} payload decompresses to more than "
                    f"max_decompressed_size ({max_bytes} bytes)"
                )
            raise DecodeError(
                reason, path=batch_path(pos, h.base_offset) + ".records", offset=start
            ) from None
        return OpenedV2(pos, h, buf, 0, len(buf), " (in decompressed data)")
    return OpenedV2(pos, h, data, start, end, "")


def _control_records(
    keys: list[bytes | None], values: list[bytes | None], path: str
) -> list[ControlRecord | None]:
    """Decode control record keys (version int16, type int16) and marker values."""
    out: list[ControlRecord | None] = []
    for i, (key, value) in enumerate(zip(keys, values, strict=True)):
        if key is None or len(key) < 4:
            raise DecodeError(
                "control record key must hold version and type (4 bytes)",
                path=f"{path}.records[{i}].key",
            )
        version = _INT16.unpack_from(key, 0)[0]
        ctype: int = _INT16.unpack_from(key, 2)[0]
        try:
            ctype = ControlRecordType(ctype)
        except ValueError:
            pass
        epoch = -1
        if ctype in (ControlRecordType.ABORT, ControlRecordType.COMMIT):
            if value is None or len(value) < 6:
                raise DecodeError(
                    "transaction marker value must hold version and coordinator epoch "
                    "(6 bytes)",
                    path=f"{path}.records[{i}].value",
                )
            epoch = _INT32.unpack_from(value, 2)[0]
        out.append(ControlRecord(type=ctype, version=version, coordinator_epoch=epoch))
    return out


def make_records(
    cols: Columns, controls: list[ControlRecord | None] | None
) -> tuple[Record, ...]:
    """Build frozen Records from columns (through their slot-storage base)."""
    out: list[Record] = []
    add = out.append
    new = _new
    slots = _RecordSlots
    cls = Record
    ctl = controls if controls is not None else [None] * len(cols[0])
    for o, t, k, v, h, c in zip(
        cols[0], cols[1], cols[2], cols[3], cols[4], ctl, strict=True
    ):
        r: Any = new(slots)
        r.offset = o
        r.timestamp = t
        r.key = k
        r.value = v
        r.headers = tuple(h) if h else ()
        r.control = c
        r.__class__ = cls
        add(r)
    return tuple(out)
