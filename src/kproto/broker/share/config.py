"""Share-group settings of one cluster, by their Kafka property names.

:class:`ShareConfig` holds the broker and group properties KIP-932 defines that the
share coordinator honours. ``Cluster(share_configs={...})`` builds one with
:meth:`ShareConfig.from_properties`, so tests shorten lock durations and heartbeat
intervals with the names a Kafka operator would use.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

import attrs

__all__ = ["ShareConfig", "PROPERTIES", "GROUP_PROPERTIES"]

#: Kafka property name -> :class:`ShareConfig` attribute.
PROPERTIES: Final[Mapping[str, str]] = {
    "group.share.record.lock.duration.ms": "record_lock_duration_ms",
    "group.share.delivery.count.limit": "delivery_count_limit",
    "group.share.partition.max.record.locks": "partition_max_record_locks",
    "group.share.heartbeat.interval.ms": "heartbeat_interval_ms",
    "group.share.session.timeout.ms": "session_timeout_ms",
    "share.auto.offset.reset": "auto_offset_reset",
    "share.coordinator.state.topic.num.partitions": "state_topic_partitions",
    "group.share.max.share.sessions": "max_share_sessions",
}

#: Group config name (IncrementalAlterConfigs on a GROUP resource, Kafka's
#: ``GroupConfig``) -> :class:`ShareConfig` attribute it overrides for one group.
GROUP_PROPERTIES: Final[Mapping[str, str]] = {
    "share.record.lock.duration.ms": "record_lock_duration_ms",
    "share.delivery.count.limit": "delivery_count_limit",
    "share.partition.max.record.locks": "partition_max_record_locks",
    "share.heartbeat.interval.ms": "heartbeat_interval_ms",
    "share.session.timeout.ms": "session_timeout_ms",
    "share.auto.offset.reset": "auto_offset_reset",
    "share.isolation.level": "isolation_level",
}

#: The attributes whose values are strings (the others are integers).
_STRINGS = frozenset({"auto_offset_reset", "isolation_level"})


def _positive(instance: object, attribute: attrs.Attribute[int], value: int) -> None:
    if value < 1:
        raise ValueError(f"{attribute.name} must be >= 1, got {value}")


def _reset(instance: object, attribute: attrs.Attribute[str], value: str) -> None:
    if value not in ("earliest", "latest"):
        raise ValueError(
            f"share.auto.offset.reset must be 'earliest' or 'latest', got {value!r}"
        )


def _isolation(instance: object, attribute: attrs.Attribute[str], value: str) -> None:
    if value not in ("read_committed", "read_uncommitted"):
        raise ValueError(
            "share.isolation.level must be 'read_committed' or 'read_uncommitted', "
            f"got {value!r}"
        )


@attrs.frozen
class ShareConfig:
    """Share-group settings (KIP-932; Kafka's ``ShareGroupConfig`` and
    ``GroupConfig`` defaults unless noted).

    Attributes:
        record_lock_duration_ms: how long an acquired record stays locked to its
            member (``group.share.record.lock.duration.ms``, ms, 30000).
        delivery_count_limit: deliveries after which a released or timed-out
            record is archived (``group.share.delivery.count.limit``, 5).
        partition_max_record_locks: in-flight records per share partition, the
            window from the share-partition start offset
            (``group.share.partition.max.record.locks``, 2000).
        heartbeat_interval_ms: told to members (``group.share.heartbeat.interval.ms``,
            ms, 5000).
        session_timeout_ms: a member not heard from for this long is removed
            (``group.share.session.timeout.ms``, ms, 45000).
        auto_offset_reset: where a share partition starts when first assigned,
            ``latest`` or ``earliest`` (group config ``share.auto.offset.reset``).
        state_topic_partitions: partitions of ``__share_group_state``
            (``share.coordinator.state.topic.num.partitions``; 5 here, Kafka 50).
        max_share_sessions: share sessions kept per node; a new one beyond it is
            SHARE_SESSION_LIMIT_REACHED (``group.share.max.share.sessions``, 2000).
        isolation_level: ``read_uncommitted`` (default) or ``read_committed``
            (group config ``share.isolation.level``): whether share fetches stop at
            the last stable offset and archive aborted transactions' records.
    """

    record_lock_duration_ms: int = attrs.field(default=30_000, validator=_positive)
    delivery_count_limit: int = attrs.field(default=5, validator=_positive)
    partition_max_record_locks: int = attrs.field(default=2000, validator=_positive)
    heartbeat_interval_ms: int = attrs.field(default=5000, validator=_positive)
    session_timeout_ms: int = attrs.field(default=45_000, validator=_positive)
    auto_offset_reset: str = attrs.field(default="latest", validator=_reset)
    state_topic_partitions: int = attrs.field(default=5, validator=_positive)
    max_share_sessions: int = attrs.field(default=2000, validator=_positive)
    isolation_level: str = attrs.field(default="read_uncommitted", validator=_isolation)

    @classmethod
    def from_properties(cls, properties: Mapping[str, str | int]) -> ShareConfig:
        """A config from Kafka broker property names (values as strings or ints).

        Raises:
            ValueError: an unknown property, or a value out of range.
        """
        return cls().with_properties(properties, PROPERTIES)

    def with_properties(
        self, properties: Mapping[str, str | int], names: Mapping[str, str]
    ) -> ShareConfig:
        """This config with ``properties`` (named as in ``names``: :data:`PROPERTIES`
        or :data:`GROUP_PROPERTIES`) applied.

        Raises:
            ValueError: an unknown property, or a value out of range.
        """
        fields: dict[str, str | int] = {}
        for name, value in properties.items():
            attribute = names.get(name)
            if attribute is None:
                raise ValueError(
                    f"unknown share-group property {name!r} (known: "
                    f"{', '.join(sorted(names))})"
                )
            if attribute in _STRINGS:
                fields[attribute] = str(value)
            else:
                try:
                    fields[attribute] = int(value)
                except ValueError:
                    raise ValueError(
                        f"{name} must be an integer, got {value!r}"
                    ) from None
        return attrs.evolve(self, **fields)  # type: ignore[arg-type]
