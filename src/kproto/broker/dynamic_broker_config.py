"""Dynamic broker configs: the layers of a broker's configuration and what
AlterConfigs may change at run time, after Kafka's ``DynamicBrokerConfig``
(``validateConfigs``, the per-broker / cluster-wide default / static / default
precedence) and ``DescribeConfigsResponse.ConfigSource``.

The stored values live in :class:`kproto.broker.dynamic_config.DynamicConfigs`
(``broker_configs``); :meth:`kproto.broker.state.ClusterState.reconfigure` puts a
new configuration in effect; :mod:`kproto.broker.handlers.configs` serves the
requests.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping

import attrs

from kproto.broker.broker_config import (
    BROKER_CONFIGS,
    BrokerConfig,
    BrokerConfigError,
    Dynamic,
)

__all__ = ["BrokerConfigLayers", "ConfigSource", "check_dynamic"]


class ConfigSource(enum.IntEnum):
    """``DescribeConfigsResponse`` ``config_source`` (Kafka's
    ``DescribeConfigsResponse.ConfigSource``)."""

    UNKNOWN = 0
    DYNAMIC_TOPIC_CONFIG = 1
    DYNAMIC_BROKER_CONFIG = 2
    DYNAMIC_DEFAULT_BROKER_CONFIG = 3
    STATIC_BROKER_CONFIG = 4
    DEFAULT_CONFIG = 5
    DYNAMIC_BROKER_LOGGER_CONFIG = 6
    CLIENT_METRICS_CONFIG = 7
    GROUP_CONFIG = 8


@attrs.frozen
class BrokerConfigLayers:
    """A broker's configuration as Kafka's ``DynamicBrokerConfig`` layers it:
    per-broker dynamic configs over the cluster-wide dynamic default over the
    static configuration over the defaults. ``per_broker`` and ``default`` hold
    strings as AlterConfigs set them (already validated)."""

    static: BrokerConfig
    default: Mapping[str, str] = attrs.field(factory=dict)
    per_broker: Mapping[str, str] = attrs.field(factory=dict)

    def effective(self) -> BrokerConfig:
        """The configuration in effect.

        Raises:
            BrokerConfigError: a stored value no longer valid.
        """
        return BrokerConfig.from_properties(
            {**self.default, **self.per_broker}, self.static
        )

    def chain(self, name: str) -> list[tuple[str, ConfigSource]]:
        """``(value, source)`` of every layer that sets ``name``, the one in
        effect first and the default last (DescribeConfigs' synonyms)."""
        out = []
        if name in self.per_broker:
            out.append((self.per_broker[name], ConfigSource.DYNAMIC_BROKER_CONFIG))
        if name in self.default:
            out.append((self.default[name], ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG))
        if name in self.static.explicit:
            out.append((self.static.string(name), ConfigSource.STATIC_BROKER_CONFIG))
        out.append(
            (BROKER_CONFIGS[name].definition.default, ConfigSource.DEFAULT_CONFIG)
        )
        return out


def check_dynamic(changes: Mapping[str, str | None], per_broker: bool) -> None:
    """Check that AlterConfigs may set (or delete, ``None``) these broker configs
    at run time, as Kafka's ``DynamicBrokerConfig.validateConfigs``; each value
    parsed and checked.

    Raises:
        BrokerConfigError: an unknown name (``Unknown Dynamic Configuration``),
            read-only ones (Kafka's ``Cannot update these configs dynamically:
            Set(...)``), a value refused.
    """
    for name, value in changes.items():
        if name not in BROKER_CONFIGS:
            text = f"Unknown Dynamic Configuration '{name}'."
            raise BrokerConfigError(name, value, text, text)
    fixed = [n for n in changes if BROKER_CONFIGS[n].dynamic is Dynamic.READ_ONLY]
    if fixed:
        text = f"Cannot update these configs dynamically: Set({', '.join(fixed)})"
        raise BrokerConfigError(fixed[0], changes[fixed[0]], text, text)
    if not per_broker:
        broker_only = [
            n for n in changes if BROKER_CONFIGS[n].dynamic is Dynamic.PER_BROKER
        ]
        if broker_only:
            text = (
                "Cannot update these configs at default cluster level, broker id "
                f"must be specified: Set({', '.join(broker_only)})"
            )
            raise BrokerConfigError(broker_only[0], changes[broker_only[0]], text, text)
    for name, value in changes.items():
        if value is not None:
            BROKER_CONFIGS[name].parse(value)
