"""The broker's record of one topic (:class:`TopicMetadata`) and Kafka's topic
name rule (:func:`validate_topic_name`); :class:`kproto.broker.state.ClusterState`
keeps them and writes them to ``kproto-topics.json``."""

from __future__ import annotations

import uuid
from typing import Any

import attrs

from kproto.broker.errors import TopicError
from kproto.broker.log_validator import LogPolicy
from kproto.broker.topic_config import TopicConfig
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
    set configs (Kafka's names and strings, as given), whether it is internal,
    ``topic_config``: the configuration in effect, typed (the explicit configs over
    the cluster's defaults, parsed once by :class:`ClusterState` whenever ``configs``
    change), and each partition's assigned replicas (node ids, Kafka's
    ``PartitionRegistration.replicas``; the preferred leader first; empty: the leader
    alone). A client's view of a topic is
    :class:`kproto.client.results.TopicMetadata`, a different thing."""

    name: str
    topic_id: uuid.UUID
    leaders: list[int]
    configs: dict[str, str] = attrs.field(factory=dict)
    internal: bool = False
    topic_config: TopicConfig = attrs.field(factory=TopicConfig)
    replicas: list[list[int]] = attrs.field(factory=list)
    #: the partitions being reassigned: partition -> (adding replicas, removing
    #: replicas), as Kafka's ``PartitionRegistration.addingReplicas`` /
    #: ``removingReplicas`` (:mod:`kproto.broker.reassignments`)
    reassigning: dict[int, tuple[list[int], list[int]]] = attrs.field(factory=dict)
    #: (the config it was built from, its fields but now_ms, the last policy)
    _produce: tuple[TopicConfig, dict[str, Any], LogPolicy] | None = attrs.field(
        default=None, init=False, repr=False, eq=False
    )

    @property
    def partitions(self) -> int:
        return len(self.leaders)

    def produce_policy(self, now_ms: int) -> LogPolicy:
        """``LogPolicy.for_produce(self.topic_config, now_ms)``: built once per
        configuration (a new ``topic_config`` is read again), the same object
        while the clock's millisecond is the same (the partitions of a request)."""
        cached = self._produce
        if cached is None or cached[0] is not self.topic_config:
            policy = LogPolicy.for_produce(self.topic_config, now_ms)
            fields = attrs.asdict(policy, recurse=False)
            del fields["now_ms"]
            self._produce = (self.topic_config, fields, policy)
            return policy
        config, fields, policy = cached
        if policy.now_ms != now_ms:
            policy = LogPolicy(now_ms=now_ms, **fields)
            self._produce = (config, fields, policy)
        return policy

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
        """Topic config ``name`` in effect as DescribeConfigs shows it: the string
        set on the topic, else the default in effect.

        Raises:
            KeyError: not a topic config.
        """
        explicit = self.configs.get(name)
        return self.topic_config.string(name) if explicit is None else explicit


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
