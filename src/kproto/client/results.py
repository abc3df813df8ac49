"""What :class:`kproto.client.Client` returns, and the errors it raises.

Broker error codes become :class:`BrokerError` (a
:class:`kproto.errors.KafkaProtocolError`) carrying the :class:`kproto.errors.ErrorCode`,
its ``retriable`` flag and where it came from. Problems found on the client side
(a bad bootstrap string, a batch larger than ``max_bytes``) are
:class:`ClientError`. Connection failures are
:class:`kproto.connection.KafkaConnectionError`, raised as they are.
"""

from __future__ import annotations

import uuid

import attrs

from kproto.errors import ErrorCode, KafkaProtocolError
from kproto.records import Record

__all__ = [
    "AbortedTransaction",
    "BrokerError",
    "ClientError",
    "ConfigEntry",
    "GroupDescription",
    "GroupListing",
    "MemberDescription",
    "PartitionDescription",
    "TopicDescription",
    "FetchResult",
    "ListedOffset",
    "ProducedRecord",
    "TopicPartition",
]


class ClientError(Exception):
    """A request the client refuses to send, or a response it cannot use."""


class BrokerError(KafkaProtocolError):
    """An error code in a broker's response.

    Attributes:
        error_code: the :class:`~kproto.errors.ErrorCode` (an int if unknown).
        retriable: Kafka's retriable flag for the code (False if unknown).
        where: the API and place, e.g. ``"Produce orders-3"``.
        topic, partition: the partition concerned, when there is one.
        error_message: the broker's ``error_message`` field, when it sent one.
    """

    def __init__(
        self,
        error_code: int,
        where: str = "",
        *,
        topic: str | None = None,
        partition: int | None = None,
        error_message: str | None = None,
    ) -> None:
        try:
            text: str | None = ErrorCode(error_code).message
        except ValueError:
            text = None
        if error_message:
            text = f"{text} ({error_message})" if text else error_message
        super().__init__(error_code, where, text)
        self.topic = topic
        self.partition = partition
        self.error_message = error_message

    @property
    def retriable(self) -> bool:
        """Kafka's ``RetriableException`` flag for :attr:`error_code`."""
        code = self.error_code
        return code.retriable if isinstance(code, ErrorCode) else False


@attrs.frozen
class TopicPartition:
    """A partition of a topic."""

    topic: str
    partition: int


@attrs.frozen
class ProducedRecord:
    """Where one produced record went (Java's ``RecordMetadata``).

    Attributes:
        topic, partition: the partition the record was written to.
        offset: its offset (the batch's ``base_offset`` plus its index), or -1
            with ``acks=0`` (the broker does not answer).
        log_append_time_ms: the broker's append time when the topic uses
            ``LogAppendTime``, else -1.
    """

    topic: str
    partition: int
    offset: int
    log_append_time_ms: int = -1


@attrs.frozen
class AbortedTransaction:
    """A transaction aborted in a read_committed Fetch's range (Fetch v4+, KIP-98;
    ``FetchResponse.json`` ``AbortedTransactions``).

    Attributes:
        producer_id: the producer whose transaction was aborted.
        first_offset: the offset of the transaction's first record.
    """

    producer_id: int
    first_offset: int


@attrs.frozen
class FetchResult:
    """One Fetch of one partition.

    Attributes:
        records: the records at or after the requested offset, in offset order
            (control records of transaction markers left out; with
            ``isolation_level`` 1 (read_committed) the records of aborted
            transactions too, as Java's ``CompletedFetch``).
        next_offset: the offset to fetch next: one past the last complete batch
            returned, or the requested offset if there was none.
        high_watermark: the partition's high watermark (offset of the next record
            to be committed).
        log_start_offset: the first offset still in the log (-1 before Fetch v5).
        raw: the complete record batches as the broker sent them (the whole first
            batch, even below the requested offset; no partial tail): what a log
            segment holds, e.g. for :mod:`kproto.spark`. Aborted batches are not
            removed: filter them with :class:`kproto.client.AbortedFilter`.
        last_stable_offset: the partition's last stable offset (Fetch v4+; -1
            before): a read_committed Fetch returns nothing at or past it.
        aborted_transactions: with read_committed, the transactions aborted in
            the returned range (empty with read_uncommitted or before v4).
    """

    records: tuple[Record, ...]
    next_offset: int
    high_watermark: int
    log_start_offset: int
    raw: bytes = attrs.field(default=b"", repr=False)
    last_stable_offset: int = -1
    aborted_transactions: tuple[AbortedTransaction, ...] = ()


@attrs.frozen
class ListedOffset:
    """A ListOffsets answer for one partition.

    Attributes:
        offset: the offset found (-1 if none, e.g. a timestamp past the end).
        timestamp: the timestamp of that record in ms (-1 for EARLIEST/LATEST).
    """

    offset: int
    timestamp: int


@attrs.frozen
class TopicInfo:
    """A topic as the metadata cache knows it.

    Attributes:
        name: the topic name.
        topic_id: its id (Metadata v10+); the zero UUID when unknown.
        leaders: ``{partition: leader node id}``; -1 when the partition has none.
    """

    name: str
    topic_id: uuid.UUID
    leaders: dict[int, int]

    @property
    def available(self) -> list[int]:
        """Partitions with a leader, sorted."""
        return sorted(p for p, leader in self.leaders.items() if leader >= 0)


@attrs.frozen
class PartitionDescription:
    """A partition as Metadata describes it (Java's ``TopicPartitionInfo``).

    Attributes:
        partition: its index.
        leader: the leader's node id, -1 when it has none.
        replicas, isr, offline: node ids (assigned replicas, in-sync replicas,
            offline replicas).
    """

    partition: int
    leader: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    offline: tuple[int, ...] = ()


@attrs.frozen
class TopicDescription:
    """A topic as Metadata describes it (Java's ``TopicDescription``).

    Attributes:
        name, topic_id: its name and id (the zero UUID before Metadata v10).
        is_internal: ``__consumer_offsets`` and the like.
        partitions: by partition index.
    """

    name: str
    topic_id: uuid.UUID
    is_internal: bool
    partitions: tuple[PartitionDescription, ...]


@attrs.frozen
class ConfigEntry:
    """One config of a DescribeConfigs answer (Java's ``ConfigEntry``).

    Attributes:
        name, value: the config (value ``None`` when sensitive or unset).
        source: Kafka's ``ConfigSource`` id (1 dynamic topic config, 5 default,
            ...; -1 before DescribeConfigs v1).
        is_default: the value is the default (source DEFAULT_CONFIG).
        is_sensitive: the broker hides its value.
    """

    name: str
    value: str | None
    source: int
    is_default: bool
    is_sensitive: bool


@attrs.frozen
class GroupListing:
    """One group of a ListGroups answer.

    Attributes:
        group_id, protocol_type: e.g. ``"my-group"``, ``"consumer"``.
        state: ``Stable``, ``Empty``, ... (ListGroups v4+; ``""`` before).
        group_type: ``classic``, ``consumer``, ... (v5+; ``""`` before).
    """

    group_id: str
    protocol_type: str
    state: str = ""
    group_type: str = ""


@attrs.frozen
class MemberDescription:
    """A member of a described group.

    Attributes:
        member_id, group_instance_id, client_id, client_host: as DescribeGroups
            gives them (``client_host`` like ``"/127.0.0.1"``).
        assignment: its partitions, decoded from the consumer protocol's
            assignment bytes (empty for other protocol types); for a KIP-848
            group, the partitions it owns (ConsumerGroupDescribe ``assignment``).
        member_epoch: KIP-848 groups: the member's epoch (-1 for classic groups).
        target_assignment: KIP-848 groups: the partitions it is to own once it
            has reconciled (``()`` for classic groups).
        subscribed_topics: KIP-848 groups: its subscribed topic names.
    """

    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    assignment: tuple[TopicPartition, ...] = ()
    member_epoch: int = -1
    target_assignment: tuple[TopicPartition, ...] = ()
    subscribed_topics: tuple[str, ...] = ()


@attrs.frozen
class GroupDescription:
    """A group as DescribeGroups (classic groups) or ConsumerGroupDescribe
    (KIP-848 ``consumer`` groups) describes it.

    Attributes:
        group_id, state, protocol_type: ``state`` is ``Stable``, ``Empty``,
            ``Dead`` (unknown group), ... (KIP-848: also ``Assigning``,
            ``Reconciling``); ``protocol_type`` is ``consumer`` for KIP-848 groups.
        protocol: the chosen assignor (``range``, ``uniform`` ...), ``""`` when none.
        members: the members, as the coordinator lists them.
        coordinator: the node id that answered.
        group_type: ``classic`` or ``consumer`` (KIP-848).
        group_epoch, assignment_epoch: KIP-848 groups' epochs (-1 for classic).
    """

    group_id: str
    state: str
    protocol_type: str
    protocol: str
    members: tuple[MemberDescription, ...]
    coordinator: int
    group_type: str = "classic"
    group_epoch: int = -1
    assignment_epoch: int = -1
