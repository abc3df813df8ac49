"""The share-group (KIP-932) coordinator of :mod:`kproto.broker`.

:class:`ShareCoordinator` (built by the cluster as ``ShareCoordinator(state,
config)``) holds every share group (:mod:`.group`: ShareGroupHeartbeat and the
simple assignor), every share partition (:mod:`.partition`: acquisition locks,
delivery counts, acknowledgements), the members' share sessions, and persists share
partition state to ``__share_group_state`` (:mod:`.records`). The request handlers
of ShareGroupHeartbeat, ShareFetch, ShareAcknowledge, ShareGroupDescribe and the
share-group offset APIs are in :mod:`kproto.broker.handlers.share`.
"""

from __future__ import annotations

from .config import GROUP_PROPERTIES, PROPERTIES, ShareConfig
from .coordinator import SHARE_STATE_TOPIC, ShareCoordinator, ShareSession
from .group import HeartbeatResult, ShareGroup, ShareMember, simple_assign
from .partition import AcknowledgeType, AcquiredRange, RecordState, SharePartition

__all__ = [
    "GROUP_PROPERTIES",
    "PROPERTIES",
    "SHARE_STATE_TOPIC",
    "AcknowledgeType",
    "AcquiredRange",
    "HeartbeatResult",
    "RecordState",
    "ShareConfig",
    "ShareCoordinator",
    "ShareGroup",
    "ShareMember",
    "SharePartition",
    "ShareSession",
    "simple_assign",
]
