"""The client's view of the cluster: brokers, topic layouts, controller, coordinators.

Filled from Metadata and FindCoordinator responses of any version; no I/O here.
"""

from __future__ import annotations

import uuid
from typing import Any

from kproto.meta import ZERO_UUID

from .results import ClientError, TopicInfo

__all__ = ["MetadataCache", "parse_bootstrap"]


def parse_bootstrap(servers: str) -> list[tuple[str, int]]:
    """Parse ``"host1:9092,host2:9092"`` (``[v6addr]:port`` for IPv6) into
    ``[(host, port), ...]``.

    Raises:
        ClientError: empty, or an entry without a valid port (the entry is named).
    """
    out: list[tuple[str, int]] = []
    for entry in (e.strip() for e in servers.split(",")):
        if not entry:
            continue
        host, sep, port = entry.rpartition(":")
        host = host[1:-1] if host.startswith("[") and host.endswith("]") else host
        if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise ClientError(
                f"bootstrap server {entry!r} is not host:port (in {servers!r})"
            )
        out.append((host, int(port)))
    if not out:
        raise ClientError(f"no bootstrap servers in {servers!r}")
    return out


class MetadataCache:
    """Brokers, topics and coordinators learnt from the cluster.

    Attributes:
        brokers: ``{node_id: (host, port)}``.
        topics: ``{name: TopicInfo}``.
        controller_id: the node Metadata names as controller (-1 if unknown).
        coordinators: ``{group_id: node_id}`` from FindCoordinator.
        cluster_id: from Metadata v2+, else None.
    """

    def __init__(self) -> None:
        self.brokers: dict[int, tuple[str, int]] = {}
        self.topics: dict[str, TopicInfo] = {}
        self.controller_id = -1
        self.coordinators: dict[str, int] = {}
        self.cluster_id: str | None = None

    def update(self, response: Any) -> None:
        """Take in a MetadataResponse (any version). Topics that came back with a
        topic-level error are dropped from the cache; the others are replaced."""
        self.brokers.update({b.node_id: (b.host, b.port) for b in response.brokers})
        self.controller_id = getattr(response, "controller_id", -1)
        self.cluster_id = getattr(response, "cluster_id", None)
        for t in response.topics:
            if t.name is None:
                continue
            if t.error_code != 0:
                self.topics.pop(t.name, None)
                continue
            self.topics[t.name] = TopicInfo(
                t.name,
                getattr(t, "topic_id", ZERO_UUID),
                {p.partition_index: p.leader_id for p in t.partitions},
            )

    def forget(self, topic: str) -> None:
        """Drop what is known of ``topic`` (its layout is stale)."""
        self.topics.pop(topic, None)

    def topic_by_id(self, topic_id: uuid.UUID) -> str:
        """The name of the topic with id ``topic_id``.

        Raises:
            ClientError: no known topic has that id.
        """
        for info in self.topics.values():
            if info.topic_id == topic_id:
                return info.name
        raise ClientError(f"no topic with id {topic_id} in the metadata cache")

    def address(self, node_id: int) -> tuple[str, int]:
        """``(host, port)`` of ``node_id``.

        Raises:
            ClientError: the node is not in the last Metadata response.
        """
        try:
            return self.brokers[node_id]
        except KeyError:
            raise ClientError(
                f"node {node_id} is not among the known brokers {sorted(self.brokers)}"
            ) from None
