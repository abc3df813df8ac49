"""A cluster state and a scheduler for driving the group coordinator without sockets."""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable, Iterator
from typing import Any

import attrs

from kproto.broker.errors import LogAppendError
from kproto.errors import ErrorCode
from kproto.records import RecordBatch, decode_batches


@attrs.define
class FakeNode:
    node_id: int
    host: str = "127.0.0.1"
    port: int = 9092
    rack: str | None = None


class FakeLog:
    """A partition log in memory: batches appended as bytes, offsets assigned."""

    def __init__(self) -> None:
        self.appended: list[bytes] = []
        self.high_watermark = 0
        self.fail = False

    def append_batches(self, records: bytes, policy: Any = None) -> int:
        if self.fail:  # what PartitionLog raises when the segment write fails
            raise LogAppendError(ErrorCode.KAFKA_STORAGE_ERROR, "disk full")
        base = self.high_watermark
        # Rewrite the base offset (the first 8 bytes), as the broker's log does.
        data = base.to_bytes(8, "big") + records[8:]
        self.appended.append(data)
        self.high_watermark += sum(
            b.last_offset_delta + 1 for b in decode_batches(data)
        )
        return base

    def batches(self, start_offset: int = 0) -> Iterator[RecordBatch]:
        for data in self.appended:
            yield from decode_batches(data)


class FakeState:
    """What the coordinator uses of ``ClusterState``; node 1 leads everything."""

    def __init__(self, topics: dict[str, int] | None = None, nodes: int = 1) -> None:
        self.nodes = {i: FakeNode(i, port=9091 + i) for i in range(1, nodes + 1)}
        self.topic_counts = {"t": 3, "u": 1} if topics is None else dict(topics)
        self.logs: dict[tuple[str, int], FakeLog] = {}
        self.clock = 1_700_000_000_000

    def now_ms(self) -> int:
        return self.clock

    def leader(self, topic: str, partition: int) -> int | None:
        if (topic, partition) not in self.logs:
            return None
        return 1 + partition % len(self.nodes)

    def partition_log(self, topic: str, partition: int) -> FakeLog | None:
        return self.logs.get((topic, partition))

    def topic_partitions(self, topic: str) -> int | None:
        return self.topic_counts.get(topic)

    def ensure_internal_topic(
        self, name: str, partitions: int, internal: bool = True
    ) -> None:
        if name not in self.topic_counts:
            self.topic_counts[name] = partitions
            for p in range(partitions):
                self.logs[(name, p)] = FakeLog()


class ManualClock:
    """A broker clock (``ClusterState.now_ms``, ms) that moves only when the test
    adds to ``ms``."""

    def __init__(self) -> None:
        self.ms = 1_800_000_000_000

    def __call__(self) -> int:
        return self.ms


class _Handle:
    def __init__(self) -> None:
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


class ManualScheduler:
    """Timers that fire only when the test advances time (ms)."""

    def __init__(self) -> None:
        self.now = 0
        self._heap: list[tuple[int, int, Callable[[], None], _Handle]] = []
        self._seq = itertools.count()

    def call_later(self, delay_ms: int, callback: Callable[[], None]) -> _Handle:
        handle = _Handle()
        heapq.heappush(
            self._heap, (self.now + delay_ms, next(self._seq), callback, handle)
        )
        return handle

    def advance(self, ms: int) -> None:
        target = self.now + ms
        while self._heap and self._heap[0][0] <= target:
            due, _, callback, handle = heapq.heappop(self._heap)
            self.now = due
            if not handle.cancelled:
                callback()
        self.now = target

    def pending(self) -> int:
        return sum(1 for *_, h in self._heap if not h.cancelled)
