"""Group configs (KIP-848 ``GROUP`` config resources) of the consumer and streams
protocols: names, types, defaults and Kafka's validation (the ``share.*`` ones are
the share coordinator's, :mod:`kproto.broker.share`).

Source: Kafka's ``GroupConfig`` (``group-coordinator/.../GroupConfig.java``: the
``ConfigDef`` and ``validateValues``, whose bounds are the broker's
``group.consumer.min/max.*`` and ``group.streams.*``
settings, :data:`GROUP_CONFIG_BOUNDS` here with their defaults; as Kafka, a group
config takes its type, default and validator from the ``group.*`` broker property
of its name). A group's
explicit configs are stored by :class:`kproto.broker.dynamic_config.DynamicConfigs`
and read by the coordinators through :meth:`ClusterState.group_config`.
"""

from __future__ import annotations

from collections.abc import Mapping

from kproto.broker.broker_config import BROKER_CONFIGS, BrokerConfig
from kproto.broker.topic_config import (
    ConfigType,
    TopicConfigDef,
    TopicConfigError,
    at_least,
)

__all__ = [
    "GROUP_CONFIGS",
    "GROUP_CONFIG_DEFAULTS",
    "GROUP_CONFIG_BOUNDS",
    "validate_group_configs",
]

#: ``(min, max)`` the broker allows for the numeric group configs by default (the
#: defaults of the ``group.consumer.*`` and ``group.streams.*`` broker properties,
#: which are Kafka's ``GroupCoordinatorConfig`` defaults).
GROUP_CONFIG_BOUNDS: Mapping[str, tuple[int, int]] = BrokerConfig().group_config_bounds


def _from_broker(name: str, documentation: str) -> TopicConfigDef:
    """Group config ``name`` with the type, default and validator of the broker
    property ``group.<name>`` (Kafka's ``GroupConfig`` defines each with
    ``GroupCoordinatorConfig``'s default)."""
    broker = BROKER_CONFIGS[f"group.{name}"]
    return TopicConfigDef(
        name, broker.type, broker.default, documentation, broker.validator
    )


#: The group configs of the consumer (KIP-848) and streams (KIP-1071) protocols, by
#: name; the ``share.*`` ones belong to the share coordinator
#: (:data:`kproto.broker.share.GROUP_PROPERTIES`).
GROUP_CONFIGS: Mapping[str, TopicConfigDef] = {
    d.name: d
    for d in (
        _from_broker(
            "consumer.session.timeout.ms",
            "Timeout in ms to detect consumer failures (consumer protocol).",
        ),
        _from_broker(
            "consumer.heartbeat.interval.ms",
            "Heartbeat interval in ms given to the members (consumer protocol).",
        ),
        _from_broker(
            "streams.session.timeout.ms",
            "Timeout in ms to detect streams group member failures.",
        ),
        _from_broker(
            "streams.heartbeat.interval.ms",
            "Heartbeat interval in ms given to streams group members.",
        ),
        TopicConfigDef(
            "streams.num.standby.replicas",
            ConfigType.INT,
            "0",
            "Standby replicas of each task of a streams group.",
            at_least(0),
        ),
    )
}

#: Kafka's default of every group config, by name.
GROUP_CONFIG_DEFAULTS: Mapping[str, str] = {
    name: d.default for name, d in GROUP_CONFIGS.items()
}


def validate_group_configs(
    configs: Mapping[str, str],
    bounds: Mapping[str, tuple[int, int]] = GROUP_CONFIG_BOUNDS,
) -> None:
    """Check a group's whole set of explicit configs as Kafka's
    ``GroupConfig.validate``: known names, each value of its type and range, then
    the broker's ``bounds`` (default Kafka's; a cluster's are
    :attr:`kproto.broker.broker_config.BrokerConfig.group_config_bounds`) and each
    session timeout above its heartbeat interval (defaults filling the gaps).

    Raises:
        TopicConfigError: INVALID_CONFIG naming the first config refused.
    """
    values: dict[str, object] = {}
    for name, raw in {**GROUP_CONFIG_DEFAULTS, **configs}.items():
        definition = GROUP_CONFIGS.get(name)
        if definition is None:
            raise TopicConfigError(f"Unknown group config name: {name}")
        values[name] = definition.parse(raw)
    for name, (low, high) in bounds.items():
        value = values[name]
        assert isinstance(value, int)
        if value < low:
            raise TopicConfigError(f"{name} must be greater than or equal to {low}")
        if value > high:
            raise TopicConfigError(f"{name} must be less than or equal to {high}")
    for kind in ("consumer", "streams"):
        session = values[f"{kind}.session.timeout.ms"]
        heartbeat = values[f"{kind}.heartbeat.interval.ms"]
        assert isinstance(session, int) and isinstance(heartbeat, int)
        if session <= heartbeat:
            raise TopicConfigError(
                f"{kind}.session.timeout.ms must be greater than "
                f"{kind}.heartbeat.interval.ms"
            )
