"""Committed offsets of the groups: OffsetCommit, TxnOffsetCommit, OffsetFetch,
OffsetDelete, the offsets of deleted topics and transactional offsets made visible by
their marker, following Kafka's ``OffsetMetadataManager`` (group-coordinator module).

:class:`OffsetMetadataManager` is held by
:class:`kproto.broker.groups.coordinator.GroupCoordinator` (``coordinator.offsets``);
it reads the groups of every type from the :class:`.group_store.GroupStore` and
writes through its ``__consumer_offsets`` writer.
"""

from __future__ import annotations

from collections.abc import Iterable

import attrs

from kproto.broker.coordinator_runtime import CoordinatorWriteError
from kproto.errors import ErrorCode

from .consumer_coordinator import ConsumerGroups
from .consumer_group import ConsumerGroup
from .group import ClassicGroup, CommittedOffset, GroupState
from .group_store import GroupStore
from .membership import Membership
from .records import offset_commit_record
from .streams_coordinator import StreamsGroups
from .streams_group import StreamsGroup
from .txn_offsets import PendingTxnOffsets

__all__ = ["OffsetMetadataManager", "OFFSET_METADATA_MAX_BYTES"]


# Kafka's offset.metadata.max.bytes default.
OFFSET_METADATA_MAX_BYTES = 4096


@attrs.define(eq=False)
class OffsetMetadataManager:
    """The committed offsets of every group (see the module docstring).

    Args:
        store: the groups and their writer.
        membership: the classic groups' protocol (a commit refreshes a member's
            session).
        consumer, streams: the KIP-848 and KIP-1071 groups.
        pending_txn_offsets: TxnOffsetCommit offsets waiting for their marker.
    """

    store: GroupStore
    membership: Membership
    consumer: ConsumerGroups
    streams: StreamsGroups
    pending_txn_offsets: PendingTxnOffsets

    @property
    def groups(self) -> dict[str, ClassicGroup]:
        """The classic groups (the store's)."""
        return self.store.classic

    def now_ms(self) -> int:
        return self.store.now_ms()

    async def commit_offsets(
        self,
        group_id: str,
        generation_id: int,
        member_id: str,
        group_instance_id: str | None,
        offsets: dict[tuple[str, int], tuple[int, int, str | None, int]],
        *,
        retention_ms: int = -1,
        producer: tuple[int, int] | None = None,
    ) -> dict[tuple[str, int], int]:
        """Commit ``(topic, partition) -> (offset, leader_epoch, metadata,
        commit_timestamp_ms or -1 for now)``; returns an error code per partition.
        ``retention_ms`` (OffsetCommit v2-v4 ``retention_time_ms``; -1: none) sets
        the offsets' expire timestamp to now + retention, as Kafka's ``KafkaApis``.
        ``producer`` ``(producer_id, producer_epoch)`` makes it a TxnOffsetCommit:
        the offsets are written in the producer's transactional batch and stay
        pending until :meth:`complete_transaction` (INVALID_PRODUCER_EPOCH when the
        partition log knows a newer epoch).

        Group checks follow Kafka's ``ClassicGroup.validateOffsetCommit``:
        generation -1 with no member id commits for a group without membership
        ("simple" commit) and gets UNKNOWN_MEMBER_ID from a group with members;
        otherwise UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION, FENCED_INSTANCE_ID,
        REBALANCE_IN_PROGRESS (CompletingRebalance), COORDINATOR_NOT_AVAILABLE (dead).
        A transactional commit (``producer`` given) is checked as Kafka's
        ``validateTransactionalOffsetCommit`` does: without member (TxnOffsetCommit
        v0-v2, as aiokafka sends) it is accepted by a group with members, and the
        group's state is not enforced (no REBALANCE_IN_PROGRESS); a consumer or
        streams (KIP-848, KIP-1071) group answers a stale member epoch with
        ILLEGAL_GENERATION. Per partition: UNKNOWN_TOPIC_OR_PARTITION,
        OFFSET_METADATA_TOO_LARGE."""
        modern = self.consumer.groups.get(group_id)
        streams = self.streams.groups.get(group_id)
        transactional = producer is not None
        if modern is not None:
            error = self.consumer.validate_commit(
                modern,
                generation_id,
                member_id,
                group_instance_id,
                transactional=transactional,
            )
        elif streams is not None:
            error = self.streams.validate_commit(
                streams, generation_id, member_id, transactional=transactional
            )
        else:
            error = self._validate_commit(
                group_id, generation_id, member_id, group_instance_id, transactional
            )
        if error != ErrorCode.NONE:
            return {tp: error for tp in offsets}
        group: ClassicGroup | ConsumerGroup | StreamsGroup | None = (
            modern or streams or self.groups.get(group_id)
        )
        if group is None:
            group = self.groups[group_id] = ClassicGroup(
                group_id, state_timestamp_ms=self.now_ms()
            )
        now = self.now_ms()
        result: dict[tuple[str, int], int] = {}
        accepted: dict[tuple[str, int], CommittedOffset] = {}
        for (topic, partition), (offset, epoch, metadata, timestamp) in offsets.items():
            count = self.store.state.topic_partitions(topic)
            if count is None or not 0 <= partition < count:
                result[(topic, partition)] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            elif (
                metadata is not None
                and len(metadata.encode()) > OFFSET_METADATA_MAX_BYTES
            ):
                result[(topic, partition)] = ErrorCode.OFFSET_METADATA_TOO_LARGE
            else:
                result[(topic, partition)] = ErrorCode.NONE
                accepted[(topic, partition)] = CommittedOffset(
                    offset,
                    epoch,
                    metadata or "",
                    now if timestamp < 0 else timestamp,
                    -1 if retention_ms < 0 else now + retention_ms,
                )
        if accepted:
            pairs = [
                offset_commit_record(group_id, t, p, c)
                for (t, p), c in accepted.items()
            ]
            try:
                self.store.append(group_id, pairs, producer)
            except CoordinatorWriteError as err:
                return {tp: err.error_code for tp in offsets}
            if producer is None:
                group.offsets.update(accepted)
            else:
                for (t, p), c in accepted.items():
                    self.pending_txn_offsets.add(producer[0], (group_id, t, p), c)
        if (
            isinstance(group, ClassicGroup)
            and member_id
            and member_id in group.members
            and group.state
            in (
                GroupState.STABLE,
                GroupState.PREPARING_REBALANCE,
            )
        ):
            self.membership.schedule_heartbeat(group, group.members[member_id])
        return result

    def _validate_commit(
        self,
        group_id: str,
        generation_id: int,
        member_id: str,
        instance_id: str | None,
        transactional: bool,
    ) -> int:
        group = self.groups.get(group_id)
        if group is None:
            return ErrorCode.NONE if generation_id < 0 else ErrorCode.ILLEGAL_GENERATION
        if group.is_(GroupState.DEAD):
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        if generation_id < 0 and group.is_(GroupState.EMPTY):
            return ErrorCode.NONE
        if group.is_static_member_fenced(member_id, instance_id):
            return ErrorCode.FENCED_INSTANCE_ID
        if generation_id >= 0 or member_id or instance_id is not None:
            if member_id not in group.members:
                return ErrorCode.UNKNOWN_MEMBER_ID
            if generation_id != group.generation_id:
                return ErrorCode.ILLEGAL_GENERATION
        elif not transactional:
            # an admin commit (no member, generation -1) to a group with members;
            # TxnOffsetCommit v0-v2 carries no member and is accepted
            return ErrorCode.UNKNOWN_MEMBER_ID
        if not transactional and group.is_(GroupState.COMPLETING_REBALANCE):
            # the group state is not enforced for transactional commits
            return ErrorCode.REBALANCE_IN_PROGRESS
        return ErrorCode.NONE

    def fetch_offsets(
        self, group_id: str, partitions: Iterable[tuple[str, int]] | None
    ) -> dict[tuple[str, int], CommittedOffset | None]:
        """Committed offsets of ``group_id``: for each asked partition (None when
        nothing is committed), or every committed one when ``partitions`` is None."""
        group = self.groups.get(group_id)
        committed = {} if group is None or group.is_(GroupState.DEAD) else group.offsets
        if group_id in self.consumer.groups:
            committed = self.consumer.groups[group_id].offsets
        if group_id in self.streams.groups:
            committed = self.streams.groups[group_id].offsets
        if partitions is None:
            return dict(sorted(committed.items()))
        return {tp: committed.get(tp) for tp in partitions}

    async def delete_offsets(
        self, group_id: str, partitions: list[tuple[str, int]]
    ) -> tuple[int, dict[tuple[str, int], int]]:
        """OffsetDelete (KIP-496): returns ``(group error, error per partition)``.

        GROUP_ID_NOT_FOUND for an unknown or dead group; NON_EMPTY_GROUP for an active
        classic group whose protocol type is not ``consumer``;
        GROUP_SUBSCRIBED_TO_TOPIC for partitions of topics an active group
        subscribes to (Kafka's ``validateOffsetDelete`` and
        ``isSubscribedToTopic``; a classic group whose subscriptions cannot be read
        refuses every partition)."""
        group: ClassicGroup | ConsumerGroup | None = self.consumer.groups.get(group_id)
        subscribed: set[str] | None = set()
        if isinstance(group, ConsumerGroup):
            if not group.is_empty():
                subscribed = set(group.subscription_metadata)
        else:
            group = self.groups.get(group_id)
            if group is None or group.is_(GroupState.DEAD):
                return ErrorCode.GROUP_ID_NOT_FOUND, {}
            if not group.is_(GroupState.EMPTY):
                if group.protocol_type != "consumer":
                    return ErrorCode.NON_EMPTY_GROUP, {}
                subscribed = group.subscribed_topics()
        result: dict[tuple[str, int], int] = {}
        deleted: list[tuple[str, int]] = []
        for topic, partition in partitions:
            if subscribed is None or topic in subscribed:
                result[(topic, partition)] = ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC
            else:
                result[(topic, partition)] = ErrorCode.NONE
                if (topic, partition) in group.offsets:
                    deleted.append((topic, partition))
        try:
            self._remove(group_id, group, deleted)
        except CoordinatorWriteError as err:
            return err.error_code, {}
        return ErrorCode.NONE, result

    def _remove(
        self,
        group_id: str,
        group: ClassicGroup | ConsumerGroup | StreamsGroup,
        partitions: list[tuple[str, int]],
    ) -> None:
        """Append tombstones for ``partitions``' committed offsets, then forget them.

        Raises:
            CoordinatorWriteError: the tombstones were not stored (nothing forgotten).
        """
        if not partitions:
            return
        pairs = [offset_commit_record(group_id, t, p, None) for t, p in partitions]
        self.store.append(group_id, pairs)
        for tp in partitions:
            group.offsets.pop(tp, None)

    async def on_topic_deleted(self, topic: str) -> int:
        """Drop every group's committed offsets of ``topic`` (tombstones appended),
        as Kafka's ``GroupCoordinator.onPartitionsDeleted`` does, so a topic created
        again under the same name starts without stale offsets. Returns how many
        offsets were removed. For DeleteTopics to call after deleting ``topic``."""
        removed = 0
        every: list[tuple[str, ClassicGroup | ConsumerGroup | StreamsGroup]] = list(
            self.groups.items()
        )
        every += list(self.consumer.groups.items())
        every += list(self.streams.groups.items())
        for group_id, group in every:
            stale = [tp for tp in group.offsets if tp[0] == topic]
            try:
                self._remove(group_id, group, stale)
            except CoordinatorWriteError:
                continue  # logged by the writer; kept until the next deletion
            removed += len(stale)
        return removed

    def complete_transaction(
        self, producer_id: int, offsets_partition: int, committed: bool
    ) -> None:
        """The transaction of ``producer_id`` ended with a marker written to
        ``__consumer_offsets`` partition ``offsets_partition``: its pending offsets
        of the groups there become committed (``committed``) or are dropped
        (Kafka's ``GroupCoordinator.onTransactionCompleted``)."""
        done = self.pending_txn_offsets.complete(producer_id, offsets_partition)
        for (group_id, topic, partition), value in done.items() if committed else ():
            group: ClassicGroup | ConsumerGroup | StreamsGroup | None = (
                self.consumer.groups.get(group_id)
                or self.streams.groups.get(group_id)
                or self.groups.get(group_id)
            )
            if group is None:
                group = self.groups[group_id] = ClassicGroup(
                    group_id, state_timestamp_ms=self.now_ms()
                )
            group.offsets[(topic, partition)] = value
