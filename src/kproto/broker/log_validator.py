"""Validation of the record batches a producer sends, before they reach the log.

Follows Kafka's ``UnifiedLog.analyzeAndValidateRecords`` (base offset 0, size, CRC),
``ProduceRequest.validateRecords`` (Produce v3+: one magic 2 batch) and
``LogValidator`` (``validateBatch``: offset range against the record count, no
control batches from clients, a sequence with every producer id; ``validateRecord``:
keys on compacted topics, timestamps within ``message.timestamp.before/after.max.ms``;
the record iteration of ``DefaultRecordBatch``: the declared count and the records'
sizes must fill the batch exactly).

Cost: the batch header gives the count and ``last_offset_delta``; the record bodies
are walked with varints (no :class:`~kproto.records.Record` objects are built), after
decompressing a compressed batch within :data:`kproto.records.DEFAULT_MAX_DECOMPRESSED_SIZE`.
Where Kafka rewrites a compressed batch whose inner offsets are not 0, 1, 2 ... this
broker, which stores batches as sent, refuses it (INVALID_RECORD).

With Confluent Server's ``confluent.key/value.schema.validation`` on, the same walk
also reads each record's schema id framing (Confluent's wire format: magic byte 0 and
a 4-byte schema id before the payload, or a ``__key_schema_id`` /
``__value_schema_id`` header holding magic byte 1 and a 16-byte GUID) into
:class:`SchemaIds`, which :mod:`kproto.broker.schema_validation` checks against the
registry; topics without it take the C scan as before and pay nothing.

Errors (:class:`RecordValidationError`): CORRUPT_MESSAGE (CRC, a length below the
batch header, an unknown codec, a body that does not decompress), INVALID_RECORD
(everything Kafka answers with ``InvalidRecordException``), MESSAGE_TOO_LARGE,
INVALID_TIMESTAMP; per-record problems also list ``(batch_index, message)`` pairs
for Produce v8+'s ``record_errors``.
"""

from __future__ import annotations

import struct
import time
from typing import NamedTuple

import attrs
import crc32c

from kproto._varint import VarintError
from kproto.broker.errors import LogAppendError
from kproto.broker.topic_config import TopicConfig
from kproto.errors import ErrorCode
from kproto.exceptions import DecodeError
from kproto.records import DEFAULT_MAX_DECOMPRESSED_SIZE, DEFAULT_MAX_RECORDS
from kproto.records._codecs import SizeLimitError
from kproto.records._decompress_view import decompress_view
from kproto.records._header import LOG_OVERHEAD, RECORDS_AT
from kproto.records._native import v2_loops, v2_scan
from kproto.records._v2_loop import Bad, v2_columns_fast
from kproto.serde.wire import (
    KEY_SCHEMA_ID_HEADER,
    MAGIC_BYTE,
    MAGIC_BYTE_GUID,
    VALUE_SCHEMA_ID_HEADER,
)

__all__ = [
    "InlineBoundExceeded",
    "LogPolicy",
    "RecordValidationError",
    "SchemaIds",
    "ValidBatch",
    "validate_batches",
    "validate_inline",
]

_V2_HEADER = struct.Struct(">qiibIhiqqqhii")
_CONTROL = 0x20
_LOG_APPEND_TIME = 0x08
_NO_TIMESTAMP = -1
_LONG_MAX = 2**63 - 1
_NO_KEY = "Compacted topic cannot accept message without key"
#: The schema id headers (the walk compares their encoded names) and the GUID size.
_KEY_HEADER = KEY_SCHEMA_ID_HEADER.encode()
_VALUE_HEADER = VALUE_SCHEMA_ID_HEADER.encode()
_SCHEMA_ID_HEADER_LENGTHS = (len(_KEY_HEADER), len(_VALUE_HEADER))
_GUID_BYTES = 16
_yield_gil = time.sleep  # time.sleep(0) releases the GIL
#: How many bytes of records a compressed batch may expand to per byte of
#: ``max.message.bytes`` (at least :data:`MIN_DECOMPRESSED_BOUND`): the 1 MiB
#: default allows 16 MiB, where a decompression bomb is refused.
DECOMPRESSED_PER_MESSAGE_BYTE = 16
MIN_DECOMPRESSED_BOUND = 16 * 1024 * 1024
#: Above this many records the C loop (whose column lists cost ~100 bytes a
#: record) gives way to the walk, which builds nothing and yields the GIL.
_C_LOOP_MAX_RECORDS = 65_536


class InlineBoundExceeded(Exception):
    """A compressed batch expands past the inline bound given to
    :func:`validate_inline`: validate it with :func:`validate_batches` on a thread."""


class RecordValidationError(LogAppendError):
    """Batches refused; ``error_code`` is what Kafka answers and ``record_errors``
    the ``(batch_index, message)`` of each bad record (may be empty; Produce v8+
    answers them)."""

    def __init__(
        self,
        error_code: ErrorCode,
        message: str,
        record_errors: tuple[tuple[int, str], ...] = (),
    ) -> None:
        super().__init__(error_code, message)
        self.record_errors = record_errors


@attrs.frozen
class LogPolicy:
    """What the topic's configs ask of appended records.

    Attributes:
        compacted: ``cleanup.policy`` contains ``compact`` (keys required).
        max_decompressed_bytes: the most a compressed batch's records may
            expand to (bytes), and at most ``max_message_bytes`` per record of
            the batch's count; decompression stops there (RECORD_LIST_TOO_LARGE).
        max_message_bytes: the largest batch in bytes, overhead included.
        log_append_time: ``message.timestamp.type=LogAppendTime`` (timestamps are
            not checked then: the broker's replaces them).
        before_max_ms, after_max_ms: how far (ms) a CreateTime timestamp may lie
            before/after ``now_ms``.
        now_ms: the broker's clock (ms).
        client: the append comes from a client's Produce (Kafka's
            ``AppendOrigin.CLIENT``): base offset 0, offset range, no control
            batches and sequences are checked.
        one_batch: exactly one batch (Produce v3+).
        key_schema_ids, value_schema_ids: read each record key's / value's
            schema id framing into :attr:`ValidBatch.schema_ids` (Confluent
            Server's ``confluent.key.schema.validation`` /
            ``confluent.value.schema.validation``).
    """

    compacted: bool = False
    max_message_bytes: int | None = None
    log_append_time: bool = False
    before_max_ms: int = _LONG_MAX
    after_max_ms: int = _LONG_MAX
    now_ms: int = 0
    client: bool = True
    one_batch: bool = False
    max_decompressed_bytes: int = DEFAULT_MAX_DECOMPRESSED_SIZE
    key_schema_ids: bool = False
    value_schema_ids: bool = False

    @classmethod
    def for_produce(cls, config: TopicConfig, now_ms: int) -> LogPolicy:
        """The policy of a Produce (v3+) to a topic whose configuration in effect
        is ``config`` (``cleanup.policy``, ``max.message.bytes``,
        ``message.timestamp.type``, ``message.timestamp.before/after.max.ms``,
        ``confluent.key/value.schema.validation``)."""
        max_message_bytes = config.max_message_bytes
        return cls(
            compacted=config.compact,
            max_message_bytes=max_message_bytes,
            max_decompressed_bytes=min(
                DEFAULT_MAX_DECOMPRESSED_SIZE,
                max(
                    MIN_DECOMPRESSED_BOUND,
                    DECOMPRESSED_PER_MESSAGE_BYTE * max_message_bytes,
                ),
            ),
            log_append_time=config.log_append_time,
            before_max_ms=config.message_timestamp_before_max_ms,
            after_max_ms=config.message_timestamp_after_max_ms,
            now_ms=now_ms,
            client=True,
            one_batch=True,
            key_schema_ids=config.confluent_key_schema_validation,
            value_schema_ids=config.confluent_value_schema_validation,
        )


@attrs.define(slots=True)
class FramedIds:
    """The schema id framing of one side (keys or values) of a batch's records,
    by batch index (the record's position in its batch, from 0).

    Attributes:
        ids: schema id -> indexes of the records framed with it (magic byte 0
            and a 4-byte big-endian id before the payload).
        guids: schema GUID (16 bytes) -> indexes of the records whose
            ``__key_schema_id`` / ``__value_schema_id`` header holds it.
        unframed: ``(batch index, why)`` of each non-null key or value with
            neither.
    """

    ids: dict[int, list[int]] = attrs.Factory(dict)
    guids: dict[bytes, list[int]] = attrs.Factory(dict)
    unframed: list[tuple[int, str]] = attrs.Factory(list)


@attrs.frozen
class SchemaIds:
    """The schema id framing of a batch's keys and values (``None``: the side is
    not validated). Null keys and values (tombstones) are in neither, as
    Confluent Server lets them pass."""

    key: FramedIds | None
    value: FramedIds | None


class ValidBatch(NamedTuple):
    """One validated batch: byte ``position`` and ``size`` (overhead included) in
    the input, and the header fields the log indexes (a tuple: one is made per
    produced batch)."""

    position: int
    size: int
    last_offset_delta: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    is_control: bool
    schema_ids: SchemaIds | None = None


def validate_batches(records: bytes, policy: LogPolicy) -> list[ValidBatch]:
    """Check every magic 2 batch of ``records`` as Kafka's broker does before an
    append; return them in order.

    Raises:
        RecordValidationError: see the module doc.
    """
    return validate_inline(records, policy, None)


def validate_inline(
    records: bytes, policy: LogPolicy, inline_bound: int | None
) -> list[ValidBatch]:
    """:func:`validate_batches`; with ``inline_bound`` (bytes), raise
    :class:`InlineBoundExceeded` for a compressed batch whose records expand past
    that many bytes (and not past the policy's limit, which is an error), having
    decompressed no more than that."""
    data = bytes(records)
    n = len(data)
    out: list[ValidBatch] = []
    pos = 0
    while pos < n:
        if n - pos < 17:
            raise _invalid(f"partial record batch of {n - pos} bytes at byte {pos}")
        base_offset, length = struct.unpack_from(">qi", data, pos)
        magic = data[pos + 16]
        if magic != 2:
            raise _invalid(f"record batch magic {magic}: only magic 2 is accepted")
        if length < RECORDS_AT - LOG_OVERHEAD:
            raise RecordValidationError(
                ErrorCode.CORRUPT_MESSAGE,
                f"record batch length {length} at byte {pos} is below the "
                f"{RECORDS_AT - LOG_OVERHEAD}-byte batch header",
            )
        end = pos + LOG_OVERHEAD + length
        if end > n:
            raise _invalid(
                f"partial record batch at byte {pos}: {length + LOG_OVERHEAD} bytes "
                f"declared, {n - pos} present"
            )
        out.append(_validate_batch(data, pos, end, base_offset, policy, inline_bound))
        pos = end
    if not out:
        raise _invalid("Record batch has no batches at all")
    if policy.one_batch and len(out) > 1:
        raise _invalid(
            f"{len(out)} record batches for one partition: Produce v3+ allows exactly "
            "one (Kafka's ProduceRequest.validateRecords)"
        )
    return out


def _invalid(message: str) -> RecordValidationError:
    return RecordValidationError(ErrorCode.INVALID_RECORD, message)


def _validate_batch(
    data: bytes,
    pos: int,
    end: int,
    base_offset: int,
    policy: LogPolicy,
    inline_bound: int | None,
) -> ValidBatch:
    size = end - pos
    if policy.client and base_offset != 0:
        raise _invalid(
            f"The baseOffset of the record batch in the append should be 0, "
            f"but it is {base_offset}"
        )
    if policy.max_message_bytes is not None and size > policy.max_message_bytes:
        raise RecordValidationError(
            ErrorCode.MESSAGE_TOO_LARGE,
            f"record batch of {size} bytes exceeds max.message.bytes "
            f"{policy.max_message_bytes}",
        )
    (
        _,
        _,
        _,
        _,
        crc,
        attributes,
        last_offset_delta,
        base_timestamp,
        max_timestamp,
        producer_id,
        producer_epoch,
        base_sequence,
        count,
    ) = _V2_HEADER.unpack_from(data, pos)
    actual = crc32c.crc32c(memoryview(data)[pos + 21 : end])
    if actual != crc:
        raise RecordValidationError(
            ErrorCode.CORRUPT_MESSAGE,
            f"corrupt record batch: CRC-32C stored 0x{crc:08x}, computed 0x{actual:08x}",
        )
    is_control = bool(attributes & _CONTROL)
    if policy.client:
        if last_offset_delta + 1 <= 0:
            raise _invalid(
                f"Batch has an invalid offset range: [0, {last_offset_delta}]"
            )
        if count <= 0:
            raise _invalid(f"Invalid reported count for record batch: {count}")
        if last_offset_delta + 1 != count:
            raise _invalid(
                f"Inconsistent batch offset range [0, {last_offset_delta}] and count "
                f"of records {count}"
            )
        if is_control:
            raise _invalid("Clients are not allowed to write control records")
        if producer_id >= 0 and base_sequence < 0:
            raise _invalid(
                f"Invalid sequence number {base_sequence} in record batch with "
                f"producerId {producer_id}"
            )
    if count > DEFAULT_MAX_RECORDS:
        raise _invalid(
            f"batch declares {count} records, more than {DEFAULT_MAX_RECORDS}"
        )
    codec = attributes & 0x07
    start = pos + RECORDS_AT
    buf: bytes | memoryview
    if codec == 0:
        buf, rpos, rend = data, start, end
    else:
        if codec > 4:
            raise RecordValidationError(
                ErrorCode.CORRUPT_MESSAGE, f"unknown compression codec {codec}"
            )
        # the error is raised outside the except clauses: an exception chained
        # to the codec's would keep its frames, and the partly filled
        # decompression buffer, alive until the garbage collector runs
        failure: RecordValidationError | None = None
        limit = policy.max_decompressed_bytes
        if policy.max_message_bytes is not None:
            # no record may be larger than a whole batch may be
            limit = min(limit, count * max(policy.max_message_bytes, RECORDS_AT))
        bound = limit if inline_bound is None else min(limit, inline_bound)
        off_loop = False
        try:
            # the records are read in the thread's scratch buffer, not copied out
            buf = decompress_view(codec, memoryview(data)[start:end], bound)
        except SizeLimitError as err:
            off_loop = bound < limit
            failure = RecordValidationError(
                ErrorCode.RECORD_LIST_TOO_LARGE,
                f"compressed record batch at byte {pos} of {count} records expands "
                f"past {limit} bytes: {err}",
            )
        except DecodeError as err:
            failure = RecordValidationError(
                ErrorCode.CORRUPT_MESSAGE, f"corrupt compressed records: {err}"
            )
        if off_loop:
            raise InlineBoundExceeded
        if failure is not None:
            raise failure
        rpos, rend = 0, len(buf)
    check_time = (
        not policy.log_append_time
        and not is_control
        and (policy.before_max_ms < _LONG_MAX or policy.after_max_ms < _LONG_MAX)
    )
    schema_ids = (
        SchemaIds(
            FramedIds() if policy.key_schema_ids else None,
            FramedIds() if policy.value_schema_ids else None,
        )
        if policy.key_schema_ids or policy.value_schema_ids
        else None
    )
    errors = _check_records(
        buf,
        rpos,
        rend,
        count,
        base_timestamp,
        policy,
        check_time,
        is_control,
        schema_ids,
    )
    if errors:
        code, first = errors[0][0], errors[0][2]
        shown = "; ".join(e[2] for e in errors[:3])
        raise RecordValidationError(
            code,
            (
                first
                if len(errors) == 1
                else f"{len(errors)} records rejected, the first three: {shown}"
            ),
            tuple((i, m) for _, i, m in errors),
        )
    return ValidBatch(
        pos,
        size,
        last_offset_delta,
        max_timestamp,
        producer_id,
        producer_epoch,
        base_sequence,
        is_control,
        schema_ids,
    )


def _check_records(
    buf: bytes | memoryview,
    p: int,
    rend: int,
    count: int,
    base_timestamp: int,
    policy: LogPolicy,
    check_time: bool,
    is_control: bool,
    schema_ids: SchemaIds | None = None,
) -> list[tuple[ErrorCode, int, str]]:
    """The per-record checks, by the cheapest means at hand: with kproto's C
    extension, its scan (:func:`~kproto.records._native.v2_scan`: the layout checks
    of the record loop, offsets, the timestamps' range and null keys counted, no
    object per record), then, only for a batch that fails one of these checks, its
    record loop (the columns it returns are compared as whole lists to name the
    records at fault); without it, :func:`_walk_records`, which builds no objects. A
    batch the C loop rejects is walked again to name what is wrong. ``buf`` is bytes
    or a view of the thread's decompression buffer, read in place.

    With ``schema_ids`` (schema validation on), the scan is skipped: the record
    loop's key, value and header columns give the framing (grouped by their first
    five bytes: one look per distinct prefix), or the walk reads it."""
    columns_loop = v2_loops()[0]
    columns = None
    if columns_loop is not v2_columns_fast:  # without the C extension: the walk
        scan = v2_scan()
        try:
            if scan is not None and count > 0 and schema_ids is None:
                summary = scan(buf, p, rend, count, 0, base_timestamp)
                if summary is not None:  # offsets 0, 1, 2 ...: the rest may need none
                    min_ts, max_ts, null_keys = summary
                    low = policy.now_ms - policy.before_max_ms
                    high = policy.now_ms + policy.after_max_ms
                    keys_bad = policy.compacted and not is_control and null_keys
                    if not keys_bad and not (
                        check_time and (min_ts < low or max_ts > high)
                    ):
                        return []
            if count <= _C_LOOP_MAX_RECORDS:  # many records: the walk holds no lists
                if not isinstance(buf, bytes):  # a view of the decompression buffer
                    buf = bytes(buf)
                columns = columns_loop(buf, p, rend, count, 0, base_timestamp)
        except (Bad, IndexError, VarintError, UnicodeDecodeError):
            columns = None  # the walk names what is wrong
    if columns is None:
        return _walk_records(
            buf,
            p,
            rend,
            count,
            base_timestamp,
            policy,
            check_time,
            is_control,
            schema_ids,
        )
    offsets, timestamps, keys, values, headers = columns
    if offsets != list(range(count)):
        i = next(i for i, delta in enumerate(offsets) if delta != i)
        raise _invalid(
            f"record {i} has offset delta {offsets[i]}; offset deltas "
            "must run 0, 1, 2 ... (this broker does not rewrite batches)"
        )
    errors: list[tuple[ErrorCode, int, str]] = []
    if policy.compacted and not is_control and None in keys:
        errors.extend(
            (ErrorCode.INVALID_RECORD, i, _NO_KEY)
            for i, key in enumerate(keys)
            if key is None
        )
    if check_time and timestamps:
        low = policy.now_ms - policy.before_max_ms
        high = policy.now_ms + policy.after_max_ms
        if min(timestamps) < low or max(timestamps) > high:
            errors.extend(
                (ErrorCode.INVALID_TIMESTAMP, i, _bad_time(ts, i, low, high))
                for i, ts in enumerate(timestamps)
                if ts != _NO_TIMESTAMP and not low <= ts <= high
            )
            errors.sort(key=lambda e: e[1])
    if schema_ids is not None:
        if schema_ids.key is not None:
            _frame_column(schema_ids.key, keys, headers, KEY_SCHEMA_ID_HEADER, "key")
        if schema_ids.value is not None:
            _frame_column(
                schema_ids.value, values, headers, VALUE_SCHEMA_ID_HEADER, "value"
            )
    return errors


def _bad_time(ts: int, i: int, low: int, high: int) -> str:
    return (
        f"Timestamp {ts} of message with offset {i} is out of range. The timestamp "
        f"should be within [{low}, {high}]"
    )


def _walk_records(
    buf: bytes | memoryview,
    p: int,
    rend: int,
    count: int,
    base_timestamp: int,
    policy: LogPolicy,
    check_time: bool,
    is_control: bool,
    schema_ids: SchemaIds | None = None,
) -> list[tuple[ErrorCode, int, str]]:
    """Walk ``count`` records in ``buf[p:rend]`` (``DefaultRecord`` layout) and
    return the per-record errors; raise for a malformed body. With
    ``schema_ids``, each record's key / value framing is read into it.

    One-byte varints (the common case for lengths and deltas) are read inline.
    """
    key_ids = value_ids = None
    if schema_ids is not None:
        key_ids, value_ids = schema_ids.key, schema_ids.value
    key_at = value_at = 0
    key_header: tuple[int, int] | None = None
    value_header: tuple[int, int] | None = None
    errors: list[tuple[ErrorCode, int, str]] = []
    compacted = policy.compacted and not is_control
    low = policy.now_ms - policy.before_max_ms
    high = policy.now_ms + policy.after_max_ms
    varint = _varint
    try:
        for i in range(count):
            if not i & 0x3FF and i:
                _yield_gil(0)  # off the loop, let the event loop's thread run
            b = buf[p]
            if b < 0x80:
                length, p = (b >> 1) ^ -(b & 1), p + 1
            else:
                length, p = varint(buf, p)
            body = p
            record_end = p + length
            if length <= 0 or record_end > rend:
                raise _invalid(
                    "Incorrect declared batch size, premature EOF reached "
                    f"(record {i} of length {length})"
                )
            b = buf[p + 1]  # after the attributes byte: the timestamp delta
            if b < 0x80:
                ts_delta, p = (b >> 1) ^ -(b & 1), p + 2
            else:
                ts_delta, p = varint(buf, p + 1)
            b = buf[p]
            if b < 0x80:
                offset_delta, p = (b >> 1) ^ -(b & 1), p + 1
            else:
                offset_delta, p = varint(buf, p)
            if offset_delta != i:
                raise _invalid(
                    f"record {i} has offset delta {offset_delta}; offset deltas "
                    "must run 0, 1, 2 ... (this broker does not rewrite batches)"
                )
            b = buf[p]
            if b < 0x80:
                key_length, p = (b >> 1) ^ -(b & 1), p + 1
            else:
                key_length, p = varint(buf, p)
            key_at = p
            if key_length >= 0:
                p += key_length
            elif key_length == -1:
                if compacted:
                    errors.append((ErrorCode.INVALID_RECORD, i, _NO_KEY))
            else:
                raise _invalid(f"record {i} has key length {key_length}")
            b = buf[p]
            if b < 0x80:
                value_length, p = (b >> 1) ^ -(b & 1), p + 1
            else:
                value_length, p = varint(buf, p)
            value_at = p
            if value_length >= 0:
                p += value_length
            elif value_length != -1:
                raise _invalid(f"record {i} has value length {value_length}")
            headers, p = varint(buf, p)
            if headers < 0:
                raise _invalid(f"Found invalid number of record headers {headers}")
            key_header = value_header = None
            for _ in range(headers):
                key_len, p = varint(buf, p)
                if key_len < 0:
                    raise _invalid(f"record {i} has a header key of length {key_len}")
                name_at = p
                p += key_len
                value_len, p = varint(buf, p)
                if value_len < -1:
                    raise _invalid(f"record {i} has a header of length {value_len}")
                if schema_ids is not None and key_len in _SCHEMA_ID_HEADER_LENGTHS:
                    name = bytes(buf[name_at : name_at + key_len])
                    if name == _KEY_HEADER:
                        key_header = (p, value_len)
                    elif name == _VALUE_HEADER:
                        value_header = (p, value_len)
                p += max(value_len, 0)
            if p != record_end:
                raise _invalid(
                    f"Invalid record size: expected to read {length} bytes in record "
                    f"payload, but instead read {p - body}"
                )
            if key_ids is not None and key_length >= 0:
                _frame(key_ids, i, buf, key_at, key_length, key_header, "key")
            if value_ids is not None and value_length >= 0:
                _frame(value_ids, i, buf, value_at, value_length, value_header, "value")
            if check_time:
                ts = base_timestamp + ts_delta
                if ts != _NO_TIMESTAMP and not low <= ts <= high:
                    errors.append(
                        (ErrorCode.INVALID_TIMESTAMP, i, _bad_time(ts, i, low, high))
                    )
    except IndexError:
        raise _invalid("Incorrect declared batch size, premature EOF reached") from None
    if p != rend:
        raise _invalid("Incorrect declared batch size, records still remaining in file")
    return errors


def _frame(
    framed: FramedIds,
    i: int,
    buf: bytes | memoryview,
    at: int,
    length: int,
    header: tuple[int, int] | None,
    what: str,
) -> None:
    """Note the schema id framing of record ``i``'s non-null key or value
    (``what``), ``length`` bytes at ``buf[at]``: the id header's GUID if the
    record has one (``(position, length)`` of its value), else the magic 0 and
    4-byte id prefix (confluent-kafka's dual schema id deserializer)."""
    if header is not None:
        h_at, h_length = header
        _note_header(
            framed,
            i,
            None if h_length < 0 else bytes(buf[h_at : h_at + h_length]),
            what,
        )
    else:
        _note_prefix(framed, [i], bytes(buf[at : at + min(length, 5)]), what)


def _frame_column(
    framed: FramedIds,
    column: list[bytes | None],
    headers: list[list[tuple[str, bytes | None]]],
    header_name: str,
    what: str,
) -> None:
    """:func:`_frame` for a whole key or value column of the record loop: the
    records carrying the id header one by one, the others grouped by their
    first five bytes."""
    with_header: dict[int, bytes | None] = {}
    if any(headers):
        for i, record_headers in enumerate(headers):
            for name, value in record_headers:
                if name == header_name:
                    with_header[i] = value
    by_prefix: dict[bytes, list[int]] = {}
    for i, v in enumerate(column):
        if v is not None and i not in with_header:
            by_prefix.setdefault(v[:5], []).append(i)
    for prefix, indexes in by_prefix.items():
        _note_prefix(framed, indexes, prefix, what)
    for i, value in with_header.items():
        if column[i] is not None:
            _note_header(framed, i, value, what)
    framed.unframed.sort()


def _note_header(framed: FramedIds, i: int, value: bytes | None, what: str) -> None:
    """Record ``i`` names its schema in its id header, whose value is ``value``."""
    if (
        value is not None
        and len(value) == 1 + _GUID_BYTES
        and value[0] == MAGIC_BYTE_GUID
    ):
        framed.guids.setdefault(value[1:], []).append(i)
    else:
        size = 0 if value is None else len(value)
        framed.unframed.append(
            (
                i,
                f"its {what} schema id header is not magic byte {MAGIC_BYTE_GUID} "
                f"and a {_GUID_BYTES}-byte GUID ({size} bytes)",
            )
        )


def _note_prefix(framed: FramedIds, indexes: list[int], head: bytes, what: str) -> None:
    """The records at ``indexes`` (in order) have keys or values starting with
    ``head``, their first five bytes (fewer: the whole key or value)."""
    if len(head) < 5:
        framed.unframed.extend(
            (
                i,
                f"its {what} of {len(head)} bytes is too short for Confluent's wire "
                "format (magic byte 0 and a 4-byte schema id)",
            )
            for i in indexes
        )
    elif head[0] != MAGIC_BYTE:
        framed.unframed.extend(
            (
                i,
                f"its {what} starts with byte 0x{head[0]:02x}, not Confluent's "
                f"magic byte {MAGIC_BYTE} before a schema id",
            )
            for i in indexes
        )
    else:
        framed.ids.setdefault(int.from_bytes(head[1:5], "big"), []).extend(indexes)


def _varint(buf: bytes | memoryview, p: int) -> tuple[int, int]:
    """A zigzag varint at ``buf[p]`` (at most 10 bytes); IndexError past the end."""
    b = buf[p]
    if b < 0x80:
        return (b >> 1) ^ -(b & 1), p + 1
    result = b & 0x7F
    shift = 7
    p += 1
    while True:
        b = buf[p]
        p += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return (result >> 1) ^ -(result & 1), p
        shift += 7
        if shift > 63:
            raise _invalid("varint longer than 10 bytes in a record")
