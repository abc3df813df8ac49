"""One share partition: the delivery state of a topic partition for one share group.

Follows Kafka's ``SharePartition`` (core, ``kafka.server.share``) and KIP-932:

- the *share-partition start offset* (SPSO) is the first offset not yet
  acknowledged or archived; the *end offset* is the next offset never acquired;
  the records in between are *in flight*, each AVAILABLE, ACQUIRED (locked to one
  member until its acquisition lock expires), ACKNOWLEDGED or ARCHIVED
  (:class:`RecordState`, Kafka's ids);
- :meth:`SharePartition.acquire` hands AVAILABLE records (redeliveries first, then
  new records from the log, whole batches) to a member, counting deliveries, up to
  ``max_records`` and the in-flight window ``partition_max_record_locks`` past the
  SPSO; control batches are archived, never delivered;
- :meth:`SharePartition.acknowledge` applies ACCEPT (ACKNOWLEDGED), RELEASE
  (AVAILABLE again), REJECT and GAP (ARCHIVED) and RENEW (a new lock); a record
  released or timed out after ``delivery_count_limit`` deliveries is ARCHIVED;
- the SPSO moves past acknowledged and archived records.

Kafka keeps in-flight batches (``InFlightBatch``) split into per-offset state on
demand; this keeps one small entry per in-flight offset, bounded by the window.
Lock state is not persisted (as in Kafka): :meth:`SharePartition.state_batches`
writes acquired records as AVAILABLE with their delivery count.
"""

from __future__ import annotations

import enum
import itertools
import struct
from collections.abc import Callable, Iterable, Iterator

import attrs

from kproto.broker.groups.timers import Scheduler, TimerHandle
from kproto.broker.log import PartitionLog
from kproto.broker.txn_index import AbortedTxn
from kproto.errors import ErrorCode
from kproto.records._header import ATTRIBUTES_AT, LAST_OFFSET_DELTA_AT

from .config import ShareConfig

__all__ = [
    "AcknowledgeType",
    "AcquiredRange",
    "RecordState",
    "SharePartition",
    "StateBatch",
    "read_batches",
]

_HEADER = struct.Struct(">qi")  # base_offset, batch_length
_CONTROL = 0x20
_TRANSACTIONAL = 0x10
_PRODUCER_ID = struct.Struct(">q")
_PRODUCER_ID_AT = 43  # DefaultRecordBatch: producer id after attributes and times
_READ_CHUNK = 1 << 20
#: Kafka's group.share.* defaults, for a share partition built without settings.
_DEFAULTS = ShareConfig()


class RecordState(enum.IntEnum):
    """A share-partition record's delivery state (Kafka's ``RecordState`` ids,
    also the ``DeliveryState`` of ``ShareSnapshotValue`` state batches)."""

    AVAILABLE = 0
    ACQUIRED = 1
    ACKNOWLEDGED = 2
    ARCHIVED = 4


class AcknowledgeType(enum.IntEnum):
    """ShareFetch/ShareAcknowledge ``AcknowledgeTypes`` (KIP-932; RENEW KIP-1222)."""

    GAP = 0
    ACCEPT = 1
    RELEASE = 2
    REJECT = 3
    RENEW = 4


@attrs.frozen
class AcquiredRange:
    """A ShareFetch ``AcquiredRecords`` entry: offsets first..last (inclusive),
    delivered ``delivery_count`` times."""

    first_offset: int
    last_offset: int
    delivery_count: int


@attrs.frozen
class StateBatch:
    """A persisted ``StateBatch`` (ShareSnapshotValue/ShareUpdateValue)."""

    first_offset: int
    last_offset: int
    delivery_state: int
    delivery_count: int


@attrs.define
class _InFlight:
    state: RecordState
    delivery_count: int = 0
    member_id: str | None = None
    lock: int = 0  # the acquisition that holds it (its timer's token)


@attrs.frozen
class _Limits:
    """What one acquisition may take (see :meth:`SharePartition.acquire`)."""

    max_records: int
    max_bytes: int
    record_limit: bool
    read_committed: bool
    min_one: bool


def _aborted(data: bytes, base: int, aborted: list[AbortedTxn]) -> bool:
    """Whether the stored batch ``data`` (at ``base``) holds records of one of the
    ``aborted`` transactions: transactional, of its producer, inside its range."""
    (attributes,) = struct.unpack_from(">h", data, ATTRIBUTES_AT)
    if not attributes & _TRANSACTIONAL:
        return False
    (producer_id,) = _PRODUCER_ID.unpack_from(data, _PRODUCER_ID_AT)
    return any(
        a.producer_id == producer_id and a.first_offset <= base <= a.last_offset
        for a in aborted
    )


def read_batches(
    plog: PartitionLog, first: int, last: int
) -> Iterator[tuple[int, int, bool, bytes]]:
    """``(base offset, last offset, is control, raw bytes)`` of the stored batches
    holding offsets ``first``..``last`` (inclusive), in offset order, read segment by
    segment in chunks of at most 1 MiB (a larger batch is read whole)."""
    offset = first
    while offset <= last and offset < plog.high_watermark:
        data = plog.read(offset, _READ_CHUNK, min_one=True)
        if not data:
            return
        pos = 0
        while pos + 61 <= len(data):
            base, length = _HEADER.unpack_from(data, pos)
            end = pos + 12 + length
            if end > len(data):
                break
            (attributes,) = struct.unpack_from(">h", data, pos + ATTRIBUTES_AT)
            (delta,) = struct.unpack_from(">i", data, pos + LAST_OFFSET_DELTA_AT)
            batch_last = base + delta
            if base > last:
                return
            if batch_last >= offset:
                yield base, batch_last, bool(attributes & _CONTROL), data[pos:end]
            offset = max(offset, batch_last + 1)
            pos = end
        if pos == 0:
            return  # nothing whole decoded: stop rather than loop


@attrs.define(eq=False)
class SharePartition:
    """The delivery state of ``topic``/``partition`` for share group ``group_id``.

    Args:
        start_offset: the SPSO to start from (no records in flight).
        lock_duration_ms, delivery_count_limit, max_record_locks: the group's
            ``group.share.*`` settings (ms, deliveries, records; Kafka's defaults
            unless given; :meth:`configure` sets them from a
            :class:`.config.ShareConfig`).
        scheduler: runs lock expiries.
        on_released: called (no arguments) after a lock expiry changed state, so the
            owner can persist it and wake waiting fetches.

    Only the event-loop thread may call the methods.
    """

    group_id: str
    topic: str
    partition: int
    start_offset: int
    lock_duration_ms: int = attrs.field(
        kw_only=True, default=_DEFAULTS.record_lock_duration_ms
    )
    delivery_count_limit: int = attrs.field(
        kw_only=True, default=_DEFAULTS.delivery_count_limit
    )
    max_record_locks: int = attrs.field(
        kw_only=True, default=_DEFAULTS.partition_max_record_locks
    )
    _scheduler: Scheduler = attrs.field(kw_only=True)
    _on_released: Callable[[SharePartition], None] = attrs.field(kw_only=True)
    state_epoch: int = attrs.field(default=0, kw_only=True)
    end_offset: int = attrs.field(init=False)
    records: dict[int, _InFlight] = attrs.field(init=False, factory=dict)
    _locks: dict[int, TimerHandle] = attrs.field(init=False, factory=dict)
    _lock_ids: Iterator[int] = attrs.field(
        init=False, factory=lambda: itertools.count(1)
    )

    @end_offset.default
    def _start(self) -> int:
        return self.start_offset

    def configure(self, config: ShareConfig) -> None:
        """Apply the lock duration, delivery count limit and in-flight record limit
        of ``config`` (the group's settings; a lock already taken keeps its
        expiry)."""
        self.lock_duration_ms = config.record_lock_duration_ms
        self.delivery_count_limit = config.delivery_count_limit
        self.max_record_locks = config.partition_max_record_locks

    # -- acquisition -----------------------------------------------------------

    def acquire(
        self,
        member_id: str,
        plog: PartitionLog,
        max_records: int,
        max_bytes: int,
        *,
        batch_size: int = 0,
        record_limit: bool = False,
        read_committed: bool = False,
        min_one: bool = True,
    ) -> tuple[list[AcquiredRange], bytes]:
        """Acquire records for ``member_id`` batch by batch from the share
        partition's next fetch offset (the first AVAILABLE in-flight record, else
        the end offset): in-flight AVAILABLE records (redeliveries) and new records
        from the log, as Kafka's ``SharePartition.acquire`` does.

        - ``max_records``: whole batches are taken while fewer were acquired (the
          last one may pass it, Kafka's ``batch_optimized`` mode); with
          ``record_limit`` (KIP-1206's ``record_limit`` mode) never more.
        - ``max_bytes``: the stored batches returned fit in it (bytes), except the
          first one when ``min_one`` (Kafka's log read with ``minOneMessage``).
        - ``batch_size``: the acquired ranges of new records are split at batch
          boundaries into ranges of about that many records (Kafka's
          ``createBatches``; 0 or below: not split; not in ``record_limit`` mode).
        - ``read_committed`` (``share.isolation.level``): new records are read
          only below the last stable offset, and those of aborted transactions are
          archived instead of acquired (Kafka's
          ``filterAbortedTransactionalAcquiredRecords``), never delivered.

        Returns the acquired ranges and the stored batches that hold them (whole
        batches, as Kafka returns them; the client keeps only the acquired
        offsets).

        Raises:
            OSError: the log could not be read (nothing stays acquired).
        """
        self._follow_log_start(plog)
        lock = next(self._lock_ids)
        acquired: list[int] = []
        boundaries: set[int] = set()
        chunks: list[bytes] = []
        try:
            self._acquire(
                member_id,
                plog,
                _Limits(max_records, max_bytes, record_limit, read_committed, min_one),
                lock,
                acquired,
                boundaries,
                chunks,
            )
            self._advance()
        except OSError:
            # the log could not be read: what this call took is AVAILABLE again,
            # undelivered (the caller answers KAFKA_STORAGE_ERROR)
            for offset in acquired:
                record = self.records[offset]
                record.delivery_count -= 1
                self._settle(record, RecordState.AVAILABLE)
            raise
        if not acquired:
            return [], b""
        self._locks[lock] = self._scheduler.call_later(
            self.lock_duration_ms, lambda: self._expire(lock)
        )
        split = 0 if record_limit else batch_size
        return self._ranges(acquired, boundaries, split), b"".join(chunks)

    def _acquire(
        self,
        member_id: str,
        plog: PartitionLog,
        limits: _Limits,
        lock: int,
        acquired: list[int],
        boundaries: set[int],
        chunks: list[bytes],
    ) -> None:
        available = [
            o for o, r in self.records.items() if r.state == RecordState.AVAILABLE
        ]
        start = min(available, default=self.end_offset)
        read_end = (
            plog.last_stable_offset if limits.read_committed else plog.high_watermark
        )
        # new records only inside the in-flight window past the SPSO
        window_end = min(read_end, self.start_offset + self.max_record_locks)
        last = max(self.end_offset, window_end) - 1
        if start > last or limits.max_records <= 0:
            return
        aborted = (
            plog.txn_index.aborted_between(start, last + 1)
            if limits.read_committed
            else []
        )
        size = 0
        for base, batch_last, control, data in read_batches(plog, start, last):
            if len(acquired) >= limits.max_records:
                break
            redelivered = [
                o
                for o in range(
                    max(base, start), min(batch_last, self.end_offset - 1) + 1
                )
                if (r := self.records.get(o)) is not None
                and r.state == RecordState.AVAILABLE
            ]
            new: range = range(0)
            if batch_last >= self.end_offset and base < window_end:
                new = range(max(base, self.end_offset), batch_last + 1)
            if new and (control or _aborted(data, base, aborted)):
                # markers and aborted transactions' records are never delivered
                for offset in new:
                    self.records[offset] = _InFlight(RecordState.ARCHIVED)
                self.end_offset = batch_last + 1
                new = range(0)
            taken = redelivered + list(new)
            if not taken:
                if base >= window_end and batch_last >= self.end_offset:
                    break
                continue
            if limits.record_limit:
                taken = taken[: limits.max_records - len(acquired)]
            if size + len(data) > limits.max_bytes and (size or not limits.min_one):
                break
            for offset in taken:
                record = self.records.get(offset)
                if record is None:
                    record = self.records[offset] = _InFlight(RecordState.AVAILABLE)
                self._take(record, member_id, lock)
                acquired.append(offset)
                self.end_offset = max(self.end_offset, offset + 1)
            boundaries.add(taken[0])
            chunks.append(data)
            size += len(data)

    def _take(self, record: _InFlight, member_id: str, lock: int) -> None:
        record.state = RecordState.ACQUIRED
        record.delivery_count += 1
        record.member_id = member_id
        record.lock = lock

    def _ranges(
        self, offsets: list[int], boundaries: set[int], batch_size: int
    ) -> list[AcquiredRange]:
        """Consecutive offsets of one delivery count as one range; a range of at
        least ``batch_size`` records (> 0) ends at the next batch boundary."""
        out: list[AcquiredRange] = []
        for offset in sorted(offsets):
            count = self.records[offset].delivery_count
            previous = out[-1] if out else None
            if (
                previous is not None
                and previous.last_offset == offset - 1
                and previous.delivery_count == count
                and not (
                    batch_size > 0
                    and offset in boundaries
                    and offset - previous.first_offset >= batch_size
                )
            ):
                out[-1] = AcquiredRange(previous.first_offset, offset, count)
            else:
                out.append(AcquiredRange(offset, offset, count))
        return out

    def _follow_log_start(self, plog: PartitionLog) -> None:
        """Records deleted from the log (DeleteRecords, retention) leave the share
        partition: the SPSO moves up to the log start offset."""
        low = plog.log_start_offset
        if low > self.start_offset:
            for offset in [o for o in self.records if o < low]:
                del self.records[offset]
            self.start_offset = low
            self.end_offset = max(self.end_offset, low)

    # -- acknowledgement -------------------------------------------------------

    def acknowledge(
        self, member_id: str, batches: Iterable[tuple[int, int, list[int]]]
    ) -> ErrorCode:
        """Apply a member's acknowledgement batches ``(first offset, last offset,
        acknowledge types)`` (one type for the whole range, or one per offset).

        Every record named must be ACQUIRED by ``member_id``; otherwise nothing is
        applied and the answer is INVALID_RECORD_STATE (Kafka's
        ``SharePartition.acknowledge``); malformed batches get INVALID_REQUEST."""
        changes: list[tuple[int, AcknowledgeType]] = []
        for first, last, types in batches:
            count = last - first + 1
            if count < 1 or len(types) not in (1, count):
                return ErrorCode.INVALID_REQUEST
            if first < self.start_offset or last >= self.end_offset:
                # outside the in-flight window nothing is acquired (and a huge
                # range is refused before it is walked)
                return ErrorCode.INVALID_RECORD_STATE
            try:
                kinds = [AcknowledgeType(t) for t in types]
            except ValueError:
                return ErrorCode.INVALID_REQUEST
            for i, offset in enumerate(range(first, last + 1)):
                record = self.records.get(offset)
                if (
                    record is None
                    or record.state != RecordState.ACQUIRED
                    or record.member_id != member_id
                ):
                    return ErrorCode.INVALID_RECORD_STATE
                changes.append((offset, kinds[0] if len(kinds) == 1 else kinds[i]))
        renew: list[int] = []
        for offset, kind in changes:
            record = self.records[offset]
            if kind == AcknowledgeType.ACCEPT:
                self._settle(record, RecordState.ACKNOWLEDGED)
            elif kind in (AcknowledgeType.REJECT, AcknowledgeType.GAP):
                self._settle(record, RecordState.ARCHIVED)
            elif kind == AcknowledgeType.RELEASE:
                self._release(record)
            else:
                renew.append(offset)
        if renew:
            lock = next(self._lock_ids)
            for offset in renew:
                self.records[offset].lock = lock
            self._locks[lock] = self._scheduler.call_later(
                self.lock_duration_ms, lambda: self._expire(lock)
            )
        self._advance()
        return ErrorCode.NONE

    def release_member(self, member_id: str) -> bool:
        """Release every record ``member_id`` holds (its share session closed or it
        left the group); True if any was."""
        held = [
            r
            for r in self.records.values()
            if r.state == RecordState.ACQUIRED and r.member_id == member_id
        ]
        for record in held:
            self._release(record)
        self._advance()
        return bool(held)

    def _settle(self, record: _InFlight, state: RecordState) -> None:
        record.state = state
        record.member_id = None
        record.lock = 0

    def _release(self, record: _InFlight) -> None:
        """Back to AVAILABLE, or ARCHIVED once delivered ``delivery_count_limit``
        times (the poison-record rule)."""
        limit_reached = record.delivery_count >= self.delivery_count_limit
        self._settle(
            record, RecordState.ARCHIVED if limit_reached else RecordState.AVAILABLE
        )

    def _expire(self, lock: int) -> None:
        self._locks.pop(lock, None)
        expired = [
            r
            for r in self.records.values()
            if r.state == RecordState.ACQUIRED and r.lock == lock
        ]
        for record in expired:
            self._release(record)
        if expired:
            self._advance()
            self._on_released(self)

    def _advance(self) -> None:
        """Move the SPSO past acknowledged and archived records; drop lock timers
        nobody holds any more."""
        while self.start_offset < self.end_offset:
            record = self.records.get(self.start_offset)
            if record is not None and record.state not in (
                RecordState.ACKNOWLEDGED,
                RecordState.ARCHIVED,
            ):
                break
            self.records.pop(self.start_offset, None)
            self.start_offset += 1
        held = {r.lock for r in self.records.values() if r.state == 1}
        for lock in [k for k in self._locks if k not in held]:
            self._locks.pop(lock).cancel()

    def cancel_timers(self) -> None:
        for handle in self._locks.values():
            handle.cancel()
        self._locks.clear()

    # -- persistence -----------------------------------------------------------

    def state_batches(self) -> list[StateBatch]:
        """The in-flight records as persisted state batches: consecutive offsets of
        one state and delivery count coalesced; ACQUIRED written as AVAILABLE (locks
        are not persisted, as in Kafka)."""
        out: list[StateBatch] = []
        for offset in range(self.start_offset, self.end_offset):
            record = self.records.get(offset)
            if record is None:
                continue
            state = int(
                RecordState.AVAILABLE
                if record.state == RecordState.ACQUIRED
                else record.state
            )
            previous = out[-1] if out else None
            if (
                previous is not None
                and previous.last_offset == offset - 1
                and (previous.delivery_state, previous.delivery_count)
                == (state, record.delivery_count)
            ):
                out[-1] = attrs.evolve(previous, last_offset=offset)
            else:
                out.append(StateBatch(offset, offset, state, record.delivery_count))
        return out

    def restore(self, start_offset: int, batches: Iterable[StateBatch]) -> None:
        """Load persisted state: the SPSO and the in-flight records (acquired ones
        come back AVAILABLE)."""
        self.cancel_timers()
        self.records.clear()
        self.start_offset = self.end_offset = start_offset
        for batch in batches:
            state = RecordState(batch.delivery_state)
            if state == RecordState.ACQUIRED:
                state = RecordState.AVAILABLE
            # a state batch never spans more than the in-flight window (bounded,
            # whatever the file says)
            last = min(batch.last_offset, start_offset + 2 * self.max_record_locks)
            for offset in range(max(batch.first_offset, start_offset), last + 1):
                self.records[offset] = _InFlight(state, batch.delivery_count)
                self.end_offset = max(self.end_offset, offset + 1)
        self._advance()

    def reset(self, start_offset: int) -> None:
        """AlterShareGroupOffsets: start over at ``start_offset``, nothing in flight."""
        self.restore(start_offset, ())
        self.state_epoch += 1
