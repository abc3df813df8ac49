"""The KIP-1071 streams groups of one cluster: heartbeats, topology, tasks, timers.

:class:`StreamsGroups` is owned by :class:`~kproto.broker.groups.GroupCoordinator`
(``coordinator.streams``) and follows Kafka's ``GroupMetadataManager.streamsGroupHeartbeat``:

1. validate the request (INVALID_REQUEST as ``throwIfStreamsGroupHeartbeatRequestIsInvalid``);
2. find or create the group (epoch 0 only; an empty classic group is converted, a
   non-empty one or a consumer group of the same id answers GROUP_ID_NOT_FOUND) and
   the member (UNKNOWN_MEMBER_ID, FENCED_MEMBER_EPOCH as for consumer groups);
3. take the topology of the first member (or of a member joining an empty group);
   a member with another topology epoch gets the STALE_TOPOLOGY status;
4. bump the group epoch when a member joins or leaves or a source topic's partition
   count changes; configure the topology (missing source topics: the
   MISSING_SOURCE_TOPICS status and no tasks; missing internal topics are created
   with their declared configs, changelogs with ``cleanup.policy=compact``, as
   Kafka's broker does for the statuses its ``InternalTopicManager`` reports);
5. recompute the target tasks with :func:`.streams_group.sticky_assign` when the
   group epoch passed the assignment epoch, reconcile the member
   (:func:`.modern.reconcile`) and (re)arm its session timer and, while it must
   revoke tasks, its rebalance timer.

Changes are appended to ``__consumer_offsets`` as the ``StreamsGroup*`` records
(:mod:`.streams_records`) and replayed on start. What consumer groups do alike (the
append, group creation and conversion, epoch checks, fencing, timers, the
``streams.*`` group configs, offset validation, deletion) is in
:class:`.modern_coordinator.ModernGroups`.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

import attrs

from kproto.broker.errors import ApiError
from kproto.errors import ErrorCode

from .modern_coordinator import ModernGroups
from .records import CoordinatorRecord, Pair
from .streams_group import (
    ConfiguredTopology,
    StreamsGroup,
    StreamsGroupMember,
    Subtopology,
    TaskSet,
    configure_topology,
    sticky_assign,
)
from .streams_records import (
    STREAMS_RECORDS,
    group_records,
    group_tombstones,
    load_streams_groups,
    member_records,
    metadata_hash,
)

__all__ = ["Status", "StreamsGroups", "StreamsHeartbeatResult", "task_set"]

log = logging.getLogger("kproto.broker.groups")

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


def topology_from(topology: Any) -> tuple[Subtopology, ...]:
    """The declared subtopologies of a heartbeat's ``Topology``; raises
    ApiError(INVALID_REQUEST) for a source topic regex (not supported here)."""
    for s in topology.subtopologies:
        if s.source_topic_regex:
            raise ApiError(
                ErrorCode.INVALID_REQUEST,
                f"Subtopology {s.subtopology_id}: SourceTopicRegex is not supported"
                " by the kproto broker; name the source topics.",
            )
    return tuple(Subtopology.from_entity(s) for s in topology.subtopologies)


class StreamsGroups(ModernGroups[StreamsGroup, StreamsHeartbeatResult]):
    """Every streams group of a cluster, driven by StreamsGroupHeartbeat.

    Options (ms): ``session_timeout_ms`` (``group.streams.session.timeout.ms``),
    ``heartbeat_interval_ms`` (``group.streams.heartbeat.interval.ms``).
    """

    GROUP_TYPE = "streams"
    ASSIGNMENT_UNIT = "tasks"
    RECORDS = STREAMS_RECORDS

    # -- heartbeat -------------------------------------------------------------------

    async def heartbeat(
        self, request: Any, client_id: str, client_host: str
    ) -> StreamsHeartbeatResult:
        """Serve one StreamsGroupHeartbeat (see the module docstring)."""
        return await self._serve(
            request,
            lambda records: self._heartbeat(request, client_id, client_host, records),
        )

    def _error_result(
        self, request: Any, code: ErrorCode, message: str
    ) -> StreamsHeartbeatResult:
        return StreamsHeartbeatResult(code, message, request.member_id)

    def _new_group(self, group_id: str) -> StreamsGroup:
        return StreamsGroup(group_id)

    def _validate(self, r: Any) -> None:
        invalid = self._invalid
        self._validate_common(r)
        if not r.member_id:
            raise invalid("MemberId can't be empty.")
        if r.member_epoch == 0:
            if r.topology is None:
                raise invalid("Topology must be non-null when joining.")
            for name in ("active_tasks", "standby_tasks", "warmup_tasks"):
                if task_set(getattr(r, name)):
                    raise invalid(
                        f"{name.title().replace('_', '')} must be empty when"
                        " (re-)joining."
                    )

    def _heartbeat(
        self, r: Any, client_id: str, client_host: str, records: list[Pair]
    ) -> StreamsHeartbeatResult:
        status: list[tuple[int, str]] = []
        bump = False
        owned = task_set(r.active_tasks)
        if r.member_epoch == 0:
            group = self._group_for_join(r.group_id, records)
            member = group.members.get(r.member_id)
            if member is None:
                member = StreamsGroupMember(r.member_id)
                group.members[r.member_id] = member
                bump = True
            else:
                group.rejoin(member)
            bump = self._topology(group, member, r.topology, status) or bump
        else:
            group = self._group(r.group_id)
            member = self._member(group, r.member_id)
            self._check_epoch(member, r.member_epoch, owned)
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
        changed = group.reconcile_member(member, owned)
        if changed or updated or r.member_epoch == 0:
            records += member_records(group.group_id, member)
        self._arm_timers(group, member)
        send = changed or r.member_epoch == 0 or owned is not None
        return StreamsHeartbeatResult(
            ErrorCode.NONE,
            None,
            member.member_id,
            member.member_epoch,
            self.heartbeat_interval(group.group_id),
            member.assigned if send else None,
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
    def _update_member(
        member: StreamsGroupMember, r: Any, client_id: str, client_host: str
    ) -> bool:
        """Apply the request's non-null fields; True if the member's metadata
        changed."""
        before = attrs.astuple(member, recurse=False)
        member.update_from(r, client_id, client_host)
        if r.process_id is not None:
            member.process_id = r.process_id
        if r.user_endpoint is not None:
            member.user_endpoint = (r.user_endpoint.host, r.user_endpoint.port)
        if r.client_tags is not None:
            member.client_tags = tuple((t.key, t.value) for t in r.client_tags)
        return attrs.astuple(member, recurse=False) != before

    # -- topology, metadata, assignment ----------------------------------------------

    def _refresh_metadata(self, group: StreamsGroup) -> bool:
        """Partition counts of the source topics; True if they changed."""
        current = {}
        for name in group.source_topics():
            count = self.store.state.topic_partitions(name)
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
        state = self.store.state
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
            except ApiError as exc:
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
        group = self._group(r.group_id)
        self.remove_member(group, self._member(group, r.member_id), records)
        return StreamsHeartbeatResult(ErrorCode.NONE, None, r.member_id, r.member_epoch)

    def _epoch_records(self, group: StreamsGroup) -> list[Pair]:
        return group_records(group, targets=False)

    def group_tombstones(self, group: StreamsGroup) -> list[Pair]:
        return group_tombstones(group.group_id)

    def _load_groups(
        self, records: Mapping[tuple[str, str, str], CoordinatorRecord]
    ) -> dict[str, StreamsGroup]:
        return load_streams_groups(records)
