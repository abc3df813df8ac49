"""The group coordinator of one in-process cluster: groups, offsets, persistence.

:class:`GroupCoordinator` owns every classic group (membership protocol in
:mod:`kproto.broker.groups.membership`) and their committed offsets. It follows
Kafka's ``GroupMetadataManager`` (classic part) and ``OffsetMetadataManager``:

- the coordinator of a group is the leader of ``__consumer_offsets`` partition
  ``partition_for(group_id, offsets_partitions)``; other nodes answer NOT_COORDINATOR;
- offset commits and group metadata are appended to that partition (through the
  :class:`kproto.broker.coordinator_runtime.CoordinatorRuntime`) as
  ``OffsetCommitKey``/``OffsetCommitValue`` and ``GroupMetadataKey``/
  ``GroupMetadataValue`` records (:mod:`kproto.broker.groups.records`); deleting a
  group or its offsets appends tombstones;
- :meth:`GroupCoordinator.start` replays those partitions, so a cluster restarted on
  the same data directory serves the committed offsets and groups it had.

Options are read from the cluster state when present (``offsets_partitions``,
``group_initial_rebalance_delay_ms``, ``group_min_session_timeout_ms``,
``group_max_session_timeout_ms``) and otherwise take the defaults below, chosen for a
test broker: 5 offsets partitions (Kafka: 50), a 100 ms initial rebalance delay
(Kafka: 3000 ms), session timeouts 10 ms to 30 min (Kafka: 6 s to 30 min).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

import attrs

from kproto.broker.coordinator_runtime import CoordinatorRuntime, CoordinatorWriteError
from kproto.broker.state import ClusterState
from kproto.errors import ErrorCode
from kproto.serial import DecodeError

from .consumer_coordinator import ConsumerGroups
from .consumer_migration import MigrationPolicy
from .consumer_records import decode_consumer_record
from .group import (
    ClassicGroup,
    CommittedOffset,
    GroupState,
    JoinResult,
    Member,
    SyncResult,
)
from .group_store import OFFSETS_TOPIC, GroupStore
from .membership import Membership
from .offsets import OffsetMetadataManager
from .records import (
    CoordinatorRecord,
    GroupRecord,
    batch_records,
    decode_record,
    group_metadata_record,
    offset_commit_record,
)
from .streams_coordinator import StreamsGroups
from .streams_records import decode_streams_record
from .timers import AsyncioScheduler, Scheduler
from .txn_offsets import PendingTxnOffsets

__all__ = ["GroupCoordinator", "DescribedGroup", "OFFSETS_TOPIC"]

log = logging.getLogger("kproto.broker.groups")

DEFAULT_OFFSETS_PARTITIONS = 5
DEFAULT_INITIAL_REBALANCE_DELAY_MS = 100
DEFAULT_MIN_SESSION_TIMEOUT_MS = 10
DEFAULT_MAX_SESSION_TIMEOUT_MS = 1_800_000


@attrs.frozen
class DescribedGroup:
    """A DescribeGroups answer for one group. ``members`` are ``(member_id,
    group_instance_id, client_id, client_host, metadata, assignment)``; metadata and
    assignment are filled only in the Stable state, as Kafka does."""

    group_id: str
    state: str
    protocol_type: str
    protocol_data: str
    members: tuple[tuple[str, str | None, str, str, bytes, bytes], ...]


class GroupCoordinator:
    """Every classic consumer group of one in-process cluster.

    ``state`` is the cluster's ``ClusterState`` (``leader``, ``partition_log``,
    ``ensure_internal_topic``, ``topic_partitions``, ``now_ms``). ``scheduler``
    replaces asyncio's ``call_later`` (tests drive time by hand).
    """

    def __init__(
        self,
        state: ClusterState,
        *,
        scheduler: Scheduler | None = None,
        offsets_partitions: int | None = None,
        initial_rebalance_delay_ms: int | None = None,
        min_session_timeout_ms: int | None = None,
        max_session_timeout_ms: int | None = None,
        consumer_session_timeout_ms: int = 45_000,
        consumer_heartbeat_interval_ms: int = 5_000,
        consumer_assignors: tuple[str, ...] = ("uniform", "range"),
        consumer_migration_policy: str = "bidirectional",
        streams_session_timeout_ms: int = 45_000,
        streams_heartbeat_interval_ms: int = 5_000,
    ) -> None:
        self.state = state
        self.offsets_partitions = (
            DEFAULT_OFFSETS_PARTITIONS
            if offsets_partitions is None
            else offsets_partitions
        )
        #: the ``__consumer_offsets`` writer
        self.runtime = CoordinatorRuntime(state, OFFSETS_TOPIC, self.offsets_partitions)
        self.scheduler = scheduler or AsyncioScheduler()
        self.store = GroupStore(state, self.runtime, self.scheduler)
        self.groups: dict[str, ClassicGroup] = self.store.classic
        #: TxnOffsetCommit offsets waiting for their transaction's marker
        self.pending_txn_offsets = PendingTxnOffsets(self.partition_for)
        self.membership = Membership(
            self.groups,
            self.scheduler,
            self.now_ms,
            self._persist_group,
            initial_rebalance_delay_ms=(
                DEFAULT_INITIAL_REBALANCE_DELAY_MS
                if initial_rebalance_delay_ms is None
                else initial_rebalance_delay_ms
            ),
            min_session_timeout_ms=(
                DEFAULT_MIN_SESSION_TIMEOUT_MS
                if min_session_timeout_ms is None
                else min_session_timeout_ms
            ),
            max_session_timeout_ms=(
                DEFAULT_MAX_SESSION_TIMEOUT_MS
                if max_session_timeout_ms is None
                else max_session_timeout_ms
            ),
        )
        #: KIP-848 consumer groups (:mod:`.consumer_coordinator`).
        self.consumer = ConsumerGroups(
            self.store,
            self.membership,
            session_timeout_ms=consumer_session_timeout_ms,
            heartbeat_interval_ms=consumer_heartbeat_interval_ms,
            assignors=consumer_assignors,
            migration_policy=consumer_migration_policy,
        )
        #: KIP-1071 streams groups (:mod:`.streams_coordinator`).
        self.streams = StreamsGroups(
            self.store,
            session_timeout_ms=streams_session_timeout_ms,
            heartbeat_interval_ms=streams_heartbeat_interval_ms,
        )
        #: committed offsets of every group (Kafka's ``OffsetMetadataManager``)
        self.offsets = OffsetMetadataManager(
            self.store,
            self.membership,
            self.consumer,
            self.streams,
            self.pending_txn_offsets,
        )
        self.commit_offsets = self.offsets.commit_offsets
        self.fetch_offsets = self.offsets.fetch_offsets
        self.delete_offsets = self.offsets.delete_offsets
        self.on_topic_deleted = self.offsets.on_topic_deleted
        self.complete_transaction = self.offsets.complete_transaction
        self.join_group = self._join_group
        self.leave_group = self.membership.leave_group
        self.started = False

    def now_ms(self) -> int:
        return int(self.state.now_ms())

    # -- lifecycle -------------------------------------------------------------------

    async def start(self) -> None:
        """Recover groups and offsets from ``__consumer_offsets`` (every partition
        that exists), then accept requests. Records that do not decode are logged
        and skipped, as Kafka's loader does."""
        offsets: dict[tuple[str, str, int], CommittedOffset] = {}
        metadata: dict[str, Any] = {}
        consumer: dict[tuple[str, str, str], CoordinatorRecord] = {}
        streams: dict[tuple[str, str, str], CoordinatorRecord] = {}
        for partition in range(self.offsets_partitions):
            try:
                self._replay(
                    self.runtime.batches(partition),
                    offsets,
                    metadata,
                    partition,
                    consumer,
                    streams,
                )
            except DecodeError as exc:
                # The log's own recovery truncates torn tails; corruption inside a
                # segment is reported and the rest of that partition skipped.
                log.error("%s-%d: cannot replay: %s", OFFSETS_TOPIC, partition, exc)
        for group_id, value in metadata.items():
            if value is not None:
                self._load_group(group_id, value)
        self.consumer.load(consumer)
        self.streams.load(streams)
        for (group_id, topic, partition), committed in offsets.items():
            if group_id in self.streams.groups:
                self.streams.groups[group_id].offsets[(topic, partition)] = committed
                continue
            if group_id in self.consumer.groups:
                self.consumer.groups[group_id].offsets[(topic, partition)] = committed
                continue
            group = self.groups.get(group_id)
            if group is None:
                group = self.groups[group_id] = ClassicGroup(group_id)
            group.offsets[(topic, partition)] = committed
        self.started = True

    def _replay(
        self,
        batches: Iterable[Any],
        offsets: dict[tuple[str, str, int], CommittedOffset],
        metadata: dict[str, Any],
        partition: int,
        consumer: dict[tuple[str, str, str], CoordinatorRecord] | None = None,
        streams: dict[tuple[str, str, str], CoordinatorRecord] | None = None,
    ) -> None:
        """Apply one partition's records in offset order (last write wins;
        tombstones delete); KIP-848 consumer group records go to ``consumer``, KIP-1071
        streams group records to ``streams``. Transactional offset commits wait for
        their producer's marker: COMMIT applies them, ABORT drops them; those without
        a marker stay pending (:attr:`pending_txn_offsets`)."""
        for batch in batches:
            if batch.is_control:
                done = self.pending_txn_offsets.replay_marker(batch, partition)
                offsets.update(done)
                continue
            for key, value in batch_records(batch):
                try:
                    kip1071 = decode_streams_record(key or b"", value)
                    if kip1071 is not None:
                        if streams is not None:
                            streams[kip1071.replay_key] = kip1071
                        continue
                    modern = decode_consumer_record(key or b"", value)
                    if modern is not None:
                        if consumer is not None:
                            consumer[modern.replay_key] = modern
                        continue
                    record = decode_record(key, value)
                except DecodeError as exc:
                    log.warning(
                        "%s-%d: skipping record: %s", OFFSETS_TOPIC, partition, exc
                    )
                    continue
                if isinstance(record, GroupRecord):
                    metadata[record.group_id] = record.value
                    continue
                k = (record.group_id, record.topic, record.partition)
                if batch.is_transactional and record.value is not None:
                    self.pending_txn_offsets.add(batch.producer_id, k, record.value)
                elif record.value is None:
                    offsets.pop(k, None)
                else:
                    offsets[k] = record.value

    def _load_group(self, group_id: str, value: Any) -> None:
        group = ClassicGroup(
            group_id,
            generation_id=value.generation,
            protocol_type=value.protocol_type or None,
            protocol_name=value.protocol,
            leader_id=value.leader,
            state_timestamp_ms=getattr(value, "current_state_timestamp", -1),
        )
        self.groups[group_id] = group
        for m in value.members:
            member = Member(
                member_id=m.member_id,
                group_instance_id=getattr(m, "group_instance_id", None),
                client_id=m.client_id,
                client_host=m.client_host,
                rebalance_timeout_ms=getattr(m, "rebalance_timeout", m.session_timeout),
                session_timeout_ms=m.session_timeout,
                protocol_type=group.protocol_type or "",
                protocols=((value.protocol or "", m.subscription),),
                assignment=m.assignment,
            )
            group.add(member)
        group.leader_id = (
            value.leader if value.leader in group.members else group.leader_id
        )
        if group.members:
            # Kafka loads a group with members as Stable; members that do not
            # heartbeat within their session timeout are removed as usual.
            group.state = GroupState.STABLE
            for member in group.members.values():
                self.membership.schedule_heartbeat(group, member)

    async def stop(self) -> None:
        """Cancel every timer and wait for pending metadata appends; leaves no task."""
        self.membership.cancel_timers()
        await self.membership.drain()
        await self.consumer.stop()
        await self.streams.stop()
        self.started = False

    # -- coordinator lookup ----------------------------------------------------------

    def partition_for(self, group_id: str) -> int:
        """The ``__consumer_offsets`` partition of ``group_id``."""
        return self.runtime.partition_for(group_id)

    def coordinator_for(self, group_id: str) -> int | None:
        """The node id coordinating ``group_id`` (creating ``__consumer_offsets``
        on first use), or None when that partition has no leader (its node stopped)."""
        return self.runtime.coordinator_for(group_id)

    def check_coordinator(self, group_id: str, node_id: int) -> int:
        """NONE if ``node_id`` coordinates ``group_id``; else NOT_COORDINATOR,
        COORDINATOR_NOT_AVAILABLE (no leader) or COORDINATOR_LOAD_IN_PROGRESS
        (before :meth:`start` finished)."""
        return self.runtime.check_coordinator(group_id, node_id, self.started)

    # -- describe, list, delete ------------------------------------------------------

    def describe_group(self, group_id: str) -> DescribedGroup | None:
        """The group's description, or None if it does not exist (or is dead)."""
        group = self.groups.get(group_id)
        if group is None or group.is_(GroupState.DEAD):
            return None
        stable = group.is_(GroupState.STABLE)
        protocol = group.protocol_name or ""
        members = tuple(
            (
                m.member_id,
                m.group_instance_id,
                m.client_id,
                m.client_host,
                m.metadata(protocol) if stable else b"",
                m.assignment if stable else b"",
            )
            for m in group.members.values()
        )
        return DescribedGroup(
            group_id,
            group.state.value,
            group.protocol_type or "",
            protocol if stable else "",
            members,
        )

    def list_groups(
        self, states: Iterable[str] = (), types: Iterable[str] = ()
    ) -> list[tuple[str, str, str, str]]:
        """``(group_id, protocol_type, state, group type)`` of every live group, in
        group id order, filtered by state names (case-insensitive, as Kafka) and
        group types (only ``classic`` exists here)."""
        wanted_states = {s.lower() for s in states}
        wanted_types = {t.lower() for t in types}
        out = []
        for group_id, group in sorted(self.groups.items()):
            if group.is_(GroupState.DEAD):
                continue
            if wanted_states and group.state.value.lower() not in wanted_states:
                continue
            if wanted_types and "classic" not in wanted_types:
                continue
            out.append(
                (group_id, group.protocol_type or "", group.state.value, "classic")
            )
        out += self.consumer.list_groups(wanted_states, wanted_types)
        out += self.streams.list_groups(wanted_states, wanted_types)
        return sorted(out)

    async def delete_groups(self, group_ids: Iterable[str]) -> dict[str, int]:
        """DeleteGroups: an error per group (GROUP_ID_NOT_FOUND, NON_EMPTY_GROUP);
        a deleted group's offsets and metadata get
        tombstones."""
        result: dict[str, int] = {}
        for group_id in group_ids:
            modern = next(
                (k for k in (self.consumer, self.streams) if group_id in k.groups), None
            )
            if modern is not None:
                result[group_id] = await modern.delete_group(group_id)
                continue
            group = self.groups.get(group_id)
            if group is None or group.is_(GroupState.DEAD):
                result[group_id] = ErrorCode.GROUP_ID_NOT_FOUND
            elif not group.is_(GroupState.EMPTY):
                result[group_id] = ErrorCode.NON_EMPTY_GROUP
            else:
                pairs = [
                    offset_commit_record(group_id, t, p, None) for t, p in group.offsets
                ]
                pairs.append(group_metadata_record(group_id, None))
                try:
                    self.store.append(group_id, pairs)
                except CoordinatorWriteError as err:
                    result[group_id] = err.error_code
                    continue
                group.transition(GroupState.DEAD, self.now_ms())
                group.offsets.clear()
                del self.groups[group_id]
                result[group_id] = ErrorCode.NONE
        return result

    # -- KIP-848 consumer groups (state in .consumer_coordinator) ---------------------

    async def _join_group(self, group_id: str, *args: Any, **kwargs: Any) -> Any:
        """JoinGroup (arguments as ``Membership.join_group``):
        INCONSISTENT_GROUP_PROTOCOL for a streams group; a classic member joining a
        consumer group with members joins it as a classic member
        (:class:`.consumer_classic.ClassicMembers`; INCONSISTENT_GROUP_PROTOCOL when
        ``group.consumer.migration.policy`` is ``disabled``); an empty consumer
        group is converted back to a classic group, keeping its offsets."""
        if group_id in self.streams.groups:
            return JoinResult(
                ErrorCode.INCONSISTENT_GROUP_PROTOCOL, args[0] if args else ""
            )
        modern = self.consumer.groups.get(group_id)
        if modern is not None:
            if not modern.is_empty():
                if self.consumer.migration_policy is MigrationPolicy.DISABLED:
                    return JoinResult(
                        ErrorCode.INCONSISTENT_GROUP_PROTOCOL, args[0] if args else ""
                    )
                return await self.consumer.classic.join(modern, *args, **kwargs)
            try:
                self.store.append(group_id, self.consumer.group_tombstones(modern))
            except CoordinatorWriteError as err:
                return JoinResult(err.error_code)
            del self.consumer.groups[group_id]
            modern.dead = True
            classic = self.groups[group_id] = ClassicGroup(
                group_id, state_timestamp_ms=self.now_ms()
            )
            classic.offsets = modern.offsets
        return await self.membership.join_group(group_id, *args, **kwargs)

    async def sync_group(self, group_id: str, *args: Any, **kwargs: Any) -> SyncResult:
        """SyncGroup (arguments as ``Membership.sync_group``); a classic member of a
        consumer group is answered by :class:`.consumer_classic.ClassicMembers`."""
        modern = self.consumer.groups.get(group_id)
        if modern is None:
            return await self.membership.sync_group(group_id, *args, **kwargs)
        generation_id, member_id, instance_id = args[:3]
        return self.consumer.classic.sync(
            modern,
            generation_id,
            member_id,
            instance_id,
            kwargs.get("protocol_type"),
            kwargs.get("protocol_name"),
        )

    def heartbeat(
        self,
        group_id: str,
        generation_id: int,
        member_id: str,
        group_instance_id: str | None,
    ) -> int:
        """Heartbeat (``Membership.heartbeat``, or a classic member of a consumer
        group: :meth:`.consumer_classic.ClassicMembers.heartbeat`)."""
        modern = self.consumer.groups.get(group_id)
        if modern is not None:
            return self.consumer.classic.heartbeat(
                modern, generation_id, member_id, group_instance_id
            )
        return self.membership.heartbeat(
            group_id, generation_id, member_id, group_instance_id
        )

    async def leave(
        self, group_id: str, members: list[tuple[str, str | None]]
    ) -> tuple[int, list[int]]:
        """LeaveGroup (``Membership.leave_group``, or classic members of a consumer
        group: :meth:`.consumer_classic.ClassicMembers.leave`)."""
        modern = self.consumer.groups.get(group_id)
        if modern is not None:
            return await self.consumer.classic.leave(modern, members)
        return self.membership.leave_group(group_id, members)

    # -- persistence -----------------------------------------------------------------

    async def _persist_group(self, group: ClassicGroup) -> ErrorCode:
        """Append ``group``'s metadata record: the write's error code (NONE: stored)."""
        try:
            self.store.append(
                group.group_id,
                [group_metadata_record(group.group_id, group.metadata_value())],
            )
        except CoordinatorWriteError as err:
            return err.error_code
        return ErrorCode.NONE
