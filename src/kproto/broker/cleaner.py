"""Cleaning one compacted log: the offset map and the segment rewrite.

Follows Kafka's ``Cleaner`` (``core/src/main/scala/kafka/log/LogCleaner.scala``,
``storage/.../log/Cleaner.java``), ``SkimpyOffsetMap`` and
``MemoryRecords.filterTo``:

* :func:`build_offset_map` reads the dirty segments and maps the MD5 digest of
  every key to the offset of its latest record (control batches and aborted
  transactional batches skipped), stopping at a segment boundary when the map
  holds ``max_entries`` keys (Kafka's dedupe buffer).
* :func:`clean_segment` rewrites one segment: a record is kept when no later
  record has its key and it is not an expired tombstone; batches keep their base
  offset, a rewritten batch gets the retained records (each record's bytes
  unchanged but for the timestamp delta when the base timestamp moves), its
  record count, last offset delta, max timestamp and CRC-32C recomputed, and is
  recompressed with its own codec. A batch with no record left disappears, except
  the last batch of a live idempotent producer, kept as an empty header (Kafka's
  ``BatchRetention.RETAIN_EMPTY``, so sequence numbers survive).
* Tombstones and markers are removed in two passes (KIP-534): the first cleaning
  that keeps a tombstone (or a marker whose transaction has no data left) writes
  ``deleteHorizonMs = now + delete.retention.ms`` as the batch's base timestamp
  with attribute bit 0x40; a later cleaning past that horizon drops them.
* Transactions (KIP-98), from the batch attributes alone: a transactional data
  batch is aborted when an ABORT marker of its producer follows it in the
  cleaned range; aborted records are removed; a COMMIT marker is kept while
  this pass saw data of its transaction, an ABORT marker while aborted data
  of its transaction remained, then each gets a delete horizon and goes.
  Data of a transaction whose marker is not in the range is left untouched.

These functions run in a worker thread: they read only the segment files they
are given (immutable, below the active segment) and write ``<base>.log.cleaned``;
the swap is done on the event loop (:meth:`PartitionLog.replace_segment`).
"""

from __future__ import annotations

import hashlib
import logging
import os
import struct
from collections.abc import Iterator
from pathlib import Path

import attrs
import crc32c

from kproto._varint import read_varint, read_varlong, write_uvarint
from kproto.records import DEFAULT_MAX_DECOMPRESSED_SIZE, ControlRecordType
from kproto.records._codecs import compress, decompress
from kproto.records._header import (
    ATTR_COMPRESSION_MASK,
    ATTR_CONTROL,
    ATTR_DELETE_HORIZON,
    ATTR_LOG_APPEND_TIME,
    ATTR_TRANSACTIONAL,
    LOG_OVERHEAD,
    RECORDS_AT,
    V2_HEADER,
    V2Header,
)
from kproto.serial import DecodeError

__all__ = [
    "DEFAULT_MAX_MAP_ENTRIES",
    "AbortedTxns",
    "CleanedSegment",
    "OffsetMap",
    "TxnState",
    "build_offset_map",
    "clean_segment",
    "find_aborted",
    "key_digest",
    "recover_swaps",
]

log = logging.getLogger("kproto.broker")

#: Keys one cleaning pass maps (Kafka's 128 MiB ``log.cleaner.dedupe.buffer.size``
#: holds about 5.5 million 24-byte entries).
DEFAULT_MAX_MAP_ENTRIES = 1_000_000

_TAIL = struct.Struct(">hiqqqhii")  # attributes .. records_count (after the crc)
_HEAD = struct.Struct(">qiibI")  # base_offset, batch_length, leader epoch, magic, crc
_CONTROL_KEY = struct.Struct(">hh")  # version, type

#: key digest -> offset of the key's latest record (Kafka's ``SkimpyOffsetMap``).
OffsetMap = dict[bytes, int]
#: producer id -> [(first offset, ABORT marker offset)] of its aborted transactions.
AbortedTxns = dict[int, list[tuple[int, int]]]


def key_digest(key: bytes) -> bytes:
    """The 16-byte MD5 digest a key is mapped by (as ``SkimpyOffsetMap``)."""
    return hashlib.md5(key, usedforsecurity=False).digest()


# ------------------------------------------------------------------ raw batches


@attrs.frozen
class _RawRecord:
    offset: int
    timestamp: int
    key: bytes | None
    is_tombstone: bool
    body: bytes  # attributes onwards (without the length prefix)
    ts_delta_end: int  # end of the timestamp delta inside body


def _batches(data: bytes, path: Path) -> Iterator[tuple[V2Header, int]]:
    """``(header, position)`` of each batch in a segment; CRCs checked.

    Raises:
        DecodeError: a torn or corrupt batch (the segment was recovered, so
            this means the file changed under the cleaner).
    """
    pos = 0
    while pos < len(data):
        if len(data) - pos < RECORDS_AT:
            raise DecodeError(f"{path}: torn batch header at byte {pos}")
        head = V2Header._make(V2_HEADER.unpack_from(data, pos))
        end = pos + LOG_OVERHEAD + head.batch_length
        if head.magic != 2 or end > len(data) or head.batch_length < 49:
            raise DecodeError(f"{path}: bad batch at byte {pos}")
        if crc32c.crc32c(data[pos + 21 : end]) != head.crc:
            raise DecodeError(f"{path}: CRC mismatch in the batch at byte {pos}")
        yield head, pos
        pos = end


def _records(data: bytes, head: V2Header, pos: int) -> list[_RawRecord]:
    """The records of the batch at ``pos``, decompressed, as raw slices."""
    end = pos + LOG_OVERHEAD + head.batch_length
    region = data[pos + RECORDS_AT : end]
    codec = head.attributes & ATTR_COMPRESSION_MASK
    if codec:
        region = decompress(codec, region, DEFAULT_MAX_DECOMPRESSED_SIZE)
    out = []
    at = 0
    for _ in range(head.records_count):
        length, at = read_varint(region, at)
        body = bytes(region[at : at + length])
        at += length
        p = 1  # record attributes
        ts_delta, p = read_varlong(body, p)
        ts_end = p
        offset_delta, p = read_varint(body, p)
        key_len, p = read_varint(body, p)
        key = None if key_len < 0 else body[p : p + key_len]
        p += max(key_len, 0)
        value_len, p = read_varint(body, p)
        out.append(
            _RawRecord(
                head.base_offset + offset_delta,
                head.base_timestamp + ts_delta,
                key,
                value_len < 0,
                body,
                ts_end,
            )
        )
    return out


def _zigzag(value: int) -> bytes:
    """``value`` (int64) as a zigzag-encoded signed varlong."""
    return write_uvarint(((value << 1) ^ (value >> 63)) & 0xFFFFFFFFFFFFFFFF)


def _build_batch(
    head: V2Header,
    records: list[_RawRecord],
    *,
    base_timestamp: int,
    attributes: int,
) -> bytes:
    """A batch of ``records`` keeping ``head``'s base offset and producer fields
    (Kafka's ``MemoryRecords.buildRetainedRecordsInto``); an empty ``records``
    gives the empty header of ``DefaultRecordBatch.writeEmptyHeader``."""
    parts = []
    for r in records:
        body = r.body
        if base_timestamp != head.base_timestamp:
            body = (
                body[:1]
                + _zigzag(r.timestamp - base_timestamp)
                + body[r.ts_delta_end :]
            )
        parts.append(_zigzag(len(body)) + body)
    region = b"".join(parts)
    codec = attributes & ATTR_COMPRESSION_MASK
    if records:
        if codec:
            region = compress(codec, region)
        last_delta = records[-1].offset - head.base_offset
        if attributes & ATTR_LOG_APPEND_TIME:
            max_ts = head.max_timestamp
        else:
            max_ts = max(r.timestamp for r in records)
    else:
        # writeEmptyHeader: timestamp type, transactional and control bits only
        attributes &= ATTR_LOG_APPEND_TIME | ATTR_TRANSACTIONAL | ATTR_CONTROL
        last_delta = head.last_offset_delta
        max_ts = head.max_timestamp
        base_timestamp = head.max_timestamp
    tail = _TAIL.pack(
        attributes,
        last_delta,
        base_timestamp,
        max_ts,
        head.producer_id,
        head.producer_epoch,
        head.base_sequence,
        len(records),
    )
    crc = crc32c.crc32c(region, crc32c.crc32c(tail))
    return (
        _HEAD.pack(
            head.base_offset, 49 + len(region), head.partition_leader_epoch, 2, crc
        )
        + tail
        + region
    )


def _control_type(data: bytes, head: V2Header, pos: int) -> int | None:
    """The type of a control batch's (first) record, None when it has none."""
    records = _records(data, head, pos)
    if not records or records[0].key is None or len(records[0].key) < 4:
        return None
    kind: int = _CONTROL_KEY.unpack_from(records[0].key)[1]
    return kind


# ----------------------------------------------------------------- the passes


def find_aborted(
    segments: list[tuple[Path, int]],
) -> tuple[AbortedTxns, dict[int, int]]:
    """Walk the batch headers of ``segments`` (``(path, size)``, in order):
    the aborted transactions per producer, and the first offset of each
    producer's transaction still open at the end (its data is left alone).

    Raises:
        OSError, DecodeError: a segment cannot be read.
    """
    aborted: AbortedTxns = {}
    open_first: dict[int, int] = {}
    for path, size in segments:
        data = _read(path, size)
        for head, pos in _batches(data, path):
            pid = head.producer_id
            if not head.attributes & ATTR_TRANSACTIONAL or pid < 0:
                continue
            if head.attributes & ATTR_CONTROL:
                kind = _control_type(data, head, pos)
                first = open_first.pop(pid, None)
                if kind == ControlRecordType.ABORT and first is not None:
                    aborted.setdefault(pid, []).append((first, head.base_offset))
            else:
                open_first.setdefault(pid, head.base_offset)
    return aborted, open_first


def _is_open(undecided: dict[int, int], pid: int, offset: int) -> bool:
    first = undecided.get(pid)
    return first is not None and offset >= first


def _is_aborted(aborted: AbortedTxns, pid: int, offset: int) -> bool:
    return any(first <= offset < end for first, end in aborted.get(pid, ()))


def build_offset_map(
    segments: list[tuple[Path, int, int]],
    aborted: AbortedTxns,
    undecided: dict[int, int],
    max_entries: int = DEFAULT_MAX_MAP_ENTRIES,
) -> tuple[OffsetMap, int]:
    """Map every key of the dirty ``segments`` (``(path, size, next offset)``)
    to its latest offset; return the map and the offset it covers up to (the next
    offset of the last segment read: a segment that would overflow
    ``max_entries`` is left for the next pass, unless it is the first).

    Raises:
        OSError, DecodeError: a segment cannot be read.
    """
    offsets: OffsetMap = {}
    end = segments[0][2] if segments else 0
    for i, (path, size, next_offset) in enumerate(segments):
        data = _read(path, size)
        found: OffsetMap = {}
        for head, pos in _batches(data, path):
            if head.attributes & ATTR_CONTROL:
                continue
            pid = head.producer_id
            if head.attributes & ATTR_TRANSACTIONAL and (
                _is_open(undecided, pid, head.base_offset)
                or _is_aborted(aborted, pid, head.base_offset)
            ):
                continue
            for record in _records(data, head, pos):
                if record.key is not None:
                    found[key_digest(record.key)] = record.offset
        if i and len(offsets) + len(found) > max_entries:
            break
        offsets.update(found)
        end = next_offset
    return offsets, end


@attrs.define
class TxnState:
    """What one cleaning pass carries from batch to batch (Kafka's
    ``CleanedTransactionMetadata``): the aborted transactions, the producers
    whose open transaction's data stays, the transactions seen with data."""

    aborted: AbortedTxns
    undecided: dict[int, int]
    #: producers of committed transactional data seen since their last marker
    committed_seen: set[int] = attrs.field(factory=set)
    #: producers of aborted data seen since their last marker
    aborted_seen: set[int] = attrs.field(factory=set)

    def on_data(self, head: V2Header) -> bool:
        """Whether a data batch's records are discarded (aborted)."""
        pid = head.producer_id
        if not head.attributes & ATTR_TRANSACTIONAL or pid < 0:
            return False
        if _is_aborted(self.aborted, pid, head.base_offset):
            self.aborted_seen.add(pid)
            return True
        self.committed_seen.add(pid)
        return False

    def on_control(self, kind: int | None, pid: int) -> bool:
        """Whether a marker may go (once its delete horizon passes)."""
        if kind == ControlRecordType.ABORT:
            seen = pid in self.aborted_seen
            self.aborted_seen.discard(pid)
            return not seen
        if kind == ControlRecordType.COMMIT:
            seen = pid in self.committed_seen
            self.committed_seen.discard(pid)
            return not seen
        return kind is None  # an empty control batch was cleaned before


@attrs.frozen
class CleanedSegment:
    """The outcome of :func:`clean_segment`: the ``.cleaned`` file, its batches
    as ``(base, last, position, size, max timestamp)``, the earliest delete horizon
    its batches carry (ms, -1 none) and the records kept and removed."""

    path: Path
    batches: list[tuple[int, int, int, int, int]]
    size: int
    delete_horizon_ms: int
    kept: int
    removed: int


def clean_segment(
    path: Path,
    size: int,
    offsets: OffsetMap,
    txns: TxnState,
    *,
    now_ms: int,
    delete_retention_ms: int,
    producer_last_offsets: dict[int, int],
) -> CleanedSegment:
    """Write the cleaned twin of the segment ``path`` (its first ``size`` bytes)
    to ``<path>.cleaned`` (fsynced), as Kafka's ``Cleaner.cleanInto``.

    Raises:
        OSError, DecodeError: the segment cannot be read or the file written
            (no ``.cleaned`` file is left behind).
    """
    data = _read(path, size)
    out: list[bytes] = []
    index: list[tuple[int, int, int, int, int]] = []
    written = 0
    pending = -1
    kept = removed = 0
    for head, pos in _batches(data, path):
        end = pos + LOG_OVERHEAD + head.batch_length
        attributes = head.attributes
        pid = head.producer_id
        is_control = bool(attributes & ATTR_CONTROL)
        has_horizon = bool(attributes & ATTR_DELETE_HORIZON)
        horizon = head.base_timestamp if has_horizon else None
        if is_control:
            can_discard = txns.on_control(_control_type(data, head, pos), pid)
            discard = can_discard and horizon is not None and horizon <= now_ms
        elif attributes & ATTR_TRANSACTIONAL and _is_open(
            txns.undecided, pid, head.base_offset
        ):
            can_discard = discard = False
            out.append(data[pos:end])  # an open transaction: left as it is
            index.append(
                (
                    head.base_offset,
                    head.base_offset + head.last_offset_delta,
                    written,
                    end - pos,
                    head.max_timestamp,
                )
            )
            written += end - pos
            continue
        else:
            can_discard = discard = txns.on_data(head)
        last_of_producer = (
            pid >= 0
            and producer_last_offsets.get(pid)
            == head.base_offset + head.last_offset_delta
        )
        records = _records(data, head, pos)
        if discard:
            retained: list[_RawRecord] = []
        elif is_control:
            retained = records
        else:
            retained = [
                r
                for r in records
                if r.key is not None
                and r.offset >= offsets.get(key_digest(r.key), -1)
                and (not r.is_tombstone or horizon is None or now_ms < horizon)
            ]
        kept += len(retained)
        removed += len(records) - len(retained)
        tombstones = not is_control and any(r.is_tombstone for r in retained)
        marker_for_empty_txn = is_control and can_discard
        need_horizon = (tombstones or marker_for_empty_txn) and horizon is None
        if retained and len(retained) == len(records) and not need_horizon:
            batch = data[pos:end]
        elif retained:
            if need_horizon:
                horizon = now_ms + delete_retention_ms
                attributes |= ATTR_DELETE_HORIZON
            base_ts = horizon if horizon is not None else retained[0].timestamp
            batch = _build_batch(
                head, retained, base_timestamp=base_ts, attributes=attributes
            )
        elif last_of_producer:
            batch = _build_batch(
                head, [], base_timestamp=head.max_timestamp, attributes=attributes
            )
        else:
            continue
        (last_delta,) = struct.unpack_from(">i", batch, 23)
        (max_ts,) = struct.unpack_from(">q", batch, 35)
        index.append(
            (
                head.base_offset,
                head.base_offset + last_delta,
                written,
                len(batch),
                max_ts,
            )
        )
        out.append(batch)
        written += len(batch)
        if horizon is not None and batch[22] & ATTR_DELETE_HORIZON:
            pending = horizon if pending < 0 else min(pending, horizon)
    cleaned = path.with_name(path.name + ".cleaned")
    try:
        with open(cleaned, "wb") as f:
            for chunk in out:
                f.write(chunk)
            f.flush()
            os.fsync(f.fileno())
    except OSError:
        cleaned.unlink(missing_ok=True)
        raise
    return CleanedSegment(cleaned, index, written, pending, kept, removed)


def _read(path: Path, size: int) -> bytes:
    with open(path, "rb") as f:
        return f.read(size)


def recover_swaps(directory: Path) -> None:
    """Finish or roll back a compaction cut short, before a log is opened
    (Kafka's ``LogLoader``): a ``<base>.log.cleaned`` was not yet committed and
    is deleted; a ``<base>.log.swap`` is complete and replaces ``<base>.log``.

    Raises:
        OSError: a file cannot be deleted or renamed.
    """
    # one directory listing (a pathlib glob per suffix cost ~0.3 ms a partition,
    # paid again for every partition a new topic opens)
    with os.scandir(directory) as entries:
        names = sorted(e.name for e in entries)
    for name in names:
        if name.endswith(".log.cleaned"):
            path = directory / name
            log.warning("recovery: deleting the unfinished cleaning %s", path)
            path.unlink()
    for name in names:
        if name.endswith(".log.swap"):
            path = directory / name
            log.warning("recovery: completing the swap of %s", path)
            os.replace(path, path.with_suffix(""))
