"""The broker's configuration, typed and keyed by Kafka's broker property names.

One table, :data:`BROKER_CONFIGS`, defines every broker property kproto takes: its
type, kproto's default (and Kafka's where they differ), the validator, what kproto
does with it, the topic config it is the default of, whether Kafka lets it change
at run time (``DynamicBrokerConfig``), and the ``Cluster`` keyword argument that
maps onto it. :class:`BrokerConfig` holds the parsed values, one attribute per
property; ``Cluster(config={...})``, the pytest marker's ``configs`` and
``kproto broker --override key=value`` all build it with
:meth:`BrokerConfig.from_properties`.

Sources: Kafka's ``KafkaConfig`` and the ``ConfigDef`` definitions of
``ServerConfigs``, ``ServerLogConfigs``, ``SocketServerConfigs``,
``GroupCoordinatorConfig``, ``ShareGroupConfig``, ``TransactionStateManagerConfig``,
``TransactionLogConfig``, ``KRaftConfigs`` (``node.id``) and
``ServerTopicConfigSynonyms`` (which broker property is the default of which topic
config). Values parse as ``ConfigDef.parseType`` (see
:class:`kproto.broker.topic_config.ConfigDef`); Python values of the right type are
taken as they are. Properties named ``kproto.*`` are kproto's own (Kafka has none).

This module imports no other broker module but the config definitions, so the
pytest plugin can use it without loading the broker.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import Any

import attrs

from kproto.broker.topic_config import (
    ConfigDef,
    ConfigType,
    Rule,
    TopicConfig,
    Validator,
    at_least,
    attribute_name,
    between,
    config_string,
    list_of,
    one_of,
)
from kproto.index import ApiKey

__all__ = [
    "ARGUMENTS",
    "BROKER_CONFIGS",
    "STANDARD_AUTHORIZER",
    "BrokerConfig",
    "BrokerConfigDef",
    "BrokerConfigError",
    "Dynamic",
    "LEADER_SELECTOR",
    "RACK_AWARE_SELECTOR",
    "parse_api_versions",
    "topic_synonyms",
]

_INT_MAX = 2**31 - 1
_LONG_MAX = 2**63 - 1
#: ``replica.selector.class``: Kafka's rack-aware selector (KIP-392).
RACK_AWARE_SELECTOR = "org.apache.kafka.common.replica.RackAwareReplicaSelector"
#: ``replica.selector.class``: Kafka's selector that always answers the leader.
LEADER_SELECTOR = "org.apache.kafka.common.replica.LeaderSelector"

#: Kafka's ``authorizer.class.name`` for its KRaft ACL authorizer.
STANDARD_AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"


class BrokerConfigError(ValueError):
    """A broker property Kafka (or kproto) refuses: an unknown ``key``, or a
    ``value`` breaking ``rule``; the message names all three (Kafka's
    ``ConfigException`` wording: ``Invalid value V for configuration K: rule``)."""

    def __init__(
        self, key: str, value: object, rule: str, message: str | None = None
    ) -> None:
        self.key = key
        self.value = value
        self.rule = rule
        if message is None and key in BROKER_CONFIGS:
            message = f"Invalid value {value} for configuration {key}: {rule}"
        elif message is None:
            message = f"Unknown broker config {key} (given {value}): {rule}"
        super().__init__(message)


class Dynamic(enum.Enum):
    """Whether Kafka updates a broker property at run time (``DynamicBrokerConfig``:
    ``AlterConfigs`` on a BROKER resource)."""

    READ_ONLY = "read-only"
    PER_BROKER = "per-broker"
    CLUSTER_WIDE = "cluster-wide"


def _case_insensitive(*allowed: str) -> Validator:
    """Kafka's ``CaseInsensitiveValidString.in``."""
    lowered = {a.lower() for a in allowed}

    def check(value: object) -> str | None:
        if isinstance(value, str) and value.lower() in lowered:
            return None
        return f"String must be one of (case insensitive): {', '.join(allowed)}"

    return Rule(check, f"(case insensitive) [{', '.join(allowed)}]")


def _one_directory(value: object) -> str | None:
    assert isinstance(value, list)
    return None if len(value) <= 1 else "kproto keeps one log directory"


def _seed_topics(value: object) -> str | None:
    """Each entry of ``kproto.seed.topics`` is ``name`` or ``name:partitions``."""
    assert isinstance(value, list)
    for entry in value:
        name, sep, count = str(entry).partition(":")
        if not name.strip() or (sep and not (count.isdigit() and int(count) > 0)):
            return f"{entry!r} is not topic or topic:partitions (partitions >= 1)"
    return None


def parse_api_versions(entry: str) -> tuple[ApiKey, int, int]:
    """One ``kproto.api.versions`` entry, ``NAME:MIN-MAX`` or ``NAME:none`` (NAME an
    ApiKey name, e.g. ``PRODUCE:3-7``), as ``(api_key, min, max)`` (``none``:
    -1, -1, the API removed).

    Raises:
        ValueError: not of that form, or an unknown API name.
    """
    name, sep, versions = entry.partition(":")
    try:
        api_key = ApiKey[name.strip().upper()]
    except KeyError:
        raise ValueError(f"{entry!r}: {name.strip()!r} is not an API name") from None
    versions = versions.strip().lower()
    if sep and versions == "none":
        return api_key, -1, -1
    low, dash, high = versions.partition("-")
    if not (sep and dash and low.isdigit() and high.isdigit()):
        raise ValueError(f"{entry!r} is not NAME:MIN-MAX or NAME:none")
    return api_key, int(low), int(high)


def _api_versions(value: object) -> str | None:
    assert isinstance(value, list)
    for entry in value:
        try:
            parse_api_versions(str(entry))
        except ValueError as exc:
            return str(exc)
    return None


_non_empty = Rule(
    lambda value: None if value else "Empty list is not allowed", "non-empty list"
)


@attrs.frozen
class BrokerConfigDef:
    """One broker property.

    Attributes:
        definition: name, type, kproto's default (as Kafka writes it; ``""``
            null), documentation (what kproto does with it), validator.
        kafka_default: Kafka's default where kproto's differs (``None``: the same).
        argument: the ``Cluster`` keyword argument that maps onto it, if any.
        topic_config: the topic config whose default it is (Kafka's
            ``ServerTopicConfigSynonyms``), if any.
        dynamic: whether Kafka changes it at run time, and where.
        enforced: kproto acts on it (the others are accepted and described).
    """

    definition: ConfigDef
    kafka_default: str | None = None
    argument: str | None = None
    topic_config: str | None = None
    dynamic: Dynamic = Dynamic.READ_ONLY
    enforced: bool = True

    @property
    def name(self) -> str:
        return self.definition.name

    def parse(self, value: object) -> object:
        """``value`` (a string as Kafka parses it, or a Python value of the type:
        ``int``, ``bool``, ``float``, a list or tuple of strings) parsed and
        validated; lists as tuples.

        Raises:
            BrokerConfigError: not of the type, or refused by the validator.
        """
        d = self.definition
        if isinstance(value, str):
            parsed, reason = d.convert(value)
            if reason is not None:
                raise BrokerConfigError(d.name, value, reason)
        else:
            parsed = _python_value(d, value)
            if d.validator is not None:
                reason = d.validator(parsed)
                if reason is not None:
                    raise BrokerConfigError(d.name, value, reason)
        return tuple(parsed) if isinstance(parsed, list) else parsed


def _python_value(d: ConfigDef, value: object) -> object:
    """A Python value checked against ``d``'s type (Kafka's ``parseType`` for
    non-strings)."""
    kind = d.type
    if kind is ConfigType.BOOLEAN and isinstance(value, bool):
        return value
    if kind in (ConfigType.INT, ConfigType.LONG):
        high = _INT_MAX if kind is ConfigType.INT else _LONG_MAX
        if isinstance(value, int) and not isinstance(value, bool):
            if -high - 1 <= value <= high:
                return value
    if kind is ConfigType.DOUBLE and isinstance(value, (int, float)):
        if not isinstance(value, bool):
            return float(value)
    if kind is ConfigType.LIST and isinstance(value, (list, tuple)):
        if all(isinstance(v, str) for v in value):
            return [v.strip() for v in value]
    expected = {
        ConfigType.BOOLEAN: "Expected value to be either true or false",
        ConfigType.LIST: "Expected a comma separated list",
    }.get(kind, f"Expected value of type {kind.name}")
    raise BrokerConfigError(d.name, value, expected)


_T = ConfigType
_RO, _PB, _CW = Dynamic.READ_ONLY, Dynamic.PER_BROKER, Dynamic.CLUSTER_WIDE


def _b(
    name: str,
    kind: ConfigType,
    default: str,
    documentation: str,
    validator: Validator | None = None,
    *,
    kafka: str | None = None,
    argument: str | None = None,
    topic: str | None = None,
    dynamic: Dynamic = _RO,
    enforced: bool = True,
) -> BrokerConfigDef:
    return BrokerConfigDef(
        ConfigDef(name, kind, default, documentation, validator),
        kafka,
        argument,
        topic,
        dynamic,
        enforced,
    )


#: Every broker property kproto takes, by name (Kafka's where Kafka has one).
BROKER_CONFIGS: Mapping[str, BrokerConfigDef] = {
    d.name: d
    for d in (
        # --------------------------------------------------------- server
        _b(
            "node.id",
            _T.INT,
            "1",
            "Id of the first node; node i of a cluster is node.id + i.",
            at_least(0),
            kafka="(required)",
        ),
        _b(
            "num.partitions",
            _T.INT,
            "1",
            "Partitions of auto-created topics and of CreateTopics with -1.",
            at_least(1),
            argument="num_partitions",
        ),
        _b(
            "auto.create.topics.enable",
            _T.BOOLEAN,
            "true",
            "Metadata requests create unknown topics.",
            argument="auto_create_topics",
        ),
        _b(
            "default.replication.factor",
            _T.INT,
            "1",
            "Replication factor of auto-created topics (accepted; every replica "
            "is the leader's log).",
            enforced=False,
        ),
        _b(
            "min.insync.replicas",
            _T.INT,
            "1",
            "Default of the topic config min.insync.replicas (accepted).",
            at_least(1),
            topic="min.insync.replicas",
            dynamic=_CW,
            enforced=False,
        ),
        # ------------------------------------------------------------ log
        _b(
            "log.dirs",
            _T.LIST,
            "",
            "The data directory: one (empty: a temporary one, removed on close). "
            "Cluster(data_dir=).",
            Rule(_one_directory, "at most one directory"),
            kafka="(null: log.dir, /tmp/kafka-logs)",
        ),
        _b(
            "log.segment.bytes",
            _T.INT,
            str(16 * 1024 * 1024),
            "Default segment size in bytes (topic config segment.bytes). kproto "
            "keeps Kafka 3's floor of 14 bytes, so tests can roll small segments.",
            at_least(14),
            kafka="1073741824",
            argument="segment_bytes",
            topic="segment.bytes",
            dynamic=_CW,
        ),
        _b(
            "log.roll.ms",
            _T.LONG,
            "604800000",
            "Default of segment.ms (accepted).",
            at_least(1),
            topic="segment.ms",
            dynamic=_CW,
            enforced=False,
        ),
        _b(
            "log.index.size.max.bytes",
            _T.INT,
            "10485760",
            "Default of segment.index.bytes (accepted).",
            at_least(4),
            topic="segment.index.bytes",
            dynamic=_CW,
            enforced=False,
        ),
        _b(
            "log.retention.ms",
            _T.LONG,
            "604800000",
            "Default of retention.ms: segments older than this are deleted as "
            "records are appended, when set (-1: forever).",
            at_least(-1),
            topic="retention.ms",
            dynamic=_CW,
        ),
        _b(
            "log.retention.bytes",
            _T.LONG,
            "-1",
            "Default of retention.bytes (-1: no limit), applied as records are "
            "appended when set.",
            topic="retention.bytes",
            dynamic=_CW,
        ),
        _b(
            "log.cleanup.policy",
            _T.LIST,
            "delete",
            "Default of cleanup.policy (delete, compact or both).",
            list_of("compact", "delete"),
            topic="cleanup.policy",
            dynamic=_CW,
        ),
        _b(
            "log.cleaner.delete.retention.ms",
            _T.LONG,
            "86400000",
            "Default of delete.retention.ms (how long the cleaner keeps tombstones).",
            at_least(0),
            topic="delete.retention.ms",
            dynamic=_CW,
        ),
        _b(
            "log.cleaner.min.compaction.lag.ms",
            _T.LONG,
            "0",
            "Default of min.compaction.lag.ms.",
            at_least(0),
            topic="min.compaction.lag.ms",
            dynamic=_CW,
        ),
        _b(
            "log.cleaner.max.compaction.lag.ms",
            _T.LONG,
            str(_LONG_MAX),
            "Default of max.compaction.lag.ms.",
            at_least(1),
            topic="max.compaction.lag.ms",
            dynamic=_CW,
        ),
        _b(
            "log.cleaner.min.cleanable.ratio",
            _T.DOUBLE,
            "0.5",
            "Default of min.cleanable.dirty.ratio.",
            between(0, 1),
            topic="min.cleanable.dirty.ratio",
            dynamic=_CW,
        ),
        _b(
            "log.cleaner.backoff.ms",
            _T.LONG,
            "15000",
            "Pause in ms between the log cleaner's passes over compacted topics.",
            at_least(0),
            argument="log_cleaner_backoff_ms",
            dynamic=_CW,
        ),
        _b(
            "message.max.bytes",
            _T.INT,
            "1048588",
            "Default of max.message.bytes (the largest record batch accepted).",
            at_least(0),
            topic="max.message.bytes",
            dynamic=_CW,
        ),
        _b(
            "log.message.timestamp.type",
            _T.STRING,
            "CreateTime",
            "Default of message.timestamp.type.",
            one_of("CreateTime", "LogAppendTime"),
            topic="message.timestamp.type",
            dynamic=_CW,
        ),
        _b(
            "log.message.timestamp.before.max.ms",
            _T.LONG,
            str(_LONG_MAX),
            "Default of message.timestamp.before.max.ms.",
            at_least(0),
            topic="message.timestamp.before.max.ms",
            dynamic=_CW,
        ),
        _b(
            "log.message.timestamp.after.max.ms",
            _T.LONG,
            "3600000",
            "Default of message.timestamp.after.max.ms.",
            at_least(0),
            topic="message.timestamp.after.max.ms",
            dynamic=_CW,
        ),
        _b(
            "compression.type",
            _T.STRING,
            "producer",
            "Default of the topic config compression.type (accepted; batches are "
            "stored as produced).",
            one_of("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"),
            topic="compression.type",
            dynamic=_CW,
            enforced=False,
        ),
        # ------------------------------------------- internal topics, groups
        _b(
            "offsets.topic.num.partitions",
            _T.INT,
            "5",
            "Partitions of __consumer_offsets.",
            at_least(1),
            kafka="50",
            argument="offsets_partitions",
        ),
        _b(
            "transaction.state.log.num.partitions",
            _T.INT,
            "5",
            "Partitions of __transaction_state.",
            at_least(1),
            kafka="50",
            argument="transaction_partitions",
        ),
        _b(
            "transaction.abort.timed.out.transaction.cleanup.interval.ms",
            _T.INT,
            "1000",
            "How often in ms open transactions are checked against their "
            "transaction.timeout.ms.",
            at_least(1),
            kafka="10000",
            argument="transaction_abort_interval_ms",
        ),
        _b(
            "group.initial.rebalance.delay.ms",
            _T.INT,
            "100",
            "How long in ms a classic group's first rebalance waits for more "
            "members to join.",
            at_least(0),
            kafka="3000",
        ),
        _b(
            "group.consumer.session.timeout.ms",
            _T.INT,
            "45000",
            "KIP-848 consumer group session timeout in ms.",
            at_least(1),
            argument="consumer_session_timeout_ms",
        ),
        _b(
            "group.consumer.heartbeat.interval.ms",
            _T.INT,
            "5000",
            "Heartbeat interval in ms given to KIP-848 members.",
            at_least(1),
            argument="consumer_heartbeat_interval_ms",
        ),
        _b(
            "group.consumer.assignors",
            _T.LIST,
            "uniform,range",
            "KIP-848 server assignors, the first the default.",
            _non_empty,
            kafka="org.apache.kafka.coordinator.group.assignor.UniformAssignor,"
            "org.apache.kafka.coordinator.group.assignor.RangeAssignor",
            argument="consumer_assignors",
        ),
        _b(
            "group.consumer.migration.policy",
            _T.STRING,
            "bidirectional",
            "Conversions between classic and consumer groups: bidirectional, "
            "upgrade, downgrade or disabled.",
            _case_insensitive("disabled", "downgrade", "upgrade", "bidirectional"),
            argument="consumer_migration_policy",
        ),
        _b(
            "group.streams.session.timeout.ms",
            _T.INT,
            "45000",
            "KIP-1071 streams group session timeout in ms.",
            at_least(1),
            argument="streams_session_timeout_ms",
        ),
        _b(
            "group.streams.heartbeat.interval.ms",
            _T.INT,
            "5000",
            "Heartbeat interval in ms given to streams group members.",
            at_least(1),
            argument="streams_heartbeat_interval_ms",
        ),
        _b(
            "group.consumer.min.session.timeout.ms",
            _T.INT,
            "45000",
            "Least session timeout in ms a consumer group config may set.",
            at_least(1),
        ),
        _b(
            "group.consumer.max.session.timeout.ms",
            _T.INT,
            "60000",
            "Most session timeout in ms a consumer group config may set.",
            at_least(1),
        ),
        _b(
            "group.consumer.min.heartbeat.interval.ms",
            _T.INT,
            "5000",
            "Least heartbeat interval in ms a consumer group config may set.",
            at_least(1),
        ),
        _b(
            "group.consumer.max.heartbeat.interval.ms",
            _T.INT,
            "15000",
            "Most heartbeat interval in ms a consumer group config may set.",
            at_least(1),
        ),
        _b(
            "group.streams.min.session.timeout.ms",
            _T.INT,
            "45000",
            "Least session timeout in ms a streams group config may set.",
            at_least(1),
        ),
        _b(
            "group.streams.max.session.timeout.ms",
            _T.INT,
            "60000",
            "Most session timeout in ms a streams group config may set.",
            at_least(1),
        ),
        _b(
            "group.streams.min.heartbeat.interval.ms",
            _T.INT,
            "5000",
            "Least heartbeat interval in ms a streams group config may set.",
            at_least(1),
        ),
        _b(
            "group.streams.max.heartbeat.interval.ms",
            _T.INT,
            "15000",
            "Most heartbeat interval in ms a streams group config may set.",
            at_least(1),
        ),
        _b(
            "group.streams.max.standby.replicas",
            _T.INT,
            "2",
            "Most standby replicas a streams group config may set.",
            at_least(0),
        ),
        _b(
            "group.share.record.lock.duration.ms",
            _T.INT,
            "30000",
            "How long in ms an acquired share-group record stays locked (kproto "
            "allows below Kafka's 1000 floor, for tests).",
            at_least(1),
        ),
        _b(
            "group.share.delivery.count.limit",
            _T.INT,
            "5",
            "Deliveries after which a share-group record is archived.",
            at_least(1),
        ),
        _b(
            "group.share.partition.max.record.locks",
            _T.INT,
            "2000",
            "In-flight records per share partition.",
            at_least(1),
        ),
        _b(
            "group.share.heartbeat.interval.ms",
            _T.INT,
            "5000",
            "Heartbeat interval in ms given to share group members.",
            at_least(1),
        ),
        _b(
            "group.share.session.timeout.ms",
            _T.INT,
            "45000",
            "Share group session timeout in ms.",
            at_least(1),
        ),
        _b(
            "group.share.max.share.sessions",
            _T.INT,
            "2000",
            "Share sessions kept per node (more: SHARE_SESSION_LIMIT_REACHED).",
            at_least(1),
        ),
        _b(
            "share.coordinator.state.topic.num.partitions",
            _T.INT,
            "5",
            "Partitions of __share_group_state.",
            at_least(1),
            kafka="50",
        ),
        # ------------------------------------------------ sockets, security
        _b(
            "socket.request.max.bytes",
            _T.INT,
            "104857600",
            "Request frames above this many bytes close the connection.",
            at_least(1),
            argument="socket_request_max_bytes",
        ),
        _b(
            "connections.max.idle.ms",
            _T.LONG,
            "600000",
            "Close a connection idle (or stalled mid-frame) for this long (ms).",
            argument="connections_max_idle_ms",
        ),
        _b(
            "connections.max.reauth.ms",
            _T.LONG,
            "0",
            "SASL session lifetime in ms (KIP-368; 0: sessions never expire).",
            argument="connections_max_reauth_ms",
        ),
        _b(
            "max.connections",
            _T.INT,
            str(_INT_MAX),
            "Connections each node keeps open at once; more are closed at accept.",
            at_least(0),
            argument="max_connections",
            dynamic=_CW,
        ),
        _b(
            "max.connections.per.ip",
            _T.INT,
            str(_INT_MAX),
            "The same per client address.",
            at_least(0),
            argument="max_connections_per_ip",
            dynamic=_CW,
        ),
        _b(
            "queued.max.requests",
            _T.INT,
            "500",
            "Requests in flight per node across its connections.",
            at_least(1),
            argument="queued_max_requests",
        ),
        _b(
            "security.inter.broker.protocol",
            _T.STRING,
            "PLAINTEXT",
            "The security protocol of every node's one listener: PLAINTEXT, SSL, "
            "SASL_PLAINTEXT or SASL_SSL.",
            argument="security_protocol",
        ),
        _b(
            "sasl.enabled.mechanisms",
            _T.LIST,
            "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
            "SASL mechanisms of SASL listeners (PLAIN, SCRAM-SHA-256, "
            "SCRAM-SHA-512, OAUTHBEARER).",
            kafka="GSSAPI",
            argument="sasl_mechanisms",
        ),
        _b(
            "super.users",
            _T.STRING,
            "",
            "Principals (User:name; semicolon-separated) every ACL check lets pass.",
            argument="super_users",
        ),
        _b(
            "authorizer.class.name",
            _T.STRING,
            "",
            f"{STANDARD_AUTHORIZER} enforces ACLs; empty: none.",
            one_of("", STANDARD_AUTHORIZER),
            argument="acls_enabled",
        ),
        _b(
            "replica.selector.class",
            _T.STRING,
            "",
            "The replica a leader sends a consumer with client.rack to "
            "(Fetch v11+, KIP-392): RackAwareReplicaSelector, an in-sync "
            "follower on its rack; LeaderSelector or empty, the leader.",
            one_of("", RACK_AWARE_SELECTOR, LEADER_SELECTOR),
        ),
        _b(
            "ssl.client.auth",
            _T.STRING,
            "none",
            "Client certificates on SSL listeners: none, requested or required.",
            argument="ssl_client_auth",
        ),
        # ------------------------------------------------- kproto's own
        _b(
            "kproto.max.partitions",
            _T.INT,
            "200000",
            "Partitions the cluster holds at most (CreateTopics beyond: "
            "POLICY_VIOLATION).",
            at_least(1),
            kafka="(none)",
            argument="max_partitions",
        ),
        _b(
            "kproto.max.open.files",
            _T.INT,
            "256",
            "Segment files kept open at once (least recently used closed first).",
            at_least(1),
            kafka="(none)",
            argument="max_open_files",
        ),
        _b(
            "kproto.request.log.size",
            _T.INT,
            "1000",
            "Requests Cluster.requests keeps (0: none).",
            at_least(0),
            kafka="(none)",
            argument="request_log_size",
        ),
        _b(
            "kproto.api.versions",
            _T.LIST,
            "",
            "API versions to advertise and serve instead of all kproto serves "
            "(librdkafka's mock set_apiversion): NAME:MIN-MAX, or NAME:none to "
            "remove an API.",
            Rule(_api_versions, "[NAME:MIN-MAX|NAME:none,...]"),
            kafka="(none)",
        ),
        _b(
            "kproto.seed.topics",
            _T.LIST,
            "",
            "Topics created at start when missing (franz-go kfake's SeedTopics): "
            "name or name:partitions (default num.partitions).",
            Rule(_seed_topics, "[name[:partitions],...]"),
            kafka="(none)",
        ),
        _b(
            "kproto.racks",
            _T.LIST,
            "",
            "The rack of each node, in node order (Kafka's broker.rack of each "
            "broker; Cluster.set_rack changes it at run time); empty: none.",
            kafka="(none)",
        ),
        _b(
            "kproto.log.requests",
            _T.BOOLEAN,
            "false",
            "Log every request at INFO on the kproto.broker logger.",
            kafka="(none)",
            argument="log_requests",
        ),
    )
}

#: ``Cluster`` keyword argument -> the broker property it sets.
ARGUMENTS: Mapping[str, str] = {
    d.argument: name for name, d in BROKER_CONFIGS.items() if d.argument is not None
}


def _default(name: str) -> Any:
    definition = BROKER_CONFIGS[name]
    return definition.parse(definition.definition.default)


@attrs.frozen
class BrokerConfig:
    """A broker's configuration: one attribute per property of
    :data:`BROKER_CONFIGS` (``num.partitions`` -> ``num_partitions``), each of
    Kafka's type (INT/LONG ``int``, BOOLEAN ``bool``, DOUBLE ``float``, LIST a
    tuple of strings); ``explicit`` names the properties that were set (the others
    hold kproto's default). ``BrokerConfig()`` is kproto's defaults. Units are
    Kafka's (``*.ms`` milliseconds, ``*.bytes`` bytes)."""

    node_id: int = _default("node.id")
    num_partitions: int = _default("num.partitions")
    auto_create_topics_enable: bool = _default("auto.create.topics.enable")
    default_replication_factor: int = _default("default.replication.factor")
    min_insync_replicas: int = _default("min.insync.replicas")
    log_dirs: tuple[str, ...] = _default("log.dirs")
    log_segment_bytes: int = _default("log.segment.bytes")
    log_roll_ms: int = _default("log.roll.ms")
    log_index_size_max_bytes: int = _default("log.index.size.max.bytes")
    log_retention_ms: int = _default("log.retention.ms")
    log_retention_bytes: int = _default("log.retention.bytes")
    log_cleanup_policy: tuple[str, ...] = _default("log.cleanup.policy")
    log_cleaner_delete_retention_ms: int = _default("log.cleaner.delete.retention.ms")
    log_cleaner_min_compaction_lag_ms: int = _default(
        "log.cleaner.min.compaction.lag.ms"
    )
    log_cleaner_max_compaction_lag_ms: int = _default(
        "log.cleaner.max.compaction.lag.ms"
    )
    log_cleaner_min_cleanable_ratio: float = _default("log.cleaner.min.cleanable.ratio")
    log_cleaner_backoff_ms: int = _default("log.cleaner.backoff.ms")
    message_max_bytes: int = _default("message.max.bytes")
    log_message_timestamp_type: str = _default("log.message.timestamp.type")
    log_message_timestamp_before_max_ms: int = _default(
        "log.message.timestamp.before.max.ms"
    )
    log_message_timestamp_after_max_ms: int = _default(
        "log.message.timestamp.after.max.ms"
    )
    compression_type: str = _default("compression.type")
    offsets_topic_num_partitions: int = _default("offsets.topic.num.partitions")
    transaction_state_log_num_partitions: int = _default(
        "transaction.state.log.num.partitions"
    )
    transaction_abort_timed_out_transaction_cleanup_interval_ms: int = _default(
        "transaction.abort.timed.out.transaction.cleanup.interval.ms"
    )
    group_initial_rebalance_delay_ms: int = _default("group.initial.rebalance.delay.ms")
    group_consumer_session_timeout_ms: int = _default(
        "group.consumer.session.timeout.ms"
    )
    group_consumer_heartbeat_interval_ms: int = _default(
        "group.consumer.heartbeat.interval.ms"
    )
    group_consumer_assignors: tuple[str, ...] = _default("group.consumer.assignors")
    group_consumer_migration_policy: str = _default("group.consumer.migration.policy")
    group_streams_session_timeout_ms: int = _default("group.streams.session.timeout.ms")
    group_streams_heartbeat_interval_ms: int = _default(
        "group.streams.heartbeat.interval.ms"
    )
    group_consumer_min_session_timeout_ms: int = _default(
        "group.consumer.min.session.timeout.ms"
    )
    group_consumer_max_session_timeout_ms: int = _default(
        "group.consumer.max.session.timeout.ms"
    )
    group_consumer_min_heartbeat_interval_ms: int = _default(
        "group.consumer.min.heartbeat.interval.ms"
    )
    group_consumer_max_heartbeat_interval_ms: int = _default(
        "group.consumer.max.heartbeat.interval.ms"
    )
    group_streams_min_session_timeout_ms: int = _default(
        "group.streams.min.session.timeout.ms"
    )
    group_streams_max_session_timeout_ms: int = _default(
        "group.streams.max.session.timeout.ms"
    )
    group_streams_min_heartbeat_interval_ms: int = _default(
        "group.streams.min.heartbeat.interval.ms"
    )
    group_streams_max_heartbeat_interval_ms: int = _default(
        "group.streams.max.heartbeat.interval.ms"
    )
    group_streams_max_standby_replicas: int = _default(
        "group.streams.max.standby.replicas"
    )
    group_share_record_lock_duration_ms: int = _default(
        "group.share.record.lock.duration.ms"
    )
    group_share_delivery_count_limit: int = _default("group.share.delivery.count.limit")
    group_share_partition_max_record_locks: int = _default(
        "group.share.partition.max.record.locks"
    )
    group_share_heartbeat_interval_ms: int = _default(
        "group.share.heartbeat.interval.ms"
    )
    group_share_session_timeout_ms: int = _default("group.share.session.timeout.ms")
    group_share_max_share_sessions: int = _default("group.share.max.share.sessions")
    share_coordinator_state_topic_num_partitions: int = _default(
        "share.coordinator.state.topic.num.partitions"
    )
    socket_request_max_bytes: int = _default("socket.request.max.bytes")
    connections_max_idle_ms: int = _default("connections.max.idle.ms")
    connections_max_reauth_ms: int = _default("connections.max.reauth.ms")
    max_connections: int = _default("max.connections")
    max_connections_per_ip: int = _default("max.connections.per.ip")
    queued_max_requests: int = _default("queued.max.requests")
    security_inter_broker_protocol: str = _default("security.inter.broker.protocol")
    sasl_enabled_mechanisms: tuple[str, ...] = _default("sasl.enabled.mechanisms")
    super_users: str = _default("super.users")
    authorizer_class_name: str = _default("authorizer.class.name")
    replica_selector_class: str = _default("replica.selector.class")
    ssl_client_auth: str = _default("ssl.client.auth")
    kproto_max_partitions: int = _default("kproto.max.partitions")
    kproto_max_open_files: int = _default("kproto.max.open.files")
    kproto_request_log_size: int = _default("kproto.request.log.size")
    kproto_log_requests: bool = _default("kproto.log.requests")
    kproto_seed_topics: tuple[str, ...] = _default("kproto.seed.topics")
    kproto_api_versions: tuple[str, ...] = _default("kproto.api.versions")
    kproto_racks: tuple[str, ...] = _default("kproto.racks")
    explicit: frozenset[str] = frozenset()

    @classmethod
    def from_properties(
        cls, properties: Mapping[str, object], base: BrokerConfig | None = None
    ) -> BrokerConfig:
        """``base`` (default: kproto's defaults) with ``properties`` (Kafka's
        broker property names; values as strings or Python values) applied, each
        parsed and validated.

        Raises:
            BrokerConfigError: an unknown property (``rule`` lists where to look)
                or a value Kafka refuses; the first one, named.
        """
        fields: dict[str, object] = {}
        for name, value in properties.items():
            definition = BROKER_CONFIGS.get(name)
            if definition is None:
                raise BrokerConfigError(
                    name,
                    value,
                    "kproto.broker.broker_config.BROKER_CONFIGS lists the "
                    "supported ones",
                )
            fields[attribute_name(name)] = definition.parse(value)
        start = cls() if base is None else base
        config = attrs.evolve(
            start,
            explicit=start.explicit | frozenset(properties),
            **fields,  # type: ignore[arg-type]
        )
        return config

    @classmethod
    def from_arguments(
        cls, config: Mapping[str, object] | None, arguments: Mapping[str, object]
    ) -> BrokerConfig:
        """The configuration of ``Cluster(config=config, **arguments)``:
        ``arguments`` (``Cluster``'s own keyword names, ``None`` for not given)
        mapped through :data:`ARGUMENTS` onto their properties, then ``config``.

        Raises:
            BrokerConfigError: an unknown property, a value refused, or a setting
                given both as an argument and in ``config`` (``rule`` names both).
        """
        properties: dict[str, object] = {}
        for argument, value in arguments.items():
            if value is None:
                continue
            name = ARGUMENTS[argument]
            properties[name] = _argument_value(argument, value)
        for name, value in (config or {}).items():
            if name in properties:
                raise BrokerConfigError(
                    name,
                    value,
                    f"set both in config and as {BROKER_CONFIGS[name].argument}=; "
                    "give it once",
                )
            properties[name] = value
        return cls.from_properties(properties)

    def value(self, name: str) -> object:
        """The typed value of broker property ``name``.

        Raises:
            KeyError: not a broker property of :data:`BROKER_CONFIGS`.
        """
        if name not in BROKER_CONFIGS:
            raise KeyError(name)
        return getattr(self, attribute_name(name))

    def string(self, name: str) -> str:
        """Broker property ``name`` as Kafka describes it.

        Raises:
            KeyError: not a broker property.
        """
        return config_string(self.value(name))

    def topic_defaults(self) -> TopicConfig:
        """The topic configuration a topic without explicit configs has on this
        broker: Kafka's topic defaults with the broker's ``log.*`` synonyms
        (``ServerTopicConfigSynonyms``); those set explicitly are ``overridden``."""
        fields = {
            attribute_name(d.topic_config): self.value(name)
            for name, d in BROKER_CONFIGS.items()
            if d.topic_config is not None
        }
        overridden = frozenset(
            d.topic_config
            for name, d in BROKER_CONFIGS.items()
            if d.topic_config is not None and name in self.explicit
        )
        return TopicConfig(overridden=overridden, **fields)  # type: ignore[arg-type]

    @property
    def acls_enabled(self) -> bool:
        """``authorizer.class.name`` names Kafka's ACL authorizer."""
        return self.authorizer_class_name == STANDARD_AUTHORIZER

    @property
    def super_user_list(self) -> list[str]:
        """``super.users`` split at ``;`` (Kafka's ``StandardAuthorizer``)."""
        return [u.strip() for u in self.super_users.split(";") if u.strip()]

    @property
    def group_config_bounds(self) -> dict[str, tuple[int, int]]:
        """``(min, max)`` a group config may set, by group config name (Kafka's
        ``GroupConfig.validateValues`` against ``GroupCoordinatorConfig``)."""
        return {
            "consumer.session.timeout.ms": (
                self.group_consumer_min_session_timeout_ms,
                self.group_consumer_max_session_timeout_ms,
            ),
            "consumer.heartbeat.interval.ms": (
                self.group_consumer_min_heartbeat_interval_ms,
                self.group_consumer_max_heartbeat_interval_ms,
            ),
            "streams.session.timeout.ms": (
                self.group_streams_min_session_timeout_ms,
                self.group_streams_max_session_timeout_ms,
            ),
            "streams.heartbeat.interval.ms": (
                self.group_streams_min_heartbeat_interval_ms,
                self.group_streams_max_heartbeat_interval_ms,
            ),
            "streams.num.standby.replicas": (
                0,
                self.group_streams_max_standby_replicas,
            ),
        }

    @property
    def share_properties(self) -> dict[str, int]:
        """The ``group.share.*`` and ``share.coordinator.*`` properties, for
        :meth:`kproto.broker.share.ShareConfig.from_properties`."""
        return {
            name: int(self.string(name))
            for name in BROKER_CONFIGS
            if name.startswith(("group.share.", "share.coordinator."))
        }


def _argument_value(argument: str, value: object) -> object:
    """A ``Cluster`` keyword argument's value as its property's."""
    if argument == "acls_enabled":
        return STANDARD_AUTHORIZER if value else ""
    if argument == "super_users" and isinstance(value, (list, tuple)):
        return ";".join(str(v) for v in value)
    return value


def topic_synonyms() -> Mapping[str, str]:
    """Topic config -> the broker property that is its default."""
    return {
        d.topic_config: name
        for name, d in BROKER_CONFIGS.items()
        if d.topic_config is not None
    }
