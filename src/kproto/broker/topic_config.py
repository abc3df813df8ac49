"""Every topic config Kafka 4.x defines: type, default, validator, and what this
broker does with it.

Source: Kafka's ``LogConfig.CONFIG`` (``storage/.../internals/log/LogConfig.java``:
the ``ConfigDef.define`` calls), the names of ``TopicConfig`` and ``QuotaConfig``,
and the defaults of ``ServerLogConfigs``. Values are parsed as ``ConfigDef.parseType``
does (trimmed; INT/LONG decimal within their Java range, DOUBLE, BOOLEAN
``true``/``false`` in any case, LIST comma-separated) and then checked by the
definition's validator (``atLeast``, ``between``, ``ValidString.in``,
``ValidList.in``), with ``LogConfig.validateValues``'s cross-check that
``min.compaction.lag.ms`` is not above ``max.compaction.lag.ms``.

``enforced`` says whether this broker acts on a config; the others are accepted,
stored in ``kproto-topics.json`` and described (DescribeConfigs), nothing more.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Callable, Mapping
from typing import Any

import attrs

from kproto.broker.errors import TopicError
from kproto.errors import ErrorCode

__all__ = [
    "ConfigDef",
    "ConfigType",
    "Rule",
    "TopicConfig",
    "config_string",
    "TopicConfigDef",
    "TopicConfigError",
    "TOPIC_CONFIGS",
    "TOPIC_CONFIG_DEFAULTS",
    "validate_topic_config",
    "validate_topic_configs",
]

_INT_MIN, _INT_MAX = -(2**31), 2**31 - 1
_LONG_MIN, _LONG_MAX = -(2**63), 2**63 - 1


class ConfigType(enum.IntEnum):
    """``DescribeConfigsResponse`` ``config_type`` (KIP-569; Kafka's
    ``DescribeConfigsResponse.ConfigType``)."""

    UNKNOWN = 0
    BOOLEAN = 1
    STRING = 2
    INT = 3
    SHORT = 4
    LONG = 5
    DOUBLE = 6
    LIST = 7
    CLASS = 8
    PASSWORD = 9


class TopicConfigError(TopicError):
    """A topic config name or value Kafka would refuse: a :class:`TopicError` with
    ``error_code`` INVALID_CONFIG and a message naming the config (Kafka's
    ``ConfigException`` wording: ``Invalid value V for configuration N: reason``)."""

    def __init__(self, message: str) -> None:
        super().__init__(ErrorCode.INVALID_CONFIG, message)


Validator = Callable[[object], str | None]


@attrs.frozen
class Rule:
    """A validator that says its rule (as Kafka's ``ConfigDef`` validators print
    themselves in the documentation: ``[1,...]``, ``[0,...,1]``, ``[a, b]``)."""

    check: Validator
    text: str

    def __call__(self, value: object) -> str | None:
        return self.check(value)

    def __str__(self) -> str:
        return self.text


def at_least(low: float) -> Validator:
    def check(value: object) -> str | None:
        assert isinstance(value, (int, float))
        return None if value >= low else f"Value must be at least {_num(low)}"

    return Rule(check, f"[{_num(low)},...]")


def between(low: float, high: float) -> Validator:
    def check(value: object) -> str | None:
        assert isinstance(value, (int, float))
        if value < low:
            return f"Value must be at least {_num(low)}"
        if value > high:
            return f"Value must be no more than {_num(high)}"
        return None

    return Rule(check, f"[{_num(low)},...,{_num(high)}]")


def level(low: int, high: int, *extra: int) -> Validator:
    """A compression level: ``low..high`` or one of ``extra`` (gzip's -1)."""
    inner = between(low, high)

    def check(value: object) -> str | None:
        return None if value in extra else inner(value)

    return Rule(check, f"{', '.join(map(str, extra))}, [{low},...,{high}]".lstrip(", "))


def one_of(*allowed: str) -> Validator:
    def check(value: object) -> str | None:
        if value in allowed:
            return None
        return f"String must be one of: {', '.join(allowed)}"

    return Rule(check, f"[{', '.join(allowed)}]")


def list_of(*allowed: str) -> Validator:
    def check(value: object) -> str | None:
        assert isinstance(value, list)
        if not value:
            return "Empty list is not allowed"
        bad = [v for v in value if v not in allowed]
        if bad:
            return f"String must be one of: {', '.join(allowed)}"
        return None

    return Rule(check, f"[{', '.join(allowed)}]")


def _throttled_replicas(value: object) -> str | None:
    """Kafka's ``ThrottledReplicaListValidator``: ``*`` or ``partition:broker``
    pairs of integers."""
    assert isinstance(value, list)
    if value == ["*"] or not value:
        return None
    for item in value:
        part, _, broker = item.partition(":")
        if not (part.strip().isdigit() and broker.strip().isdigit()):
            return (
                "must be the literal '*' or a list of replicas in the following "
                "format: [partitionId]:[brokerId],[partitionId]:[brokerId],..."
            )
    return None


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else str(x)


@attrs.frozen
class TopicConfigDef:
    """One topic config: ``name``, ``type``, ``default`` (as Kafka describes it),
    ``validator`` (returns the reason a parsed value is refused, or None),
    ``enforced`` (this broker acts on it), ``internal`` (Kafka's
    ``defineInternal``: accepted, described only when set) and ``documentation``
    (one line)."""

    name: str
    type: ConfigType
    default: str
    documentation: str
    validator: Validator | None = None
    enforced: bool = False
    internal: bool = False

    def convert(self, raw: str) -> tuple[object, str | None]:
        """``(value, None)``: ``raw`` parsed as ``ConfigDef.parseType`` would and
        accepted by the validator; ``(None, reason)``: refused, and why (Kafka's
        wording)."""
        text = raw.strip()
        value: object
        if self.type in (ConfigType.INT, ConfigType.LONG):
            low, high = (
                (_INT_MIN, _INT_MAX)
                if self.type is ConfigType.INT
                else (_LONG_MIN, _LONG_MAX)
            )
            try:
                value = int(text, 10)
            except ValueError:
                value = None
            if value is None or not low <= value <= high or "_" in text:
                return None, f"Not a number of type {self.type.name}"
        elif self.type is ConfigType.DOUBLE:
            try:
                value = float(text)
            except ValueError:
                value = None
            if value is None or math.isnan(value) or "_" in text:
                return None, "Not a number of type DOUBLE"
        elif self.type is ConfigType.BOOLEAN:
            if text.lower() not in ("true", "false"):
                return None, "Expected value to be either true or false"
            value = text.lower() == "true"
        elif self.type is ConfigType.LIST:
            value = [] if not text else [v.strip() for v in text.split(",")]
        else:
            value = text
        if self.validator is not None:
            reason = self.validator(value)
            if reason is not None:
                return None, reason
        return value, None

    def parse(self, raw: str) -> object:
        """The value ``raw`` parsed as ``ConfigDef.parseType`` would, then checked.

        Raises:
            TopicConfigError: not of the type, or refused by the validator.
        """
        value, reason = self.convert(raw)
        if reason is not None:
            raise TopicConfigError(
                f"Invalid value {raw} for configuration {self.name}: {reason}"
            )
        return value


#: The generic name: group and broker configs are defined the same way.
ConfigDef = TopicConfigDef

_LONG_MAX_S = str(_LONG_MAX)
_STRATEGIES = "io.confluent.kafka.serializers.subject."
#: Confluent's default subject name strategy (``<topic>-key`` / ``<topic>-value``).
TOPIC_NAME_STRATEGY = _STRATEGIES + "TopicNameStrategy"
#: The subject name strategies Confluent Server's schema validation takes.
SUBJECT_NAME_STRATEGIES = (
    TOPIC_NAME_STRATEGY,
    _STRATEGIES + "RecordNameStrategy",
    _STRATEGIES + "TopicRecordNameStrategy",
)
_D = TopicConfigDef
_T = ConfigType

#: Every topic config, by name, in Kafka's ``LogConfig`` order.
TOPIC_CONFIGS: Mapping[str, TopicConfigDef] = {
    d.name: d
    for d in (
        _D(
            "segment.bytes",
            _T.INT,
            "1073741824",
            "Segment file size in bytes; the log rolls a new segment beyond it.",
            at_least(1024 * 1024),
            enforced=True,
        ),
        _D(
            "segment.ms",
            _T.LONG,
            "604800000",
            "Time in ms after which the log rolls a segment even if not full.",
            at_least(1),
        ),
        _D(
            "segment.jitter.ms",
            _T.LONG,
            "0",
            "Largest random jitter in ms subtracted from segment.ms.",
            at_least(0),
        ),
        _D(
            "segment.index.bytes",
            _T.INT,
            "10485760",
            "Size in bytes of the offset index of each segment.",
            at_least(4),
        ),
        _D(
            "flush.messages",
            _T.LONG,
            _LONG_MAX_S,
            "Messages written between forced fsyncs of the log.",
            at_least(1),
        ),
        _D(
            "flush.ms",
            _T.LONG,
            _LONG_MAX_S,
            "Time in ms between forced fsyncs of the log.",
            at_least(0),
        ),
        _D(
            "retention.bytes",
            _T.LONG,
            "-1",
            "Bytes a partition keeps before deleting old segments (-1: no limit).",
            enforced=True,
        ),
        _D(
            "retention.ms",
            _T.LONG,
            "604800000",
            "Time in ms a segment is kept after its newest record (-1: forever).",
            at_least(-1),
            enforced=True,
        ),
        _D(
            "max.message.bytes",
            _T.INT,
            "1048588",
            "Largest record batch in bytes the log accepts.",
            at_least(0),
            enforced=True,
        ),
        _D(
            "index.interval.bytes",
            _T.INT,
            "4096",
            "Bytes between entries of the offset index.",
            at_least(0),
        ),
        _D(
            "delete.retention.ms",
            _T.LONG,
            "86400000",
            "Time in ms tombstones are kept on compacted topics.",
            at_least(0),
            enforced=True,
        ),
        _D(
            "min.compaction.lag.ms",
            _T.LONG,
            "0",
            "Least time in ms a record stays uncompacted.",
            at_least(0),
            enforced=True,
        ),
        _D(
            "max.compaction.lag.ms",
            _T.LONG,
            _LONG_MAX_S,
            "Most time in ms a record stays ineligible for compaction.",
            at_least(1),
            enforced=True,
        ),
        _D(
            "file.delete.delay.ms",
            _T.LONG,
            "60000",
            "Time in ms before a deleted segment's file is removed.",
            at_least(0),
        ),
        _D(
            "min.cleanable.dirty.ratio",
            _T.DOUBLE,
            "0.5",
            "Dirty share of the log above which the cleaner compacts it.",
            between(0, 1),
            enforced=True,
        ),
        _D(
            "cleanup.policy",
            _T.LIST,
            "delete",
            "delete (retention), compact (keep the last record per key) or both.",
            list_of("compact", "delete"),
            enforced=True,
        ),
        _D(
            "unclean.leader.election.enable",
            _T.BOOLEAN,
            "false",
            "Whether an out-of-sync replica may become leader.",
        ),
        _D(
            "min.insync.replicas",
            _T.INT,
            "1",
            "Least in-sync replicas for an acks=all write to succeed.",
            at_least(1),
        ),
        _D(
            "compression.type",
            _T.STRING,
            "producer",
            "Codec of stored batches; producer keeps the producer's codec.",
            one_of("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"),
        ),
        _D(
            "compression.gzip.level",
            _T.INT,
            "-1",
            "gzip level when compression.type is gzip (-1: default).",
            level(1, 9, -1),
        ),
        _D(
            "compression.lz4.level",
            _T.INT,
            "9",
            "lz4 level when compression.type is lz4.",
            level(1, 17),
        ),
        _D(
            "compression.zstd.level",
            _T.INT,
            "3",
            "zstd level when compression.type is zstd.",
            level(-131072, 22),
        ),
        _D(
            "preallocate",
            _T.BOOLEAN,
            "false",
            "Whether a new segment file is preallocated to segment.bytes.",
        ),
        _D(
            "message.timestamp.type",
            _T.STRING,
            "CreateTime",
            "CreateTime (the producer's) or LogAppendTime (the broker's).",
            one_of("CreateTime", "LogAppendTime"),
            enforced=True,
        ),
        _D(
            "message.timestamp.before.max.ms",
            _T.LONG,
            _LONG_MAX_S,
            "How far in ms a CreateTime timestamp may lie before the broker's clock.",
            at_least(0),
            enforced=True,
        ),
        _D(
            "message.timestamp.after.max.ms",
            _T.LONG,
            "3600000",
            "How far in ms a CreateTime timestamp may lie after the broker's clock.",
            at_least(0),
            enforced=True,
        ),
        _D(
            "leader.replication.throttled.replicas",
            _T.LIST,
            "",
            "Replicas whose leader-side replication is throttled.",
            _throttled_replicas,
        ),
        _D(
            "follower.replication.throttled.replicas",
            _T.LIST,
            "",
            "Replicas whose follower-side replication is throttled.",
            _throttled_replicas,
        ),
        _D(
            "remote.storage.enable",
            _T.BOOLEAN,
            "false",
            "Whether tiered storage is on for the topic.",
        ),
        _D(
            "local.retention.ms",
            _T.LONG,
            "-2",
            "Local retention in ms with tiered storage (-2: retention.ms).",
            at_least(-2),
        ),
        _D(
            "local.retention.bytes",
            _T.LONG,
            "-2",
            "Local retention in bytes with tiered storage (-2: retention.bytes).",
            at_least(-2),
        ),
        _D(
            "remote.log.copy.disable",
            _T.BOOLEAN,
            "false",
            "Whether copying segments to remote storage is stopped.",
        ),
        _D(
            "remote.log.delete.on.disable",
            _T.BOOLEAN,
            "false",
            "Whether remote data is deleted when tiered storage is turned off.",
        ),
        _D(
            "internal.segment.bytes",
            _T.INT,
            "",
            "Segment size in bytes overriding segment.bytes, without its 1 MiB "
            "floor (Kafka: for testing only).",
            at_least(1),
            enforced=True,
            internal=True,
        ),
        # Confluent Server's schema validation (kproto.broker.schema_validation)
        _D(
            "confluent.key.schema.validation",
            _T.BOOLEAN,
            "false",
            "Whether the broker checks that each record key has a registered "
            "schema id (Confluent Server).",
        ),
        _D(
            "confluent.value.schema.validation",
            _T.BOOLEAN,
            "false",
            "Whether the broker checks that each record value has a registered "
            "schema id (Confluent Server).",
        ),
        _D(
            "confluent.key.subject.name.strategy",
            _T.STRING,
            TOPIC_NAME_STRATEGY,
            "Subject name strategy of key schema validation (Confluent Server).",
            one_of(*SUBJECT_NAME_STRATEGIES),
        ),
        _D(
            "confluent.value.subject.name.strategy",
            _T.STRING,
            TOPIC_NAME_STRATEGY,
            "Subject name strategy of value schema validation (Confluent Server).",
            one_of(*SUBJECT_NAME_STRATEGIES),
        ),
    )
}

#: Kafka's default of every topic config, by name.
TOPIC_CONFIG_DEFAULTS: Mapping[str, str] = {
    name: d.default for name, d in TOPIC_CONFIGS.items()
}


def attribute_name(name: str) -> str:
    """The :class:`TopicConfig` attribute of topic config ``name``
    (``retention.ms`` -> ``retention_ms``)."""
    return name.replace(".", "_")


def _default(name: str) -> Any:
    """Kafka's default of ``name``, parsed (``None`` for an internal config with
    none); the lists as tuples."""
    definition = TOPIC_CONFIGS[name]
    if not definition.default and definition.internal:
        return None
    return _frozen(definition.parse(definition.default))


def _frozen(value: object) -> object:
    return tuple(value) if isinstance(value, list) else value


@attrs.frozen
class TopicConfig:
    """One topic's configuration in effect, typed (Kafka's ``LogConfig``): one
    attribute per topic config of :data:`TOPIC_CONFIGS`, named as
    :func:`attribute_name` says, parsed and validated once when a topic is created
    or its configs altered (:meth:`from_properties`), read by attribute everywhere.
    ``TopicConfig()`` is Kafka's defaults; a cluster's defaults come from its
    broker properties (:meth:`kproto.broker.broker_config.BrokerConfig.topic_defaults`).

    ``overridden`` names the configs set on the topic or through a broker property
    (Kafka's ``LogConfig.overriddenConfigs``); the others hold Kafka's default.
    Units are Kafka's: ``*_ms`` milliseconds, ``*_bytes`` bytes; -1 means
    unlimited where Kafka says so (``retention.ms``, ``retention.bytes``).
    """

    segment_bytes: int = _default("segment.bytes")
    segment_ms: int = _default("segment.ms")
    segment_jitter_ms: int = _default("segment.jitter.ms")
    segment_index_bytes: int = _default("segment.index.bytes")
    flush_messages: int = _default("flush.messages")
    flush_ms: int = _default("flush.ms")
    retention_bytes: int = _default("retention.bytes")
    retention_ms: int = _default("retention.ms")
    max_message_bytes: int = _default("max.message.bytes")
    index_interval_bytes: int = _default("index.interval.bytes")
    delete_retention_ms: int = _default("delete.retention.ms")
    min_compaction_lag_ms: int = _default("min.compaction.lag.ms")
    max_compaction_lag_ms: int = _default("max.compaction.lag.ms")
    file_delete_delay_ms: int = _default("file.delete.delay.ms")
    min_cleanable_dirty_ratio: float = _default("min.cleanable.dirty.ratio")
    cleanup_policy: tuple[str, ...] = _default("cleanup.policy")
    unclean_leader_election_enable: bool = _default("unclean.leader.election.enable")
    min_insync_replicas: int = _default("min.insync.replicas")
    compression_type: str = _default("compression.type")
    compression_gzip_level: int = _default("compression.gzip.level")
    compression_lz4_level: int = _default("compression.lz4.level")
    compression_zstd_level: int = _default("compression.zstd.level")
    preallocate: bool = _default("preallocate")
    message_timestamp_type: str = _default("message.timestamp.type")
    message_timestamp_before_max_ms: int = _default("message.timestamp.before.max.ms")
    message_timestamp_after_max_ms: int = _default("message.timestamp.after.max.ms")
    leader_replication_throttled_replicas: tuple[str, ...] = _default(
        "leader.replication.throttled.replicas"
    )
    follower_replication_throttled_replicas: tuple[str, ...] = _default(
        "follower.replication.throttled.replicas"
    )
    remote_storage_enable: bool = _default("remote.storage.enable")
    local_retention_ms: int = _default("local.retention.ms")
    local_retention_bytes: int = _default("local.retention.bytes")
    remote_log_copy_disable: bool = _default("remote.log.copy.disable")
    remote_log_delete_on_disable: bool = _default("remote.log.delete.on.disable")
    internal_segment_bytes: int | None = _default("internal.segment.bytes")
    confluent_key_schema_validation: bool = _default("confluent.key.schema.validation")
    confluent_value_schema_validation: bool = _default(
        "confluent.value.schema.validation"
    )
    confluent_key_subject_name_strategy: str = _default(
        "confluent.key.subject.name.strategy"
    )
    confluent_value_subject_name_strategy: str = _default(
        "confluent.value.subject.name.strategy"
    )
    overridden: frozenset[str] = frozenset()

    @property
    def compact(self) -> bool:
        """``cleanup.policy`` includes ``compact`` (the log cleaner keeps the last
        record of each key)."""
        return "compact" in self.cleanup_policy

    @property
    def delete(self) -> bool:
        """``cleanup.policy`` includes ``delete`` (retention removes old segments)."""
        return "delete" in self.cleanup_policy

    @property
    def log_append_time(self) -> bool:
        """``message.timestamp.type`` is ``LogAppendTime``."""
        return self.message_timestamp_type == "LogAppendTime"

    @property
    def segment_size(self) -> int:
        """The segment size in bytes a log rolls at: ``internal.segment.bytes`` if
        set, else ``segment.bytes`` (Kafka's ``LogConfig.segmentSize``)."""
        internal = self.internal_segment_bytes
        return self.segment_bytes if internal is None else internal

    @property
    def retention_overridden(self) -> bool:
        """``retention.ms`` or ``retention.bytes`` is set (on the topic or by a
        broker property): retention is then applied as records are appended."""
        return not self.overridden.isdisjoint(("retention.ms", "retention.bytes"))

    def value(self, name: str) -> object:
        """The typed value of topic config ``name``.

        Raises:
            KeyError: not a topic config.
        """
        if name not in TOPIC_CONFIGS:
            raise KeyError(name)
        return getattr(self, attribute_name(name))

    def string(self, name: str) -> str:
        """Topic config ``name`` as Kafka describes it (``ConfigDef.convertToString``:
        lists comma-separated, booleans ``true``/``false``; ``""`` when unset).

        Raises:
            KeyError: not a topic config.
        """
        return config_string(self.value(name))

    @classmethod
    def from_properties(
        cls, properties: Mapping[str, str], base: TopicConfig | None = None
    ) -> TopicConfig:
        """``base`` (default: Kafka's defaults) with a topic's explicit
        ``properties`` (Kafka's names, string values) applied, each parsed and
        validated as Kafka's ``LogConfig.validate`` does: known names
        (``validateNames``), each value of its type and range, then
        ``min.compaction.lag.ms`` <= ``max.compaction.lag.ms``.

        Raises:
            TopicConfigError: INVALID_CONFIG naming the first config refused.
        """
        fields: dict[str, object] = {}
        for name, raw in properties.items():
            definition = TOPIC_CONFIGS.get(name)
            if definition is None:
                raise TopicConfigError(f"Unknown topic config name: {name}")
            fields[attribute_name(name)] = _frozen(definition.parse(raw))
        start = cls() if base is None else base
        config = attrs.evolve(
            start,
            overridden=start.overridden | frozenset(properties),
            **fields,  # type: ignore[arg-type]
        )
        low, high = config.min_compaction_lag_ms, config.max_compaction_lag_ms
        if low > high:
            raise TopicConfigError(
                f"conflict topic config setting min.compaction.lag.ms ({low}) > "
                f"max.compaction.lag.ms ({high})"
            )
        return config


def config_string(value: object) -> str:
    """A parsed config value as Kafka writes it (``ConfigDef.convertToString``):
    lists comma-separated, booleans ``true``/``false``, ``None`` as ``""``."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return ",".join(str(v) for v in value)
    return str(value)


def validate_topic_config(name: str, value: str) -> object:
    """Parse and check one topic config; return the parsed value.

    Raises:
        TopicConfigError: unknown name (``Unknown topic config name: N``, as
            ``LogConfig.validateNames``), wrong type, out of range, not in the enum.
    """
    definition = TOPIC_CONFIGS.get(name)
    if definition is None:
        raise TopicConfigError(f"Unknown topic config name: {name}")
    return definition.parse(value)


def validate_topic_configs(configs: Mapping[str, str]) -> None:
    """Check a topic's whole set of explicit configs over Kafka's defaults
    (:meth:`TopicConfig.from_properties`, the result dropped).

    Raises:
        TopicConfigError: the first config refused, named in the message.
    """
    TopicConfig.from_properties(configs)
