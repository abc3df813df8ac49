"""The broker's record of one topic (:class:`TopicMetadata`) and Kafka's topic
name rule (:func:`validate_topic_name`); :class:`kproto.broker.state.ClusterState`
keeps them and writes them to ``kproto-topics.json``."""

from __future__ import annotations

import uuid

import attrs

from kproto.broker.errors import TopicError
from kproto.broker.topic_config import TOPIC_CONFIG_DEFAULTS
from kproto.errors import ErrorCode

__all__ = ["TopicMetadata", "validate_topic_name"]

#: Kafka's Topic.isValid: legal characters and the 249-character bound.
_LEGAL_TOPIC_CHARS = frozenset(
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-"
)


@attrs.define
class TopicMetadata:
    """The broker's record of one topic (what ``kproto-topics.json`` keeps; Kafka's
    ``TopicImage`` with the topic's ``ConfigurationsImage``): id (a UUID, Metadata
    v10+), partition count, the node id of each partition's leader, its explicitly
    set configs, whether it is internal, and each partition's assigned replicas
    (node ids, Kafka's ``PartitionRegistration.replicas``; the preferred leader
    first; empty: the leader alone). A client's view of a topic is
    :class:`kproto.client.results.TopicMetadata`, a different thing."""

    name: str
    topic_id: uuid.UUID
    leaders: list[int]
    configs: dict[str, str] = attrs.field(factory=dict)
    internal: bool = False
    replicas: list[list[int]] = attrs.field(factory=list)

    @property
    def partitions(self) -> int:
        return len(self.leaders)

    def replicas_of(self, partition: int) -> list[int]:
        """The replicas of ``partition``: as assigned, else its leader alone (an
        offline partition without assignment: none)."""
        if partition < len(self.replicas) and self.replicas[partition]:
            return list(self.replicas[partition])
        leader = self.leaders[partition]
        return [leader] if leader >= 0 else []

    @property
    def replication_factor(self) -> int:
        """Replicas per partition (those of partition 0, as Kafka's
        ``createPartitions`` reads it)."""
        return max(len(self.replicas_of(0)), 1) if self.leaders else 1

    def config(self, name: str) -> str:
        """The config value in effect (set, else Kafka's default)."""
        return self.configs.get(name, TOPIC_CONFIG_DEFAULTS.get(name, ""))

    def int_config(self, name: str) -> int:
        return int(self.config(name))


def validate_topic_name(name: str) -> None:
    """Raise TopicError(INVALID_TOPIC_EXCEPTION) unless ``name`` is a legal topic
    name (Kafka's ``Topic.validate``: 1-249 chars of ``[a-zA-Z0-9._-]``, not . or ..).
    """
    if (
        not name
        or name in (".", "..")
        or len(name) > 249
        or not set(name) <= _LEGAL_TOPIC_CHARS
    ):
        raise TopicError(
            ErrorCode.INVALID_TOPIC_EXCEPTION, f"invalid topic name {name!r}"
        )
