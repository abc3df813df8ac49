"""What the cluster keeps for each partition beside its log: the leader epoch, and
the wake-up of requests waiting for appended records.

Kafka's ``Partition`` holds the leader epoch its leader stamps into appended
batches (``UnifiedLog.appendAsLeader``), and an append completes the delayed fetches
waiting in the purgatory (``ReplicaManager.tryCompleteDelayedRequests``). Here one
:class:`AppendWaiters` wakes every Fetch and ShareFetch long poll of the cluster, and
each partition log gets a :class:`PartitionListener` when it is opened (the log's
:class:`kproto.broker.log.LogListener`): the log asks it for the epoch and tells it
of appends, and never reaches the cluster otherwise.

Every method runs on the cluster's event-loop thread.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable

__all__ = ["AppendWaiters", "LeaderEpochs", "PartitionListener"]

#: ``(topic id, partition) -> leader epoch`` (absent: 0; see
#: :mod:`kproto.broker.leadership`).
LeaderEpochs = dict[tuple[uuid.UUID, int], int]


class AppendWaiters:
    """One event set on the next append anywhere in the cluster (Fetch
    ``max_wait_ms``, ShareFetch)."""

    def __init__(self) -> None:
        self._event: asyncio.Event | None = None

    def notify(self) -> None:
        """Wake every request waiting for an append."""
        if self._event is not None:
            self._event.set()
        self._event = None

    def event(self) -> asyncio.Event:
        """An event set on the next append."""
        if self._event is None:
            self._event = asyncio.Event()
        return self._event


class PartitionListener:
    """The cluster's side of one partition log (a
    :class:`kproto.broker.log.LogListener`): its leader epoch, read from the
    cluster's ``epochs`` at each append, and the wake-up of waiting fetches."""

    __slots__ = ("_epochs", "_key", "appended")

    def __init__(
        self, epochs: LeaderEpochs, key: tuple[uuid.UUID, int], waiters: AppendWaiters
    ) -> None:
        self._epochs = epochs
        self._key = key
        #: records were appended: wake the waiting fetches (the waiters' own
        #: method, so an append costs one call, not two)
        self.appended: Callable[[], None] = waiters.notify

    def leader_epoch(self) -> int:
        """The partition's current leader epoch."""
        return self._epochs.get(self._key, 0)
