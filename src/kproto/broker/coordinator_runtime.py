"""The coordinators' internal topics: where a key's records live, who serves them,
appending and replaying them. After Kafka's ``CoordinatorRuntime`` and its
``PartitionWriter`` (``coordinator-common``), which the group, share and transaction
coordinators all write through.

One :class:`CoordinatorRuntime` serves one internal topic. Its tenants here:

- the group coordinator, ``__consumer_offsets`` (``offsets.topic.num.partitions``);
- the share coordinator, ``__share_group_state``;
- the transaction coordinator, ``__transaction_state``;
- next, the Schema Registry's ``_schemas`` (one partition, ``cleanup.policy=compact``).

API for a tenant (all on the cluster's event-loop thread)::

    runtime = CoordinatorRuntime(state, "_schemas", 1, internal=False)
    runtime.ensure_topic()                  # create it (compacted) unless it exists
    for key, value in runtime.records(0):   # replay at load, in offset order
        ...                                 # value None: a tombstone (delete key)
    runtime.append(0, [(key, value)])       # acknowledged only once stored
    runtime.append(0, [(key, None)])        # a tombstone

- :meth:`CoordinatorRuntime.partition_for` ``(key: str) -> int``: Kafka's
  ``Utils.abs(key.hashCode) % partitions`` (``GroupMetadataManager.partitionFor``,
  ``TransactionStateManager.partitionFor``), Java's ``String.hashCode`` over UTF-16.
- :meth:`CoordinatorRuntime.coordinator_for` ``(key) -> node id | None``: the leader
  of that partition (None: no leader, its node stopped); creates the topic on first
  use, as Kafka creates ``__consumer_offsets`` on the first FindCoordinator.
- :meth:`CoordinatorRuntime.check_coordinator` ``(key, node_id, loaded) ->
  ErrorCode``: NONE, NOT_COORDINATOR (another node leads), COORDINATOR_NOT_AVAILABLE
  (no leader) or COORDINATOR_LOAD_IN_PROGRESS (the tenant has not replayed yet).
- :meth:`CoordinatorRuntime.append` ``(partition, pairs, producer=None) -> base
  offset``: one record batch of ``(key bytes, value bytes | None)`` records, written
  before it returns (nothing is acknowledged that was not stored); ``producer``
  ``(producer_id, producer_epoch)`` makes it a transactional batch (TxnOffsetCommit).
  Raises :class:`CoordinatorWriteError`.
- :meth:`CoordinatorRuntime.batches` / :meth:`CoordinatorRuntime.records`
  ``(partition)``: the stored batches / ``(key, value)`` pairs from the log start.

Storage errors are mapped to the coordinator's error code here and nowhere else
(:func:`coordinator_error`), as Kafka's ``GroupCoordinatorService.normalizeException``
and ``TransactionStateManager.appendTransactionToLog`` do: a partition without a log
is COORDINATOR_NOT_AVAILABLE, a failed write (KAFKA_STORAGE_ERROR) NOT_COORDINATOR
(the client looks the coordinator up again and retries), a batch too large
UNKNOWN_SERVER_ERROR; a producer error of a transactional batch
(INVALID_PRODUCER_EPOCH) is the client's and passes unchanged. APIs that answer the
storage error itself (the share-group state of KIP-932) read
:meth:`CoordinatorWriteError.error_for`.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Protocol

import attrs

from kproto.broker.errors import ApiError, LogAppendError
from kproto.broker.log_validator import LogPolicy
from kproto.errors import ErrorCode
from kproto.index import ApiKey
from kproto.records import RecordBatch, encode_batch

__all__ = [
    "CoordinatorRuntime",
    "CoordinatorWriteError",
    "InternalLog",
    "InternalTopicHost",
    "coordinator_error",
    "java_string_hashcode",
    "partition_for",
]

log = logging.getLogger("kproto.broker")

#: What the broker itself appends (Kafka's ``AppendOrigin.COORDINATOR``): no
#: client-only checks, no size limit but the log's.
COORDINATOR_POLICY = LogPolicy(client=False)

#: The log's error -> the coordinator's (Kafka's ``normalizeException``).
_NORMALIZED = {
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.NOT_ENOUGH_REPLICAS: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.REQUEST_TIMED_OUT: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.NOT_LEADER_OR_FOLLOWER: ErrorCode.NOT_COORDINATOR,
    ErrorCode.KAFKA_STORAGE_ERROR: ErrorCode.NOT_COORDINATOR,
    ErrorCode.MESSAGE_TOO_LARGE: ErrorCode.UNKNOWN_SERVER_ERROR,
    ErrorCode.RECORD_LIST_TOO_LARGE: ErrorCode.UNKNOWN_SERVER_ERROR,
}

#: APIs whose responses carry the storage error itself: KIP-932's share-group
#: state, written by the share partition's persister before the acknowledgement
#: or the offset admin request is answered.
_STORAGE_ERROR_APIS = frozenset(
    {
        ApiKey.SHARE_FETCH,
        ApiKey.SHARE_ACKNOWLEDGE,
        ApiKey.ALTER_SHARE_GROUP_OFFSETS,
        ApiKey.DELETE_SHARE_GROUP_OFFSETS,
    }
)


def coordinator_error(storage_error: ErrorCode, api: ApiKey | None = None) -> ErrorCode:
    """The error code a coordinator answers ``api`` with when appending to its
    internal topic failed with ``storage_error`` (see the module docstring)."""
    if api in _STORAGE_ERROR_APIS and storage_error in _NORMALIZED:
        if storage_error == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        return ErrorCode.KAFKA_STORAGE_ERROR
    return _NORMALIZED.get(storage_error, storage_error)


class CoordinatorWriteError(ApiError):
    """An append to an internal topic failed; nothing of it was stored.

    Attributes:
        error_code: the coordinator's error code (:func:`coordinator_error`).
        storage_error: the log's own error (KAFKA_STORAGE_ERROR,
            UNKNOWN_TOPIC_OR_PARTITION for a missing partition, a producer error).
    """

    def __init__(self, storage_error: ErrorCode, message: str) -> None:
        self.storage_error = ErrorCode(storage_error)
        super().__init__(coordinator_error(self.storage_error), message)

    def error_for(self, api: ApiKey) -> ErrorCode:
        """The error code ``api``'s response carries for this failure."""
        return coordinator_error(self.storage_error, api)


class InternalLog(Protocol):
    """What the runtime uses of a partition log
    (:class:`kproto.broker.log.PartitionLog`)."""

    def append_batches(
        self, records: bytes, policy: LogPolicy | None = None
    ) -> object: ...

    @property
    def high_watermark(self) -> int: ...

    def batches(self, start_offset: int = 0) -> Iterator[RecordBatch]: ...


class InternalTopicHost(Protocol):
    """What the runtime uses of the cluster
    (:class:`kproto.broker.state.ClusterState`)."""

    def ensure_internal_topic(
        self, name: str, partitions: int, internal: bool = True
    ) -> None: ...

    def leader(self, topic: str, partition: int) -> int | None: ...

    def partition_log(self, topic: str, partition: int) -> InternalLog | None: ...

    def now_ms(self) -> int: ...


def java_string_hashcode(text: str) -> int:
    """Java's ``String.hashCode()`` of ``text``: a signed int32 over its UTF-16
    code units (``s[0]*31^(n-1) + ... + s[n-1]``; characters outside the BMP count
    as two surrogate units).

    >>> java_string_hashcode("hello")
    99162322
    >>> java_string_hashcode("polygenelubricants")  # Integer.MIN_VALUE
    -2147483648
    """
    h = 0
    data = text.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def partition_for(key: str, partitions: int) -> int:
    """Kafka's ``Utils.abs(key.hashCode) % partitions`` (``Utils.abs`` maps
    ``Integer.MIN_VALUE`` to 0)."""
    h = java_string_hashcode(key)
    return (0 if h == -(1 << 31) else abs(h)) % partitions


@attrs.define(eq=False)
class CoordinatorRuntime:
    """One internal topic of the cluster and its writer (see the module docstring).

    Args:
        host: the cluster (:class:`InternalTopicHost`).
        topic: the internal topic's name.
        partitions: its partition count (>= 1; ValueError otherwise).
        internal: Metadata marks the topic internal (Kafka's own coordinator topics;
            not the Schema Registry's ``_schemas``, an ordinary compacted topic).
    """

    host: InternalTopicHost
    topic: str
    partitions: int = attrs.field()
    internal: bool = attrs.field(default=True, kw_only=True)

    @partitions.validator
    def _check_partitions(self, _: attrs.Attribute[int], value: int) -> None:
        if value < 1:
            raise ValueError(f"{self.topic}: partitions must be >= 1, got {value}")

    def ensure_topic(self) -> None:
        """Create the topic (compacted; internal unless told otherwise) unless it
        exists."""
        self.host.ensure_internal_topic(self.topic, self.partitions, self.internal)

    def partition_for(self, key: str) -> int:
        """The partition holding ``key``'s records."""
        return partition_for(key, self.partitions)

    def coordinator_for(self, key: str) -> int | None:
        """The node leading ``key``'s partition, or None without a leader."""
        self.ensure_topic()
        leader = self.host.leader(self.topic, self.partition_for(key))
        return None if leader is None or leader < 0 else int(leader)

    def check_coordinator(self, key: str, node_id: int, loaded: bool) -> ErrorCode:
        """NONE when ``node_id`` coordinates ``key`` and the tenant has
        ``loaded`` its state; else NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE or
        COORDINATOR_LOAD_IN_PROGRESS."""
        leader = self.coordinator_for(key)
        if leader is None:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        if leader != node_id:
            return ErrorCode.NOT_COORDINATOR
        if not loaded:
            return ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
        return ErrorCode.NONE

    def append(
        self,
        partition: int,
        pairs: list[tuple[bytes, bytes | None]],
        producer: tuple[int, int] | None = None,
    ) -> int:
        """Append ``pairs`` as one batch to ``partition``; return its base offset.

        Raises:
            CoordinatorWriteError: the partition has no log, or the log refused or
                failed the write (nothing stored).
        """
        self.ensure_topic()
        plog = self.host.partition_log(self.topic, partition)
        if plog is None:
            raise CoordinatorWriteError(
                ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                f"{self.topic}-{partition} has no partition log",
            )
        now = self.host.now_ms()
        records = [(k, v, (), now) for k, v in pairs]
        if producer is None:
            batch = encode_batch(records)
        else:
            batch = encode_batch(
                records,
                producer_id=producer[0],
                producer_epoch=producer[1],
                is_transactional=True,
            )
        base = plog.high_watermark
        try:
            plog.append_batches(batch, COORDINATOR_POLICY)
        except LogAppendError as err:
            log.error("appending to %s-%d failed: %s", self.topic, partition, err)
            raise CoordinatorWriteError(err.error_code, err.message) from err
        return base

    def batches(self, partition: int) -> Iterator[RecordBatch]:
        """The stored batches of ``partition`` in offset order (none without a
        log).

        Raises:
            kproto.serial.DecodeError: a stored batch is corrupt.
        """
        plog = self.host.partition_log(self.topic, partition)
        return iter(()) if plog is None else plog.batches(0)

    def records(self, partition: int) -> Iterator[tuple[bytes | None, bytes | None]]:
        """``(key, value)`` of every stored record of ``partition`` in offset
        order, transaction markers skipped (``value`` None: a tombstone)."""
        for batch in self.batches(partition):
            if batch.is_control:
                continue
            for record in batch.records:
                yield record.key, record.value
