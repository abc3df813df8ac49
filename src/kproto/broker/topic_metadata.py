"""The broker's record of one topic (:class:`TopicMetadata`) and Kafka's topic
name rule (:func:`validate_topic_name`); :class:`kproto.broker.state.ClusterState`
keeps them and writes them to ``kproto-topics.json``."""

from __future__ import annotations

import uuid

import attrs

from kproto.broker.errors import TopicError
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
    set configs (Kafka's names and strings, as given), whether it is internal, and
    ``topic_config``: the configuration in effect, typed (the explicit configs over
    the cluster's defaults, parsed once by :class:`ClusterState` whenever
    ``configs`` change). A client's view of a topic is
    :class:`kproto.client.results.TopicMetadata`, a different thing."""

    name: str
    topic_id: uuid.UUID
    leaders: list[int]
    configs: dict[str, str] = attrs.field(factory=dict)
    internal: bool = False
    topic_config: TopicConfig = attrs.field(factory=TopicConfig)

    @property
    def partitions(self) -> int:
        return len(self.leaders)

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
