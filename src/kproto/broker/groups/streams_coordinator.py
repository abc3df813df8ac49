"""The KIP-1071 streams groups of one cluster: heartbeats, topology, tasks, timers.

:class:`StreamsGroups` is owned by :class:`~kproto.broker.groups.GroupCoordinator`
(``coordinator.streams``) and follows Kafka's ``GroupMetadataManager.streamsGroupHeartbeat``:

1. validate the request (INVALID_REQUEST as ``throwIfStreamsGroupHeartbeatRequestIsInvalid``);
2. find or create the group (epoch 0 only; a classic or consumer group of the same
   id answers GROUP_ID_NOT_FOUND) and the member (UNKNOWN_MEMBER_ID,
   FENCED_MEMBER_EPOCH as for consumer groups);
3. take the topology of the first member (or of a member joining an empty group);
   a member with another topology epoch gets the STALE_TOPOLOGY status;
4. bump the group epoch when a member joins or leaves or a source topic's partition
   count changes; configure the topology (missing source topics: the
   MISSING_SOURCE_TOPICS status and no tasks; missing internal topics are created
   with their declared configs, changelogs with ``cleanup.policy=compact``, as
   Kafka's broker does for the statuses its ``InternalTopicManager`` reports);
5. recompute the target tasks with :func:`.streams_group.sticky_assign` when the
   group epoch passed the assignment epoch, reconcile the member
   (:func:`.streams_group.reconcile_tasks`) and (re)arm its session timer and,
   while it must revoke tasks, its rebalance timer.

Changes are appended to ``__consumer_offsets`` as the ``StreamsGroup*`` records
(:mod:`.streams_records`) and replayed on start. State changes are applied in memory
before the append; a failed append answers COORDINATOR_NOT_AVAILABLE (Kafka would
roll the in-memory state back).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine
from typing import TYPE_CHECKING, Any

import attrs

from kproto.broker.errors import BrokerError
from kproto.errors import ErrorCode

from .streams_group import (
    ConfiguredTopology,
    StreamsGroup,
    StreamsGroupMember,
    StreamsMemberState,
    Subtopology,
    TaskSet,
    TopicInfo,
    configure_topology,
    reconcile_tasks,
    sticky_assign,
)
from .streams_records import (
    StreamsRecord,
    group_records,
    load_streams_groups,
    member_records,
    member_tombstones,
    metadata_hash,
)
from .timers import arm_member_timers

if TYPE_CHECKING:
    from .coordinator import GroupCoordinator

__all__ = ["Status", "StreamsGroups", "StreamsHeartbeatResult", "task_set"]

log = logging.getLogger("kproto.broker.groups")
E = ErrorCode
Pair = tuple[bytes, bytes | None]

LEAVE_EPOCH = -1
STATIC_LEAVE_EPOCH = -2
DEFAULT_SESSION_TIMEOUT_MS = 45_000  # group.streams.session.timeout.ms
DEFAULT_HEARTBEAT_INTERVAL_MS = 5_000  # group.streams.heartbeat.interval.ms
TASK_OFFSET_INTERVAL_MS = 60_000
ACCEPTABLE_RECOVERY_LAG = 10_000


class Status:
    """Kafka's ``StreamsGroupHeartbeatResponse.Status`` codes."""

    STALE_TOPOLOGY = 0
    MISSING_SOURCE_TOPICS = 1
    INCORRECTLY_PARTITIONED_TOPICS = 2
    MISSING_INTERNAL_TOPICS = 3
    SHUTDOWN_APPLICATION = 4


@attrs.frozen
class StreamsHeartbeatResult:
    """A StreamsGroupHeartbeat answer; ``active`` None: not sent (unchanged);
    ``status`` as ``(code, detail)`` pairs."""

    error_code: int
    error_message: str | None = None
    member_id: str = ""
    member_epoch: int = -1
    heartbeat_interval_ms: int = 0
    active: TaskSet | None = None
    status: tuple[tuple[int, str], ...] = ()


def task_set(tasks: Any) -> TaskSet | None:
    """``{subtopology: partitions}`` of a list of ``TaskIds`` (None stays None)."""
    if tasks is None:
        return None
    out: TaskSet = {}
    for t in tasks:
        if t.partitions:
            out[t.subtopology_id] = out.get(t.subtopology_id, frozenset()) | frozenset(
                t.partitions
            )
    return out


def _topic_info(info: Any) -> TopicInfo:
    return TopicInfo(
        info.name,
        info.partitions,
        info.replication_factor,
        tuple((c.key, c.value) for c in info.topic_configs),
    )


def topology_from(topology: Any) -> tuple[Subtopology, ...]:
    """The declared subtopologies of a heartbeat's ``Topology``; raises
    BrokerError(INVALID_REQUEST) for a source topic regex (not supported here)."""
    out = []
    for s in topology.subtopologies:
        if s.source_topic_regex:
            raise BrokerError(
                E.INVALID_REQUEST,
                f"Subtopology {s.subtopology_id}: SourceTopicRegex is not supported"
                " by the kproto broker; name the source topics.",
            )
        out.append(
            Subtopology(
                s.subtopology_id,
                tuple(s.source_topics),
                tuple(s.repartition_sink_topics),
                tuple(_topic_info(t) for t in s.state_changelog_topics),
                tuple(_topic_info(t) for t in s.repartition_source_topics),
            )
        )
    return tuple(out)


class StreamsGroups:
    """Every streams group of a cluster, driven by StreamsGroupHeartbeat.

    Options (ms): ``session_timeout_ms`` (``group.streams.session.timeout.ms``),
    ``heartbeat_interval_ms`` (``group.streams.heartbeat.interval.ms``).
    """

    def __init__(
        self,
        coordinator: GroupCoordinator,
        *,
        session_timeout_ms: int = DEFAULT_SESSION_TIMEOUT_MS,
        heartbeat_interval_ms: int = DEFAULT_HEARTBEAT_INTERVAL_MS,
    ) -> None:
        self.coordinator = coordinator
        self.groups: dict[str, StreamsGroup] = {}
        self.session_timeout_ms = session_timeout_ms
        self.heartbeat_interval_ms = heartbeat_interval_ms
        self._tasks: set[asyncio.Task[Any]] = set()

    # -- heartbeat -------------------------------------------------------------------

    async def heartbeat(
        self, request: Any, client_id: str, client_host: str
    ) -> StreamsHeartbeatResult:
        """Serve one StreamsGroupHeartbeat (see the module docstring)."""
        records: list[Pair] = []
        try:
            self._validate(request)
            if request.member_epoch in (LEAVE_EPOCH, STATIC_LEAVE_EPOCH):
                result = self._leave(request, records)
            else:
                result = self._heartbeat(request, client_id, client_host, records)
        except BrokerError as error:
            return StreamsHeartbeatResult(
                error.error_code, error.message, request.member_id
            )
        if records and not await self.coordinator._append(request.group_id, records):
            return StreamsHeartbeatResult(
                E.COORDINATOR_NOT_AVAILABLE,
                "cannot write to __consumer_offsets",
                request.member_id,
            )
        return result

    @staticmethod
    def _validate(r: Any) -> None:
        def invalid(message: str) -> BrokerError:
            return BrokerError(E.INVALID_REQUEST, message)

        if not r.group_id:
            raise invalid("GroupId can't be empty.")
        if not r.member_id:
            raise invalid("MemberId can't be empty.")
        if r.instance_id is not None and not r.instance_id:
            raise invalid("InstanceId can't be empty.")
        if r.rack_id is not None and not r.rack_id:
            raise invalid("RackId can't be empty.")
        if r.member_epoch == 0:
            if r.rebalance_timeout_ms == -1:
                raise invalid("RebalanceTimeoutMs must be provided in first request.")
            if r.topology is None:
                raise invalid("Topology must be non-null when joining.")
            for name in ("active_tasks", "standby_tasks", "warmup_tasks"):
                if task_set(getattr(r, name)):
                    raise invalid(
                        f"{name.title().replace('_', '')} must be empty when"
                        " (re-)joining."
                    )
        elif r.member_epoch < STATIC_LEAVE_EPOCH:
            raise invalid(f"MemberEpoch is invalid: {r.member_epoch}.")

    def _group_for_join(self, group_id: str) -> StreamsGroup:
        group = self.groups.get(group_id)
        if group is not None:
            return group
        classic = self.coordinator.groups.get(group_id)
        if (classic is not None and classic.members) or group_id in (
            self.coordinator.consumer.groups
        ):
            raise BrokerError(
                E.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a streams group."
            )
        group = self.groups[group_id] = StreamsGroup(group_id)
        if classic is not None:  # an empty classic group: its offsets carry over
            group.offsets = classic.offsets
            del self.coordinator.groups[group_id]
        return group

    def _heartbeat(
        self, r: Any, client_id: str, client_host: str, records: list[Pair]
    ) -> StreamsHeartbeatResult:
        if r.member_epoch == 0:
            group = self._group_for_join(r.group_id)
        else:
            found = self.groups.get(r.group_id)
            if found is None:
                raise BrokerError(
                    E.GROUP_ID_NOT_FOUND, f"Group {r.group_id} not found."
                )
            group = found
        status: list[tuple[int, str]] = []
        bump = False
        member = group.members.get(r.member_id)
        if r.member_epoch == 0:
            if member is None:
                member = StreamsGroupMember(r.member_id)
                group.members[r.member_id] = member
                bump = True
            else:  # rejoining: it gives up what it held and starts over
                group.release(member)
                member.active, member.pending_revocation = {}, {}
                member.state = StreamsMemberState.STABLE
                member.member_epoch, member.previous_member_epoch = 0, -1
            bump = self._topology(group, member, r.topology, status) or bump
        elif member is None:
            raise BrokerError(
                E.UNKNOWN_MEMBER_ID,
                f"Member {r.member_id} is not a member of group {r.group_id}.",
            )
        else:
            self._check_epoch(member, r.member_epoch, task_set(r.active_tasks))
        updated = self._update_member(member, r, client_id, client_host)
        if member.topology_epoch != group.topology_epoch:
            status.append(
                (
                    Status.STALE_TOPOLOGY,
                    f"The member's topology epoch {member.topology_epoch} is not the"
                    f" group's {group.topology_epoch}.",
                )
            )
        bump = self._refresh_metadata(group) or bump
        if bump:
            group.group_epoch += 1
        status += self._configure(group)
        assigned = group.group_epoch > group.assignment_epoch
        if assigned:
            self._assign(group)
        if bump or assigned:
            records += group_records(group, targets=assigned)
        owned = task_set(r.active_tasks)
        group.release(member)
        changed = reconcile_tasks(
            member,
            group.assignment_epoch,
            group.target.get(member.member_id, {}),
            owned,
            group.task_epochs,
        )
        group.hold(member)
        if changed or updated or r.member_epoch == 0:
            records += member_records(group.group_id, member)
        self._arm_timers(group, member)
        send = changed or r.member_epoch == 0 or owned is not None
        return StreamsHeartbeatResult(
            E.NONE,
            None,
            member.member_id,
            member.member_epoch,
            self.heartbeat_interval_ms,
            member.active if send else None,
            tuple(status),
        )

    def _topology(
        self,
        group: StreamsGroup,
        member: StreamsGroupMember,
        topology: Any,
        status: list[tuple[int, str]],
    ) -> bool:
        """Take the joining member's topology if the group has none or only this
        member; True if the group's topology changed."""
        declared = topology_from(topology)
        member.topology_epoch = topology.epoch
        if group.topology is None or set(group.members) == {member.member_id}:
            if group.topology != declared or group.topology_epoch != topology.epoch:
                group.topology, group.topology_epoch = declared, topology.epoch
                group.configured = group.topology_description = None
                return True
        return False

    @staticmethod
    def _check_epoch(
        member: StreamsGroupMember, epoch: int, owned: TaskSet | None
    ) -> None:
        """Kafka's ``throwIfStreamsGroupMemberEpochIsInvalid``."""
        if epoch > member.member_epoch or (
            epoch < member.member_epoch
            and (
                epoch != member.previous_member_epoch
                or owned is None
                or any(
                    not parts <= member.active.get(sub, frozenset())
                    for sub, parts in owned.items()
                )
            )
        ):
            raise BrokerError(
                E.FENCED_MEMBER_EPOCH,
                f"The streams group member has a {'greater' if epoch > member.member_epoch else 'smaller'}"
                f" member epoch ({epoch}) than the one known by the group coordinator"
                f" ({member.member_epoch}). The member must abandon all its tasks and"
                " rejoin.",
            )

    @staticmethod
    def _update_member(
        member: StreamsGroupMember, r: Any, client_id: str, client_host: str
    ) -> bool:
        """Apply the request's non-null fields; True if the member's metadata
        changed."""
        before = attrs.astuple(member, recurse=False)
        if r.instance_id is not None:
            member.instance_id = r.instance_id
        if r.rack_id is not None:
            member.rack_id = r.rack_id
        if r.rebalance_timeout_ms != -1:
            member.rebalance_timeout_ms = r.rebalance_timeout_ms
        if r.process_id is not None:
            member.process_id = r.process_id
        if r.user_endpoint is not None:
            member.user_endpoint = (r.user_endpoint.host, r.user_endpoint.port)
        if r.client_tags is not None:
            member.client_tags = tuple((t.key, t.value) for t in r.client_tags)
        member.client_id, member.client_host = client_id, client_host
        return attrs.astuple(member, recurse=False) != before

    # -- topology, metadata, assignment ----------------------------------------------

    def _refresh_metadata(self, group: StreamsGroup) -> bool:
        """Partition counts of the source topics; True if they changed."""
        current = {}
        for name in group.source_topics():
            count = self.coordinator.state.topic_partitions(name)
            if count is not None:
                current[name] = count
        if current == group.metadata and group.configured is not None:
            return False
        loaded, group.loaded_hash = group.loaded_hash, None
        if loaded is not None and loaded == metadata_hash(current):
            group.metadata = current  # recovered: the same metadata, no new epoch
            return False
        group.metadata = current
        group.configured = None
        return True

    def _configure(self, group: StreamsGroup) -> list[tuple[int, str]]:
        """Configure the topology (creating missing internal topics); statuses."""
        if group.topology is None:
            return []
        if group.configured is None or group.configured.tasks is None:
            group.configured = configure_topology(group.topology, group.metadata)
        configured: ConfiguredTopology = group.configured
        if configured.tasks is None:
            return [
                (
                    Status.MISSING_SOURCE_TOPICS,
                    "Source topics "
                    + ", ".join(configured.missing_source_topics)
                    + " are missing.",
                )
            ]
        missing = []
        state = self.coordinator.state
        for info, partitions in configured.internal_topics:
            if state.topic_partitions(info.name) is not None or partitions < 1:
                continue
            configs = dict(info.configs)
            if any(info is t for s in group.topology for t in s.state_changelog_topics):
                configs.setdefault("cleanup.policy", "compact")
            try:
                state.create_topic(info.name, partitions, configs=configs)
                if info.name in group.source_topics():
                    # created at this epoch: not a metadata change to bump for
                    group.metadata[info.name] = partitions
            except BrokerError as exc:
                log.warning(
                    "group %s: cannot create %s: %s", group.group_id, info.name, exc
                )
                missing.append(info.name)
        if missing:  # not ready until they exist (no tasks sized by them)
            group.configured = attrs.evolve(configured, tasks=None)
            return [
                (
                    Status.MISSING_INTERNAL_TOPICS,
                    "Internal topics " + ", ".join(missing) + " are missing.",
                )
            ]
        return []

    def _assign(self, group: StreamsGroup) -> None:
        """Recompute the target tasks at the group epoch (Kafka's
        ``TargetAssignmentBuilder`` with the sticky assignor)."""
        tasks = group.configured.tasks if group.configured is not None else None
        if tasks is None:
            group.target = {m: {} for m in group.members}
        else:
            group.target = sticky_assign(
                {m: group.target.get(m, {}) for m in group.members}, tasks
            )
        group.assignment_epoch = group.group_epoch

    # -- leaving, fencing, timers ----------------------------------------------------

    def _leave(self, r: Any, records: list[Pair]) -> StreamsHeartbeatResult:
        group = self.groups.get(r.group_id)
        if group is None:
            raise BrokerError(E.GROUP_ID_NOT_FOUND, f"Group {r.group_id} not found.")
        member = group.members.get(r.member_id)
        if member is None:
            raise BrokerError(
                E.UNKNOWN_MEMBER_ID,
                f"Member {r.member_id} is not a member of group {r.group_id}.",
            )
        self._remove(group, member, records)
        return StreamsHeartbeatResult(E.NONE, None, r.member_id, r.member_epoch)

    def _remove(
        self, group: StreamsGroup, member: StreamsGroupMember, records: list[Pair]
    ) -> None:
        group.remove_member(member.member_id)
        group.group_epoch += 1
        records += member_tombstones(group.group_id, member.member_id)
        records += group_records(group, targets=False)

    def _arm_timers(self, group: StreamsGroup, member: StreamsGroupMember) -> None:
        arm_member_timers(
            self.coordinator.scheduler,
            member,
            self.session_timeout_ms,
            member.state == StreamsMemberState.UNREVOKED_TASKS,
            lambda why, epoch: self._expire(group, member, why, epoch),
        )

    def _expire(
        self,
        group: StreamsGroup,
        member: StreamsGroupMember,
        why: str,
        epoch: int | None,
    ) -> None:
        if group.members.get(member.member_id) is not member or group.dead:
            return
        if epoch is not None:
            member.rebalance_timer = None
            if (
                member.member_epoch != epoch
                or member.state != StreamsMemberState.UNREVOKED_TASKS
            ):
                return
        log.info(
            "streams group %s: member %s fenced (%s)",
            group.group_id,
            member.member_id,
            why,
        )
        records: list[Pair] = []
        self._remove(group, member, records)
        self._spawn(self.coordinator._append(group.group_id, records))

    def _spawn(self, coro: Coroutine[Any, Any, Any]) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def stop(self) -> None:
        """Cancel every timer and wait for pending appends."""
        for group in self.groups.values():
            for member in group.members.values():
                member.cancel_timers()
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

    def load(self, records: dict[tuple[str, str, str], StreamsRecord]) -> None:
        """Rebuild the groups from the last record of each key
        (:func:`.streams_records.load_streams_groups`); members get fresh session
        timers, as Kafka's loader gives them."""
        for group_id, group in load_streams_groups(records).items():
            self.groups[group_id] = group
            for member in group.members.values():
                self._arm_timers(group, member)

    # -- offsets, list, delete -------------------------------------------------------

    def validate_commit(
        self, group: StreamsGroup, member_epoch: int, member_id: str
    ) -> int:
        """Kafka's ``StreamsGroup.validateOffsetCommit``: a commit without member
        (epoch < 0, no id) only to an empty group, else UNKNOWN_MEMBER_ID; a
        member's commit at another epoch than its own STALE_MEMBER_EPOCH."""
        if member_epoch < 0 and not member_id:
            return E.NONE if not group.members else E.UNKNOWN_MEMBER_ID
        member = group.members.get(member_id)
        if member is None:
            return E.UNKNOWN_MEMBER_ID
        return E.NONE if member_epoch == member.member_epoch else E.STALE_MEMBER_EPOCH

    def validate_fetch(
        self, group_id: str, member_id: str | None, member_epoch: int
    ) -> int:
        """Kafka's ``StreamsGroup.validateOffsetFetch`` (OffsetFetch v9+)."""
        group = self.groups.get(group_id)
        if group is None or (member_id is None and member_epoch < 0):
            return E.NONE
        member = group.members.get(member_id or "")
        if member is None:
            return E.UNKNOWN_MEMBER_ID
        return E.NONE if member_epoch == member.member_epoch else E.STALE_MEMBER_EPOCH

    def list_groups(
        self, states: set[str], types: set[str]
    ) -> list[tuple[str, str, str, str]]:
        """ListGroups rows ``(group_id, protocol_type, state, "streams")``, filtered
        by lower-cased state names and group types."""
        if types and "streams" not in types:
            return []
        return [
            (group_id, "streams", g.state.value, "streams")
            for group_id, g in sorted(self.groups.items())
            if not states or g.state.value.lower() in states
        ]

    def delete(self, group_id: str) -> int | None:
        """DeleteGroups for a streams group: NON_EMPTY_GROUP while it has members,
        else the group is dropped (its offsets stay for the caller to tombstone);
        None when ``group_id`` is not a streams group."""
        group = self.groups.get(group_id)
        if group is None:
            return None
        if group.members:
            return E.NON_EMPTY_GROUP
        return E.NONE
