"""Incremental fetch sessions (KIP-227), one cache per broker node.

Follows Kafka's ``FetchSession.scala`` (``FetchManager.newContext``,
``FetchSessionCache``, ``CachedPartition``):

* Fetch v7+ carries ``session_id`` and ``session_epoch``. Epoch 0 is a full
  fetch: every partition is named, the response names every partition, and the
  broker opens a session (its id in the response; 0 when the cache has no room).
  Epoch -1 closes the session named (if any) and is answered as a sessionless
  full fetch. Any other epoch is an incremental fetch on an open session: the
  request names only partitions whose fetch offset or max bytes changed,
  ``forgotten_topics_data`` drops partitions, and the response names only
  partitions with records, a changed high watermark, last stable offset or log
  start offset, or an error. The epoch then advances by one (wrapping to 1).
* An unknown session id is answered FETCH_SESSION_ID_NOT_FOUND, a wrong epoch
  INVALID_FETCH_SESSION_EPOCH, a session opened with topic ids (v13+) used by
  names or the other way round FETCH_SESSION_TOPIC_ID_ERROR; each with session
  id 0 and no partitions.
* The cache holds ``max.incremental.fetch.session.cache.slots`` sessions (1000).
  When full, a new session evicts the least recently used session idle for
  ``eviction_ms`` (120 s, Kafka's), else the smallest session created more than
  ``eviction_ms`` ago if the new one is larger, else it is not created. An
  incremental fetch that forgets every partition closes its session. Partitions
  answered by an incremental fetch move to the end of the session's order, so
  ``max_bytes`` is shared fairly across fetches.
"""

from __future__ import annotations

import random
import time
import uuid
from collections.abc import Callable
from typing import Any, NamedTuple

import attrs

from kproto.errors import ErrorCode

__all__ = [
    "DEFAULT_SLOTS",
    "FINAL_EPOCH",
    "INITIAL_EPOCH",
    "FetchPartition",
    "FetchPlan",
    "FetchSession",
    "FetchSessionCache",
    "FetchTopic",
    "PartitionAnswer",
    "TopicAnswer",
]

INITIAL_EPOCH = 0
FINAL_EPOCH = -1
#: Kafka's ``max.incremental.fetch.session.cache.slots`` default.
DEFAULT_SLOTS = 1000
#: Kafka's ``FetchSessionCache`` eviction age for idle sessions (ms).
DEFAULT_EVICTION_MS = 120_000

#: (topic name, or topic id from v13, partition)
Key = tuple[str | uuid.UUID, int]


@attrs.define
class FetchPartition:
    """One partition to read, shaped as a request's ``FetchPartition``;
    the last values answered for it (the session's ``CachedPartition``)."""

    partition: int
    fetch_offset: int
    partition_max_bytes: int
    current_leader_epoch: int = -1  # Fetch v9+, checked against the leader's
    last_fetched_epoch: int = -1  # Fetch v12+, checked for a diverging log
    high_watermark: int = -2
    last_stable_offset: int = -2
    log_start_offset: int = -2


@attrs.define
class FetchTopic:
    """A topic to read, shaped as a request's ``FetchTopic`` (``topic`` None
    when named by ``topic_id``, v13+)."""

    topic: str | None
    topic_id: uuid.UUID | None
    partitions: list[FetchPartition]


@attrs.define
class FetchSession:
    """An open session: its id, the epoch its next request must carry, its
    partitions in order, whether it names topics by id, its last use (ms)."""

    session_id: int
    epoch: int
    partitions: dict[Key, tuple[FetchTopic, FetchPartition]]
    uses_topic_ids: bool
    last_used_ms: int
    creation_ms: int


@attrs.define
class FetchPlan:
    """What a Fetch reads and how its response is shaped."""

    error: ErrorCode
    topics: list[FetchTopic]
    session: FetchSession | None = None
    incremental: bool = False
    full: bool = False  # a full fetch that may open a session
    uses_topic_ids: bool = False

    @property
    def session_id(self) -> int:
        return self.session.session_id if self.session is not None else 0


class PartitionAnswer(NamedTuple):
    """What a Fetch answers for one partition (a response ``PartitionData``):
    error code, high watermark, last stable offset and log start offset,
    aborted transactions (``(producer_id, first_offset)`` pairs, or None: a
    null array), the record batches, and the diverging epoch (v12+, KIP-595's
    ``(epoch, end_offset)``: the log diverges from the fetcher's before its fetch
    offset; None: it does not), and the replica a consumer should read from
    instead (v11+, KIP-392; -1: this one)."""

    partition_index: int
    error_code: int
    high_watermark: int
    last_stable_offset: int
    log_start_offset: int
    aborted_transactions: list[tuple[int, int]] | None
    records: bytes
    diverging_epoch: tuple[int, int] | None = None
    preferred_read_replica: int = -1


class TopicAnswer(NamedTuple):
    """What a Fetch answers for one topic (a response ``FetchableTopicResponse``)."""

    topic: str
    topic_id: uuid.UUID | None
    partitions: list[PartitionAnswer]


def _key(topic: Any, uses_ids: bool) -> Any:
    return topic.topic_id if uses_ids else topic.topic


def _entries(
    request: Any, uses_ids: bool
) -> list[tuple[Key, FetchTopic, FetchPartition]]:
    out = []
    for t in request.topics:
        view = FetchTopic(
            None if uses_ids else t.topic, getattr(t, "topic_id", None), []
        )
        for p in t.partitions:
            part = FetchPartition(
                p.partition,
                p.fetch_offset,
                p.partition_max_bytes,
                getattr(p, "current_leader_epoch", -1),
                getattr(p, "last_fetched_epoch", -1),
            )
            out.append(((_key(t, uses_ids), p.partition), view, part))
    return out


def _group(items: list[tuple[FetchTopic, FetchPartition]]) -> list[FetchTopic]:
    """Views grouped by topic, in order, holding the given partitions."""
    topics: dict[int, FetchTopic] = {}
    for view, part in items:
        group = topics.get(id(view))
        if group is None:
            group = topics[id(view)] = FetchTopic(view.topic, view.topic_id, [])
        group.partitions.append(part)
    return list(topics.values())


class FetchSessionCache:
    """The sessions of one broker node (Kafka's ``FetchSessionCache``).

    Args:
        max_slots: sessions kept at most (0: no sessions, every fetch full).
        eviction_ms: idle time (ms) after which a session may be evicted by any.
        clock: ms clock (patch in tests).
    """

    def __init__(
        self,
        max_slots: int = DEFAULT_SLOTS,
        eviction_ms: int = DEFAULT_EVICTION_MS,
        clock: Callable[[], int] = lambda: time.monotonic_ns() // 1_000_000,
    ) -> None:
        self.max_slots = max_slots
        self.eviction_ms = eviction_ms
        self.clock = clock
        self.sessions: dict[int, FetchSession] = {}

    def plan(self, request: Any, version: int) -> FetchPlan:
        """Resolve a Fetch request against the cache (``FetchManager.newContext``)."""
        session_id = getattr(request, "session_id", 0)
        epoch = getattr(request, "session_epoch", FINAL_EPOCH)
        uses_ids = version >= 13
        if epoch in (INITIAL_EPOCH, FINAL_EPOCH):
            if session_id:
                self.sessions.pop(session_id, None)
            items = [(v, p) for _, v, p in _entries(request, uses_ids)]
            return FetchPlan(
                ErrorCode.NONE,
                _group(items),
                full=epoch == INITIAL_EPOCH,
                uses_topic_ids=uses_ids,
            )
        session = self.sessions.get(session_id)
        if session is None:
            return FetchPlan(ErrorCode.FETCH_SESSION_ID_NOT_FOUND, [])
        if session.epoch != epoch:
            return FetchPlan(ErrorCode.INVALID_FETCH_SESSION_EPOCH, [])
        if session.uses_topic_ids != uses_ids:
            return FetchPlan(ErrorCode.FETCH_SESSION_TOPIC_ID_ERROR, [])
        for key, view, part in _entries(request, uses_ids):
            cached = session.partitions.get(key)
            if cached is None:
                session.partitions[key] = (view, part)
            else:
                cached[1].fetch_offset = part.fetch_offset
                cached[1].partition_max_bytes = part.partition_max_bytes
                cached[1].current_leader_epoch = part.current_leader_epoch
                cached[1].last_fetched_epoch = part.last_fetched_epoch
        for t in getattr(request, "forgotten_topics_data", None) or ():
            name = _key(t, uses_ids)
            for p in t.partitions:
                session.partitions.pop((name, p), None)
        if not session.partitions:  # nothing left: closed, answered sessionless
            del self.sessions[session_id]
            return FetchPlan(ErrorCode.NONE, [])
        session.epoch = session.epoch + 1 if session.epoch < 2**31 - 1 else 1
        session.last_used_ms = self.clock()
        return FetchPlan(
            ErrorCode.NONE,
            _group(list(session.partitions.values())),
            session=session,
            incremental=True,
        )

    def finish(
        self, plan: FetchPlan, topics: list[FetchTopic], answers: list[TopicAnswer]
    ) -> list[TopicAnswer]:
        """Record what was answered and shape the response's topics: an
        incremental response keeps only the changed partitions; a full fetch
        opens a session (``plan.session``) if the cache has room."""
        changed = []
        session = plan.session
        incremental = plan.incremental
        for view, answer in zip(topics, answers, strict=True):
            kept = []
            for part, p in zip(view.partitions, answer.partitions, strict=True):
                new = (p.high_watermark, p.last_stable_offset, p.log_start_offset)
                old = (
                    part.high_watermark,
                    part.last_stable_offset,
                    part.log_start_offset,
                )
                part.high_watermark, part.last_stable_offset, part.log_start_offset = (
                    new
                )
                if (
                    p.records
                    or p.error_code
                    or new != old
                    or p.diverging_epoch
                    or p.preferred_read_replica >= 0
                ):
                    kept.append(p)
                    if session is not None:  # answered ones go last (fairness)
                        key = (_key(view, session.uses_topic_ids), part.partition)
                        entry = session.partitions.pop(key, None)
                        if entry is not None:
                            session.partitions[key] = entry
            if not incremental:
                changed.append(answer)
            elif kept:
                changed.append(answer._replace(partitions=kept))
        if plan.full:
            plan.session = self._create(topics, uses_ids=plan.uses_topic_ids)
        return changed

    def _create(
        self, topics: list[FetchTopic], *, uses_ids: bool
    ) -> FetchSession | None:
        size = sum(len(t.partitions) for t in topics)
        now = self.clock()
        if len(self.sessions) >= self.max_slots and not self._evict(size, now):
            return None
        session_id = 0
        while not session_id or session_id in self.sessions:
            session_id = random.randint(1, 2**31 - 1)
        partitions: dict[Key, tuple[FetchTopic, FetchPartition]] = {}
        for view in topics:
            name = view.topic_id if view.topic is None else view.topic
            assert name is not None
            for part in view.partitions:
                partitions[(name, part.partition)] = (view, part)
        session = FetchSession(session_id, 1, partitions, uses_ids, now, now)
        self.sessions[session_id] = session
        return session

    def _evict(self, size: int, now: int) -> bool:
        """Make room for a session of ``size`` partitions (``tryEvict``)."""
        if not self.sessions:
            return False
        oldest = min(self.sessions.values(), key=lambda s: s.last_used_ms)
        if now - oldest.last_used_ms > self.eviction_ms:
            del self.sessions[oldest.session_id]
            return True
        settled = [
            s for s in self.sessions.values() if now - s.creation_ms > self.eviction_ms
        ]
        if not settled:
            return False
        smallest = min(settled, key=lambda s: (len(s.partitions), s.session_id))
        if len(smallest.partitions) < size:
            del self.sessions[smallest.session_id]
            return True
        return False
