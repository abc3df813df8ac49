"""The classic consumer-group coordinator of :mod:`kproto.broker`.

:class:`GroupCoordinator` (constructed by the cluster state as
``GroupCoordinator(state)``) holds every group and its committed offsets and persists
them to ``__consumer_offsets``. The request handlers of FindCoordinator, OffsetCommit,
OffsetFetch, JoinGroup, SyncGroup, Heartbeat, LeaveGroup, DescribeGroups, ListGroups,
DeleteGroups and OffsetDelete that drive it are in :mod:`kproto.broker.handlers.groups`.

KIP-848 consumer groups (``coordinator.consumer``, :mod:`.consumer_coordinator`;
state in :mod:`.consumer_group`, assignors in :mod:`.assignors`, records in
:mod:`.consumer_records`, conversion and recovery in :mod:`.consumer_lifecycle`) are
driven by ConsumerGroupHeartbeat and ConsumerGroupDescribe
(:mod:`kproto.broker.handlers.consumer_groups`) and share the offsets above.
KIP-1071 streams groups (``coordinator.streams``, :mod:`.streams_coordinator`; state,
topology and the sticky task assignor in :mod:`.streams_group`, records in
:mod:`.streams_records`) are driven by the handlers of
:mod:`kproto.broker.handlers.streams_groups` and share them too.
"""

from __future__ import annotations

from .coordinator import OFFSETS_TOPIC, DescribedGroup, GroupCoordinator
from .group import ClassicGroup, CommittedOffset, GroupState, JoinResult, SyncResult
from .records import java_string_hashcode, partition_for

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
