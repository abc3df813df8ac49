"""One partition's log, stored as Kafka stores it: ``<topic>-<partition>/<base offset>.log``.

Each segment file is named by its first offset (20 digits, zero-padded, as Kafka's
``LogFileUtils.filenamePrefixFromOffset``) and holds the record batches exactly as the
producer sent them, except for the 8-byte ``base_offset`` the log assigns on append
and the 4-byte ``partition_leader_epoch`` (bytes 12-15), stamped with the partition's
leader epoch (:meth:`LogListener.leader_epoch`). The batch CRC covers attributes
onwards, not these two fields, so patching them keeps the batch valid; Kafka's
``LogValidator`` does the same (``setLastOffset``, ``setPartitionLeaderEpoch``) for
the magic 2 batches it does not recompress, on every append as leader
(``UnifiedLog.appendAsLeader``: clients, coordinators, markers).

Memory stays flat in the number of records: batches live on disk; an in-memory
index keeps, per batch, its base offset, last offset, file position, size and max
timestamp (Kafka keeps the sparse ``.index`` / ``.timeindex`` files; this index is
rebuilt by scanning the segments on open).

Recovery (``PartitionLog.open``): every segment is scanned with
:func:`kproto.records.decode_batches` (CRC checked); a torn or corrupt trailing
batch and everything after it is truncated, as Kafka's ``LogSegment.recover`` does.
"""

from __future__ import annotations

import bisect
import errno
import logging
import os
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Protocol

import attrs
import crc32c

from kproto.broker.cleaner import recover_swaps
from kproto.broker.errors import LogAppendError
from kproto.broker.file_cache import FileCache, shared_file_cache
from kproto.broker.log_validator import LogPolicy, ValidBatch, validate_batches
from kproto.broker.producer_state import ProducerStateManager
from kproto.broker.segment import Extent, Segment, segment_file_name
from kproto.broker.txn_index import TransactionIndex
from kproto.errors import ErrorCode
from kproto.records import RecordBatch, decode_batches
from kproto.records._header import LOG_OVERHEAD, PARTITION_LEADER_EPOCH_AT
from kproto.serial import DecodeError

__all__ = [
    "LogListener",
    "PartitionLog",
    "Segment",
    "LogAppendError",
    "AppendResult",
    "Extent",
    "segment_file_name",
]

log = logging.getLogger("kproto.broker")

_BASE_OFFSET = struct.Struct(">q")
_INT32 = struct.Struct(">i")
_INT16 = struct.Struct(">h")
_UINT32 = struct.Struct(">I")


def set_log_append_time(batch: bytes | bytearray, timestamp_ms: int) -> bytes:
    """A magic 2 batch stamped with LogAppendTime ``timestamp_ms`` (ms): the
    timestamp type bit (0x08) of ``attributes`` set, ``max_timestamp`` replaced and
    the CRC-32C (over attributes onwards) recomputed, as Kafka's
    ``DefaultRecordBatch.setMaxTimestamp`` does for ``message.timestamp.type=
    LogAppendTime``. Offsets: attributes at byte 21, max_timestamp at 35, crc at 17
    (``DefaultRecordBatch.java``)."""
    out = bytearray(batch)
    (attributes,) = _INT16.unpack_from(out, 21)
    _INT16.pack_into(out, 21, attributes | 0x08)
    _BASE_OFFSET.pack_into(out, 35, timestamp_ms)
    _UINT32.pack_into(out, 17, crc32c.crc32c(bytes(out[21:])))
    return bytes(out)


class LogListener(Protocol):
    """What a partition log asks of, and tells, the partition it holds; given once,
    when the log is opened (the cluster's is
    :class:`kproto.broker.partition_state.PartitionListener`)."""

    def leader_epoch(self) -> int:
        """The partition's leader epoch, stamped into every appended batch."""
        ...

    def appended(self) -> None:
        """Records were appended (the cluster wakes Fetch long polls)."""
        ...


@attrs.frozen
class AppendResult:
    """The outcome of an append: the first offset written (or, for a duplicate
    batch, the offset it was written at before), the log append time in ms (-1
    for CreateTime topics) and the log start offset."""

    base_offset: int
    log_append_time_ms: int
    log_start_offset: int


class PartitionLog:
    """One Kafka log directory ``<topic>-<partition>/``: append, read, recover.

    Attributes:
        topic, partition: the partition this log holds.
        directory: its folder.
        log_start_offset: the first offset still readable (raised by DeleteRecords
            and retention).
        high_watermark: the log end offset (no replication: every appended batch
            is committed at once).
        segment_bytes: roll a new segment when the active one would exceed this.
        listener: the partition's :class:`LogListener` (None: a tool's or test's
            log; batches keep their epoch).
        producer_state: idempotent producers' epochs and sequences
            (:class:`kproto.broker.producer_state.ProducerStateManager`).
        txn_index: open and aborted transactions
            (:class:`kproto.broker.txn_index.TransactionIndex`), for the last
            stable offset and read-committed fetches.

    Only the event-loop thread may call the methods (no locking).
    """

    def __init__(
        self,
        topic: str,
        partition: int,
        directory: Path,
        *,
        segment_bytes: int,
        files: FileCache | None = None,
        listener: LogListener | None = None,
    ) -> None:
        self.files = files if files is not None else shared_file_cache()
        self.topic = topic
        self.partition = partition
        self.directory = directory
        self.segment_bytes = segment_bytes
        self.segments: list[Segment] = []
        self.log_start_offset = 0
        self.producer_state = ProducerStateManager()
        self.txn_index = TransactionIndex()
        self.listener = listener
        #: the highest ``partition_leader_epoch`` of the stored batches (-1: none),
        #: from recovery and appends: a restarted cluster resumes its epochs here
        self.latest_epoch = -1

    # ------------------------------------------------------------- open/recover

    @classmethod
    def open(
        cls,
        topic: str,
        partition: int,
        directory: Path,
        *,
        segment_bytes: int,
        log_start_offset: int = 0,
        files: FileCache | None = None,
        listener: LogListener | None = None,
    ) -> PartitionLog:
        """Open (creating if needed) the log in ``directory`` and recover it.

        Every ``*.log`` file is scanned in base-offset order; a trailing partial or
        corrupt batch is truncated away (logged as a warning), as Kafka's recovery
        does after an unclean shutdown. ``listener``: see :class:`LogListener`.
        """
        self = cls(
            topic,
            partition,
            directory,
            segment_bytes=segment_bytes,
            files=files,
            listener=listener,
        )
        directory.mkdir(parents=True, exist_ok=True)
        recover_swaps(directory)  # a compaction cut short
        paths = sorted(
            directory / n for n in os.listdir(directory) if n.endswith(".log")
        )
        truncated = False
        for path in paths:
            try:
                base = int(path.stem)
            except ValueError:
                continue
            if truncated:
                log.warning("recovery: deleting %s after a truncated segment", path)
                path.unlink()
                continue
            segment = Segment(path, base, self.files)
            truncated = self._recover_segment(segment)
            self.segments.append(segment)
        if not self.segments:
            base = max(log_start_offset, 0)
            self.segments.append(
                Segment(directory / segment_file_name(base), base, self.files)
            )
            self.segments[0].create()  # an empty active segment, as Kafka has
        self.log_start_offset = max(log_start_offset, self.segments[0].base_offset)
        return self

    def _recover_segment(self, segment: Segment) -> bool:
        """Index one segment; return True if it had to be truncated."""
        data = segment.path.read_bytes()
        batches = decode_batches(data, check_crc=True)
        good_end = 0
        reason = ""
        try:
            for batch in batches:
                self._index_recovered(segment, batch, data)
                good_end = batch.position + LOG_OVERHEAD + batch.batch_length
        except DecodeError as err:
            reason = f"corrupt batch: {err}"
        if not reason and batches.partial_tail_bytes:
            reason = f"torn trailing batch of {batches.partial_tail_bytes} bytes"
        segment.size = good_end
        if good_end < len(data):
            log.warning(
                "recovery: truncating %s from %d to %d bytes (%s)",
                segment.path,
                len(data),
                good_end,
                reason or "trailing bytes",
            )
            os.truncate(segment.path, good_end)
            return True
        return False

    def _index_recovered(
        self, segment: Segment, batch: RecordBatch, data: bytes
    ) -> None:
        last = batch.base_offset + batch.last_offset_delta
        size = LOG_OVERHEAD + batch.batch_length
        segment.index(
            batch.base_offset, last, batch.position, size, batch.max_timestamp
        )
        self._track(batch, batch.base_offset)
        self.txn_index.on_batch(batch, batch.base_offset)
        self.latest_epoch = max(self.latest_epoch, batch.partition_leader_epoch)

    def _track(self, batch: RecordBatch | ValidBatch, base: int) -> None:
        """Producer state of a batch written at ``base`` (recovered or appended):
        a marker's epoch, an idempotent batch's sequences."""
        if batch.producer_id < 0:
            return
        if isinstance(batch, RecordBatch) and batch.is_control:
            control = batch.records[0].control if batch.records else None
            self.producer_state.update_epoch(
                batch.producer_id,
                batch.producer_epoch,
                -1 if control is None else control.coordinator_epoch,
            )
        elif batch.base_sequence >= 0 and not batch.is_control:
            self.producer_state.update(
                batch.producer_id,
                batch.producer_epoch,
                batch.base_sequence,
                batch.base_sequence + batch.last_offset_delta,
                base,
                batch.max_timestamp,
            )

    # ------------------------------------------------------------------ facts

    @property
    def high_watermark(self) -> int:
        """The log end offset: the offset the next appended record gets."""
        return self.segments[-1].next_offset

    @property
    def last_stable_offset(self) -> int:
        """The offset below which no transaction is open (LSO, KIP-98): the first
        offset of the oldest open transaction, else the high watermark."""
        first = self.txn_index.first_unstable_offset
        hwm = self.high_watermark
        return hwm if first is None else min(first, hwm)

    @property
    def size_bytes(self) -> int:
        return sum(s.size for s in self.segments)

    def batches(self, start_offset: int = 0) -> Iterator[RecordBatch]:
        """Decode the stored batches from the one holding ``start_offset`` on
        (one segment in memory at a time; CRCs checked).

        Raises:
            kproto.serial.DecodeError: a stored batch is corrupt.
        """
        for segment in self.segments:
            if segment.next_offset <= start_offset or not segment.size:
                continue
            data = segment.read_all()
            for batch in decode_batches(data):
                if batch.base_offset + batch.last_offset_delta >= start_offset:
                    yield batch

    # ----------------------------------------------------------------- append

    async def append(
        self,
        records: bytes,
        *,
        max_message_bytes: int | None = None,
        log_append_time_ms: int | None = None,
    ) -> int:
        """Append raw record batches written by the broker itself (the group
        coordinator: Kafka's ``AppendOrigin.COORDINATOR``); return the first
        assigned base offset.

        See :meth:`append_batches` for the checks and errors.
        """
        return self.append_batches(
            records,
            LogPolicy(max_message_bytes=max_message_bytes, client=False),
            log_append_time_ms=log_append_time_ms,
        ).base_offset

    def append_batches(
        self,
        records: bytes,
        policy: LogPolicy | None = None,
        *,
        log_append_time_ms: int | None = None,
        max_message_bytes: int | None = None,
        one_batch: bool = False,
        checked: list[ValidBatch] | None = None,
    ) -> AppendResult:
        """Validate and append the magic 2 record batches in ``records``.

        The batches are checked by
        :func:`kproto.broker.log_validator.validate_batches` under ``policy``
        (default: a client's Produce limited by ``max_message_bytes`` bytes and,
        with ``one_batch``, to one batch), as Kafka's ``LogValidator``
        does; each gets the next base offset patched into its first 8 bytes and
        the partition's leader epoch (:meth:`LogListener.leader_epoch`) into its ``partition_leader_epoch``,
        and is written unchanged otherwise (``checked``: what
        :meth:`~kproto.broker.validation_pool.ValidationPool.validate` returned for
        ``records``, not validated again). Idempotent batches (producer_id >= 0) are
        sequence-checked per producer id and epoch as Kafka's
        ``ProducerAppendInfo.checkSequence``: a retried batch among the producer's
        last five is not written again and its earlier base offset is returned.

        Raises:
            LogAppendError: the validator's errors (CORRUPT_MESSAGE,
                INVALID_RECORD, MESSAGE_TOO_LARGE, INVALID_TIMESTAMP, with
                ``record_errors``), INVALID_PRODUCER_EPOCH,
                OUT_OF_ORDER_SEQUENCE_NUMBER, KAFKA_STORAGE_ERROR (the segment
                file could not be written: nothing of that batch is indexed).
        """
        # raises RecordValidationError, a LogAppendError with record_errors
        if checked is None:
            checked = validate_batches(
                records,
                policy
                or LogPolicy(max_message_bytes=max_message_bytes, one_batch=one_batch),
            )
        first = checked[0]
        if first.producer_id >= 0 and not first.is_control and first.base_sequence < 0:
            self.producer_state.check_epoch(first.producer_id, first.producer_epoch)
        elif first.producer_id >= 0 and not first.is_control:
            # raises ProducerStateError, a LogAppendError
            duplicate = self.producer_state.check(
                first.producer_id,
                first.producer_epoch,
                first.base_sequence,
                first.base_sequence + first.last_offset_delta,
            )
            if duplicate is not None:
                return AppendResult(duplicate, -1, self.log_start_offset)
        first_offset = self.high_watermark
        listener = self.listener
        epoch = None if listener is None else listener.leader_epoch()
        try:
            for batch in checked:
                self._write(records, batch, log_append_time_ms, epoch)
        except OSError as err:
            raise LogAppendError(
                ErrorCode.KAFKA_STORAGE_ERROR,
                f"could not write to the log of {self.topic}-{self.partition}: {err}",
            ) from err
        finally:
            if self.high_watermark != first_offset and listener is not None:
                listener.appended()
        return AppendResult(
            first_offset,
            log_append_time_ms if log_append_time_ms is not None else -1,
            self.log_start_offset,
        )

    def _write(
        self,
        records: bytes,
        batch: ValidBatch,
        log_append_time_ms: int | None,
        epoch: int | None,
    ) -> None:
        base = self.high_watermark
        size = batch.size
        # one copy of the batch, its base offset and leader epoch patched in place
        # (Kafka's setLastOffset and setPartitionLeaderEpoch on the request's
        # buffer; neither is under the CRC), written by one pwrite
        raw: bytes | bytearray = bytearray(
            memoryview(records)[batch.position : batch.position + size]
        )
        _BASE_OFFSET.pack_into(raw, 0, base)
        if epoch is not None:
            _INT32.pack_into(raw, PARTITION_LEADER_EPOCH_AT, epoch)
        segment = self.segments[-1]
        if segment.size and segment.size + size > self.segment_bytes:
            segment = self._roll(base)
        last = base + batch.last_offset_delta
        max_ts = batch.max_timestamp
        if log_append_time_ms is not None:
            max_ts = log_append_time_ms
            raw = set_log_append_time(raw, log_append_time_ms)
        segment.add(raw, base, last, max_ts)
        (stored_epoch,) = _INT32.unpack_from(raw, PARTITION_LEADER_EPOCH_AT)
        self.latest_epoch = max(self.latest_epoch, stored_epoch)
        if batch.is_control:  # a transaction marker (rare): decoded whole
            for decoded in decode_batches(bytes(raw)):
                self._track(decoded, base)
                self.txn_index.on_batch(decoded, base)
        else:
            self._track(batch, base)
            self.txn_index.on_stored(raw, base)

    def _roll(self, base: int) -> Segment:
        segment = Segment(self.directory / segment_file_name(base), base, self.files)
        segment.create()
        self.segments.append(segment)
        return segment

    # ------------------------------------------------------------------- read

    def read(
        self,
        offset: int,
        max_bytes: int,
        *,
        min_one: bool = True,
        max_offset: int | None = None,
    ) -> bytes:
        """Whole batches from the one containing ``offset``, up to ``max_bytes``
        (bytes) from one segment; with ``min_one`` the first batch is returned even
        when it is larger (KIP-74). Empty at or past the high watermark; with
        ``max_offset`` (read_committed: the last stable offset) no batch starting
        at or after it is returned.
        """
        extent = self.read_extent(
            offset, max_bytes, min_one=min_one, max_offset=max_offset
        )
        return b"" if extent is None else extent.read()

    def read_extent(
        self,
        offset: int,
        max_bytes: int,
        *,
        min_one: bool = True,
        max_offset: int | None = None,
    ) -> Extent | None:
        """Where :meth:`read` would read, from the batch index alone (no file is
        touched): the segment, byte position and size of the whole batches it
        returns and the offset after the last of them; None when it returns
        nothing. A Fetch waiting for ``min_bytes`` counts sizes this way."""
        if max_offset is not None and offset >= max_offset:
            return None
        for segment in self.segments:
            if offset < segment.next_offset and segment.offsets:
                break
        else:
            return None
        offsets = segment.offsets
        i = max(bisect.bisect_right(offsets, offset) - 1, 0)
        if segment.last_offsets[i] < offset:  # a gap left by compaction
            i += 1
        start = segment.positions[i]
        end = start
        n = len(offsets)
        sizes = segment.sizes
        first = i
        while i < n:
            if max_offset is not None and offsets[i] >= max_offset:
                break
            size = sizes[i]
            if end - start + size > max_bytes and not (min_one and end == start):
                break
            end += size
            i += 1
        if i == first:
            return None
        return Extent(segment, start, end - start, segment.last_offsets[i - 1] + 1)

    def offset_for_timestamp(self, timestamp_ms: int) -> tuple[int, int] | None:
        """``(offset, timestamp)`` of the first record with timestamp >=
        ``timestamp_ms`` (ListOffsets by time), or None when there is none."""
        for segment in self.segments:
            for i, max_ts in enumerate(segment.max_timestamps):
                if (
                    max_ts < timestamp_ms
                    or segment.last_offsets[i] < self.log_start_offset
                ):
                    continue
                data = segment.read(segment.positions[i], segment.sizes[i])
                for batch in decode_batches(data):
                    for record in batch.records:
                        if (
                            record.timestamp >= timestamp_ms
                            and record.offset >= self.log_start_offset
                        ):
                            return record.offset, record.timestamp
        return None

    def max_timestamp(self) -> tuple[int, int] | None:
        """``(offset, timestamp)`` of the record with the largest timestamp
        (ListOffsets MAX_TIMESTAMP, KIP-734), or None for an empty log."""
        best: tuple[int, int, Segment, int] | None = None
        for segment in self.segments:
            for i, max_ts in enumerate(segment.max_timestamps):
                if segment.last_offsets[i] >= self.log_start_offset and (
                    best is None or max_ts > best[1]
                ):
                    best = (i, max_ts, segment, 0)
        if best is None:
            return None
        i, max_ts, segment, _ = best
        data = segment.read(segment.positions[i], segment.sizes[i])
        for batch in decode_batches(data):
            for record in batch.records:
                if record.timestamp == max_ts:
                    return record.offset, max_ts
            return batch.base_offset + batch.last_offset_delta, max_ts
        return None

    # --------------------------------------------------------------- deletion

    def delete_records_before(self, offset: int) -> int:
        """Raise the log start offset to ``offset`` (DeleteRecords) and delete the
        segments wholly below it; return the new log start offset.

        Raises:
            LogAppendError: OFFSET_OUT_OF_RANGE when ``offset`` is negative or
                above the high watermark.
        """
        if offset < 0:  # Kafka's Partition.deleteRecordsOnLeader
            raise LogAppendError(
                ErrorCode.OFFSET_OUT_OF_RANGE,
                f"the offset {offset} for partition {self.topic}-{self.partition} "
                "is not valid",
            )
        if offset > self.high_watermark:
            raise LogAppendError(
                ErrorCode.OFFSET_OUT_OF_RANGE,
                f"offset {offset} is above the high watermark {self.high_watermark}",
            )
        if offset > self.log_start_offset:
            self.log_start_offset = offset
            self._delete_segments_below(offset)
            self.txn_index.truncate_before(offset)
        return self.log_start_offset

    def _delete_segments_below(self, offset: int) -> None:
        while len(self.segments) > 1 and self.segments[1].base_offset <= offset:
            segment = self.segments.pop(0)
            segment.close()
            segment.path.unlink(missing_ok=True)

    def apply_retention(
        self, *, retention_ms: int, retention_bytes: int, now_ms: int
    ) -> None:
        """Delete whole old segments (never the active one) past ``retention_bytes``
        (bytes, -1 unlimited) or whose newest record is older than
        ``retention_ms`` (ms, -1 unlimited), as Kafka's log retention does."""
        while len(self.segments) > 1:
            segment = self.segments[0]
            too_big = (
                retention_bytes >= 0
                and self.size_bytes - segment.size >= retention_bytes
            )
            newest = max(segment.max_timestamps) if segment.max_timestamps else -1
            too_old = (
                retention_ms >= 0 and newest >= 0 and now_ms - newest > retention_ms
            )
            if not (too_big or too_old):
                break
            self.segments.pop(0)
            segment.close()
            segment.path.unlink(missing_ok=True)
            self.log_start_offset = max(
                self.log_start_offset, self.segments[0].base_offset
            )
            self.txn_index.truncate_before(self.log_start_offset)

    def close(self) -> None:
        for segment in self.segments:
            segment.close()

    def delete(self) -> None:
        """Close and remove the whole directory (DeleteTopics)."""
        self.close()
        for attempt in range(3):  # the log cleaner's thread may add a .cleaned file
            for path in self.directory.glob("*"):
                path.unlink(missing_ok=True)
            try:
                self.directory.rmdir()
                return
            except OSError as err:
                if err.errno != errno.ENOTEMPTY or attempt == 2:
                    raise

    def __repr__(self) -> str:
        return (
            f"PartitionLog({self.topic}-{self.partition}, log_start_offset={self.log_start_offset}, "
            f"high_watermark={self.high_watermark}, segments={len(self.segments)})"
        )
