"""Client metrics and observability (KIP-714): the subscriptions an operator sets on
``CLIENT_METRICS`` config resources, the client instances that ask for them, and the
metrics those clients push.

A subscription is a named set of configs (Kafka's ``ClientMetricsConfigs``):

=================  ======  ===========  ==============================================
config             type    default      meaning
=================  ======  ===========  ==============================================
``metrics``        LIST    (empty)      metric name prefixes to push (``*``: all)
``interval.ms``    INT     300000       push interval in ms, 100 to 3600000
``match``          LIST    (empty)      ``key=regex`` selectors; empty matches every
                                        client. Keys: ``client_instance_id``,
                                        ``client_id``, ``client_source_address``
=================  ======  ===========  ==============================================

Kafka also matches ``client_software_name``, ``client_software_version`` and
``client_source_port``; this broker does not track those per connection, so a
subscription naming them is refused (INVALID_CONFIG) rather than silently never
matching.

:class:`ClientMetricsManager` follows Kafka's ``ClientMetricsManager``: a client
without an instance id gets one; its subscription set is the union of the metrics of
every matching subscription (``*`` wins) with the smallest interval; the
subscription id is a CRC-32C of that set and the interval, XORed with the instance
id's Java hash; a GetTelemetrySubscriptions or PushTelemetry sooner than the
interval is THROTTLING_QUOTA_EXCEEDED (except the first push after a
GetTelemetrySubscriptions, and a terminating push); a push naming an old
subscription id is UNKNOWN_SUBSCRIPTION_ID; more than ``telemetry_max_bytes`` is
TELEMETRY_TOO_LARGE; nothing is accepted after a terminating push (INVALID_REQUEST).
Accepted payloads are decompressed (zstd, lz4, gzip, snappy, as clients send them)
and kept, the newest :data:`MAX_PUSHES` of them, as :class:`PushedMetrics`; the
OpenTelemetry ``MetricsData`` message they hold is decoded with the
``opentelemetry-proto`` package (the ``telemetry`` extra) when it is installed, and a
payload it cannot parse is INVALID_RECORD, as Kafka's exporter answers.
"""

from __future__ import annotations

import importlib.util
import re
import uuid
from collections import OrderedDict, deque
from collections.abc import Iterable, Mapping
from typing import Any, Final

import attrs
import crc32c

from kproto.broker.errors import TopicError
from kproto.broker.topic_config import ConfigType, TopicConfigDef
from kproto.errors import ErrorCode
from kproto.exceptions import DecodeError
from kproto.records import Compression
from kproto.records._codec_base import SizeLimitError
from kproto.records._codecs import decompress

__all__ = [
    "CLIENT_METRICS_CONFIGS",
    "CLIENT_METRICS_CONFIG_DEFAULTS",
    "ClientMetricsManager",
    "PushedMetrics",
    "Subscription",
    "MAX_PUSHES",
    "TELEMETRY_MAX_BYTES",
]

#: Kafka's ``client.telemetry.max.bytes`` default: the largest PushTelemetry
#: payload accepted (bytes, compressed and decompressed).
TELEMETRY_MAX_BYTES: Final = 1024 * 1024

#: The pushes kept for :meth:`ClientMetricsManager.pushes` (older ones are dropped).
MAX_PUSHES: Final = 10_000

#: Client instances remembered at once (Kafka's cache holds 16,384).
MAX_INSTANCES: Final = 16_384

#: The compression types a client may use, in the broker's order of preference
#: (Kafka's ``SUPPORTED_COMPRESSION_TYPES``).
ACCEPTED_COMPRESSION_TYPES: Final = (
    Compression.ZSTD,
    Compression.LZ4,
    Compression.GZIP,
    Compression.SNAPPY,
)

_INTERVAL_DEFAULT_MS: Final = 300_000
_INTERVAL_MIN_MS, _INTERVAL_MAX_MS = 100, 3_600_000

#: Every ``CLIENT_METRICS`` config and its default.
CLIENT_METRICS_CONFIG_DEFAULTS: Final[Mapping[str, str]] = {
    "interval.ms": str(_INTERVAL_DEFAULT_MS),
    "match": "",
    "metrics": "",
}

#: The ``CLIENT_METRICS`` configs' definitions (types for DescribeConfigs and for
#: IncrementalAlterConfigs' APPEND/SUBTRACT on the LIST ones).
CLIENT_METRICS_CONFIGS: Final[Mapping[str, TopicConfigDef]] = {
    "interval.ms": TopicConfigDef(
        "interval.ms",
        ConfigType.INT,
        str(_INTERVAL_DEFAULT_MS),
        "The push interval in ms of the matching clients' metrics.",
    ),
    "match": TopicConfigDef(
        "match",
        ConfigType.LIST,
        "",
        "key=regex selectors of the clients the subscription applies to.",
    ),
    "metrics": TopicConfigDef(
        "metrics",
        ConfigType.LIST,
        "",
        "Metric name prefixes the matching clients push (* for all).",
    ),
}

_MATCH_KEYS: Final = frozenset(
    {"client_instance_id", "client_id", "client_source_address"}
)
_UNTRACKED_MATCH_KEYS: Final = frozenset(
    {"client_software_name", "client_software_version", "client_source_port"}
)


def _items(value: str) -> list[str]:
    return [v.strip() for v in value.split(",") if v.strip()]


@attrs.frozen
class Subscription:
    """One ``CLIENT_METRICS`` resource, parsed.

    Attributes:
        name: the resource name.
        metrics: the metric name prefixes (``"*"``: every metric).
        interval_ms: the push interval, ms.
        match: selector key -> compiled regex (all must match the whole value).
    """

    name: str
    metrics: frozenset[str]
    interval_ms: int
    match: Mapping[str, re.Pattern[str]]

    @classmethod
    def parse(cls, name: str, configs: Mapping[str, str]) -> Subscription:
        """Validate ``configs`` as Kafka's ``ClientMetricsConfigs.validate`` does.

        Raises:
            TopicError: INVALID_REQUEST (no name), INVALID_CONFIG (an unknown
                config, an interval out of range, a bad ``match`` entry).
        """
        if not name:
            raise TopicError(
                ErrorCode.INVALID_REQUEST, "Subscription name can't be empty"
            )
        unknown = sorted(set(configs) - set(CLIENT_METRICS_CONFIG_DEFAULTS))
        if unknown:
            raise TopicError(
                ErrorCode.INVALID_CONFIG,
                f"Unknown client metrics configuration: {', '.join(unknown)}",
            )
        raw_interval = configs.get("interval.ms", str(_INTERVAL_DEFAULT_MS))
        try:
            interval = int(raw_interval)
        except ValueError:
            interval = -1
        if not _INTERVAL_MIN_MS <= interval <= _INTERVAL_MAX_MS:
            raise TopicError(
                ErrorCode.INVALID_CONFIG,
                f"Invalid value {raw_interval} for interval.ms, interval must be "
                f"between {_INTERVAL_MIN_MS} and {_INTERVAL_MAX_MS} (1 hour)",
            )
        match: dict[str, re.Pattern[str]] = {}
        for entry in _items(configs.get("match", "")):
            key, sep, pattern = entry.partition("=")
            key = key.strip()
            if not sep or not pattern.strip():
                raise TopicError(
                    ErrorCode.INVALID_CONFIG,
                    f"Illegal client matching pattern: {entry}",
                )
            if key in _UNTRACKED_MATCH_KEYS:
                raise TopicError(
                    ErrorCode.INVALID_CONFIG,
                    f"Client matching on {key} is not supported by this broker "
                    f"(supported: {', '.join(sorted(_MATCH_KEYS))})",
                )
            if key not in _MATCH_KEYS:
                raise TopicError(
                    ErrorCode.INVALID_CONFIG,
                    f"Illegal client matching pattern: {entry}",
                )
            try:
                match[key] = re.compile(pattern.strip())
            except re.error as exc:
                raise TopicError(
                    ErrorCode.INVALID_CONFIG,
                    f"Illegal regex pattern {pattern.strip()!r} for {key}: {exc}",
                ) from None
        return cls(name, frozenset(_items(configs.get("metrics", ""))), interval, match)

    def matches(self, selectors: Mapping[str, str]) -> bool:
        """Whether a client with these selector values (``match`` keys) matches."""
        return all(
            p.fullmatch(selectors.get(key, "")) is not None
            for key, p in self.match.items()
        )


@attrs.frozen
class PushedMetrics:
    """One accepted PushTelemetry payload.

    Attributes:
        client_instance_id: the client instance that pushed it.
        client_id: the request header's client id.
        node_id: the broker that received it.
        subscription_id: the subscription id the push named.
        terminating: the client's last push before closing.
        compression: how it was compressed on the wire.
        received_ms: when, ms since the epoch (the cluster's clock).
        payload: the OpenTelemetry ``MetricsData`` protobuf bytes, decompressed.
    """

    client_instance_id: uuid.UUID
    client_id: str | None
    node_id: int
    subscription_id: int
    terminating: bool
    compression: Compression
    received_ms: int
    payload: bytes

    @property
    def metrics(self) -> Any:
        """The payload as ``opentelemetry.proto.metrics.v1.metrics_pb2.MetricsData``.

        Raises:
            ImportError: opentelemetry-proto is not installed (the ``telemetry``
                extra).
        """
        return _parse_metrics_data(self.payload)

    @property
    def metric_names(self) -> list[str]:
        """The names of every metric in the payload, in payload order."""
        return [
            metric.name
            for resource in self.metrics.resource_metrics
            for scope in resource.scope_metrics
            for metric in scope.metrics
        ]


def _parse_metrics_data(payload: bytes) -> Any:
    from opentelemetry.proto.metrics.v1 import metrics_pb2

    data = metrics_pb2.MetricsData()
    data.ParseFromString(payload)
    return data


def _otlp_available() -> bool:
    """Whether opentelemetry-proto is installed, found without importing it (its
    protobuf runtime costs tens of ms and several MiB at broker start; it is
    imported at the first payload to decode)."""
    try:
        return (
            importlib.util.find_spec("opentelemetry.proto.metrics.v1.metrics_pb2")
            is not None
        )
    except ImportError:
        return False


def _java_uuid_hash(value: uuid.UUID) -> int:
    """Java's ``Uuid.hashCode()``: the two 64-bit halves XORed, folded to 32 bits."""
    folded = (value.int >> 64) ^ (value.int & 0xFFFF_FFFF_FFFF_FFFF)
    return ((folded >> 32) ^ folded) & 0xFFFF_FFFF


def _int32(value: int) -> int:
    value &= 0xFFFF_FFFF
    return value - (1 << 32) if value >= 1 << 31 else value


@attrs.define
class _Instance:
    """What the broker remembers of one client instance (Kafka's
    ``ClientMetricsInstance``)."""

    instance_id: uuid.UUID
    selectors: dict[str, str]
    subscription_id: int
    version: int
    metrics: tuple[str, ...]
    interval_ms: int
    last_get_ms: int = -(1 << 62)
    last_push_ms: int = -(1 << 62)
    terminating: bool = False
    last_error: ErrorCode = ErrorCode.NONE


class ClientMetricsManager:
    """The cluster's KIP-714 state: subscriptions, client instances, pushes.

    Args:
        telemetry_max_bytes: the largest payload accepted (bytes).
        max_pushes: how many accepted pushes :meth:`pushes` keeps.
    """

    def __init__(
        self,
        telemetry_max_bytes: int = TELEMETRY_MAX_BYTES,
        max_pushes: int = MAX_PUSHES,
    ) -> None:
        self.telemetry_max_bytes = telemetry_max_bytes
        self.subscriptions: dict[str, Subscription] = {}
        self._version = 0
        self._instances: OrderedDict[uuid.UUID, _Instance] = OrderedDict()
        self._pushes: deque[PushedMetrics] = deque(maxlen=max_pushes)
        self._decode = _otlp_available()

    # ------------------------------------------------------------ subscriptions

    def set_subscription(self, name: str, configs: Mapping[str, str]) -> None:
        """Create, replace or (with no configs) remove subscription ``name``.

        Raises:
            TopicError: INVALID_CONFIG / INVALID_REQUEST, as :meth:`Subscription.parse`.
        """
        if not configs:
            if self.subscriptions.pop(name, None) is not None:
                self._version += 1
            return
        self.subscriptions[name] = Subscription.parse(name, configs)
        self._version += 1

    def load(self, saved: Mapping[str, Mapping[str, str]]) -> None:
        """Install saved subscriptions (already validated when they were set)."""
        for name, configs in saved.items():
            self.set_subscription(name, configs)

    # ------------------------------------------------------------ the two APIs

    def get_subscriptions(
        self,
        instance_id: uuid.UUID,
        client_id: str | None,
        client_host: str,
        now_ms: int,
    ) -> dict[str, Any]:
        """The GetTelemetrySubscriptions response fields for a client."""
        if instance_id.int == 0:
            instance_id = uuid.uuid4()
            while instance_id in self._instances:
                instance_id = uuid.uuid4()
        instance = self._instance(instance_id, client_id, client_host)
        since = now_ms - max(instance.last_get_ms, instance.last_push_ms)
        if since < instance.interval_ms and instance.last_error not in (
            ErrorCode.UNKNOWN_SUBSCRIPTION_ID,
            ErrorCode.UNSUPPORTED_COMPRESSION_TYPE,
        ):
            return {
                "error_code": ErrorCode.THROTTLING_QUOTA_EXCEEDED,
                "client_instance_id": instance_id,
            }
        instance.last_get_ms = now_ms
        instance.last_error = ErrorCode.NONE
        return {
            "error_code": ErrorCode.NONE,
            "client_instance_id": instance_id,
            "subscription_id": instance.subscription_id,
            "accepted_compression_types": [int(c) for c in ACCEPTED_COMPRESSION_TYPES],
            "push_interval_ms": instance.interval_ms,
            "telemetry_max_bytes": self.telemetry_max_bytes,
            "delta_temporality": True,
            "requested_metrics": list(instance.metrics),
        }

    def push(
        self,
        request: Any,
        *,
        client_id: str | None,
        client_host: str,
        node_id: int,
        now_ms: int,
    ) -> ErrorCode:
        """Validate and keep one PushTelemetry request; its response's error code."""
        instance_id: uuid.UUID = request.client_instance_id
        if instance_id.int in (0, 1):  # Kafka's Uuid.RESERVED
            return ErrorCode.INVALID_REQUEST
        instance = self._instance(instance_id, client_id, client_host)
        error = self._check_push(instance, request, now_ms)
        instance.terminating = bool(request.terminating)
        if error != ErrorCode.NONE:
            instance.last_error = error
            return error
        payload = bytes(request.metrics or b"")
        if payload:
            try:
                payload = decompress(
                    request.compression_type, payload, self.telemetry_max_bytes
                )
                if self._decode:
                    _parse_metrics_data(payload)
            except SizeLimitError:
                instance.last_error = ErrorCode.TELEMETRY_TOO_LARGE
                return instance.last_error
            except DecodeError:
                instance.last_error = ErrorCode.INVALID_RECORD
                return instance.last_error
            except Exception:  # noqa: BLE001 - protobuf's DecodeError: a bad payload
                instance.last_error = ErrorCode.INVALID_RECORD
                return instance.last_error
            self._pushes.append(
                PushedMetrics(
                    client_instance_id=instance_id,
                    client_id=client_id,
                    node_id=node_id,
                    subscription_id=request.subscription_id,
                    terminating=bool(request.terminating),
                    compression=Compression(request.compression_type),
                    received_ms=now_ms,
                    payload=payload,
                )
            )
        instance.last_error = ErrorCode.NONE
        return ErrorCode.NONE

    def _check_push(self, instance: _Instance, request: Any, now_ms: int) -> ErrorCode:
        if instance.terminating:
            return ErrorCode.INVALID_REQUEST
        can_accept = instance.last_get_ms > instance.last_push_ms
        if not can_accept:
            can_accept = now_ms - instance.last_push_ms >= instance.interval_ms
        if can_accept:
            instance.last_push_ms = now_ms
        elif not request.terminating:
            return ErrorCode.THROTTLING_QUOTA_EXCEEDED
        if request.subscription_id != instance.subscription_id:
            return ErrorCode.UNKNOWN_SUBSCRIPTION_ID
        if request.compression_type not in set(Compression):
            return ErrorCode.UNSUPPORTED_COMPRESSION_TYPE
        if (
            request.metrics is not None
            and len(request.metrics) > self.telemetry_max_bytes
        ):
            return ErrorCode.TELEMETRY_TOO_LARGE
        return ErrorCode.NONE

    # ------------------------------------------------------------ instances

    def _instance(
        self, instance_id: uuid.UUID, client_id: str | None, client_host: str
    ) -> _Instance:
        instance = self._instances.get(instance_id)
        if instance is not None and instance.version >= self._version:
            self._instances.move_to_end(instance_id)
            return instance
        selectors = (
            instance.selectors
            if instance is not None
            else {
                "client_instance_id": str(instance_id),
                "client_id": client_id or "",
                "client_source_address": client_host,
            }
        )
        fresh = self._evaluate(instance_id, selectors)
        if instance is not None:  # the subscriptions changed: keep the timestamps
            fresh.last_get_ms, fresh.last_push_ms = (
                instance.last_get_ms,
                instance.last_push_ms,
            )
            fresh.terminating, fresh.last_error = (
                instance.terminating,
                instance.last_error,
            )
        self._instances[instance_id] = fresh
        self._instances.move_to_end(instance_id)
        while len(self._instances) > MAX_INSTANCES:
            self._instances.popitem(last=False)
        return fresh

    def _evaluate(self, instance_id: uuid.UUID, selectors: dict[str, str]) -> _Instance:
        metrics: set[str] = set()
        interval = _INTERVAL_DEFAULT_MS
        for subscription in self.subscriptions.values():
            if subscription.matches(selectors):
                metrics |= subscription.metrics
                interval = min(interval, subscription.interval_ms)
        if "*" in metrics:
            metrics = {"*"}
        ordered = tuple(sorted(metrics))
        digest = crc32c.crc32c(f"[{', '.join(ordered)}]{interval}".encode())
        subscription_id = _int32(digest ^ _java_uuid_hash(instance_id))
        return _Instance(
            instance_id=instance_id,
            selectors=selectors,
            subscription_id=subscription_id,
            version=self._version,
            metrics=ordered,
            interval_ms=interval,
        )

    # ------------------------------------------------------------ for tests

    def pushes(
        self,
        *,
        client_id: str | None = None,
        client_instance_id: uuid.UUID | None = None,
    ) -> list[PushedMetrics]:
        """The kept pushes, oldest first, optionally of one client id / instance."""
        return [
            p
            for p in self._pushes
            if (client_id is None or p.client_id == client_id)
            and (
                client_instance_id is None or p.client_instance_id == client_instance_id
            )
        ]

    def subscription_names(self) -> Iterable[str]:
        """The names of the current subscriptions (ListConfigResources)."""
        return sorted(self.subscriptions)
