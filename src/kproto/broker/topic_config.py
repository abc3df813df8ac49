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

import attrs

from kproto.broker.errors import TopicError
from kproto.errors import ErrorCode

__all__ = [
    "ConfigType",
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


def _at_least(low: float) -> Validator:
    def check(value: object) -> str | None:
        assert isinstance(value, (int, float))
        return None if value >= low else f"Value must be at least {_num(low)}"

    return check


def _between(low: float, high: float) -> Validator:
    def check(value: object) -> str | None:
        assert isinstance(value, (int, float))
        if value < low:
            return f"Value must be at least {_num(low)}"
        if value > high:
            return f"Value must be no more than {_num(high)}"
        return None

    return check


def _level(low: int, high: int, *extra: int) -> Validator:
    """A compression level: ``low..high`` or one of ``extra`` (gzip's -1)."""
    inner = _between(low, high)

    def check(value: object) -> str | None:
        return None if value in extra else inner(value)

    return check


def _one_of(*allowed: str) -> Validator:
    def check(value: object) -> str | None:
        if value in allowed:
            return None
        return f"String must be one of: {', '.join(allowed)}"

    return check


def _list_of(*allowed: str) -> Validator:
    def check(value: object) -> str | None:
        assert isinstance(value, list)
        if not value:
            return "Empty list is not allowed"
        bad = [v for v in value if v not in allowed]
        if bad:
            return f"String must be one of: {', '.join(allowed)}"
        return None

    return check


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

    def parse(self, raw: str) -> object:
        """The value ``raw`` parsed as ``ConfigDef.parseType`` would, then checked.

        Raises:
            TopicConfigError: not of the type, or refused by the validator.
        """
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
                raise self._error(raw, f"Not a number of type {self.type.name}")
        elif self.type is ConfigType.DOUBLE:
            try:
                value = float(text)
            except ValueError:
                value = None
            if value is None or math.isnan(value) or "_" in text:
                raise self._error(raw, "Not a number of type DOUBLE")
        elif self.type is ConfigType.BOOLEAN:
            if text.lower() not in ("true", "false"):
                raise self._error(raw, "Expected value to be either true or false")
            value = text.lower() == "true"
        elif self.type is ConfigType.LIST:
            value = [] if not text else [v.strip() for v in text.split(",")]
        else:
            value = text
        if self.validator is not None:
            reason = self.validator(value)
            if reason is not None:
                raise self._error(raw, reason)
        return value

    def _error(self, raw: str, reason: str) -> TopicConfigError:
        return TopicConfigError(
            f"Invalid value {raw} for configuration {self.name}: {reason}"
        )


_LONG_MAX_S = str(_LONG_MAX)
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
            _at_least(1024 * 1024),
            enforced=True,
        ),
        _D(
            "segment.ms",
            _T.LONG,
            "604800000",
            "Time in ms after which the log rolls a segment even if not full.",
            _at_least(1),
        ),
        _D(
            "segment.jitter.ms",
            _T.LONG,
            "0",
            "Largest random jitter in ms subtracted from segment.ms.",
            _at_least(0),
        ),
        _D(
            "segment.index.bytes",
            _T.INT,
            "10485760",
            "Size in bytes of the offset index of each segment.",
            _at_least(4),
        ),
        _D(
            "flush.messages",
            _T.LONG,
            _LONG_MAX_S,
            "Messages written between forced fsyncs of the log.",
            _at_least(1),
        ),
        _D(
            "flush.ms",
            _T.LONG,
            _LONG_MAX_S,
            "Time in ms between forced fsyncs of the log.",
            _at_least(0),
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
            _at_least(-1),
            enforced=True,
        ),
        _D(
            "max.message.bytes",
            _T.INT,
            "1048588",
            "Largest record batch in bytes the log accepts.",
            _at_least(0),
            enforced=True,
        ),
        _D(
            "index.interval.bytes",
            _T.INT,
            "4096",
            "Bytes between entries of the offset index.",
            _at_least(0),
        ),
        _D(
            "delete.retention.ms",
            _T.LONG,
            "86400000",
            "Time in ms tombstones are kept on compacted topics.",
            _at_least(0),
            enforced=True,
        ),
        _D(
            "min.compaction.lag.ms",
            _T.LONG,
            "0",
            "Least time in ms a record stays uncompacted.",
            _at_least(0),
            enforced=True,
        ),
        _D(
            "max.compaction.lag.ms",
            _T.LONG,
            _LONG_MAX_S,
            "Most time in ms a record stays ineligible for compaction.",
            _at_least(1),
            enforced=True,
        ),
        _D(
            "file.delete.delay.ms",
            _T.LONG,
            "60000",
            "Time in ms before a deleted segment's file is removed.",
            _at_least(0),
        ),
        _D(
            "min.cleanable.dirty.ratio",
            _T.DOUBLE,
            "0.5",
            "Dirty share of the log above which the cleaner compacts it.",
            _between(0, 1),
            enforced=True,
        ),
        _D(
            "cleanup.policy",
            _T.LIST,
            "delete",
            "delete (retention), compact (keep the last record per key) or both.",
            _list_of("compact", "delete"),
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
            _at_least(1),
        ),
        _D(
            "compression.type",
            _T.STRING,
            "producer",
            "Codec of stored batches; producer keeps the producer's codec.",
            _one_of("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"),
        ),
        _D(
            "compression.gzip.level",
            _T.INT,
            "-1",
            "gzip level when compression.type is gzip (-1: default).",
            _level(1, 9, -1),
        ),
        _D(
            "compression.lz4.level",
            _T.INT,
            "9",
            "lz4 level when compression.type is lz4.",
            _level(1, 17),
        ),
        _D(
            "compression.zstd.level",
            _T.INT,
            "3",
            "zstd level when compression.type is zstd.",
            _level(-131072, 22),
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
            _one_of("CreateTime", "LogAppendTime"),
            enforced=True,
        ),
        _D(
            "message.timestamp.before.max.ms",
            _T.LONG,
            _LONG_MAX_S,
            "How far in ms a CreateTime timestamp may lie before the broker's clock.",
            _at_least(0),
            enforced=True,
        ),
        _D(
            "message.timestamp.after.max.ms",
            _T.LONG,
            "3600000",
            "How far in ms a CreateTime timestamp may lie after the broker's clock.",
            _at_least(0),
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
            _at_least(-2),
        ),
        _D(
            "local.retention.bytes",
            _T.LONG,
            "-2",
            "Local retention in bytes with tiered storage (-2: retention.bytes).",
            _at_least(-2),
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
            _at_least(1),
            enforced=True,
            internal=True,
        ),
    )
}

#: Kafka's default of every topic config, by name.
TOPIC_CONFIG_DEFAULTS: Mapping[str, str] = {
    name: d.default for name, d in TOPIC_CONFIGS.items()
}


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
    """Check a topic's whole set of explicit configs (each one, then
    ``LogConfig.validateValues``: ``min.compaction.lag.ms`` <=
    ``max.compaction.lag.ms``, defaults filling the gaps).

    Raises:
        TopicConfigError: the first config refused, named in the message.
    """
    for name, value in configs.items():
        validate_topic_config(name, value)
    low = int(configs.get("min.compaction.lag.ms", "0").strip())
    high = int(configs.get("max.compaction.lag.ms", _LONG_MAX_S).strip())
    if low > high:
        raise TopicConfigError(
            f"conflict topic config setting min.compaction.lag.ms ({low}) > "
            f"max.compaction.lag.ms ({high})"
        )
