"""The broker's configuration, typed and keyed by Kafka's broker property names.

:class:`BrokerConfig` holds the parsed values, one typed attribute per broker
property kproto takes, and each attribute is that property's one definition: its
type, kproto's default (and Kafka's where they differ), the validator, what kproto
does with it, the topic config it is the default of, whether Kafka lets it change
at run time (``DynamicBrokerConfig``), and the ``Cluster`` keyword argument that
maps onto it (a :class:`BrokerConfigDef` in the field's metadata;
:data:`BROKER_CONFIGS` lists them by name). ``Cluster(config={...})``, the pytest
marker's ``configs`` and ``kproto broker --override key=value`` all build it with
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
from kproto.kafka_releases import UnknownReleaseError, release_name

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


def _kafka_release(value: object) -> str | None:
    if not value:
        return None
    try:
        release_name(str(value))
    except UnknownReleaseError as exc:
        return str(exc)
    return None


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


#: The ``attrs`` metadata key under which a :class:`BrokerConfig` field keeps its
#: :class:`BrokerConfigDef`.
_DEFINITION = "kproto.broker_config.definition"


@attrs.frozen
class BrokerConfigDef:
    """One broker property.

    Attributes:
        name, type, default, documentation, validator: as a topic config's
            (:class:`kproto.broker.topic_config.ConfigDef`): ``default`` is
            kproto's, as Kafka writes it (``""`` null); ``documentation`` says
            what kproto does with it.
        kafka_default: Kafka's default where kproto's differs (``None``: the same).
        argument: the ``Cluster`` keyword argument that maps onto it, if any.
        topic_config: the topic config whose default it is (Kafka's
            ``ServerTopicConfigSynonyms``), if any.
        dynamic: whether Kafka changes it at run time, and where.
        enforced: kproto acts on it (the others are accepted and described).
        definition: the first five as a :class:`ConfigDef` (parsing strings).
    """

    name: str
    type: ConfigType
    default: str
    documentation: str
    validator: Validator | None = None
    kafka_default: str | None = attrs.field(default=None, kw_only=True)
    argument: str | None = attrs.field(default=None, kw_only=True)
    topic_config: str | None = attrs.field(default=None, kw_only=True)
    dynamic: Dynamic = attrs.field(default=Dynamic.READ_ONLY, kw_only=True)
    enforced: bool = attrs.field(default=True, kw_only=True)
    definition: ConfigDef = attrs.field(init=False, repr=False, eq=False)

    @definition.default
    def _definition(self) -> ConfigDef:
        return ConfigDef(
            self.name, self.type, self.default, self.documentation, self.validator
        )

    def field(self) -> Any:
        """The :class:`BrokerConfig` field holding this property: its default is
        :attr:`default` parsed, its metadata this definition."""
        return attrs.field(
            default=self.parse(self.default), metadata={_DEFINITION: self}
        )

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
_CW = Dynamic.CLUSTER_WIDE
_B = BrokerConfigDef


@attrs.frozen
class BrokerConfig:
    """A broker's configuration: one attribute per broker property
    (``num.partitions`` -> ``num_partitions``), each of Kafka's type (INT/LONG
    ``int``, BOOLEAN ``bool``, DOUBLE ``float``, LIST a tuple of strings);
    ``explicit`` names the properties that were set (the others hold kproto's
    default). ``BrokerConfig()`` is kproto's defaults. Units are Kafka's (``*.ms``
    milliseconds, ``*.bytes`` bytes).

    Each attribute is the property's one definition: the field's metadata holds
    its :class:`BrokerConfigDef` (:data:`BROKER_CONFIGS` lists them by name)."""

    # --------------------------------------------------------- server
    node_id: int = _B(
        "node.id",
        _T.INT,
        "1",
        "Id of the first node; node i of a cluster is node.id + i.",
        at_least(0),
        kafka_default="(required)",
    ).field()
    num_partitions: int = _B(
        "num.partitions",
        _T.INT,
        "1",
        "Partitions of auto-created topics and of CreateTopics with -1.",
        at_least(1),
        argument="num_partitions",
    ).field()
    auto_create_topics_enable: bool = _B(
        "auto.create.topics.enable",
        _T.BOOLEAN,
        "true",
        "Metadata requests create unknown topics.",
        argument="auto_create_topics",
    ).field()
    default_replication_factor: int = _B(
        "default.replication.factor",
        _T.INT,
        "1",
        "Replication factor of auto-created topics (accepted; every replica "
        "is the leader's log).",
        enforced=False,
    ).field()
    min_insync_replicas: int = _B(
        "min.insync.replicas",
        _T.INT,
        "1",
        "Default of the topic config min.insync.replicas (accepted).",
        at_least(1),
        topic_config="min.insync.replicas",
        dynamic=_CW,
        enforced=False,
    ).field()
    # ------------------------------------------------------------ log
    log_dirs: tuple[str, ...] = _B(
        "log.dirs",
        _T.LIST,
        "",
        "The data directory: one (empty: a temporary one, removed on close). "
        "Cluster(data_dir=).",
        Rule(_one_directory, "at most one directory"),
        kafka_default="(null: log.dir, /tmp/kafka-logs)",
    ).field()
    log_segment_bytes: int = _B(
        "log.segment.bytes",
        _T.INT,
        str(16 * 1024 * 1024),
        "Default segment size in bytes (topic config segment.bytes). kproto "
        "keeps Kafka 3's floor of 14 bytes, so tests can roll small segments.",
        at_least(14),
        kafka_default="1073741824",
        argument="segment_bytes",
        topic_config="segment.bytes",
        dynamic=_CW,
    ).field()
    log_roll_ms: int = _B(
        "log.roll.ms",
        _T.LONG,
        "604800000",
        "Default of segment.ms (accepted).",
        at_least(1),
        topic_config="segment.ms",
        dynamic=_CW,
        enforced=False,
    ).field()
    log_index_size_max_bytes: int = _B(
        "log.index.size.max.bytes",
        _T.INT,
        "10485760",
        "Default of segment.index.bytes (accepted).",
        at_least(4),
        topic_config="segment.index.bytes",
        dynamic=_CW,
        enforced=False,
    ).field()
    log_retention_ms: int = _B(
        "log.retention.ms",
        _T.LONG,
        "604800000",
        "Default of retention.ms: segments older than this are deleted as "
        "records are appended, when set (-1: forever).",
        at_least(-1),
        topic_config="retention.ms",
        dynamic=_CW,
    ).field()
    log_retention_bytes: int = _B(
        "log.retention.bytes",
        _T.LONG,
        "-1",
        "Default of retention.bytes (-1: no limit), applied as records are "
        "appended when set.",
        topic_config="retention.bytes",
        dynamic=_CW,
    ).field()
    log_cleanup_policy: tuple[str, ...] = _B(
        "log.cleanup.policy",
        _T.LIST,
        "delete",
        "Default of cleanup.policy (delete, compact or both).",
        list_of("compact", "delete"),
        topic_config="cleanup.policy",
        dynamic=_CW,
    ).field()
    log_cleaner_delete_retention_ms: int = _B(
        "log.cleaner.delete.retention.ms",
        _T.LONG,
        "86400000",
        "Default of delete.retention.ms (how long the cleaner keeps tombstones).",
        at_least(0),
        topic_config="delete.retention.ms",
        dynamic=_CW,
    ).field()
    log_cleaner_min_compaction_lag_ms: int = _B(
        "log.cleaner.min.compaction.lag.ms",
        _T.LONG,
        "0",
        "Default of min.compaction.lag.ms.",
        at_least(0),
        topic_config="min.compaction.lag.ms",
        dynamic=_CW,
    ).field()
    log_cleaner_max_compaction_lag_ms: int = _B(
        "log.cleaner.max.compaction.lag.ms",
        _T.LONG,
        str(_LONG_MAX),
        "Default of max.compaction.lag.ms.",
        at_least(1),
        topic_config="max.compaction.lag.ms",
        dynamic=_CW,
    ).field()
    log_cleaner_min_cleanable_ratio: float = _B(
        "log.cleaner.min.cleanable.ratio",
        _T.DOUBLE,
        "0.5",
        "Default of min.cleanable.dirty.ratio.",
        between(0, 1),
        topic_config="min.cleanable.dirty.ratio",
        dynamic=_CW,
    ).field()
    log_cleaner_backoff_ms: int = _B(
        "log.cleaner.backoff.ms",
        _T.LONG,
        "15000",
        "Pause in ms between the log cleaner's passes over compacted topics.",
        at_least(0),
        argument="log_cleaner_backoff_ms",
        dynamic=_CW,
    ).field()
    message_max_bytes: int = _B(
        "message.max.bytes",
        _T.INT,
        "1048588",
        "Default of max.message.bytes (the largest record batch accepted).",
        at_least(0),
        topic_config="max.message.bytes",
        dynamic=_CW,
    ).field()
    log_message_timestamp_type: str = _B(
        "log.message.timestamp.type",
        _T.STRING,
        "CreateTime",
        "Default of message.timestamp.type.",
        one_of("CreateTime", "LogAppendTime"),
        topic_config="message.timestamp.type",
        dynamic=_CW,
    ).field()
    log_message_timestamp_before_max_ms: int = _B(
        "log.message.timestamp.before.max.ms",
        _T.LONG,
        str(_LONG_MAX),
        "Default of message.timestamp.before.max.ms.",
        at_least(0),
        topic_config="message.timestamp.before.max.ms",
        dynamic=_CW,
    ).field()
    log_message_timestamp_after_max_ms: int = _B(
        "log.message.timestamp.after.max.ms",
        _T.LONG,
        "3600000",
        "Default of message.timestamp.after.max.ms.",
        at_least(0),
        topic_config="message.timestamp.after.max.ms",
        dynamic=_CW,
    ).field()
    compression_type: str = _B(
        "compression.type",
        _T.STRING,
        "producer",
        "Default of the topic config compression.type (accepted; batches are "
        "stored as produced).",
        one_of("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"),
        topic_config="compression.type",
        dynamic=_CW,
        enforced=False,
    ).field()
    # ------------------------------------------- internal topics, groups
    offsets_topic_num_partitions: int = _B(
        "offsets.topic.num.partitions",
        _T.INT,
        "5",
        "Partitions of __consumer_offsets.",
        at_least(1),
        kafka_default="50",
        argument="offsets_partitions",
    ).field()
    transaction_state_log_num_partitions: int = _B(
        "transaction.state.log.num.partitions",
        _T.INT,
        "5",
        "Partitions of __transaction_state.",
        at_least(1),
        kafka_default="50",
        argument="transaction_partitions",
    ).field()
    transaction_abort_timed_out_transaction_cleanup_interval_ms: int = _B(
        "transaction.abort.timed.out.transaction.cleanup.interval.ms",
        _T.INT,
        "1000",
        "How often in ms open transactions are checked against their "
        "transaction.timeout.ms.",
        at_least(1),
        kafka_default="10000",
        argument="transaction_abort_interval_ms",
    ).field()
    group_initial_rebalance_delay_ms: int = _B(
        "group.initial.rebalance.delay.ms",
        _T.INT,
        "100",
        "How long in ms a classic group's first rebalance waits for more "
        "members to join.",
        at_least(0),
        kafka_default="3000",
    ).field()
    group_min_session_timeout_ms: int = _B(
        "group.min.session.timeout.ms",
        _T.INT,
        "10",
        "The smallest session timeout in ms a classic group member may ask "
        "for (JoinGroup answers INVALID_SESSION_TIMEOUT below it).",
        at_least(0),
        kafka_default="6000",
    ).field()
    group_max_session_timeout_ms: int = _B(
        "group.max.session.timeout.ms",
        _T.INT,
        "1800000",
        "The largest session timeout in ms a classic group member may ask "
        "for (JoinGroup answers INVALID_SESSION_TIMEOUT above it).",
        at_least(0),
    ).field()
    group_consumer_session_timeout_ms: int = _B(
        "group.consumer.session.timeout.ms",
        _T.INT,
        "45000",
        "KIP-848 consumer group session timeout in ms.",
        at_least(1),
        argument="consumer_session_timeout_ms",
    ).field()
    group_consumer_heartbeat_interval_ms: int = _B(
        "group.consumer.heartbeat.interval.ms",
        _T.INT,
        "5000",
        "Heartbeat interval in ms given to KIP-848 members.",
        at_least(1),
        argument="consumer_heartbeat_interval_ms",
    ).field()
    group_consumer_assignors: tuple[str, ...] = _B(
        "group.consumer.assignors",
        _T.LIST,
        "uniform,range",
        "KIP-848 server assignors, the first the default.",
        _non_empty,
        kafka_default="org.apache.kafka.coordinator.group.assignor.UniformAssignor,"
        "org.apache.kafka.coordinator.group.assignor.RangeAssignor",
        argument="consumer_assignors",
    ).field()
    group_consumer_migration_policy: str = _B(
        "group.consumer.migration.policy",
        _T.STRING,
        "bidirectional",
        "Conversions between classic and consumer groups: bidirectional, "
        "upgrade, downgrade or disabled.",
        _case_insensitive("disabled", "downgrade", "upgrade", "bidirectional"),
        argument="consumer_migration_policy",
    ).field()
    group_streams_session_timeout_ms: int = _B(
        "group.streams.session.timeout.ms",
        _T.INT,
        "45000",
        "KIP-1071 streams group session timeout in ms.",
        at_least(1),
        argument="streams_session_timeout_ms",
    ).field()
    group_streams_heartbeat_interval_ms: int = _B(
        "group.streams.heartbeat.interval.ms",
        _T.INT,
        "5000",
        "Heartbeat interval in ms given to streams group members.",
        at_least(1),
        argument="streams_heartbeat_interval_ms",
    ).field()
    group_consumer_min_session_timeout_ms: int = _B(
        "group.consumer.min.session.timeout.ms",
        _T.INT,
        "45000",
        "Least session timeout in ms a consumer group config may set.",
        at_least(1),
    ).field()
    group_consumer_max_session_timeout_ms: int = _B(
        "group.consumer.max.session.timeout.ms",
        _T.INT,
        "60000",
        "Most session timeout in ms a consumer group config may set.",
        at_least(1),
    ).field()
    group_consumer_min_heartbeat_interval_ms: int = _B(
        "group.consumer.min.heartbeat.interval.ms",
        _T.INT,
        "5000",
        "Least heartbeat interval in ms a consumer group config may set.",
        at_least(1),
    ).field()
    group_consumer_max_heartbeat_interval_ms: int = _B(
        "group.consumer.max.heartbeat.interval.ms",
        _T.INT,
        "15000",
        "Most heartbeat interval in ms a consumer group config may set.",
        at_least(1),
    ).field()
    group_streams_min_session_timeout_ms: int = _B(
        "group.streams.min.session.timeout.ms",
        _T.INT,
        "45000",
        "Least session timeout in ms a streams group config may set.",
        at_least(1),
    ).field()
    group_streams_max_session_timeout_ms: int = _B(
        "group.streams.max.session.timeout.ms",
        _T.INT,
        "60000",
        "Most session timeout in ms a streams group config may set.",
        at_least(1),
    ).field()
    group_streams_min_heartbeat_interval_ms: int = _B(
        "group.streams.min.heartbeat.interval.ms",
        _T.INT,
        "5000",
        "Least heartbeat interval in ms a streams group config may set.",
        at_least(1),
    ).field()
    group_streams_max_heartbeat_interval_ms: int = _B(
        "group.streams.max.heartbeat.interval.ms",
        _T.INT,
        "15000",
        "Most heartbeat interval in ms a streams group config may set.",
        at_least(1),
    ).field()
    group_streams_max_standby_replicas: int = _B(
        "group.streams.max.standby.replicas",
        _T.INT,
        "2",
        "Most standby replicas a streams group config may set.",
        at_least(0),
    ).field()
    group_share_record_lock_duration_ms: int = _B(
        "group.share.record.lock.duration.ms",
        _T.INT,
        "30000",
        "How long in ms an acquired share-group record stays locked (kproto "
        "allows below Kafka's 1000 floor, for tests).",
        at_least(1),
    ).field()
    group_share_delivery_count_limit: int = _B(
        "group.share.delivery.count.limit",
        _T.INT,
        "5",
        "Deliveries after which a share-group record is archived.",
        at_least(1),
    ).field()
    group_share_partition_max_record_locks: int = _B(
        "group.share.partition.max.record.locks",
        _T.INT,
        "2000",
        "In-flight records per share partition.",
        at_least(1),
    ).field()
    group_share_heartbeat_interval_ms: int = _B(
        "group.share.heartbeat.interval.ms",
        _T.INT,
        "5000",
        "Heartbeat interval in ms given to share group members.",
        at_least(1),
    ).field()
    group_share_session_timeout_ms: int = _B(
        "group.share.session.timeout.ms",
        _T.INT,
        "45000",
        "Share group session timeout in ms.",
        at_least(1),
    ).field()
    group_share_max_share_sessions: int = _B(
        "group.share.max.share.sessions",
        _T.INT,
        "2000",
        "Share sessions kept per node (more: SHARE_SESSION_LIMIT_REACHED).",
        at_least(1),
    ).field()
    share_coordinator_state_topic_num_partitions: int = _B(
        "share.coordinator.state.topic.num.partitions",
        _T.INT,
        "5",
        "Partitions of __share_group_state.",
        at_least(1),
        kafka_default="50",
    ).field()
    # ------------------------------------------------ sockets, security
    socket_request_max_bytes: int = _B(
        "socket.request.max.bytes",
        _T.INT,
        "104857600",
        "Request frames above this many bytes close the connection.",
        at_least(1),
        argument="socket_request_max_bytes",
    ).field()
    connections_max_idle_ms: int = _B(
        "connections.max.idle.ms",
        _T.LONG,
        "600000",
        "Close a connection idle (or stalled mid-frame) for this long (ms).",
        argument="connections_max_idle_ms",
    ).field()
    connections_max_reauth_ms: int = _B(
        "connections.max.reauth.ms",
        _T.LONG,
        "0",
        "SASL session lifetime in ms (KIP-368; 0: sessions never expire).",
        argument="connections_max_reauth_ms",
    ).field()
    max_connections: int = _B(
        "max.connections",
        _T.INT,
        str(_INT_MAX),
        "Connections each node keeps open at once; more are closed at accept.",
        at_least(0),
        argument="max_connections",
        dynamic=_CW,
    ).field()
    max_connections_per_ip: int = _B(
        "max.connections.per.ip",
        _T.INT,
        str(_INT_MAX),
        "The same per client address.",
        at_least(0),
        argument="max_connections_per_ip",
        dynamic=_CW,
    ).field()
    queued_max_requests: int = _B(
        "queued.max.requests",
        _T.INT,
        "500",
        "Requests in flight per node across its connections.",
        at_least(1),
        argument="queued_max_requests",
    ).field()
    security_inter_broker_protocol: str = _B(
        "security.inter.broker.protocol",
        _T.STRING,
        "PLAINTEXT",
        "The security protocol of every node's one listener: PLAINTEXT, SSL, "
        "SASL_PLAINTEXT or SASL_SSL.",
        argument="security_protocol",
    ).field()
    sasl_enabled_mechanisms: tuple[str, ...] = _B(
        "sasl.enabled.mechanisms",
        _T.LIST,
        "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
        "SASL mechanisms of SASL listeners (PLAIN, SCRAM-SHA-256, "
        "SCRAM-SHA-512, OAUTHBEARER).",
        kafka_default="GSSAPI",
        argument="sasl_mechanisms",
    ).field()
    super_users: str = _B(
        "super.users",
        _T.STRING,
        "",
        "Principals (User:name; semicolon-separated) every ACL check lets pass.",
        argument="super_users",
    ).field()
    authorizer_class_name: str = _B(
        "authorizer.class.name",
        _T.STRING,
        "",
        f"{STANDARD_AUTHORIZER} enforces ACLs; empty: none.",
        one_of("", STANDARD_AUTHORIZER),
        argument="acls_enabled",
    ).field()
    replica_selector_class: str = _B(
        "replica.selector.class",
        _T.STRING,
        "",
        "The replica a leader sends a consumer with client.rack to "
        "(Fetch v11+, KIP-392): RackAwareReplicaSelector, an in-sync "
        "follower on its rack; LeaderSelector or empty, the leader.",
        one_of("", RACK_AWARE_SELECTOR, LEADER_SELECTOR),
    ).field()
    ssl_client_auth: str = _B(
        "ssl.client.auth",
        _T.STRING,
        "none",
        "Client certificates on SSL listeners: none, requested or required.",
        argument="ssl_client_auth",
    ).field()
    # ------------------------------------------------- kproto's own
    kproto_max_partitions: int = _B(
        "kproto.max.partitions",
        _T.INT,
        "200000",
        "Partitions the cluster holds at most (CreateTopics beyond: "
        "POLICY_VIOLATION).",
        at_least(1),
        kafka_default="(none)",
        argument="max_partitions",
    ).field()
    kproto_max_open_files: int = _B(
        "kproto.max.open.files",
        _T.INT,
        "256",
        "Segment files kept open at once (least recently used closed first).",
        at_least(1),
        kafka_default="(none)",
        argument="max_open_files",
    ).field()
    kproto_request_log_size: int = _B(
        "kproto.request.log.size",
        _T.INT,
        "1000",
        "Requests Cluster.requests keeps (0: none).",
        at_least(0),
        kafka_default="(none)",
        argument="request_log_size",
    ).field()
    kproto_api_versions: tuple[str, ...] = _B(
        "kproto.api.versions",
        _T.LIST,
        "",
        "API versions to advertise and serve instead of all kproto serves "
        "(librdkafka's mock set_apiversion): NAME:MIN-MAX, or NAME:none to "
        "remove an API.",
        Rule(_api_versions, "[NAME:MIN-MAX|NAME:none,...]"),
        kafka_default="(none)",
    ).field()
    kproto_emulate_version: str = _B(
        "kproto.emulate.version",
        _T.STRING,
        "",
        "Advertise and serve the API versions this Kafka release did "
        "(franz-go kfake's --as-version): 3.7 (KRaft) or 3.7-zk (ZooKeeper "
        "mode); kproto.api.versions then adjusts them. Empty: every version "
        "kproto serves.",
        Rule(_kafka_release, "a Kafka release, 2.8 to 4.3 or 2.0-zk to 3.9-zk"),
        kafka_default="(none)",
    ).field()
    kproto_seed_topics: tuple[str, ...] = _B(
        "kproto.seed.topics",
        _T.LIST,
        "",
        "Topics created at start when missing (franz-go kfake's SeedTopics): "
        "name or name:partitions (default num.partitions).",
        Rule(_seed_topics, "[name[:partitions],...]"),
        kafka_default="(none)",
    ).field()
    kproto_racks: tuple[str, ...] = _B(
        "kproto.racks",
        _T.LIST,
        "",
        "The rack of each node, in node order (Kafka's broker.rack of each "
        "broker; Cluster.set_rack changes it at run time); empty: none.",
        kafka_default="(none)",
    ).field()
    kproto_log_requests: bool = _B(
        "kproto.log.requests",
        _T.BOOLEAN,
        "false",
        "Log every request at INFO on the kproto.broker logger.",
        kafka_default="(none)",
        argument="log_requests",
    ).field()
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


def _definitions() -> Mapping[str, BrokerConfigDef]:
    """The :class:`BrokerConfigDef` of every :class:`BrokerConfig` field, by
    property name, in the class's order.

    Raises:
        TypeError: a field not named after its property (``a.b`` -> ``a_b``).
    """
    out: dict[str, BrokerConfigDef] = {}
    for field in attrs.fields(BrokerConfig):
        definition = field.metadata.get(_DEFINITION)
        if definition is None:
            continue
        if field.name != attribute_name(definition.name):
            raise TypeError(f"BrokerConfig.{field.name} defines {definition.name}")
        out[definition.name] = definition
    return out


#: Every broker property kproto takes, by name (Kafka's where Kafka has one).
BROKER_CONFIGS: Mapping[str, BrokerConfigDef] = _definitions()

#: ``Cluster`` keyword argument -> the broker property it sets.
ARGUMENTS: Mapping[str, str] = {
    d.argument: name for name, d in BROKER_CONFIGS.items() if d.argument is not None
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
