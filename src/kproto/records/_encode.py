"""Encoding of record batches (magic 2) and legacy message sets (magic 0/1).

Layouts follow Kafka's ``DefaultRecordBatch.java`` / ``DefaultRecord.java``
(magic 2, KIP-98) and ``LegacyRecord.java`` (magic 0/1, KIP-32, KIP-31).
"""

from __future__ import annotations

import struct
import time
import zlib
from collections.abc import Iterable, Sequence
from typing import Any

import crc32c as _crc32c_module

from kproto._varint import write_uvarint
from kproto.exceptions import EncodeError

from . import _native
from ._codecs import compress
from ._header import ATTR_CONTROL, ATTR_LOG_APPEND_TIME, ATTR_TRANSACTIONAL
from ._types import Compression, ControlRecordType, Record, TimestampType

__all__ = ["RecordInput", "encode_batch", "encode_control_batch", "encode_legacy"]

_crc32c = _crc32c_module.crc32c

HeaderInput = tuple[str, bytes | bytearray | memoryview | None]
RecordInput = Record | Sequence[Any]
"""A record to encode: a :class:`Record` or a ``(key, value[, headers[, timestamp_ms]])`` tuple."""

# after the crc: attributes, last_offset_delta, base_timestamp, max_timestamp,
# producer_id, producer_epoch, base_sequence, records count
_V2_TAIL = struct.Struct(">hiqqqhii")
_V2_HEAD = struct.Struct(
    ">qiibI"
)  # base_offset, batch_length, leader epoch, magic, crc
_LEGACY_V0 = struct.Struct(">qiIbb")
_LEGACY_V1 = struct.Struct(">qiIbbq")
_INT32 = struct.Struct(">i")
_MIN_INT64 = -(1 << 63)
_MAX_INT64 = (1 << 63) - 1


# Unsigned varints below 2**14 (zigzag of -8192..8191): at most 2 bytes.
_UV: tuple[bytes, ...] = tuple(write_uvarint(u) for u in range(1 << 14))
_UV_LEN = len(_UV)


def _zz(v: int) -> bytes:
    """Zigzag varint/varlong bytes of ``v``."""
    u = v << 1 if v >= 0 else ((-v) << 1) - 1
    return _UV[u] if u < _UV_LEN else write_uvarint(u)


_BYTES_LIKE = (bytes, bytearray, memoryview)
_PAD: tuple[Any, ...] = ((), None)  # defaults of headers and timestamp


def _as_bytes(value: object, path: str) -> bytes | None:
    if value is None or type(value) is bytes:
        return value
    if isinstance(value, _BYTES_LIKE):
        return bytes(value)
    raise EncodeError(f"expected bytes or None, got {type(value).__name__}", path=path)


def _normalize(
    records: Iterable[RecordInput], now: int, need_headers: bool
) -> list[tuple[bytes | None, bytes | None, Sequence[HeaderInput], int]]:
    """``(key, value, headers, timestamp)`` with defaults applied and types checked."""
    out: list[tuple[bytes | None, bytes | None, Sequence[HeaderInput], int]] = []
    add = out.append
    for i, item in enumerate(records):
        if type(item) is tuple and len(item) == 4:
            key, value, headers, ts = item
        elif isinstance(item, Record):
            key, value, headers, ts = item.key, item.value, item.headers, item.timestamp
        elif isinstance(item, Sequence) and 2 <= len(item) <= 4:
            key, value, headers, ts = (*item, *_PAD[len(item) - 2 :])
        else:
            raise EncodeError(
                "expected a Record or a (key, value[, headers[, timestamp]]) tuple",
                path=f"records[{i}]",
            )
        if not (key is None or type(key) is bytes):
            key = _as_bytes(key, f"records[{i}].key")
        if not (value is None or type(value) is bytes):
            value = _as_bytes(value, f"records[{i}].value")
        if headers is None:
            headers = ()
        elif headers and not need_headers:
            raise EncodeError(
                "magic 0/1 messages have no headers", path=f"records[{i}].headers"
            )
        if ts is None:
            ts = now
        elif type(ts) is not int or not _MIN_INT64 <= ts <= _MAX_INT64:
            raise EncodeError(
                f"timestamp must be an int64 of ms, got {ts!r}",
                path=f"records[{i}].timestamp",
            )
        add((key, value, headers, ts))
    return out


def _encode_headers(headers: Sequence[HeaderInput], path: str) -> list[bytes]:
    parts = [_zz(len(headers))]
    for j, header in enumerate(headers):
        try:
            name, hvalue = header
            raw = name.encode()
        except (TypeError, ValueError, AttributeError):
            raise EncodeError(
                "a header must be a (str, bytes | None) pair",
                path=f"{path}.headers[{j}]",
            ) from None
        parts.append(_zz(len(raw)))
        parts.append(raw)
        if hvalue is None:
            parts.append(b"\x01")
        else:
            if type(hvalue) is not bytes:
                hvalue = _as_bytes(hvalue, f"{path}.headers[{j}].value")
                assert hvalue is not None
            parts.append(_zz(len(hvalue)))
            parts.append(hvalue)
    return parts


def _v2_records(
    items: list[tuple[bytes | None, bytes | None, Sequence[HeaderInput], int]],
    base_ts: int,
) -> bytes:
    """The records region (uncompressed) of a magic 2 batch."""
    native = _native.v2_encoder()  # C, for plain input (see kproto.speedups)
    if native is not None:
        region = native(items, base_ts)
        if isinstance(region, bytes):  # else NotImplemented: not plain input
            return region
    try:
        return _v2_records_fast(items, base_ts)
    except (TypeError, ValueError, AttributeError):
        # find the bad header and name it
        for i, item in enumerate(items):
            _encode_headers(item[2], f"records[{i}]")
        raise


def _v2_records_fast(
    items: list[tuple[bytes | None, bytes | None, Sequence[HeaderInput], int]],
    base_ts: int,
) -> bytes:
    uv = _UV
    uv_len = _UV_LEN
    zz = _zz
    out: list[bytes] = []
    join = b"".join
    i2 = -2
    for key, value, headers, ts in items:
        i2 += 2
        d = ts - base_ts
        u = d << 1 if d >= 0 else ((-d) << 1) - 1
        if key is None:
            klen = b"\x01"
            key = b""
        else:
            u2 = len(key) << 1
            klen = uv[u2] if u2 < uv_len else zz(len(key))
        if value is None:
            vlen = b"\x01"
            value = b""
        else:
            u2 = len(value) << 1
            vlen = uv[u2] if u2 < uv_len else zz(len(value))
        parts: list[Any] = [
            b"\x00",
            uv[u] if u < uv_len else zz(d),
            uv[i2] if i2 < uv_len else write_uvarint(i2),
            klen,
            key,
            vlen,
            value,
        ]
        if headers:
            u2 = len(headers) << 1
            parts.append(uv[u2] if u2 < uv_len else zz(len(headers)))
            for name, hvalue in headers:
                raw = name.encode()
                u2 = len(raw) << 1
                if hvalue is None:
                    parts += (uv[u2] if u2 < uv_len else zz(len(raw)), raw, b"\x01")
                else:
                    u = len(hvalue) << 1
                    parts += (
                        uv[u2] if u2 < uv_len else zz(len(raw)),
                        raw,
                        uv[u] if u < uv_len else zz(len(hvalue)),
                        hvalue,
                    )
        else:
            parts.append(b"\x00")
        body = join(parts)
        u = len(body) << 1
        out += (uv[u] if u < uv_len else zz(len(body)), body)
    return join(out)


def _v2_batch(
    items: list[tuple[bytes | None, bytes | None, Sequence[HeaderInput], int]],
    *,
    attributes: int,
    codec: int,
    base_offset: int,
    partition_leader_epoch: int,
    producer_id: int,
    producer_epoch: int,
    base_sequence: int,
    base_timestamp: int | None,
) -> bytes:
    if not items:
        raise EncodeError("a batch needs at least one record", path="records")
    base_ts = items[0][3] if base_timestamp is None else base_timestamp
    max_ts = max(item[3] for item in items)
    region = _v2_records(items, base_ts)
    if codec:
        region = compress(codec, region)
    try:
        tail = _V2_TAIL.pack(
            attributes,
            len(items) - 1,
            base_ts,
            max_ts,
            producer_id,
            producer_epoch,
            base_sequence,
            len(items),
        )
        crc = _crc32c(region, _crc32c(tail))
        head = _V2_HEAD.pack(
            base_offset, 49 + len(region), partition_leader_epoch, 2, crc
        )
    except struct.error as exc:
        raise EncodeError(f"batch header field out of range: {exc}") from None
    return head + tail + region


def encode_batch(
    records: Iterable[RecordInput],
    *,
    magic: int = 2,
    compression: Compression = Compression.NONE,
    base_offset: int = 0,
    partition_leader_epoch: int = -1,
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
    is_transactional: bool = False,
    timestamp_type: TimestampType = TimestampType.CREATE_TIME,
    base_timestamp: int | None = None,
) -> bytes:
    """Encode ``records`` as one record batch (magic 2) or a legacy message set.

    Each record is a :class:`Record` or a tuple ``(key, value)``,
    ``(key, value, headers)`` or ``(key, value, headers, timestamp_ms)``;
    keys and values are bytes-like or ``None``, headers ``(str, bytes |
    None)`` pairs, a missing or ``None`` timestamp means now (ms since the
    epoch). The i-th record gets offset delta ``i`` (offset ``base_offset +
    i``): a :class:`Record`'s own ``offset`` and ``control`` are ignored.

    Magic 2 (``DefaultRecordBatch.java``): ``base_timestamp`` defaults to the
    first record's timestamp and timestamp deltas are relative to it;
    ``max_timestamp`` is the largest record timestamp; ``last_offset_delta``
    is ``len(records) - 1``; the records are compressed with ``compression``
    (snappy with the xerial framing Java clients write, lz4 as an LZ4 frame
    with independent blocks). The batch is always compressed when asked, even
    if that makes it larger.

    Magic 0/1: see :func:`encode_legacy` (producer/transaction arguments must
    keep their defaults, and headers are not allowed).

    Returns:
        the batch bytes, starting with the base offset.

    Raises:
        EncodeError: for a bad record (``path`` like ``records[3].key``), an
            empty ``records``, a field out of its wire range or an argument
            the magic does not support.
    """
    if magic in (0, 1):
        if (producer_id, producer_epoch, base_sequence, is_transactional) != (
            -1,
            -1,
            -1,
            False,
        ):
            raise EncodeError(
                "magic 0/1 messages carry no producer id, epoch, sequence or transaction"
            )
        return encode_legacy(
            records,
            magic=magic,
            compression=compression,
            base_offset=base_offset,
            timestamp_type=timestamp_type,
        )
    if magic != 2:
        raise EncodeError(f"unsupported magic {magic}", path="magic")
    codec = int(compression)
    if not 0 <= codec <= 4:
        raise EncodeError(f"unknown compression codec {codec}", path="compression")
    plain = _native.v2_plain()  # C: items already as _normalize returns them?
    if plain is not None and plain(records):
        items: Any = records
    else:
        items = _normalize(records, int(time.time() * 1000), True)
    attributes = codec
    if timestamp_type == TimestampType.LOG_APPEND_TIME:
        attributes |= ATTR_LOG_APPEND_TIME
    elif timestamp_type != TimestampType.CREATE_TIME:
        raise EncodeError(
            "magic 2 timestamps are CREATE_TIME or LOG_APPEND_TIME",
            path="timestamp_type",
        )
    if is_transactional:
        attributes |= ATTR_TRANSACTIONAL
    return _v2_batch(
        items,
        attributes=attributes,
        codec=codec,
        base_offset=base_offset,
        partition_leader_epoch=partition_leader_epoch,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=base_sequence,
        base_timestamp=base_timestamp,
    )


def encode_control_batch(
    control_type: int,
    *,
    coordinator_epoch: int,
    producer_id: int,
    producer_epoch: int,
    base_offset: int = 0,
    timestamp: int | None = None,
    partition_leader_epoch: int = -1,
) -> bytes:
    """Encode a transaction marker: a transactional control batch of one record (KIP-98).

    The record's key is ``version`` (int16, 0) and ``control_type`` (int16:
    ``ControlRecordType.ABORT`` = 0, ``COMMIT`` = 1); its value is version
    (int16, 0) and ``coordinator_epoch`` (int32), as in Kafka's
    ``EndTransactionMarker.java``. ``timestamp`` is ms since the epoch
    (default: now); the base sequence is -1.

    Raises:
        EncodeError: for a control type other than ABORT/COMMIT or a field out
            of range.
    """
    if control_type not in (ControlRecordType.ABORT, ControlRecordType.COMMIT):
        raise EncodeError(
            f"control_type must be ABORT (0) or COMMIT (1), got {control_type}",
            path="control_type",
        )
    ts = int(time.time() * 1000) if timestamp is None else timestamp
    try:
        key = struct.pack(">hh", 0, control_type)
        value = struct.pack(">hi", 0, coordinator_epoch)
    except struct.error as exc:
        raise EncodeError(f"control record field out of range: {exc}") from None
    return _v2_batch(
        [(key, value, (), ts)],
        attributes=ATTR_CONTROL | ATTR_TRANSACTIONAL,
        codec=0,
        base_offset=base_offset,
        partition_leader_epoch=partition_leader_epoch,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=-1,
        base_timestamp=None,
    )


def _legacy_message(
    magic: int,
    offset: int,
    attributes: int,
    ts: int,
    key: bytes | None,
    value: bytes | None,
) -> bytes:
    parts = [b"", _INT32.pack(-1) if key is None else _INT32.pack(len(key))]
    if key is not None:
        parts.append(key)
    parts.append(_INT32.pack(-1) if value is None else _INT32.pack(len(value)))
    if value is not None:
        parts.append(value)
    body = b"".join(parts)
    if magic == 0:
        head = bytes((0, attributes))
    else:
        head = bytes((1, attributes)) + struct.pack(">q", ts)
    crc = zlib.crc32(body, zlib.crc32(head))
    return struct.pack(">qiI", offset, 4 + len(head) + len(body), crc) + head + body


def encode_legacy(
    records: Iterable[RecordInput],
    *,
    magic: int = 1,
    compression: Compression = Compression.NONE,
    base_offset: int = 0,
    timestamp_type: TimestampType = TimestampType.CREATE_TIME,
) -> bytes:
    """Encode ``records`` as a magic 0 or 1 message set (``LegacyRecord.java``).

    Records are given as for :func:`encode_batch` (no headers; timestamps are
    dropped for magic 0). Uncompressed, each record becomes a message with
    offset ``base_offset + i`` and attributes 0.

    Compressed, the messages are compressed into the value of one wrapper
    message whose attributes hold the codec, and:

    * magic 1 (KIP-31): inner offsets are relative (0..n-1), the wrapper's
      offset is that of the last record (``base_offset + n - 1``), its
      timestamp the largest record timestamp, and its attributes carry the
      timestamp type bit (LOG_APPEND_TIME); the inner messages are magic 1.
    * magic 0: inner offsets are absolute (``base_offset + i``), the wrapper
      offset is the last of them; lz4 uses the pre-0.10 frame header
      checksum (KAFKA-3160), as Kafka and kafka-python wrote it.

    Returns:
        the message set bytes.

    Raises:
        EncodeError: as :func:`encode_batch`.
    """
    if magic not in (0, 1):
        raise EncodeError(
            f"encode_legacy writes magic 0 or 1, not {magic}", path="magic"
        )
    codec = int(compression)
    if not 0 <= codec <= 3:
        raise EncodeError(
            f"compression {codec} is not available for magic {magic}",
            path="compression",
        )
    items = _normalize(records, int(time.time() * 1000), False)
    if not items:
        raise EncodeError("a message set needs at least one record", path="records")
    ts_bit = (
        0x08 if magic == 1 and timestamp_type == TimestampType.LOG_APPEND_TIME else 0
    )
    try:
        if not codec:
            return b"".join(
                _legacy_message(magic, base_offset + i, 0, ts, key, value)
                for i, (key, value, _h, ts) in enumerate(items)
            )
        inner = b"".join(
            _legacy_message(
                magic, i if magic == 1 else base_offset + i, 0, ts, key, value
            )
            for i, (key, value, _h, ts) in enumerate(items)
        )
        wrapper_ts = max(item[3] for item in items) if magic == 1 else -1
        return _legacy_message(
            magic,
            base_offset + len(items) - 1,
            codec | ts_bit,
            wrapper_ts,
            None,
            compress(codec, inner, magic=magic),
        )
    except struct.error as exc:
        raise EncodeError(f"message field out of range: {exc}") from None
