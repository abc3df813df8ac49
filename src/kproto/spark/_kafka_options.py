"""Options, offsets and offset ranges of the ``kproto-kafka`` source (no pyspark).

Follows Spark's Kafka integration (``KafkaSourceProvider``, ``KafkaOffsetReader``,
``KafkaOffsetRangeCalculator``, ``JsonUtils`` of ``spark-sql-kafka-0-10``): the
same option names, the same offsets JSON (``{"topic":{"0":23,"1":-2}}``, -2 earliest,
-1 latest), the same rules for which starts/ends are allowed in batch queries, the
same proportional rate limit for ``maxOffsetsPerTrigger`` and the same splitting
of large partitions for ``minPartitions``. Everything here talks to the cluster
only through a :class:`kproto.client.Client` passed in.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final, Literal

import attrs

from kproto.client import EARLIEST, LATEST, Client

from ._kafka_security import (
    SECURITY_OPTIONS,
    KafkaSecurity,
    KafkaSecurityError,
    parse_security,
)
from ._options import option_bool

__all__ = [
    "KafkaOptions",
    "OffsetRange",
    "Offsets",
    "OffsetSpec",
    "offsets_from_json",
    "offsets_to_json",
    "parse_options",
    "rate_limit",
    "resolve_offsets",
    "split_ranges",
    "topic_partitions",
]

#: ``{(topic, partition): offset}``.
Offsets = dict[tuple[str, int], int]

#: kproto-only options (not in Spark's Kafka source).
BATCH_COLUMNS_OPTION: Final = "includeBatchColumns"

# Spark's options this source understands (lower case, as Spark passes them).
_KNOWN: Final = {
    "kafka.bootstrap.servers",
    "subscribe",
    "subscribepattern",
    "assign",
    "startingoffsets",
    "endingoffsets",
    "startingtimestamp",
    "endingtimestamp",
    "startingoffsetsbytimestamp",
    "endingoffsetsbytimestamp",
    "startingoffsetsbytimestampstrategy",
    "maxoffsetspertrigger",
    "minpartitions",
    "maxrecordsperpartition",
    "includeheaders",
    "failondataloss",
    "kafkaconsumer.polltimeoutms",
    "kafka.isolation.level",
    "kafka.client.id",
    "kafka.request.timeout.ms",
    "kafka.fetch.max.bytes",
    "kafka.max.partition.fetch.bytes",
    # Accepted and unused: no consumer group is joined, offsets live in the
    # checkpoint (as in Spark), and fetches are not retried.
    "kafka.group.id",
    "groupidprefix",
    "fetchoffset.numretries",
    "fetchoffset.retryintervalms",
    BATCH_COLUMNS_OPTION.lower(),
    # sink
    "topic",
    "kafka.compression.type",
    "kafka.acks",
    "kafka.batch.size",
    "kafka.enable.idempotence",
    *SECURITY_OPTIONS,
}


# Spark Kafka source options this source does not implement (refused, not ignored).
_UNSUPPORTED: Final = {"minoffsetspertrigger", "maxtriggerdelay"}


class KafkaOptionError(ValueError):
    """A ``kproto-kafka`` option is missing, unknown or malformed (named)."""


@attrs.frozen
class OffsetSpec:
    """Where reading starts or ends: ``kind`` earliest | latest | offsets |
    timestamp | timestamps; ``value`` the JSON offsets, the one timestamp (ms) or
    the per-partition timestamps."""

    kind: Literal["earliest", "latest", "offsets", "timestamp", "timestamps"]
    value: Any = None


@attrs.frozen
class OffsetRange:
    """``[start, end)`` offsets of one partition: one Spark task's work."""

    topic: str
    partition: int
    start: int
    end: int

    @property
    def size(self) -> int:
        return self.end - self.start


@attrs.frozen
class KafkaOptions:
    """The parsed options (see :class:`kproto.spark.KafkaDataSource`)."""

    bootstrap_servers: str
    subscribe: tuple[str, ...] = ()
    subscribe_pattern: str | None = None
    assign: tuple[tuple[str, int], ...] = ()
    starting: OffsetSpec | None = None
    ending: OffsetSpec = OffsetSpec("latest")
    timestamp_strategy: Literal["error", "latest"] = "error"
    max_offsets_per_trigger: int | None = None
    min_partitions: int | None = None
    max_records_per_partition: int | None = None
    include_headers: bool = False
    batch_columns: bool = False
    fail_on_data_loss: bool = True
    poll_timeout_ms: int = 120_000
    isolation_level: int = 0
    client_id: str = "kproto-spark"
    request_timeout_s: float = 30.0
    fetch_max_bytes: int = 8 * 1024 * 1024
    security: KafkaSecurity = KafkaSecurity()

    def client(self, *, producer: bool = False, idempotent: bool = False) -> Client:
        """A new :class:`Client` with these settings (the caller closes it). A
        ``producer`` client lets Metadata create missing topics where the broker
        allows it (as the Java producer); a reading one never does; ``idempotent``
        makes it an idempotent producer (``enable_idempotence``)."""
        return Client(
            self.bootstrap_servers,
            client_id=self.client_id,
            timeout_s=self.request_timeout_s,
            allow_auto_topic_creation=producer,
            enable_idempotence=idempotent,
            ssl_context=self.security.ssl_context(),
            sasl=self.security.sasl(),
        )


def _bool(options: Mapping[str, str], name: str, default: bool) -> bool:
    return option_bool(options, name, default, KafkaOptionError)


def _positive(options: Mapping[str, str], name: str) -> int | None:
    raw = options.get(name.lower())
    if raw is None:
        return None
    try:
        value = int(raw)
    except ValueError:
        raise KafkaOptionError(
            f"option {name!r} must be a positive integer, not {raw!r}"
        ) from None
    if value <= 0:
        raise KafkaOptionError(f"option {name!r} must be > 0, not {value}")
    return value


def _json(name: str, raw: str) -> Any:
    try:
        return json.loads(raw)
    except json.JSONDecodeError as err:
        raise KafkaOptionError(f"option {name!r} is not valid JSON: {err}") from None


def offsets_from_json(raw: str, name: str = "offsets") -> Offsets:
    """``{"topic":{"0":23}}`` -> ``{("topic", 0): 23}`` (Spark's ``JsonUtils``).

    Raises:
        KafkaOptionError: not that shape (``name`` says which option).
    """
    value = _json(name, raw)
    out: Offsets = {}
    if not isinstance(value, dict):
        raise KafkaOptionError(f"option {name!r} must be {{topic: {{partition: n}}}}")
    for topic, parts in value.items():
        if not isinstance(parts, dict):
            raise KafkaOptionError(f"option {name!r}: {topic!r} must map partitions")
        for p, off in parts.items():
            if not str(p).lstrip("-").isdigit() or type(off) is not int:
                raise KafkaOptionError(
                    f"option {name!r}: {topic!r} partition {p!r}: integer expected"
                )
            out[(topic, int(p))] = off
    return out


def offsets_to_json(offsets: Mapping[tuple[str, int], int]) -> dict[str, Any]:
    """``{("t", 0): 23}`` -> ``{"t": {"0": 23}}`` (sorted; a JSON-able dict)."""
    out: dict[str, dict[str, int]] = {}
    for (topic, p), off in sorted(offsets.items()):
        out.setdefault(topic, {})[str(p)] = off
    return out


def _spec(options: Mapping[str, str], which: Literal["starting", "ending"]) -> Any:
    """The ``starting``/``ending`` spec; by-timestamp options take precedence
    over ``*Timestamp`` over ``*Offsets`` (Spark's order). None if none given."""
    by_ts = options.get(f"{which}offsetsbytimestamp")
    if by_ts is not None:
        return OffsetSpec(
            "timestamps", offsets_from_json(by_ts, f"{which}OffsetsByTimestamp")
        )
    ts = options.get(f"{which}timestamp")
    if ts is not None:
        if not ts.strip().isdigit():
            raise KafkaOptionError(f"option '{which}Timestamp' must be ms, not {ts!r}")
        return OffsetSpec("timestamp", int(ts))
    raw = options.get(f"{which}offsets")
    if raw is None:
        return None
    word = raw.strip().lower()
    if word in ("earliest", "latest"):
        return OffsetSpec(word)  # type: ignore[arg-type]
    return OffsetSpec("offsets", offsets_from_json(raw, f"{which}Offsets"))


def parse_options(raw: Mapping[str, str], *, sink: bool = False) -> KafkaOptions:
    """Check and parse the options Spark passes (keys in any case).

    Raises:
        KafkaOptionError: a missing bootstrap or subscription, two subscriptions,
            a ``kafka.*`` setting kproto does not pass on, a Spark Kafka option
            kproto does not implement (``minOffsetsPerTrigger``,
            ``maxTriggerDelay``), a bad value. Other options are ignored, as Spark
            does.
    """
    options = {k.lower(): v for k, v in raw.items()}
    # Spark adds options of its own (checkpointLocation, path...): only kafka.*
    # settings and Spark Kafka options kproto does not implement are refused.
    unknown = sorted(
        k
        for k in options
        if k not in _KNOWN and (k.startswith("kafka.") or k in _UNSUPPORTED)
    )
    if unknown:
        security = [u for u in unknown if u.startswith(("kafka.ssl", "kafka.sasl"))]
        hint = (
            " (TLS: PEM trust stores only, no client certificates; SASL: "
            "kafka.sasl.mechanism and kafka.sasl.jaas.config)"
        ) * bool(security)
        raise KafkaOptionError(
            f"kproto-kafka does not support option(s) {unknown}{hint}"
        )
    try:
        security_settings = parse_security(options)
    except KafkaSecurityError as err:
        raise KafkaOptionError(str(err)) from None
    bootstrap = options.get("kafka.bootstrap.servers")
    if not bootstrap:
        raise KafkaOptionError("option 'kafka.bootstrap.servers' is required")
    isolation = options.get("kafka.isolation.level", "read_uncommitted").lower()
    if isolation not in ("read_uncommitted", "read_committed"):
        raise KafkaOptionError(
            "option 'kafka.isolation.level' must be read_uncommitted or "
            f"read_committed, not {isolation!r}"
        )
    common = {
        "bootstrap_servers": bootstrap,
        "client_id": options.get("kafka.client.id", "kproto-spark"),
        "request_timeout_s": (_positive(options, "kafka.request.timeout.ms") or 30_000)
        / 1000,
        "include_headers": _bool(options, "includeHeaders", False),
        "security": security_settings,
    }
    if sink:
        return KafkaOptions(**common)  # type: ignore[arg-type]
    subs = [k for k in ("subscribe", "subscribepattern", "assign") if k in options]
    if len(subs) != 1:
        raise KafkaOptionError(
            "exactly one of 'subscribe', 'subscribePattern' or 'assign' is required"
            + (f", got {subs}" if subs else "")
        )
    subscribe: tuple[str, ...] = ()
    assign: tuple[tuple[str, int], ...] = ()
    pattern = None
    if "subscribe" in options:
        subscribe = tuple(t.strip() for t in options["subscribe"].split(",") if t)
        if not subscribe:
            raise KafkaOptionError("option 'subscribe' names no topic")
    elif "assign" in options:
        value = _json("assign", options["assign"])
        if not isinstance(value, dict) or not all(
            isinstance(ps, list) and all(type(p) is int for p in ps)
            for ps in value.values()
        ):
            raise KafkaOptionError("option 'assign' must be {topic: [partitions]}")
        assign = tuple(sorted((t, p) for t, ps in value.items() for p in ps))
    else:
        pattern = options["subscribepattern"]
        try:
            re.compile(pattern)
        except re.error as err:
            raise KafkaOptionError(f"option 'subscribePattern': {err}") from None
    strategy = options.get("startingoffsetsbytimestampstrategy", "error").lower()
    if strategy not in ("error", "latest"):
        raise KafkaOptionError(
            "option 'startingOffsetsByTimestampStrategy' must be error or latest"
        )
    max_fetch = _positive(options, "kafka.max.partition.fetch.bytes") or _positive(
        options, "kafka.fetch.max.bytes"
    )
    return KafkaOptions(
        **common,  # type: ignore[arg-type]
        subscribe=subscribe,
        subscribe_pattern=pattern,
        assign=assign,
        starting=_spec(options, "starting"),
        ending=_spec(options, "ending") or OffsetSpec("latest"),
        timestamp_strategy=strategy,  # type: ignore[arg-type]
        max_offsets_per_trigger=_positive(options, "maxOffsetsPerTrigger"),
        min_partitions=_positive(options, "minPartitions"),
        max_records_per_partition=_positive(options, "maxRecordsPerPartition"),
        batch_columns=_bool(options, BATCH_COLUMNS_OPTION, False),
        fail_on_data_loss=_bool(options, "failOnDataLoss", True),
        poll_timeout_ms=_positive(options, "kafkaConsumer.pollTimeoutMs") or 120_000,
        isolation_level=int(isolation == "read_committed"),
        fetch_max_bytes=max_fetch or 8 * 1024 * 1024,
    )


def check_batch_specs(opts: KafkaOptions) -> None:
    """Spark's batch rules: no ``latest`` start, no ``earliest`` end (also not as
    -1 / -2 in JSON).

    Raises:
        KafkaOptionError: naming the option.
    """
    start, end = opts.starting, opts.ending
    if start is not None and (
        start.kind == "latest"
        or (start.kind == "offsets" and LATEST in start.value.values())
    ):
        raise KafkaOptionError("startingOffsets=latest is not allowed in a batch query")
    if end.kind == "earliest" or (
        end.kind == "offsets" and EARLIEST in end.value.values()
    ):
        raise KafkaOptionError("endingOffsets=earliest is not allowed in a batch query")


def topic_partitions(opts: KafkaOptions, client: Client) -> list[tuple[str, int]]:
    """The partitions the subscription names now, sorted (Metadata).

    ``subscribePattern`` is matched in full (Java's ``Pattern.matcher().matches()``)
    against every topic, internal ones (``__...``) left out as the Java consumer does.

    Raises:
        kproto.client.BrokerError: a subscribed topic does not exist.
    """
    if opts.assign:
        return list(opts.assign)
    if opts.subscribe:
        names: Iterable[str] = opts.subscribe
    else:
        assert opts.subscribe_pattern is not None
        client.run(client.core.refresh(None))
        regex = re.compile(opts.subscribe_pattern)
        names = [
            t
            for t in client.core.metadata.topics
            if not t.startswith("__") and regex.fullmatch(t)
        ]
    out: list[tuple[str, int]] = []
    for name in names:
        info = client.run(client.core.topic(name, fresh=True))
        out.extend((name, p) for p in info.leaders)
    return sorted(out)


def _listed(
    client: Client, tps: Sequence[tuple[str, int]], timestamp: int, isolation: int
) -> Offsets:
    out: Offsets = {}
    by_topic: dict[str, list[int]] = {}
    for t, p in tps:
        by_topic.setdefault(t, []).append(p)
    for t, ps in by_topic.items():
        listed = client.list_offsets(
            t, ps, timestamp=timestamp, isolation_level=isolation
        )
        out.update({(t, p): lo.offset for p, lo in listed.items()})
    return out


def resolve_offsets(
    spec: OffsetSpec,
    tps: Sequence[tuple[str, int]],
    client: Client,
    opts: KafkaOptions,
    *,
    ending: bool = False,
) -> Offsets:
    """Concrete offsets of ``tps`` for ``spec`` (ListOffsets for earliest,
    latest and timestamps).

    JSON offsets must name exactly the partitions subscribed (Spark's rule); -2/-1
    in them mean earliest/latest. A timestamp with no record at or after it gives
    the latest offset when ``ending`` or with strategy ``latest``, else an error.

    Raises:
        KafkaOptionError: JSON partitions differ from the subscription; no offset
            for a starting timestamp.
    """
    iso = opts.isolation_level
    if spec.kind == "earliest":
        return _listed(client, tps, EARLIEST, iso)
    if spec.kind == "latest":
        return _listed(client, tps, LATEST, iso)
    if spec.kind == "timestamp":
        found = _listed(client, tps, spec.value, iso)
    else:
        given: Offsets = spec.value
        if set(given) != set(tps):
            raise KafkaOptionError(
                f"{'ending' if ending else 'starting'} offsets name partitions "
                f"{sorted(given)} but the subscription has {sorted(tps)}"
            )
        if spec.kind == "offsets":
            found = dict(given)
            for special in (EARLIEST, LATEST):
                wanted = [tp for tp, off in given.items() if off == special]
                if wanted:
                    found.update(_listed(client, wanted, special, iso))
            return found
        found = {}
        for tp, ts in given.items():
            found.update(_listed(client, [tp], ts, iso))
    missing = [tp for tp, off in found.items() if off < 0]
    if missing:
        if not ending and opts.timestamp_strategy == "error":
            raise KafkaOptionError(
                f"no record at or after the starting timestamp in {sorted(missing)} "
                "(set startingOffsetsByTimestampStrategy=latest to start at the end)"
            )
        found.update(_listed(client, missing, LATEST, iso))
    return found


def rate_limit(start: Offsets, latest: Offsets, limit: int) -> Offsets:
    """End offsets reading at most about ``limit`` records, each partition's share
    proportional to its backlog (Spark's ``KafkaMicroBatchStream.rateLimit``)."""
    sizes = {tp: end - start.get(tp, end) for tp, end in latest.items()}
    total = sum(s for s in sizes.values() if s > 0)
    if total <= limit:
        return dict(latest)
    out = {}
    for tp, end in latest.items():
        begin = start.get(tp, end)
        size = sizes[tp]
        if size <= 0:
            out[tp] = end
            continue
        prorate = limit * (size / total)
        step = math.ceil(prorate) if prorate < 1 else math.floor(prorate)
        out[tp] = min(end, begin + step)
    return out


def split_ranges(
    ranges: Sequence[OffsetRange],
    min_partitions: int | None,
    max_records: int | None,
) -> list[OffsetRange]:
    """Cut ranges into tasks as Spark's ``KafkaOffsetRangeCalculator``: first into
    pieces of at most ``max_records``; then, when fewer than ``min_partitions``,
    each range larger than its share into ``round(size / total * min_partitions)``
    equal pieces. Empty ranges are dropped."""
    out = [r for r in ranges if r.size > 0]
    if max_records:
        out = [piece for r in out for piece in _cut(r, math.ceil(r.size / max_records))]
    if min_partitions and len(out) < min_partitions:
        total = sum(r.size for r in out)
        pieces: list[OffsetRange] = []
        for r in out:
            if r.size > total / min_partitions:
                pieces.extend(_cut(r, max(round(r.size / total * min_partitions), 1)))
            else:
                pieces.append(r)
        out = pieces
    return out


def _cut(r: OffsetRange, parts: int) -> list[OffsetRange]:
    if parts <= 1:
        return [r]
    bounds = [r.start + r.size * i // parts for i in range(parts + 1)]
    return [
        OffsetRange(r.topic, r.partition, a, b)
        for a, b in zip(bounds, bounds[1:], strict=False)
        if b > a
    ]
