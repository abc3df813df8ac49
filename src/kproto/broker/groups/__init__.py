"""The classic consumer-group coordinator of :mod:`kproto.broker`.

:class:`GroupCoordinator` (constructed by the cluster state as
``GroupCoordinator(state)``) holds every group and its committed offsets and persists
them to ``__consumer_offsets``. The request handlers of FindCoordinator, OffsetCommit,
OffsetFetch, JoinGroup, SyncGroup, Heartbeat, LeaveGroup, DescribeGroups, ListGroups,
DeleteGroups and OffsetDelete that drive it are in :mod:`kproto.broker.handlers.groups`.
Its parts share one :class:`.group_store.GroupStore` (the groups by id and the
``__consumer_offsets`` writer); committed offsets are its held
:class:`.offsets.OffsetMetadataManager` (``coordinator.offsets``).

KIP-848 consumer groups (``coordinator.consumer``, :mod:`.consumer_coordinator`;
state in :mod:`.consumer_group`, assignors in :mod:`.assignors`, records in
:mod:`.consumer_records`, conversions in :mod:`.consumer_migration`, recovery in
:mod:`.consumer_loader`) are
driven by ConsumerGroupHeartbeat and ConsumerGroupDescribe
(:mod:`kproto.broker.handlers.consumer_groups`) and share the offsets above.
KIP-1071 streams groups (``coordinator.streams``, :mod:`.streams_coordinator`; state,
topology and the sticky task assignor in :mod:`.streams_group`, records in
:mod:`.streams_records`) are driven by the handlers of
:mod:`kproto.broker.handlers.streams_groups` and share them too.
"""

from __future__ import annotations

from kproto.broker.coordinator_runtime import java_string_hashcode, partition_for

from .coordinator import DescribedGroup, GroupCoordinator
from .group import ClassicGroup, CommittedOffset, GroupState, JoinResult, SyncResult
from .group_store import OFFSETS_TOPIC

__all__ = [
    "OFFSETS_TOPIC",
    "ClassicGroup",
    "CommittedOffset",
    "GroupCoordinator",
    "DescribedGroup",
    "GroupState",
    "JoinResult",
    "SyncResult",
    "java_string_hashcode",
    "partition_for",
]
