"""Fetch from followers (KIP-392): which replica a consumer is told to read from,
and what a follower serves it.

After Kafka's ``ReplicaManager.findPreferredReadReplica``, its
``RackAwareReplicaSelector`` and ``LeaderSelector``
(``org.apache.kafka.common.replica``), and ``Partition.fetchRecords`` with
``fetchOnlyLeader`` false:

* A consumer's Fetch v11+ carries client metadata (its ``rack_id``, the
  consumer's ``client.rack``). When the broker property ``replica.selector.class``
  is Kafka's ``RackAwareReplicaSelector`` and the rack is not empty, the leader picks,
  among itself and the in-sync followers whose log holds the fetch offset (log
  start offset <= fetch offset <= log end offset), those on the client's rack:
  none, or the leader among them, keeps the consumer on the leader; else the most
  caught-up of them (the highest log end offset, then the highest node id:
  Kafka's ``ReplicaView.comparator``). The chosen follower is answered as
  ``preferred_read_replica`` with no records (the leader's watermarks, error
  NONE), at once. Unset (Kafka's default) or ``LeaderSelector``: never.
* A follower serves a consumer's Fetch v11+ (Fetch v10 and older, and a node that
  holds no replica, get NOT_LEADER_OR_FOLLOWER; a stale or newer
  ``current_leader_epoch`` FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH, as from the
  leader) from its own log, reporting its own high watermark, log start offset
  and last stable offset; an offset outside [log start, high watermark] is
  OFFSET_OUT_OF_RANGE. A follower never redirects.

Every node of the cluster reads the same partition logs, so a follower is as
caught up as its leader unless a test says otherwise: :class:`ReadReplicas`
holds the test controls (librdkafka's mock ``partition_set_follower`` and
``partition_set_follower_wmarks``): a follower pinned as the partition's read
replica (answered whatever the selector and rack), and followers' watermarks
held below the leader's. The in-sync replicas are the replicas on listed nodes
(a stopped or decommissioned node's replica is out of the ISR and never
chosen), as Metadata reports them.

Every method runs on the cluster's event-loop thread.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import TYPE_CHECKING, Final, NamedTuple, Protocol

import attrs

from kproto.broker.broker_config import RACK_AWARE_SELECTOR

if TYPE_CHECKING:
    from kproto.broker.log import PartitionLog
    from kproto.broker.topic_metadata import TopicMetadata

__all__ = [
    "NO_PREFERRED_REPLICA",
    "ReadReplicas",
    "ReplicaOffsets",
]

#: FetchResponse's ``preferred_read_replica`` when there is none (read the leader).
NO_PREFERRED_REPLICA: Final = -1

#: (topic id, partition)
_Key = tuple[uuid.UUID, int]


class ReplicaOffsets(NamedTuple):
    """What one replica of a partition holds: ``log_start_offset``,
    ``high_watermark`` (its log end offset too: a follower here holds nothing
    above it) and ``last_stable_offset``."""

    log_start_offset: int
    high_watermark: int
    last_stable_offset: int


class _Node(Protocol):
    """A listed node as the selector sees it (:class:`kproto.broker.state.NodeInfo`)."""

    @property
    def rack(self) -> str | None: ...


def _in_sync_replicas(
    nodes: Mapping[int, _Node], info: TopicMetadata, partition: int
) -> list[int]:
    """The ISR of ``info``'s ``partition`` as Metadata reports it
    (:mod:`kproto.broker.handlers.cluster_info`): its replicas on listed
    ``nodes`` (every node reads the same logs, so a listed replica never lags),
    in replica order; empty when the partition is offline."""
    if info.leaders[partition] < 0:
        return []
    return [n for n in info.replicas_of(partition) if n in nodes]


@attrs.define
class ReadReplicas:
    """The followers as a test shapes them (held by
    :attr:`kproto.broker.state.ClusterState.read_replicas`): ``pinned``, the read
    replica a leader answers for a partition whatever the selector (librdkafka's
    ``rd_kafka_mock_partition_set_follower``), and ``watermarks``, the ``(log
    start offset, high watermark)`` a partition's followers hold (-1: the
    leader's; ``rd_kafka_mock_partition_set_follower_wmarks``). Both are keyed by
    ``(topic id, partition)``, so a topic created again under the same name starts
    clean."""

    pinned: dict[_Key, int] = attrs.field(factory=dict)
    watermarks: dict[_Key, tuple[int, int]] = attrs.field(factory=dict)

    def follower_offsets(
        self, info: TopicMetadata, partition: int, plog: PartitionLog
    ) -> ReplicaOffsets:
        """The offsets a follower of ``info``'s ``partition`` (whose leader's log
        is ``plog``) holds: the leader's, or the watermarks set, clamped to the
        leader's (a follower never holds more than its leader)."""
        start, hwm = plog.log_start_offset, plog.high_watermark
        low, high = self.watermarks.get((info.topic_id, partition), (-1, -1))
        if low >= 0:
            start = min(max(start, low), hwm)
        if high >= 0:
            hwm = max(min(hwm, high), start)
        return ReplicaOffsets(start, hwm, min(plog.last_stable_offset, hwm))

    def may_redirect(self, selector: str, rack_id: str) -> bool:
        """Whether a leader may answer a consumer on rack ``rack_id`` (``""``:
        none) a preferred read replica at all, under ``selector`` (checked once
        per Fetch)."""
        return bool(self.pinned) or (selector == RACK_AWARE_SELECTOR and rack_id != "")

    def preferred_read_replica(
        self,
        info: TopicMetadata,
        partition: int,
        plog: PartitionLog,
        *,
        selector: str,
        nodes: Mapping[int, _Node],
        rack_id: str,
        fetch_offset: int,
    ) -> int:
        """The replica the leader of ``info``'s ``partition`` tells a consumer on
        rack ``rack_id`` fetching from ``fetch_offset`` to read from
        (:data:`NO_PREFERRED_REPLICA`: the leader itself), by the pinned follower
        or ``selector`` (the ``replica.selector.class``; ``nodes``: the listed
        nodes), as described in the module docstring (Kafka's
        ``findPreferredReadReplica``)."""
        leader = info.leaders[partition]
        pinned = self.pinned.get((info.topic_id, partition))
        if pinned is not None:
            return pinned if pinned != leader else NO_PREFERRED_REPLICA
        if selector != RACK_AWARE_SELECTOR or not rack_id:
            return NO_PREFERRED_REPLICA
        leader_info = nodes.get(leader)
        if leader_info is not None and leader_info.rack == rack_id:
            return NO_PREFERRED_REPLICA  # the leader is on the client's rack
        follower = self.follower_offsets(info, partition, plog)
        if not follower.log_start_offset <= fetch_offset <= follower.high_watermark:
            return NO_PREFERRED_REPLICA  # no follower holds the offset
        same_rack = [
            n
            for n in _in_sync_replicas(nodes, info, partition)
            if n != leader and nodes[n].rack == rack_id
        ]
        # every follower holds the same offsets: the most caught up is the one
        # with the highest node id (ReplicaView.comparator's last key)
        return max(same_rack, default=NO_PREFERRED_REPLICA)
