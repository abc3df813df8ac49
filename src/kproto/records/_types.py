"""Value types of :mod:`kproto.records`: codecs, timestamp types, records and batches."""

from __future__ import annotations

import enum
from collections.abc import Sequence

import attrs

__all__ = [
    "COLUMN_NAMES",
    "Compression",
    "ControlRecord",
    "ControlRecordType",
    "Record",
    "RecordBatch",
    "TimestampType",
]


class Compression(enum.IntEnum):
    """The codec of a batch: the low three bits of its ``attributes`` field.

    The numbering is Kafka's (``CompressionType.java``); :attr:`label` is the
    lower-case name Kafka uses in configuration (``compression.type``).
    """

    NONE = 0
    GZIP = 1
    SNAPPY = 2
    LZ4 = 3
    ZSTD = 4

    @property
    def label(self) -> str:
        """``"none"``, ``"gzip"``, ``"snappy"``, ``"lz4"`` or ``"zstd"``."""
        return _LABELS[self]


_LABELS = {c: c.name.lower() for c in Compression}


class TimestampType(enum.IntEnum):
    """What a record timestamp means (KIP-32).

    ``NO_TIMESTAMP`` (-1) is used for magic 0 messages, which carry none;
    otherwise bit 3 of the batch (magic 2) or message (magic 1) attributes
    selects ``CREATE_TIME`` (0, set by the producer) or ``LOG_APPEND_TIME``
    (1, set by the broker).
    """

    NO_TIMESTAMP = -1
    CREATE_TIME = 0
    LOG_APPEND_TIME = 1


class ControlRecordType(enum.IntEnum):
    """The ``type`` in the key of a control record (``ControlRecordType.java``).

    ``ABORT`` (0) and ``COMMIT`` (1) are the transaction markers of KIP-98;
    the others are written by KRaft into its metadata log.
    """

    ABORT = 0
    COMMIT = 1
    LEADER_CHANGE = 2
    SNAPSHOT_HEADER = 3
    SNAPSHOT_FOOTER = 4
    KRAFT_VERSION = 5
    KRAFT_VOTERS = 6


@attrs.frozen(slots=True)
class ControlRecord:
    """The decoded key (and, for transaction markers, value) of a control record.

    Attributes:
        type: the control type (a :class:`ControlRecordType` when known,
            else the plain int from the key); ``ABORT`` = 0, ``COMMIT`` = 1.
        version: the version of the control record key (int16).
        coordinator_epoch: for ``ABORT``/``COMMIT`` markers the epoch of the
            transaction coordinator that wrote the marker (int32); -1 for
            other control types.
    """

    type: int
    version: int
    coordinator_epoch: int = -1


class _RecordSlots:
    """Slot storage of :class:`Record` (same layout; see :class:`Record`).

    The decoder builds a ``_RecordSlots``, fills its slots with plain stores and
    then sets ``__class__`` to :class:`Record`: much cheaper than calling the
    frozen class's slot descriptors one by one.
    """

    __slots__ = (
        "offset",
        "timestamp",
        "key",
        "value",
        "headers",
        "control",
        "__weakref__",
    )


@attrs.frozen(slots=True)
class Record(_RecordSlots):
    """One record, with everything in it resolved to absolute values.

    Attributes:
        offset: the absolute offset of the record in its partition.
        timestamp: milliseconds since the Unix epoch; -1 for magic 0 messages,
            which have none. With ``LOG_APPEND_TIME`` this is the broker's
            append time (the batch's ``max_timestamp`` for magic 2).
        key: the key bytes, or ``None`` for a null key.
        value: the value bytes, or ``None`` for a null value (a tombstone).
        headers: ``(name, value)`` pairs in wire order; names are str, values
            bytes or ``None``. Always empty for magic 0/1.
        control: for records of a control batch, the decoded control record;
            ``None`` otherwise.
    """

    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...] = ()
    control: ControlRecord | None = None


class _RecordBatchSlots:
    """Slot storage of :class:`RecordBatch` (as :class:`_RecordSlots`)."""

    __slots__ = (
        "position",
        "base_offset",
        "batch_length",
        "partition_leader_epoch",
        "magic",
        "crc",
        "attributes",
        "compression",
        "timestamp_type",
        "is_transactional",
        "is_control",
        "has_delete_horizon",
        "last_offset_delta",
        "base_timestamp",
        "max_timestamp",
        "producer_id",
        "producer_epoch",
        "base_sequence",
        "records",
        "__weakref__",
    )


@attrs.frozen(slots=True)
class RecordBatch(_RecordBatchSlots):
    """One record batch (magic 2) or one top-level legacy message (magic 0/1).

    Field layout and meaning follow Kafka's ``DefaultRecordBatch.java`` (magic
    2, KIP-98) and ``LegacyRecord.java`` (magic 0/1, KIP-32/KIP-31).

    Attributes:
        position: byte offset of the batch's first byte in the decoded input.
        base_offset: absolute offset of the first record (magic 2: the header
            field; legacy: the first (inner) message's offset).
        batch_length: the length field: bytes after it (magic 2
            ``batchLength``, legacy ``message_size``).
        partition_leader_epoch: int32; -1 for legacy messages.
        magic: 0, 1 or 2.
        crc: the stored checksum (magic 2: CRC-32C over attributes..end;
            legacy: CRC-32 over magic..end), as an unsigned int.
        attributes: the raw attributes (int16 for magic 2, int8 for legacy).
        compression: the codec.
        timestamp_type: the timestamp type (``NO_TIMESTAMP`` for magic 0).
        is_transactional: attributes bit 4 (magic 2 only).
        is_control: attributes bit 5 (magic 2 only).
        has_delete_horizon: attributes bit 6 (magic 2 only, KIP-534): when set,
            ``base_timestamp`` is the delete horizon.
        last_offset_delta: offset of the last record minus ``base_offset``.
        base_timestamp: ms; magic 2 header field, legacy: the first record's
            timestamp (-1 for magic 0).
        max_timestamp: ms; magic 2 header field, legacy: the top-level
            message's timestamp (-1 for magic 0).
        producer_id: int64; -1 when not idempotent and for legacy messages.
        producer_epoch: int16; -1 likewise.
        base_sequence: int32; -1 likewise.
        records: the records, in order: a tuple, or (C extension, plain magic 2
            batches) a ``RecordSequence`` that behaves as that tuple and is equal
            to it, built one record at a time as it is iterated (see
            docs/guide/records.md). For a compressed legacy wrapper, its inner messages
            (flattened, with absolute offsets).
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
    records: Sequence[Record]


COLUMN_NAMES: tuple[str, ...] = (
    "offset",
    "timestamp",
    "timestamp_type",
    "key",
    "value",
    "headers",
    "base_offset",
    "partition_leader_epoch",
    "magic",
    "compression",
    "is_transactional",
    "is_control",
    "producer_id",
    "producer_epoch",
    "base_sequence",
)
"""The columns of :func:`kproto.records.decode_columns`, in order.

``timestamp`` is ms since the epoch, ``timestamp_type`` the int value of
:class:`TimestampType`, ``headers`` a list of ``(str, bytes | None)`` tuples,
``compression`` the :attr:`Compression.label` string; the batch-level columns
repeat their batch's value for every record.
"""
