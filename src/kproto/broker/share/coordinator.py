"""The share coordinator of one in-process cluster: share groups, share partitions,
share sessions, and their persistence in ``__share_group_state``.

Kafka splits this over the group coordinator (``GroupMetadataManager``'s share-group
part: membership and assignment, here :mod:`.group`), the share-partition leader
(``SharePartitionManager``/``SharePartition``: acquisition and acknowledgement,
here :mod:`.partition`) and the share coordinator (``ShareCoordinatorShard``:
durable share-partition state). In one process they are one object:

- a share partition starts when it is first assigned, at the log end offset or the
  log start offset (``share.auto.offset.reset`` latest/earliest);
- every acknowledgement, release, lock expiry and offset reset appends a
  ``ShareSnapshot`` record of the partition's state (SPSO and in-flight records) to
  ``__share_group_state`` before the request is answered; :meth:`start` replays
  them, so a restarted cluster resumes each share partition where it was (acquired
  records become AVAILABLE again: locks are not persisted, as in Kafka);
- share sessions (KIP-932's ShareFetch sessions, Kafka's ``ShareSessionCache``)
  are kept per node, group and member: :meth:`open_session` and friends.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterable

import attrs

from kproto.broker.coordinator_runtime import CoordinatorRuntime, CoordinatorWriteError
from kproto.broker.groups.records import batch_records
from kproto.broker.groups.timers import AsyncioScheduler, Scheduler
from kproto.broker.state import ClusterState
from kproto.errors import ErrorCode
from kproto.index import ApiKey
from kproto.serial import DecodeError

from .config import GROUP_PROPERTIES, ShareConfig
from .group import Assignment, ShareGroup, ShareGroups
from .partition import SharePartition, StateBatch
from .records import (
    SHARE_STATE_TOPIC,
    decode_state_record,
    snapshot_record,
    state_batches,
    state_partition_for,
)

__all__ = ["ShareCoordinator", "ShareSession", "SHARE_STATE_TOPIC"]

log = logging.getLogger("kproto.broker.share")
_EPOCH_MAX = 2**31 - 1

#: (group id, topic, partition)
Key = tuple[str, str, int]


@attrs.define
class _Loaded:
    """A share partition's state as replayed from ``__share_group_state``."""

    start_offset: int
    state_epoch: int
    batches: list[StateBatch]


@attrs.define
class ShareSession:
    """A member's share session on one node: the partitions it fetches and the
    epoch its next request must carry (Kafka's ``ShareSession``)."""

    epoch: int
    partitions: dict[tuple[str, int], None] = attrs.field(factory=dict)


class ShareCoordinator:
    """Share groups and share partitions of one in-process cluster.

    Args:
        state: the cluster state (topics, logs, leaders, the clock).
        config: the share-group settings.
        scheduler: runs lock expiries and session timeouts (tests pass their own).
    """

    def __init__(
        self,
        state: ClusterState,
        config: ShareConfig | None = None,
        *,
        scheduler: Scheduler | None = None,
    ) -> None:
        self.state = state
        self.config = config or ShareConfig()
        self.scheduler = scheduler or AsyncioScheduler()
        self.membership = ShareGroups(
            state.topic_partitions,
            self._on_assigned,
            self._on_member_gone,
            scheduler=self.scheduler,
            session_timeout_ms=lambda g: self.config_for(g).session_timeout_ms,
        )
        #: ShareGroupHeartbeat (:meth:`.group.ShareGroups.heartbeat`; it (re)arms
        #: the member's session timeout)
        self.heartbeat = self.membership.heartbeat
        self.partitions: dict[Key, SharePartition] = {}
        #: the topic id each share partition was started for (a topic deleted and
        #: created again under its name starts its share partitions over)
        self._topic_ids: dict[Key, uuid.UUID | None] = {}
        self.sessions: dict[tuple[int, str, str], ShareSession] = {}
        #: the ``__share_group_state`` writer
        self.runtime = CoordinatorRuntime(
            state, SHARE_STATE_TOPIC, self.config.state_topic_partitions
        )
        #: group id -> group configs set on it (``share.*``, Kafka's ``GroupConfig``)
        self.group_configs: dict[str, dict[str, str]] = {}
        self.started = False

    @property
    def groups(self) -> dict[str, ShareGroup]:
        return self.membership.groups

    # -- lifecycle -------------------------------------------------------------

    async def start(self) -> None:
        """Replay ``__share_group_state`` (every partition that exists): the last
        snapshot of each share partition, with later updates applied, wins; a
        tombstone deletes. Records that do not decode are logged and skipped."""
        found: dict[tuple[str, uuid.UUID, int], _Loaded] = {}
        for p in range(self.config.state_topic_partitions):
            try:
                for batch in self.runtime.batches(p):
                    self._replay(batch_records(batch), found, p)
            except DecodeError as exc:
                log.error("%s-%d: cannot replay: %s", SHARE_STATE_TOPIC, p, exc)
        names = {info.topic_id: name for name, info in self.state.topics.items()}
        for (group_id, topic_id, partition), loaded in found.items():
            topic = names.get(topic_id)
            if topic is None:
                continue  # the topic was deleted
            share = self._new_partition(
                group_id, topic, partition, loaded.start_offset, loaded.state_epoch
            )
            share.restore(loaded.start_offset, loaded.batches)
        self.started = True

    @staticmethod
    def _replay(
        pairs: Iterable[tuple[bytes | None, bytes | None]],
        found: dict[tuple[str, uuid.UUID, int], _Loaded],
        partition: int,
    ) -> None:
        """Apply one batch's records in offset order (Kafka's
        ``ShareCoordinatorShard.replay``: a snapshot replaces, an update adds)."""
        for key, value in pairs:
            try:
                record = decode_state_record(key, value)
            except DecodeError as exc:
                log.warning("%s-%d: skipping: %s", SHARE_STATE_TOPIC, partition, exc)
                continue
            k = (record.group_id, record.topic_id, record.partition)
            loaded = found.get(k)
            if record.value is None:
                found.pop(k, None)
            elif record.snapshot or loaded is None:
                found[k] = _Loaded(
                    record.value.start_offset,
                    getattr(record.value, "state_epoch", 0),
                    state_batches(record.value),
                )
            else:
                loaded.start_offset = max(
                    loaded.start_offset, record.value.start_offset
                )
                loaded.batches.extend(state_batches(record.value))

    async def stop(self) -> None:
        """Cancel every timer."""
        for share in self.partitions.values():
            share.cancel_timers()
        self.membership.cancel_timers()
        self.started = False

    # -- group configs ---------------------------------------------------------

    def config_for(self, group_id: str) -> ShareConfig:
        """The settings in effect for ``group_id``: the cluster's, overridden by the
        group's configs (:data:`.config.GROUP_PROPERTIES`)."""
        overrides = self.group_configs.get(group_id)
        if not overrides:
            return self.config
        return self.config.with_properties(overrides, GROUP_PROPERTIES)

    def set_group_configs(self, group_id: str, changes: dict[str, str | None]) -> None:
        """Set (a value) or delete (``None``) group configs of ``group_id``
        (IncrementalAlterConfigs SET/DELETE on a GROUP resource). New lock
        durations, delivery limits and in-flight limits apply to its share
        partitions at once; a new
        ``share.auto.offset.reset`` to partitions started later.

        Raises:
            ValueError: an unknown config or an invalid value (nothing changed).
        """
        configs = dict(self.group_configs.get(group_id, {}))
        for name, value in changes.items():
            if value is None:
                configs.pop(name, None)
            else:
                configs[name] = value
        effective = self.config.with_properties(configs, GROUP_PROPERTIES)
        self.group_configs[group_id] = configs
        for (g, _, _), share in self.partitions.items():
            if g == group_id:
                share.configure(effective)

    # -- membership ------------------------------------------------------------

    def _on_assigned(self, group_id: str, assignment: Assignment) -> None:
        for topic, partitions in assignment.items():
            for partition in partitions:
                if (group_id, topic, partition) not in self.partitions:
                    self._initialize(group_id, topic, partition)

    def _initialize(self, group_id: str, topic: str, partition: int) -> SharePartition:
        plog = self.state.partition_log(topic, partition)
        start = 0
        if plog is not None:
            earliest = self.config_for(group_id).auto_offset_reset == "earliest"
            start = plog.log_start_offset if earliest else plog.high_watermark
        share = self._new_partition(group_id, topic, partition, start, 0)
        self._persist(share)
        return share

    def _new_partition(
        self, group_id: str, topic: str, partition: int, start: int, epoch: int
    ) -> SharePartition:
        share = SharePartition(
            group_id,
            topic,
            partition,
            start,
            scheduler=self.scheduler,
            on_released=self._on_released,
            state_epoch=epoch,
        )
        share.configure(self.config_for(group_id))
        self.partitions[(group_id, topic, partition)] = share
        info = self.state.topics.get(topic)
        self._topic_ids[(group_id, topic, partition)] = (
            None if info is None else info.topic_id
        )
        return share

    def _on_member_gone(self, group_id: str, member_id: str) -> None:
        for key in [k for k in self.sessions if k[1:] == (group_id, member_id)]:
            del self.sessions[key]
        self.release_member(group_id, member_id)

    def release_member(
        self, group_id: str, member_id: str, node_id: int | None = None
    ) -> None:
        """Release the records ``member_id`` holds (on ``node_id``'s partitions
        only, when given) and persist the partitions that changed."""
        for (g, topic, p), share in self.partitions.items():
            if g != group_id:
                continue
            if node_id is not None and self.state.leader(topic, p) != node_id:
                continue
            if share.release_member(member_id):
                self._on_released(share)

    def _on_released(self, share: SharePartition) -> None:
        self._persist(share)
        self.state.notify_appended()  # wake ShareFetch long polls

    # -- share partitions ------------------------------------------------------

    def share_partition(
        self, group_id: str, topic: str, partition: int
    ) -> SharePartition:
        """The share partition, started now (``share.auto.offset.reset``) if the
        group never had it assigned."""
        key = (group_id, topic, partition)
        share = self.partitions.get(key)
        info = self.state.topics.get(topic)
        if share is not None and info is not None:
            if self._topic_ids.get(key) not in (None, info.topic_id):
                share.cancel_timers()  # the topic was deleted and created again
                share = None
        if share is None:
            share = self._initialize(group_id, topic, partition)
        return share

    async def acknowledge(
        self,
        group_id: str,
        member_id: str,
        topic: str,
        partition: int,
        batches: Iterable[tuple[int, int, list[int]]],
    ) -> ErrorCode:
        """Apply acknowledgements and persist the state before answering: NONE,
        INVALID_RECORD_STATE, INVALID_REQUEST or KAFKA_STORAGE_ERROR (the state
        could not be written)."""
        share = self.partitions.get((group_id, topic, partition))
        if share is None:
            return ErrorCode.INVALID_RECORD_STATE
        error = share.acknowledge(member_id, batches)
        if error != ErrorCode.NONE:
            return error
        self.state.notify_appended()
        return self._write(share, ApiKey.SHARE_ACKNOWLEDGE)

    # -- sessions --------------------------------------------------------------

    def session(
        self, node_id: int, group_id: str, member_id: str
    ) -> ShareSession | None:
        return self.sessions.get((node_id, group_id, member_id))

    def open_session(
        self, node_id: int, group_id: str, member_id: str
    ) -> ShareSession | None:
        """A new session (epoch 0 requests), replacing the member's old one; its
        next request carries epoch 1. ``None`` when the node already keeps
        ``max_share_sessions`` sessions (SHARE_SESSION_LIMIT_REACHED)."""
        key = (node_id, group_id, member_id)
        if key not in self.sessions:
            on_node = sum(1 for k in self.sessions if k[0] == node_id)
            if on_node >= self.config.max_share_sessions:
                return None
        session = self.sessions[key] = ShareSession(1)
        return session

    def close_session(self, node_id: int, group_id: str, member_id: str) -> None:
        """Forget the session (epoch -1) and release what the member holds there."""
        self.sessions.pop((node_id, group_id, member_id), None)
        self.release_member(group_id, member_id, node_id)

    @staticmethod
    def next_epoch(session: ShareSession) -> None:
        session.epoch = 1 if session.epoch >= _EPOCH_MAX else session.epoch + 1

    # -- offsets admin ---------------------------------------------------------

    def start_offsets(self, group_id: str) -> dict[tuple[str, int], int]:
        """The SPSO of every share partition of ``group_id``."""
        out = {}
        for (g, t, p), share in sorted(self.partitions.items()):
            info = self.state.topics.get(t)
            if g == group_id and info is not None:
                if self._topic_ids.get((g, t, p)) in (None, info.topic_id):
                    out[(t, p)] = share.start_offset
        return out

    async def alter_offset(
        self, group_id: str, topic: str, partition: int, offset: int
    ) -> ErrorCode:
        """Reset a share partition's SPSO (AlterShareGroupOffsets; the caller checks
        the group is empty)."""
        share = self.partitions.get((group_id, topic, partition))
        if share is None:
            share = self._new_partition(group_id, topic, partition, offset, 0)
        share.reset(offset)
        return self._write(share, ApiKey.ALTER_SHARE_GROUP_OFFSETS)

    async def delete_offsets(self, group_id: str, topic: str) -> ErrorCode:
        """Delete every share partition of ``topic`` in ``group_id``
        (DeleteShareGroupOffsets): tombstones appended."""
        info = self.state.topics.get(topic)
        for key in [k for k in self.partitions if k[0] == group_id and k[1] == topic]:
            share = self.partitions.pop(key)
            share.cancel_timers()
            if info is not None:
                pairs = [snapshot_record(group_id, info.topic_id, key[2], None)]
                p = state_partition_for(
                    group_id, info.topic_id, key[2], self.config.state_topic_partitions
                )
                try:
                    self.runtime.append(p, pairs)
                except CoordinatorWriteError as err:
                    return err.error_for(ApiKey.DELETE_SHARE_GROUP_OFFSETS)
        return ErrorCode.NONE

    async def delete_group(self, group_id: str) -> ErrorCode:
        """Delete an empty share group, its configs and its share partitions'
        state (DeleteGroups): NON_EMPTY_GROUP while it has members,
        GROUP_ID_NOT_FOUND if unknown."""
        group = self.groups.get(group_id)
        if group is None:
            return ErrorCode.GROUP_ID_NOT_FOUND
        if group.members:
            return ErrorCode.NON_EMPTY_GROUP
        for topic in sorted({t for g, t, _ in self.partitions if g == group_id}):
            error = await self.delete_offsets(group_id, topic)
            if error != ErrorCode.NONE:
                return error
        del self.groups[group_id]
        self.group_configs.pop(group_id, None)
        return ErrorCode.NONE

    # -- persistence -----------------------------------------------------------

    def _persist(self, share: SharePartition) -> None:
        """Write the state where nobody waits for the answer (timers, releases):
        a failure is logged by the writer."""
        self._write(share, ApiKey.SHARE_ACKNOWLEDGE)

    def _write(self, share: SharePartition, api: ApiKey) -> ErrorCode:
        """Append the share partition's snapshot: NONE, or the error ``api``
        answers (:meth:`CoordinatorWriteError.error_for`)."""
        info = self.state.topics.get(share.topic)
        if info is None:
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        now = self.state.now_ms()
        value = {
            "snapshot_epoch": 0,
            "state_epoch": share.state_epoch,
            "leader_epoch": 0,
            "start_offset": share.start_offset,
            "create_timestamp": now,
            "write_timestamp": now,
            "state_batches": share.state_batches(),
        }
        pair = snapshot_record(share.group_id, info.topic_id, share.partition, value)
        p = state_partition_for(
            share.group_id,
            info.topic_id,
            share.partition,
            self.config.state_topic_partitions,
        )
        try:
            self.runtime.append(p, [pair])
        except CoordinatorWriteError as err:
            return err.error_for(api)
        return ErrorCode.NONE
