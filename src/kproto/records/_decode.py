"""Decoding of record batches (magic 2) and legacy message sets (magic 0/1).

Layouts follow Kafka's ``DefaultRecordBatch.java`` / ``DefaultRecord.java``
(magic 2, KIP-98) and ``LegacyRecord.java`` (magic 0/1, KIP-32, KIP-31).

This module holds the public entry points and the walk over an input's batches; the
work is in small modules: :mod:`~kproto.records.segments` (batch boundaries, shared with
:mod:`kproto.spark`), :mod:`~kproto.records._header` (the magic 2 header),
:mod:`~kproto.records._v2_batch` (one magic 2 batch), :mod:`~kproto.records._v2_loop`
(its record loop), :mod:`~kproto.records._v2_checked` (the careful re-read that names
what is wrong), :mod:`~kproto.records._legacy` (magic 0/1) and
:mod:`~kproto.records._codecs` (bounded decompression).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from kproto.exceptions import DecodeError

from ._header import MAGIC_AT, BatchHead, batch_path
from ._legacy import decode_legacy
from ._types import COLUMN_NAMES, Record, RecordBatch, _RecordBatchSlots
from ._v2_batch import (
    add_to_arrow,
    decode_v2,
    decode_v2_arrow,
    make_records,
    open_v2,
)
from .segments import next_frame

__all__ = [
    "DEFAULT_MAX_DECOMPRESSED_SIZE",
    "DEFAULT_MAX_RECORDS",
    "BatchIterator",
    "ColumnarResult",
    "decode_batches",
    "decode_columns",
    "decode_records",
]

DEFAULT_MAX_DECOMPRESSED_SIZE = 256 * 1024 * 1024
"""Default bound (bytes) on the decompressed size of one batch: 256 MiB."""

DEFAULT_MAX_RECORDS = 1_000_000
"""Default bound on the records of one batch (declared count, or messages of a legacy
wrapper). A decoded record costs ~150 bytes of Python objects even when empty; Kafka's
default ``max.message.bytes`` (1 MiB) holds at most ~150,000 uncompressed records."""

_new = object.__new__


class _Scan:
    """Walks the batches of an input, keeping the tail and corruption report."""

    def __init__(
        self,
        data: bytes | bytearray | memoryview,
        check_crc: bool,
        max_decompressed_size: int,
        max_records: int,
        skip_corrupt: bool,
    ) -> None:
        self.data = data if type(data) is bytes else bytes(data)
        self.check_crc = check_crc
        self.limit = max_decompressed_size
        self.max_records = max_records
        self.skip_corrupt = skip_corrupt
        self.partial_tail_bytes = 0
        self.partial_tail_position: int | None = None
        self.corrupt: list[tuple[int, int, str]] = []

    def batches(
        self, want_records: bool, builder: Any = None
    ) -> Iterator[tuple[BatchHead, Any]]:
        """Yield ``(header, records or columns)`` for every complete batch; with an
        Arrow ``builder`` (:mod:`kproto.records._arrow`), append each batch's records
        to it and yield ``(header, record count)``."""
        data = self.data
        mv = memoryview(data)
        n = len(data)
        pos = 0
        check_crc = self.check_crc
        limit = self.limit
        max_records = self.max_records
        while pos < n:
            f = next_frame(data, pos, n)
            if f.base_offset is None or (f.problem is None and not f.complete):
                # Only an incomplete trailing batch with a plausible header is
                # skipped (a Fetch response may end with one).
                self.partial_tail_bytes = n - pos
                self.partial_tail_position = pos
                return
            end = f.end
            try:
                if f.problem is not None:
                    field = (
                        ".magic" if f.problem_at == pos + MAGIC_AT else ".batch_length"
                    )
                    raise DecodeError(
                        f.problem,
                        path=batch_path(pos, f.base_offset) + field,
                        offset=f.problem_at,
                    )
                if f.magic == 2:
                    batch = open_v2(data, mv, pos, end, check_crc, limit, max_records)
                    if builder is not None:
                        yield decode_v2_arrow(batch, builder)
                    else:
                        yield decode_v2(batch, want_records)
                else:
                    head, cols = decode_legacy(
                        data, pos, end, check_crc, limit, max_records
                    )
                    if builder is not None:
                        add_to_arrow(builder, cols, batch_path(pos, f.base_offset), pos)
                        yield head, len(cols[0])
                    else:
                        yield head, (make_records(cols, None) if want_records else cols)
            except DecodeError as exc:
                if not self.skip_corrupt:
                    raise
                self.corrupt.append((pos, f.base_offset, str(exc)))
                if not f.complete:
                    return  # without a usable length the next batch cannot be found
            pos = end


def _make_batch(head: BatchHead, records: Sequence[Record]) -> RecordBatch:
    """A RecordBatch from its header fields and records."""
    b: Any = _new(_RecordBatchSlots)
    # One unpacking into plain slots, in BatchHead's field order (which is
    # RecordBatch's: tests/records/test_records_lazy.py checks it); a
    # setattr() per field took 1 us more per batch.
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
        max_records: int = DEFAULT_MAX_RECORDS,
        skip_corrupt: bool = False,
    ) -> None:
        self._scan = _Scan(
            data, check_crc, max_decompressed_size, max_records, skip_corrupt
        )
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
    max_records: int = DEFAULT_MAX_RECORDS,
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
    :attr:`BatchIterator.partial_tail_position`. Only a batch whose header is
    plausible counts as incomplete (as in Kafka's ``ByteBufferLogInputStream``): a
    length below 14 or above 2**31 - 13 bytes, an unknown magic, or a length below
    its format's minimum raises even at the end of the input.

    Args:
        data: the bytes to decode (a bytearray or memoryview is copied once).
        check_crc: verify each batch's CRC-32C (magic 2) or CRC-32 (legacy).
        max_decompressed_size: bound in bytes on the decompressed records of a
            batch (for a legacy wrapper: of all its nested payloads together).
        max_records: bound on the records of a batch, checked against its declared
            count before any record is decoded (for a legacy wrapper: on its inner
            messages, all levels together).
        skip_corrupt: record corrupt complete batches in
            :attr:`BatchIterator.corrupt` and continue after them instead of
            raising.

    Raises:
        DecodeError: (during iteration) for a corrupt complete batch: CRC
            mismatch, bad lengths, over-long varints, record count mismatch,
            undecodable or oversized compressed data, more than ``max_records``
            records; and for a header no batch can have (see above), complete or
            not. ``path`` names the batch
            (``batch@<position>(base_offset=N)``) and record field; ``offset``
            is the byte offset in the input (or, for compressed batches, in the
            decompressed records, as the reason says).
    """
    return BatchIterator(
        data,
        check_crc=check_crc,
        max_decompressed_size=max_decompressed_size,
        max_records=max_records,
        skip_corrupt=skip_corrupt,
    )


def decode_records(
    data: bytes | bytearray | memoryview,
    *,
    check_crc: bool = True,
    max_decompressed_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE,
    max_records: int = DEFAULT_MAX_RECORDS,
    skip_corrupt: bool = False,
) -> Iterator[Record]:
    """The records of all batches in ``data``, in order (see :func:`decode_batches`).

    Each batch is decoded (and checked) whole before its first record is yielded.

    Raises:
        DecodeError: as :func:`decode_batches`.
    """
    scan = _Scan(data, check_crc, max_decompressed_size, max_records, skip_corrupt)
    for _head, records in scan.batches(True):
        yield from records


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
    max_records: int = DEFAULT_MAX_RECORDS,
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
        data, check_crc, max_decompressed_size, max_records: as
            :func:`decode_batches`.
        skip_corrupt: when True a corrupt complete batch is reported in
            ``result.corrupt`` as ``(position, base_offset, message)`` and
            decoding continues after it (a bad batch *length* ends decoding
            there, as the next batch cannot be found); when False it raises.

    Raises:
        DecodeError: as :func:`decode_batches`, unless ``skip_corrupt``.
    """
    result = ColumnarResult()
    scan = _Scan(data, check_crc, max_decompressed_size, max_records, skip_corrupt)
    # The first batch's lists become the columns (the record columns are new lists
    # from the loops); later batches extend them. One batch, the usual case, copies
    # nothing.
    columns: list[list[Any]] | None = None
    for head, cols in scan.batches(False):
        n = len(cols[0])
        result.batches += 1
        batch = (
            cols[0],
            cols[1],
            [int(head.timestamp_type)] * n,
            cols[2],
            cols[3],
            cols[4],
            [head.base_offset] * n,
            [head.partition_leader_epoch] * n,
            [head.magic] * n,
            [head.compression.label] * n,
            [head.is_transactional] * n,
            [head.is_control] * n,
            [head.producer_id] * n,
            [head.producer_epoch] * n,
            [head.base_sequence] * n,
        )
        if columns is None:
            columns = list(batch)
        else:
            for column, part in zip(columns, batch, strict=True):
                column += part
    if columns is not None:
        for name, column in zip(COLUMN_NAMES, columns, strict=True):
            result[name] = column
    result.records = len(result["offset"])
    result.corrupt = scan.corrupt
    result.partial_tail_bytes = scan.partial_tail_bytes
    result.partial_tail_position = scan.partial_tail_position
    return result
