"""Partition leadership: which node leads each partition, at which leader epoch, and
moving it when a test moves a leader or stops a node.

Kafka's controller elects a new leader from the in-sync replicas and bumps the
partition's leader epoch on every change (``PartitionChangeBuilder``); clients
carrying an older epoch are fenced (FENCED_LEADER_EPOCH). In this broker every node
reads the same data directory, so any live node can lead any partition. The leaders
are :attr:`TopicMetadata.leaders` (saved in ``kproto-topics.json``); the epochs are
:attr:`ClusterState.leader_epochs`, kept in memory. Each partition log stamps the
current epoch into every batch it appends (``partitionLeaderEpoch``, as Kafka's
leader does), and a restarted cluster resumes each partition at the latest epoch its
batches carry (Kafka keeps the epochs in its metadata log).

Every function runs on the cluster's event-loop thread.
"""

from __future__ import annotations

from kproto.broker.state import ClusterState

__all__ = ["OFFLINE", "leader_epoch", "set_leader", "move_off", "lead_offline"]

#: The leader of a partition no live node leads (Kafka's ``LeaderConstants.NO_LEADER``).
OFFLINE = -1


def leader_epoch(state: ClusterState, topic: str, partition: int) -> int:
    """The leader epoch of ``topic``/``partition`` (-1 if there is no such topic)."""
    info = state.topics.get(topic)
    if info is None:
        return -1
    return state.leader_epochs.get((info.topic_id, partition), 0)


def set_leader(state: ClusterState, topic: str, partition: int, node_id: int) -> int:
    """Make ``node_id`` (:data:`OFFLINE`: none) lead ``topic``/``partition`` and bump
    its leader epoch; return the new epoch. The caller saves the topics.

    Raises:
        KeyError: no such partition, or ``node_id`` is not a node of the cluster.
    """
    info = state.topics.get(topic)
    if info is None or not 0 <= partition < info.partitions:
        raise KeyError(f"no partition {topic}-{partition}")
    if node_id != OFFLINE and node_id not in state.node_ids:
        raise KeyError(f"no node {node_id} (nodes: {state.node_ids})")
    replicas = info.replicas_of(partition)
    if node_id != OFFLINE and replicas and node_id not in replicas:
        # a test moves the leader outside the replicas: it takes the old
        # leader's place (the replication factor is kept)
        old = info.leaders[partition]
        at = replicas.index(old) if old in replicas else len(replicas) - 1
        replicas[at] = node_id
        while len(info.replicas) <= partition:
            info.replicas.append(info.replicas_of(len(info.replicas)))
        info.replicas[partition] = replicas
    info.leaders[partition] = node_id
    key = (info.topic_id, partition)
    state.leader_epochs[key] = epoch = state.leader_epochs.get(key, 0) + 1
    return epoch


def move_off(state: ClusterState, node_id: int, live: list[int]) -> int:
    """Move every partition ``node_id`` leads to its next replica on a ``live``
    node (as Kafka's controller elects from the ISR), else to the ``live`` nodes
    in turn (none live: the partitions go :data:`OFFLINE`); return how many
    moved."""
    moved = 0
    for info in list(state.topics.values()):
        for p, leader in enumerate(info.leaders):
            if leader == node_id:
                in_sync = [n for n in info.replicas_of(p) if n in live]
                if in_sync:
                    target = in_sync[0]
                else:
                    target = live[moved % len(live)] if live else OFFLINE
                set_leader(state, info.name, p, target)
                moved += 1
    return moved


def lead_offline(state: ClusterState, node_id: int) -> int:
    """Make ``node_id`` lead every :data:`OFFLINE` partition; return how many."""
    taken = 0
    for info in list(state.topics.values()):
        for p, leader in enumerate(info.leaders):
            if leader == OFFLINE:
                set_leader(state, info.name, p, node_id)
                taken += 1
    return taken
