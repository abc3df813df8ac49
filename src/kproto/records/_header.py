"""The magic 2 record batch header, and the batch-level fields every decoder reports.

Layout: Kafka's ``DefaultRecordBatch.java`` (KIP-98), 61 bytes, big-endian::

    base_offset int64            @0    (the 12-byte log overhead:
    batch_length int32           @8     offset and size of every batch)
    partition_leader_epoch int32 @12
    magic int8                   @16
    crc uint32                   @17   (CRC-32C of attributes .. end of batch)
    attributes int16             @21
    last_offset_delta int32      @23
    base_timestamp int64         @27   (ms)
    max_timestamp int64          @35   (ms)
    producer_id int64            @43
    producer_epoch int16         @51
    base_sequence int32          @53
    records_count int32          @57
    records                      @61

:class:`V2Header` is that layout (one definition of the field order, read with
:data:`V2_HEADER`); :class:`BatchHead` is the batch-level half of
:class:`~kproto.records.RecordBatch` (every field but ``records``, in its order), which
both the magic 2 and the legacy decoders produce.
"""

from __future__ import annotations

import struct
from typing import Final, NamedTuple

from ._types import Compression, TimestampType

__all__ = [
    "ATTR_COMPRESSION_MASK",
    "ATTR_CONTROL",
    "ATTR_DELETE_HORIZON",
    "ATTR_LOG_APPEND_TIME",
    "ATTR_TRANSACTIONAL",
    "ATTRIBUTES_AT",
    "BATCH_LENGTH_AT",
    "BatchHead",
    "CRC_AT",
    "LAST_OFFSET_DELTA_AT",
    "LOG_OVERHEAD",
    "MAGIC_AT",
    "PARTITION_LEADER_EPOCH_AT",
    "RECORDS_AT",
    "RECORDS_COUNT_AT",
    "V2Header",
    "V2_HEADER",
    "V2_MIN_LENGTH",
    "batch_path",
    "v2_head",
]

# Byte offsets from the start of a batch.
BATCH_LENGTH_AT: Final = 8
PARTITION_LEADER_EPOCH_AT: Final = 12
MAGIC_AT: Final = 16
CRC_AT: Final = 17
ATTRIBUTES_AT: Final = 21
LAST_OFFSET_DELTA_AT: Final = 23
RECORDS_COUNT_AT: Final = 57
RECORDS_AT: Final = 61
#: base_offset (int64) and batch_length (int32): the bytes not counted in batch_length.
LOG_OVERHEAD: Final = 12
#: The smallest batch_length of a magic 2 batch (a header with no records).
V2_MIN_LENGTH: Final = RECORDS_AT - LOG_OVERHEAD

# Bits of the attributes field (DefaultRecordBatch.java).
ATTR_COMPRESSION_MASK: Final = 0x07
ATTR_LOG_APPEND_TIME: Final = 0x08
ATTR_TRANSACTIONAL: Final = 0x10
ATTR_CONTROL: Final = 0x20
ATTR_DELETE_HORIZON: Final = 0x40


class V2Header(NamedTuple):
    """The 61-byte header of a magic 2 batch, as on the wire (see the module doc)."""

    base_offset: int
    batch_length: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    records_count: int


#: Reads a :class:`V2Header` (``V2Header._make(V2_HEADER.unpack_from(data, pos))``).
V2_HEADER: Final = struct.Struct(">qiibIhiqqqhii")
assert V2_HEADER.size == RECORDS_AT


class BatchHead(NamedTuple):
    """The batch-level fields of a :class:`~kproto.records.RecordBatch`, in its order.

    ``position`` is the batch's byte offset in the decoded input; the rest are as
    documented on :class:`~kproto.records.RecordBatch`.
    """

    position: int
    base_offset: int
    batch_length: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    compression: Compression
    timestamp_type: TimestampType
    is_transactional: bool
    is_control: bool
    has_delete_horizon: bool
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int


_COMPRESSIONS = tuple(Compression)
_TS_TYPES = (TimestampType.CREATE_TIME, TimestampType.LOG_APPEND_TIME)


def v2_head(position: int, h: V2Header) -> BatchHead:
    """The :class:`BatchHead` of the magic 2 batch at ``position`` with header ``h``.

    The caller has checked that the codec (``attributes & 7``) is at most 4.
    """
    a = h.attributes
    return BatchHead(
        position,
        h.base_offset,
        h.batch_length,
        h.partition_leader_epoch,
        h.magic,
        h.crc,
        a,
        _COMPRESSIONS[a & ATTR_COMPRESSION_MASK],
        _TS_TYPES[1 if a & ATTR_LOG_APPEND_TIME else 0],
        bool(a & ATTR_TRANSACTIONAL),
        bool(a & ATTR_CONTROL),
        bool(a & ATTR_DELETE_HORIZON),
        h.last_offset_delta,
        h.base_timestamp,
        h.max_timestamp,
        h.producer_id,
        h.producer_epoch,
        h.base_sequence,
    )


def batch_path(position: int, base_offset: int) -> str:
    """The ``path`` of errors in a batch: ``batch@<position>(base_offset=N)``."""
    return f"batch@{position}(base_offset={base_offset})"
