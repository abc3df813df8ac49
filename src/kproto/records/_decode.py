"""Decoding of record batches (magic 2) and legacy message sets (magic 0/1).

Layouts follow Kafka's ``DefaultRecordBatch.java`` / ``DefaultRecord.java``
(magic 2, KIP-98) and ``LegacyRecord.java`` (magic 0/1, KIP-32, KIP-31).

The magic 2 record loop is a fast path with few checks of its own: slices of
``bytes`` never over-read, so most damage surfaces as a record whose fields
do not end where its length says, an ``IndexError`` at the end of the input
or a bad UTF-8 header name. Whenever the fast path rejects a batch, the
careful decoder :func:`_v2_records_checked` re-reads it to raise a
:class:`DecodeError` naming the exact record, field and byte offset.
"""

from __future__ import annotations

import linecache
import struct
import zlib
from collections.abc import Callable, Iterator
from typing import Any

import crc32c as _crc32c_module

from kproto.serial.exceptions import DecodeError

from ._codecs import decompress
from ._types import (
    COLUMN_NAMES,
    Compression,
    ControlRecord,
    ControlRecordType,
    Record,
    RecordBatch,
    TimestampType,
    _RecordBatchSlots,
    _RecordSlots,
)

__all__ = [
    "DEFAULT_MAX_DECOMPRESSED_SIZE",
    "BatchIterator",
    "ColumnarResult",
    "decode_batches",
    "decode_columns",
    "decode_records",
]

DEFAULT_MAX_DECOMPRESSED_SIZE = 256 * 1024 * 1024
"""Default bound (bytes) on the decompressed size of one batch: 256 MiB."""

_crc32c = _crc32c_module.crc32c
_crc32 = zlib.crc32

# base_offset, batch_length, partition_leader_epoch, magic, crc, attributes,
# last_offset_delta, base_timestamp, max_timestamp, producer_id,
# producer_epoch, base_sequence, records count
_V2_HEADER = struct.Struct(">qiibIhiqqqhii")
_V2_HEADER_SIZE = _V2_HEADER.size  # 61
_LOG_OVERHEAD = 12  # offset int64 + length int32
_V2_MIN_LENGTH = _V2_HEADER_SIZE - _LOG_OVERHEAD  # 49
_LEGACY_MIN_LENGTH = 14  # crc + magic + attributes + key and value lengths
_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")
_INT64 = struct.Struct(">q")
_MAX_LEGACY_DEPTH = 4

_COMPRESSIONS = tuple(Compression)
_TS_TYPES = (TimestampType.CREATE_TIME, TimestampType.LOG_APPEND_TIME)

Header = tuple[str, bytes | None]
# Record-level columns of one batch: offsets, timestamps, keys, values, headers
_Cols = tuple[
    list[int], list[int], list[bytes | None], list[bytes | None], list[list[Header]]
]


class _Bad(Exception):
    """Internal: the fast path rejects the batch; re-read it carefully."""


# ------------------------------------------------------------------ varints


def _uvarint(data: bytes, pos: int) -> tuple[int, int]:
    """Unsigned LEB128 of at most 5 bytes whose first byte has its high bit set."""
    result = data[pos] & 0x7F
    shift = 7
    pos += 1
    while True:
        b = data[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            if result > 0xFFFFFFFF:
                raise _Bad
            return result, pos
        shift += 7
        if shift > 28:
            raise _Bad


def _uvarlong(data: bytes, pos: int) -> tuple[int, int]:
    """Unsigned LEB128 of at most 10 bytes whose first byte has its high bit set."""
    result = data[pos] & 0x7F
    shift = 7
    pos += 1
    while True:
        b = data[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            if result > 0xFFFFFFFFFFFFFFFF:
                raise _Bad
            return result, pos
        shift += 7
        if shift > 63:
            raise _Bad


# ---------------------------------------------------------- magic 2: fast
#
# One loop, generated twice at import (as kproto.serial.compile does for
# entities): once appending to column lists for decode_columns, once filling
# Record slots for decode_batches. The template's @-lines are the only places the
# two differ; everything else is the same straight-line code, so the varint and
# bounds logic exists once. (A single loop with a sink argument costs ~30% more.)
# Each zigzag varint is read inline when it has 1 byte (and, for lengths and
# offset deltas, 2 bytes); zigzag-odd lengths are negative: 1 means null.


_new = object.__new__
# Records and batches are built as instances of their slot-storage base
# (_RecordSlots, _RecordBatchSlots: same layout), filled with plain slot stores,
# then given their frozen class by assigning __class__. Calling the frozen
# class's slot descriptors costs ~4x more, attrs' frozen __init__ more still.

_V2_LOOP = """\
    uvarint = _uvarint
    uvarlong = _uvarlong
    if count < 0:
        raise _Bad
    for _ in range(count):
        @REC_START
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
            raise _Bad
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
        @SET timestamp = base_ts + ((v >> 1) ^ -(v & 1))
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
        @SET offset = base_offset + ((v >> 1) ^ -(v & 1))
        # key
        v = data[pos]
        if not v & 0x81:
            v = pos + 1 + (v >> 1)
            @SET key = data[pos + 1 : v]
            pos = v
        elif v == 1:
            pos += 1
            @SET key = None
        else:
            if v & 1:
                raise _Bad
            v, pos = uvarint(data, pos)
            v = pos + (v >> 1)
            @SET key = data[pos:v]
            pos = v
        # value
        v = data[pos]
        if v & 1:  # negative: only -1 (null) is allowed
            if v != 1:
                raise _Bad
            pos += 1
            @SET value = None
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
            @SET value = data[pos:v]
            pos = v
        # headers: count, then (name, value) pairs
        v = data[pos]
        if v == 0:
            pos += 1
            @NO_HEADERS
        else:
            if v < 0x80:
                pos += 1
            else:
                v, pos = uvarint(data, pos)
            if v & 1 or v > rec_end - pos:  # negative, or more than fit
                raise _Bad
            @HL_INIT
            for _ in range(v >> 1):
                # name (not null), ending at v; then value, ending at pos
                v = data[pos]
                if not v & 0x81:
                    v = pos + 1 + (v >> 1)
                    name = data[pos + 1 : v].decode()
                else:  # several bytes, or negative
                    if v & 1:
                        raise _Bad
                    v, pos = uvarint(data, pos)
                    v = pos + (v >> 1)
                    name = data[pos:v].decode()
                w = data[v]
                if not w & 0x81:
                    pos = v + 1 + (w >> 1)
                    @HL_ADD (name, data[v + 1 : pos])
                elif w == 1:
                    pos = v + 1
                    @HL_ADD (name, None)
                else:
                    if w & 1:
                        raise _Bad
                    w, pos = uvarint(data, v)
                    v = pos + (w >> 1)
                    @HL_ADD (name, data[pos:v])
                    pos = v
            @SET headers = hl
        if pos != rec_end:
            raise _Bad
        @REC_END
    if pos != end:
        raise _Bad
    @RETURN
"""

_COLUMNS_PROLOGUE = """\
def _v2_columns_fast(data, pos, end, count, base_offset, base_ts):
    offsets = []
    timestamps = []
    keys = []
    values = []
    headers = []
    add_offset = offsets.append
    add_timestamp = timestamps.append
    add_key = keys.append
    add_value = values.append
    add_headers = headers.append
"""
_RECORDS_PROLOGUE = """\
def _v2_records_fast(data, pos, end, count, base_offset, base_ts):
    out = []
    add = out.append
    new = _new
    slots = _RecordSlots
    cls = Record
"""
#: How each @-line of _V2_LOOP reads in the columns and the records variant.
_SINKS: dict[str, tuple[str, str]] = {
    "@SET": ("add_{name}({expr})", "rec.{name} = {expr}"),
    "@NO_HEADERS": ("add_headers([])", "rec.headers = ()"),
    "@HL_INIT": ("hl = []", "hl = ()"),
    "@HL_ADD": ("hl.append({expr})", "hl += ({expr},)"),
    "@REC_START": ("", "rec = new(slots)\nrec.control = None"),
    "@REC_END": ("", "rec.__class__ = cls\nadd(rec)"),
    "@RETURN": (
        "return offsets, timestamps, keys, values, headers",
        "return tuple(out)",
    ),
}


def _render_v2_loop(variant: int) -> str:
    """The source of one variant (0: columns, 1: records) of the magic 2 loop."""
    out = [(_COLUMNS_PROLOGUE, _RECORDS_PROLOGUE)[variant].rstrip("\n")]
    for line in _V2_LOOP.splitlines():
        stripped = line.lstrip()
        if not stripped.startswith("@"):
            out.append(line)
            continue
        indent = line[: len(line) - len(stripped)]
        marker, _, rest = stripped.partition(" ")
        name, _, expr = rest.partition(" = ")
        if marker == "@HL_ADD":
            expr = rest
        text = _SINKS[marker][variant].format(name=name, expr=expr)
        out.extend(indent + part for part in text.split("\n") if part)
    return "\n".join(out) + "\n"


def _compile_v2_loop(variant: int) -> Any:
    source = _render_v2_loop(variant)
    name = ("_v2_columns_fast", "_v2_records_fast")[variant]
    filename = f"<kproto.records {name}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    namespace = {
        "_uvarint": _uvarint,
        "_uvarlong": _uvarlong,
        "_Bad": _Bad,
        "_new": _new,
        "_RecordSlots": _RecordSlots,
        "Record": Record,
    }
    exec(compile(source, filename, "exec"), namespace)
    return namespace[name]


#: Decode ``count`` records in ``data[pos:end]`` into column lists (offsets,
#: timestamps, keys, values, headers). Raises _Bad/IndexError/UnicodeError.
_v2_columns_fast: Callable[[bytes, int, int, int, int, int], _Cols] = _compile_v2_loop(
    0
)
#: The same, building Records (CREATE_TIME, not control).
_v2_records_fast: Callable[[bytes, int, int, int, int, int], tuple[Record, ...]] = (
    _compile_v2_loop(1)
)


# ------------------------------------------------------- magic 2: careful


class _Checked:
    """A bounds-checked reader used to explain why a batch was rejected."""

    __slots__ = ("data", "pos", "shift", "where")

    def __init__(self, data: bytes, pos: int, shift: int, where: str) -> None:
        self.data = data
        self.pos = pos
        self.shift = shift  # added to positions to report input byte offsets
        self.where = where  # appended to reasons ("" or " (in decompressed data)")

    def fail(self, reason: str, path: str, at: int) -> DecodeError:
        return DecodeError(reason + self.where, path=path, offset=at + self.shift)

    def varint(self, limit: int, path: str, max_bytes: int) -> int:
        data = self.data
        start = pos = self.pos
        result = 0
        shift = 0
        while True:
            if pos >= limit:
                raise self.fail("truncated varint", path, start)
            b = data[pos]
            pos += 1
            result |= (b & 0x7F) << shift
            if b < 0x80:
                break
            shift += 7
            if pos - start >= max_bytes:
                raise self.fail(f"varint longer than {max_bytes} bytes", path, start)
        if result >= 1 << (7 * max_bytes - (3 if max_bytes == 5 else 6)):
            raise self.fail("varint out of range", path, start)
        self.pos = pos
        return (result >> 1) ^ -(result & 1)

    def blob(self, limit: int, path: str) -> bytes | None:
        start = self.pos
        n = self.varint(limit, path + ".length", 5)
        if n == -1:
            return None
        if n < 0:
            raise self.fail(f"negative length {n}", path, start)
        if self.pos + n > limit:
            raise self.fail(
                f"length {n} runs past the end of the record ({limit - self.pos} bytes left)",
                path,
                start,
            )
        value = self.data[self.pos : self.pos + n]
        self.pos += n
        return value


def _v2_records_checked(
    data: bytes, pos: int, end: int, count: int, path: str, shift: int, where: str
) -> DecodeError:
    """Re-read the records of a rejected batch and return the error to raise."""
    r = _Checked(data, pos, shift, where)
    if count < 0:
        return r.fail(f"negative record count {count}", path + ".records_count", pos)
    i = 0
    try:
        for i in range(count):
            rpath = f"{path}.records[{i}]"
            if r.pos >= end:
                return r.fail(
                    f"batch declares {count} records but holds only {i}", rpath, r.pos
                )
            start = r.pos
            length = r.varint(end, rpath + ".length", 5)
            if length <= 0 or r.pos + length > end:
                return r.fail(
                    f"record length {length} does not fit in the batch "
                    f"({end - r.pos} bytes left)",
                    rpath + ".length",
                    start,
                )
            rec_end = r.pos + length
            r.pos += 1  # attributes
            r.varint(rec_end, rpath + ".timestamp_delta", 10)
            r.varint(rec_end, rpath + ".offset_delta", 5)
            r.blob(rec_end, rpath + ".key")
            r.blob(rec_end, rpath + ".value")
            hstart = r.pos
            hcount = r.varint(rec_end, rpath + ".headers.count", 5)
            if hcount < 0:
                return r.fail(
                    f"negative header count {hcount}", rpath + ".headers", hstart
                )
            if hcount * 2 > rec_end - r.pos:
                return r.fail(
                    f"header count {hcount} does not fit in the record",
                    rpath + ".headers",
                    hstart,
                )
            for j in range(hcount):
                hpath = f"{rpath}.headers[{j}]"
                kstart = r.pos
                name = r.blob(rec_end, hpath + ".key")
                if name is None:
                    return r.fail("null header key", hpath + ".key", kstart)
                try:
                    name.decode()
                except UnicodeDecodeError as exc:
                    return r.fail(
                        f"header key is not UTF-8 ({exc.reason})",
                        hpath + ".key",
                        kstart,
                    )
                r.blob(rec_end, hpath + ".value")
            if r.pos != rec_end:
                return r.fail(
                    f"record length says {length} bytes but its fields take "
                    f"{length + r.pos - rec_end}",
                    rpath + ".length",
                    start,
                )
    except DecodeError as exc:
        return exc
    if r.pos != end:
        return r.fail(
            f"{end - r.pos} bytes after the {count} declared records",
            path,
            r.pos,
        )
    return r.fail(
        "malformed records", path, pos
    )  # pragma: no cover - fast/careful disagree


# ----------------------------------------------------------- magic 2 batch


def _batch_path(pos: int, base_offset: int) -> str:
    return f"batch@{pos}(base_offset={base_offset})"


def _decode_v2(
    data: bytes,
    mv: memoryview,
    pos: int,
    end: int,
    check_crc: bool,
    limit: int,
    want_records: bool,
) -> tuple[tuple[Any, ...], Any]:
    """Decode the magic 2 batch ``data[pos:end]``.

    Returns its header fields (in :class:`RecordBatch` order) and its records:
    a tuple of :class:`Record` if ``want_records``, else columns (``_Cols``).
    """
    (
        base_offset,
        batch_length,
        leader_epoch,
        magic,
        crc,
        attributes,
        last_offset_delta,
        base_ts,
        max_ts,
        producer_id,
        producer_epoch,
        base_sequence,
        count,
    ) = _V2_HEADER.unpack_from(data, pos)
    if check_crc:
        actual = _crc32c(mv[pos + 21 : end])
        if actual != crc:
            raise DecodeError(
                f"CRC-32C mismatch: stored 0x{crc:08x}, computed 0x{actual:08x}",
                path=_batch_path(pos, base_offset) + ".crc",
                offset=pos + 17,
            )
    codec = attributes & 7
    if codec > 4:
        raise DecodeError(
            f"unknown compression codec {codec}",
            path=_batch_path(pos, base_offset) + ".attributes",
            offset=pos + 21,
        )
    start = pos + _V2_HEADER_SIZE
    if codec:
        path = _batch_path(pos, base_offset)
        try:
            buf = decompress(codec, data[start:end], limit)
        except DecodeError as exc:
            raise DecodeError(
                exc.reason, path=path + ".records", offset=start
            ) from None
        rpos, rend, shift, where = 0, len(buf), 0, " (in decompressed data)"
    else:
        buf = data
        rpos, rend, shift, where = start, end, 0, ""
    special = attributes & 0x28  # LOG_APPEND_TIME or control
    try:
        if want_records and not special:
            payload: Any = _v2_records_fast(
                buf, rpos, rend, count, base_offset, base_ts
            )
        else:
            payload = _v2_columns_fast(buf, rpos, rend, count, base_offset, base_ts)
    except (_Bad, IndexError, UnicodeDecodeError):
        raise _v2_records_checked(
            buf, rpos, rend, count, _batch_path(pos, base_offset), shift, where
        ) from None
    if special:
        cols: _Cols = payload
        if attributes & 0x08:
            cols = (cols[0], [max_ts] * len(cols[0]), cols[2], cols[3], cols[4])
        controls = None
        if attributes & 0x20:
            controls = _control_records(cols[2], cols[3], _batch_path(pos, base_offset))
        payload = _make_records(cols, controls) if want_records else cols
    head = (
        pos,
        base_offset,
        batch_length,
        leader_epoch,
        magic,
        crc,
        attributes,
        _COMPRESSIONS[codec],
        _TS_TYPES[(attributes >> 3) & 1],
        bool(attributes & 0x10),
        bool(attributes & 0x20),
        bool(attributes & 0x40),
        last_offset_delta,
        base_ts,
        max_ts,
        producer_id,
        producer_epoch,
        base_sequence,
    )
    return head, payload


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


# --------------------------------------------------------- magic 0 and 1


def _legacy_message(
    data: bytes, pos: int, end: int, path: str, check_crc: bool, shift: int, where: str
) -> tuple[int, int, int, int, int, bytes | None, bytes | None]:
    """One legacy message in ``data[pos:end]`` (``end`` = pos + 12 + message_size).

    Returns ``(offset, crc, magic, attributes, timestamp, key, value)``.
    """
    offset, size, crc, magic, attributes = struct.unpack_from(">qiIbb", data, pos)

    def fail(reason: str, at: int) -> DecodeError:
        return DecodeError(reason + where, path=path, offset=at + shift)

    if magic not in (0, 1):
        raise fail(f"unknown magic {magic}", pos + 16)
    if check_crc:
        actual = _crc32(data[pos + 16 : end])
        if actual != crc:
            raise DecodeError(
                f"CRC-32 mismatch: stored 0x{crc:08x}, computed 0x{actual:08x}" + where,
                path=path + ".crc",
                offset=pos + 12 + shift,
            )
    p = pos + 18
    timestamp = -1
    if magic == 1:
        if p + 8 > end:
            raise fail("message too short for its timestamp", p)
        timestamp = _INT64.unpack_from(data, p)[0]
        p += 8
    blobs: list[bytes | None] = []
    for name in ("key", "value"):
        if p + 4 > end:
            raise DecodeError(
                f"truncated {name} length" + where,
                path=f"{path}.{name}",
                offset=p + shift,
            )
        n = _INT32.unpack_from(data, p)[0]
        if n < -1:
            raise DecodeError(
                f"negative length {n}" + where, path=f"{path}.{name}", offset=p + shift
            )
        p += 4
        if n == -1:
            blobs.append(None)
            continue
        if p + n > end:
            raise DecodeError(
                f"length {n} runs past the end of the message ({end - p} bytes left)"
                + where,
                path=f"{path}.{name}",
                offset=p - 4 + shift,
            )
        blobs.append(data[p : p + n])
        p += n
    if p != end:
        raise fail(f"{end - p} bytes after the value of the message", p)
    return offset, crc, magic, attributes, timestamp, blobs[0], blobs[1]


_LegacyRecord = tuple[
    int, int, bytes | None, bytes | None
]  # offset, timestamp, key, value


def _legacy_expand(
    msg: tuple[int, int, int, int, int, bytes | None, bytes | None],
    path: str,
    check_crc: bool,
    budget: list[int],
    depth: int,
) -> list[_LegacyRecord]:
    """The records of a message: itself, or the flattened inner messages of a wrapper."""
    offset, _crc, magic, attributes, timestamp, key, value = msg
    codec = attributes & 7
    if not codec:
        return [(offset, timestamp, key, value)]
    if codec > 4:
        raise DecodeError(
            f"unknown compression codec {codec}", path=path + ".attributes"
        )
    if depth >= _MAX_LEGACY_DEPTH:
        raise DecodeError(
            f"compressed messages nested more than {depth} deep", path=path
        )
    if value is None:
        raise DecodeError(
            "compressed wrapper message with a null value", path=path + ".value"
        )
    try:
        inner = decompress(codec, value, budget[0], magic=magic)
    except DecodeError as exc:
        raise DecodeError(exc.reason, path=path + ".value") from None
    budget[0] -= len(inner)
    where = " (in decompressed data)"
    messages = []
    pos = 0
    n = len(inner)
    i = 0
    while pos < n:
        ipath = f"{path}.records[{i}]"
        if n - pos < _LOG_OVERHEAD:
            raise DecodeError("truncated inner message" + where, path=ipath, offset=pos)
        size = _INT32.unpack_from(inner, pos + 8)[0]
        if size < _LEGACY_MIN_LENGTH or pos + _LOG_OVERHEAD + size > n:
            raise DecodeError(
                f"bad inner message size {size}" + where,
                path=ipath + ".message_size",
                offset=pos + 8,
            )
        end = pos + _LOG_OVERHEAD + size
        messages.append(
            (ipath, _legacy_message(inner, pos, end, ipath, check_crc, 0, where))
        )
        pos = end
        i += 1
    out: list[_LegacyRecord] = []
    if not messages:
        return out
    # KIP-31: with magic 1 wrappers the inner offsets are relative, and the
    # wrapper carries the absolute offset of the last inner message.
    # A wrapper offset of 0 is produce data (some clients write it so); its
    # inner offsets are kept as they are, as Kafka's DeepRecordsIterator does.
    delta = 0
    if magic >= 1 and offset != 0:
        delta = offset - messages[-1][1][0]
        if delta < 0:
            raise DecodeError(
                f"wrapper offset {offset} is below its last relative inner offset "
                f"{messages[-1][1][0]}",
                path=path,
            )
    log_append = magic == 1 and attributes & 0x08
    for ipath, m in messages:
        im = (
            m[0] + delta,
            m[1],
            m[2],
            m[3],
            timestamp if log_append else m[4],
            m[5],
            m[6],
        )
        out.extend(_legacy_expand(im, ipath, check_crc, budget, depth + 1))
    return out


def _decode_legacy(
    data: bytes, pos: int, end: int, check_crc: bool, limit: int
) -> tuple[tuple[Any, ...], _Cols]:
    base = _INT64.unpack_from(data, pos)[0]
    path = _batch_path(pos, base)
    msg = _legacy_message(data, pos, end, path, check_crc, 0, "")
    _offset, crc, magic, attributes, timestamp, _key, _value = msg
    recs = _legacy_expand(msg, path, check_crc, [limit], 0)
    offsets = [r[0] for r in recs]
    timestamps = [r[1] for r in recs]
    first = offsets[0] if recs else msg[0]
    head = (
        pos,
        first,
        end - pos - _LOG_OVERHEAD,
        -1,
        magic,
        crc,
        attributes,
        _COMPRESSIONS[attributes & 7],
        TimestampType.NO_TIMESTAMP if magic == 0 else _TS_TYPES[(attributes >> 3) & 1],
        False,
        False,
        False,
        (offsets[-1] - first) if recs else 0,
        timestamps[0] if recs else timestamp,
        timestamp,
        -1,
        -1,
        -1,
    )
    cols: _Cols = (
        offsets,
        timestamps,
        [r[2] for r in recs],
        [r[3] for r in recs],
        [[] for _ in recs],
    )
    return head, cols


# ------------------------------------------------------------------ framing


class _Scan:
    """Walks the batches of an input, keeping the tail and corruption report."""

    def __init__(
        self,
        data: bytes | bytearray | memoryview,
        check_crc: bool,
        max_decompressed_size: int,
        skip_corrupt: bool,
    ) -> None:
        self.data = data if type(data) is bytes else bytes(data)
        self.check_crc = check_crc
        self.limit = max_decompressed_size
        self.skip_corrupt = skip_corrupt
        self.partial_tail_bytes = 0
        self.partial_tail_position: int | None = None
        self.corrupt: list[tuple[int, int, str]] = []

    def batches(self, want_records: bool) -> Iterator[tuple[tuple[Any, ...], Any]]:
        """Yield ``(header, records or columns)`` for every complete batch."""
        data = self.data
        mv = memoryview(data)
        n = len(data)
        pos = 0
        check_crc = self.check_crc
        limit = self.limit
        while pos < n:
            if n - pos < _LOG_OVERHEAD:
                self.partial_tail_bytes = n - pos
                self.partial_tail_position = pos
                return
            base_offset, length = struct.unpack_from(">qi", data, pos)
            if length < _LEGACY_MIN_LENGTH:
                err = DecodeError(
                    f"batch length {length} is below the minimum {_LEGACY_MIN_LENGTH}",
                    path=_batch_path(pos, base_offset) + ".batch_length",
                    offset=pos + 8,
                )
                if not self.skip_corrupt:
                    raise err
                # Without a usable length the next batch cannot be found.
                self.corrupt.append((pos, base_offset, str(err)))
                return
            end = pos + _LOG_OVERHEAD + length
            if end > n:
                self.partial_tail_bytes = n - pos
                self.partial_tail_position = pos
                return
            magic = data[pos + 16]
            try:
                if magic == 2:
                    if length < _V2_MIN_LENGTH:
                        raise DecodeError(
                            f"batch length {length} is below the minimum {_V2_MIN_LENGTH}",
                            path=_batch_path(pos, base_offset) + ".batch_length",
                            offset=pos + 8,
                        )
                    yield _decode_v2(data, mv, pos, end, check_crc, limit, want_records)
                elif magic < 2:
                    head, cols = _decode_legacy(data, pos, end, check_crc, limit)
                    yield head, (_make_records(cols, None) if want_records else cols)
                else:
                    raise DecodeError(
                        f"unknown magic {magic}",
                        path=_batch_path(pos, base_offset) + ".magic",
                        offset=pos + 16,
                    )
            except DecodeError as exc:
                if not self.skip_corrupt:
                    raise
                self.corrupt.append((pos, base_offset, str(exc)))
            pos = end


# ------------------------------------------------------------------ public


def _make_records(
    cols: _Cols, controls: list[ControlRecord | None] | None
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


def _make_batch(head: tuple[Any, ...], records: tuple[Record, ...]) -> RecordBatch:
    """A RecordBatch from its header fields (in field order) and records."""
    b: Any = _new(_RecordBatchSlots)
    (
        b.position,
        b.base_offset,
        b.batch_length,
        b.partition_leader_epoch,
        b.magic,
        b.crc,
        b.attributes,
        b.compression,
        b.timestamp_type,
        b.is_transactional,
        b.is_control,
        b.has_delete_horizon,
        b.last_offset_delta,
        b.base_timestamp,
        b.max_timestamp,
        b.producer_id,
        b.producer_epoch,
        b.base_sequence,
    ) = head
    b.records = records
    b.__class__ = RecordBatch
    batch: RecordBatch = b
    return batch


class BatchIterator(Iterator[RecordBatch]):
    """Iterator over the batches of an input; see :func:`decode_batches`.

    Attributes:
        partial_tail_bytes: after iteration, the size in bytes of an incomplete
            batch at the end of the input (0 if there is none).
        partial_tail_position: its byte offset in the input, or ``None``.
        corrupt: with ``skip_corrupt=True``, ``(position, base_offset,
            message)`` for each corrupt batch that was skipped.
    """

    def __init__(
        self,
        data: bytes | bytearray | memoryview,
        *,
        check_crc: bool = True,
        max_decompressed_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE,
        skip_corrupt: bool = False,
    ) -> None:
        self._scan = _Scan(data, check_crc, max_decompressed_size, skip_corrupt)
        self._it = self._scan.batches(True)

    @property
    def partial_tail_bytes(self) -> int:
        return self._scan.partial_tail_bytes

    @property
    def partial_tail_position(self) -> int | None:
        return self._scan.partial_tail_position

    @property
    def corrupt(self) -> list[tuple[int, int, str]]:
        return self._scan.corrupt

    def __iter__(self) -> BatchIterator:
        return self

    def __next__(self) -> RecordBatch:
        head, records = next(self._it)
        return _make_batch(head, records)


def decode_batches(
    data: bytes | bytearray | memoryview,
    *,
    check_crc: bool = True,
    max_decompressed_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE,
    skip_corrupt: bool = False,
) -> BatchIterator:
    """Decode the record batches / legacy message sets in ``data``.

    ``data`` is the ``records`` field of a Fetch or Produce (a concatenation
    of magic 2 batches and/or magic 0/1 messages, the format chosen per batch
    by its magic byte). Batches are decoded lazily as the iterator advances.

    A magic 0/1 top-level message becomes one :class:`RecordBatch`; a
    compressed wrapper yields one batch holding its inner messages, flattened,
    with absolute offsets (KIP-31) and ``partition_leader_epoch``,
    ``producer_id``, ``producer_epoch`` and ``base_sequence`` of -1.

    An incomplete batch at the end (which Fetch responses routinely end with)
    stops iteration without an error; its size and position are then in
    :attr:`BatchIterator.partial_tail_bytes` /
    :attr:`BatchIterator.partial_tail_position`.

    Args:
        data: the bytes to decode (a bytearray or memoryview is copied once).
        check_crc: verify each batch's CRC-32C (magic 2) or CRC-32 (legacy).
        max_decompressed_size: bound in bytes on the decompressed records of a
            batch (for a legacy wrapper: of all its nested payloads together).
        skip_corrupt: record corrupt complete batches in
            :attr:`BatchIterator.corrupt` and continue after them instead of
            raising.

    Raises:
        DecodeError: (during iteration) for a corrupt complete batch: CRC
            mismatch, bad lengths, over-long varints, record count mismatch,
            undecodable or oversized compressed data. ``path`` names the batch
            (``batch@<position>(base_offset=N)``) and record field; ``offset``
            is the byte offset in the input (or, for compressed batches, in the
            decompressed records, as the reason says).
    """
    return BatchIterator(
        data,
        check_crc=check_crc,
        max_decompressed_size=max_decompressed_size,
        skip_corrupt=skip_corrupt,
    )


def decode_records(
    data: bytes | bytearray | memoryview,
    *,
    check_crc: bool = True,
    max_decompressed_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE,
    skip_corrupt: bool = False,
) -> Iterator[Record]:
    """The records of all batches in ``data``, in order (see :func:`decode_batches`).

    Raises:
        DecodeError: as :func:`decode_batches`.
    """
    for batch in decode_batches(
        data,
        check_crc=check_crc,
        max_decompressed_size=max_decompressed_size,
        skip_corrupt=skip_corrupt,
    ):
        yield from batch.records


class ColumnarResult(dict[str, list[Any]]):
    """The result of :func:`decode_columns`: a dict of columns plus a report.

    It maps each name of :data:`COLUMN_NAMES` to a list with one entry per
    record (it *is* the column dict; :attr:`columns` returns it as well).

    Attributes:
        batches: number of batches decoded (corrupt skipped ones excluded).
        records: number of records (the length of every column).
        corrupt: ``(position, base_offset, message)`` for each skipped corrupt
            batch (only with ``skip_corrupt=True``).
        partial_tail_bytes: size of an incomplete trailing batch, or 0.
        partial_tail_position: its byte offset, or ``None``.
    """

    __slots__ = (
        "batches",
        "records",
        "corrupt",
        "partial_tail_bytes",
        "partial_tail_position",
    )

    def __init__(self) -> None:
        super().__init__((name, []) for name in COLUMN_NAMES)
        self.batches = 0
        self.records = 0
        self.corrupt: list[tuple[int, int, str]] = []
        self.partial_tail_bytes = 0
        self.partial_tail_position: int | None = None

    @property
    def columns(self) -> dict[str, list[Any]]:
        """The columns (this object itself)."""
        return self


def decode_columns(
    data: bytes | bytearray | memoryview,
    *,
    check_crc: bool = True,
    max_decompressed_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE,
    skip_corrupt: bool = False,
) -> ColumnarResult:
    """Decode ``data`` straight into columns (no per-record objects).

    Returns a :class:`ColumnarResult`, a ``dict[str, list]`` keyed by
    :data:`COLUMN_NAMES` in order: ``offset`` (absolute), ``timestamp`` (ms
    since the epoch, -1 for magic 0), ``timestamp_type`` (int: -1, 0, 1),
    ``key``/``value`` (bytes or None), ``headers`` (a list of ``(str, bytes |
    None)`` tuples per record), then the batch-level ``base_offset``,
    ``partition_leader_epoch``, ``magic``, ``compression`` (label string such
    as ``"zstd"``), ``is_transactional``, ``is_control``, ``producer_id``,
    ``producer_epoch``, ``base_sequence`` repeated per record. Control records
    are included (``is_control`` True). ``topic``/``partition`` are for the
    caller to add.

    Args:
        data, check_crc, max_decompressed_size: as :func:`decode_batches`.
        skip_corrupt: when True a corrupt complete batch is reported in
            ``result.corrupt`` as ``(position, base_offset, message)`` and
            decoding continues after it (a bad batch *length* ends decoding
            there, as the next batch cannot be found); when False it raises.

    Raises:
        DecodeError: as :func:`decode_batches`, unless ``skip_corrupt``.
    """
    result = ColumnarResult()
    scan = _Scan(data, check_crc, max_decompressed_size, skip_corrupt)
    c_offset = result["offset"]
    c_timestamp = result["timestamp"]
    c_ts_type = result["timestamp_type"]
    c_key = result["key"]
    c_value = result["value"]
    c_headers = result["headers"]
    c_base = result["base_offset"]
    c_epoch = result["partition_leader_epoch"]
    c_magic = result["magic"]
    c_codec = result["compression"]
    c_txn = result["is_transactional"]
    c_ctl = result["is_control"]
    c_pid = result["producer_id"]
    c_pepoch = result["producer_epoch"]
    c_seq = result["base_sequence"]
    for head, cols in scan.batches(False):
        n = len(cols[0])
        result.batches += 1
        c_offset += cols[0]
        c_timestamp += cols[1]
        c_key += cols[2]
        c_value += cols[3]
        c_headers += cols[4]
        c_ts_type += [int(head[8])] * n
        c_base += [head[1]] * n
        c_epoch += [head[3]] * n
        c_magic += [head[4]] * n
        c_codec += [head[7].label] * n
        c_txn += [head[9]] * n
        c_ctl += [head[10]] * n
        c_pid += [head[15]] * n
        c_pepoch += [head[16]] * n
        c_seq += [head[17]] * n
    result.records = len(c_offset)
    result.corrupt = scan.corrupt
    result.partial_tail_bytes = scan.partial_tail_bytes
    result.partial_tail_position = scan.partial_tail_position
    return result
