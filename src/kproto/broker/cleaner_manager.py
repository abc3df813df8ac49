"""The log cleaner: which compacted logs to clean, when, and how far.

Follows Kafka's ``LogCleaner`` (the cleaner thread and its backoff,
``log.cleaner.backoff.ms``) and ``LogCleanerManager`` (``cleaner-offset-checkpoint``,
the cleanable range and ``grabFilthiestCompactedLog``):

* a log is cleaned when its topic's ``cleanup.policy`` holds ``compact``;
* its dirty section runs from the cleaner checkpoint (the first offset not yet
  cleaned; the log start offset when there is none) to the first uncleanable
  offset: the active segment, the first segment holding a record younger than
  ``min.compaction.lag.ms``, the last stable offset when the log has one;
* it is cleaned when dirty bytes / (clean + dirty bytes) reaches
  ``min.cleanable.dirty.ratio``, or the first batch of a dirty segment is older
  than ``max.compaction.lag.ms``, or a delete horizon this cleaner wrote has passed
  (KIP-534: tombstones are due to go);
* a pass cleans every segment from the log start to the end of the offset map,
  then checkpoints that end, in Kafka's checkpoint file format.

The rewrite runs in a worker thread one segment at a time; only the swap, the
checkpoint and the bookkeeping run on the event loop, so clients are served
meanwhile. Kafka merges small neighbouring segments while cleaning
(``groupSegmentsBySize``); here each segment is replaced by its own cleaned
twin (one rename: a swap needs no record of which segments it replaces), and a
cleaned segment left empty is deleted.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from array import array
from pathlib import Path

import attrs

from kproto.broker.checkpoint import read_offset_checkpoint, write_offset_checkpoint
from kproto.broker.cleaner import (
    DEFAULT_MAX_MAP_ENTRIES,
    TxnState,
    build_offset_map,
    clean_segment,
    find_aborted,
)
from kproto.broker.log import PartitionLog
from kproto.broker.segment import Segment
from kproto.broker.state import ClusterState, TopicMetadata
from kproto.serial import DecodeError

__all__ = ["CHECKPOINT_FILE", "CleanerStats", "LogCleaner", "replace_segment"]

log = logging.getLogger("kproto.broker")

#: Kafka's ``LogCleanerManager.offsetCheckpointFile``.
CHECKPOINT_FILE = "cleaner-offset-checkpoint"


@attrs.define
class CleanerStats:
    """What one :meth:`LogCleaner.clean_once` did: partitions cleaned, segments
    rewritten, records kept and removed."""

    partitions: int = 0
    segments: int = 0
    kept: int = 0
    removed: int = 0


@attrs.define(eq=False)
class LogCleaner:
    """Cleans the cluster's compacted logs in the background.

    Args:
        state: the cluster state (topics, logs, the clock ``now_ms``).
        backoff_ms: pause between passes (ms; Kafka's ``log.cleaner.backoff.ms``,
            15000).
        max_map_entries: keys one pass maps (Kafka's dedupe buffer).
    """

    state: ClusterState
    backoff_ms: int = attrs.field(default=15_000, kw_only=True)
    max_map_entries: int = attrs.field(default=DEFAULT_MAX_MAP_ENTRIES, kw_only=True)
    #: (topic, partition) -> first dirty offset (the checkpoint)
    checkpoints: dict[tuple[str, int], int] = attrs.field(init=False, factory=dict)
    #: (topic, partition) -> latest delete horizon written (ms)
    horizons: dict[tuple[str, int], int] = attrs.field(init=False, factory=dict)
    _task: asyncio.Task[None] | None = attrs.field(init=False, default=None)
    _lock: asyncio.Lock = attrs.field(init=False, factory=asyncio.Lock)

    # --------------------------------------------------------------- lifecycle

    def start(self) -> None:
        """Read the checkpoint file and start the background task (on the
        running loop)."""
        self.checkpoints = self._read_checkpoint()
        self._task = asyncio.get_running_loop().create_task(
            self._run(), name="kproto-log-cleaner"
        )

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(self.backoff_ms / 1000)
            try:
                await self.clean_once()
            except Exception:  # one bad log must not end the cleaner
                log.exception("log cleaner pass failed")

    # ----------------------------------------------------------------- passes

    async def clean_once(
        self, topic: str | None = None, *, force: bool = False
    ) -> CleanerStats:
        """One pass over every compacted log (of ``topic`` only, if given);
        ``force`` ignores ``min.cleanable.dirty.ratio``.

        Raises:
            KeyError: ``topic`` does not exist.
        """
        if topic is not None and topic not in self.state.topics:
            raise KeyError(f"no topic {topic}")
        stats = CleanerStats()
        async with self._lock:
            for (name, partition), plog in list(self.state.logs.items()):
                info = self.state.topics.get(name)
                if info is None or (topic is not None and name != topic):
                    continue
                if not info.topic_config.compact:
                    continue
                try:
                    await self._clean_log(info, plog, stats, force)
                except (OSError, DecodeError, IndexError, ValueError) as err:
                    log.error("cleaning %s-%d failed: %s", name, partition, err)
        return stats

    def _first_uncleanable(
        self, info: TopicMetadata, plog: PartitionLog, first_dirty: int
    ) -> int:
        """How many segments (from the first) may be cleaned (Kafka's
        ``cleanableOffsets``: the active segment, the last stable offset, the
        first dirty segment with a record younger than ``min.compaction.lag.ms``)."""
        now = self.state.now_ms()
        min_lag = info.topic_config.min_compaction_lag_ms
        lso = getattr(plog, "last_stable_offset", plog.high_watermark)
        segments = plog.segments
        for i, segment in enumerate(segments[:-1]):
            newest = max(segment.max_timestamps, default=-1)
            young = min_lag > 0 and newest > now - min_lag
            if segment.next_offset > lso or (
                young and segment.next_offset > first_dirty
            ):
                return i
        return len(segments) - 1

    async def _clean_log(
        self,
        info: TopicMetadata,
        plog: PartitionLog,
        stats: CleanerStats,
        force: bool,
    ) -> None:
        key = (plog.topic, plog.partition)
        now = self.state.now_ms()
        first_dirty = self.checkpoints.get(key, 0)
        if not plog.log_start_offset <= first_dirty <= plog.high_watermark:
            first_dirty = plog.log_start_offset
        cleanable = plog.segments[: self._first_uncleanable(info, plog, first_dirty)]
        dirty = [s for s in cleanable if s.next_offset > first_dirty and s.size]
        dirty_bytes = sum(s.size for s in dirty)
        total = sum(s.size for s in cleanable)
        ratio = dirty_bytes / total if total else 0.0
        max_lag = info.topic_config.max_compaction_lag_ms
        # maxCompactionDelay: the earliest first-batch timestamp of the dirty segments
        oldest = min(
            (s.max_timestamps[0] for s in dirty if s.max_timestamps[0] > 0), default=now
        )
        due = (
            dirty_bytes > 0
            and (
                force
                or ratio >= info.topic_config.min_cleanable_dirty_ratio
                or now - oldest > max_lag
            )
        ) or 0 <= self.horizons.get(key, -1) <= now
        if not due or not cleanable:
            return
        aborted, undecided = await asyncio.to_thread(
            find_aborted, [(s.path, s.size) for s in cleanable]
        )
        offsets, end = await asyncio.to_thread(
            build_offset_map,
            [(s.path, s.size, s.next_offset) for s in dirty],
            aborted,
            undecided,
            self.max_map_entries,
        )
        if not dirty:
            end = first_dirty
        txns = TxnState(aborted, undecided)
        producers = {
            pid: p.batches[-1][2] + p.batches[-1][1] - p.batches[-1][0]
            for pid, p in plog.producer_state.producers.items()
            if p.batches
        }
        retention = info.topic_config.delete_retention_ms
        horizon = -1
        for segment in [s for s in cleanable if s.next_offset <= end]:
            if not segment.size:
                continue
            result = await asyncio.to_thread(
                clean_segment,
                segment.path,
                segment.size,
                offsets,
                txns,
                now_ms=now,
                delete_retention_ms=retention,
                producer_last_offsets=producers,
            )
            if self.state.logs.get(key) is not plog:  # deleted meanwhile
                result.path.unlink(missing_ok=True)
                return
            if replace_segment(plog, segment, result.path, result.batches, result.size):
                stats.segments += 1
                stats.kept += result.kept
                stats.removed += result.removed
                pending = result.delete_horizon_ms
                if pending >= 0:
                    horizon = pending if horizon < 0 else min(horizon, pending)
        self.horizons[key] = horizon
        self.checkpoints[key] = max(end, first_dirty)
        stats.partitions += 1
        self._save_checkpoint()
        log.info(
            "cleaned %s-%d up to offset %d (ratio %.2f)",
            plog.topic,
            plog.partition,
            end,
            ratio,
        )

    # ------------------------------------------------------------- checkpoint

    def _path(self) -> Path:
        return self.state.data_dir / CHECKPOINT_FILE

    def _read_checkpoint(self) -> dict[tuple[str, int], int]:
        path = self._path()
        try:
            return read_offset_checkpoint(path)
        except (OSError, ValueError) as err:  # Kafka starts cleaning afresh
            log.warning("ignoring %s: %s", path, err)
            return {}

    def _save_checkpoint(self) -> None:
        """Write the checkpoints of the logs that still exist (Kafka's
        ``OffsetCheckpointFile``: version 0, a count, ``topic partition offset``)."""
        write_offset_checkpoint(
            self._path(),
            {tp: o for tp, o in self.checkpoints.items() if tp in self.state.logs},
        )


def replace_segment(
    plog: PartitionLog,
    segment: Segment,
    cleaned: Path,
    batches: list[tuple[int, int, int, int, int]],
    size: int,
) -> bool:
    """Swap ``segment`` of ``plog`` for its cleaned twin ``cleaned``
    (``<base>.log.cleaned``, fsynced) holding ``batches`` (``(base, last,
    position, size, max timestamp)``) in ``size`` bytes, as Kafka's
    ``UnifiedLog.replaceSegments``: ``.cleaned`` is renamed ``.swap`` (from then
    on recovery completes the swap, :func:`kproto.broker.cleaner.recover_swaps`),
    then the swap replaces the ``.log`` in one rename. A segment left empty is
    deleted, unless it is the first. Return False (and delete ``cleaned``) when
    ``segment`` is no longer a non-active segment of ``plog``. Event loop only.

    Raises:
        OSError: a rename failed (the old segment is still in place).
    """
    if not any(s is segment for s in plog.segments[:-1]):
        cleaned.unlink(missing_ok=True)
        return False
    swap = segment.path.with_name(segment.path.name + ".swap")
    os.replace(cleaned, swap)
    segment.close()
    if not batches and segment is not plog.segments[0]:
        segment.path.unlink(missing_ok=True)
        swap.unlink()
        plog.segments.remove(segment)
        return True
    _complete_swap(swap, segment.path)
    for name in ("offsets", "last_offsets", "positions", "sizes", "max_timestamps"):
        setattr(segment, name, array("q"))
    for base, last, position, length, max_ts in batches:
        segment.index(base, last, position, length, max_ts)
    segment.size = size
    return True


def _complete_swap(swap: Path, target: Path) -> None:
    os.replace(swap, target)
