"""Refusals: one error code written into one API's response shape, the one home of
"answer this request with this error" for everything that refuses a request
before (or instead of) its handler:

* fault injection (:mod:`kproto.broker.faults`): :func:`error_response`, the
  error in the top-level ``error_code`` and in every entry the request named
  (librdkafka's mock handlers with ``rd_kafka_mock_next_request_error``);
* the ACL checks (:mod:`kproto.broker.handlers.authorize`): :func:`refused_topics`,
  the entries of the topics a principal may not use in a topic-keyed request
  (Kafka's ``KafkaApis`` ``filterByAuthorized`` with its per-partition error);
* versions this broker advertises but does not serve (Produce v0-v2, which
  ApiVersions lists as Kafka 4 does, KAFKA-18659): :func:`unsupported_version`,
  every partition UNSUPPORTED_VERSION, routed here by
  :mod:`kproto.broker.dispatch` before any handler runs.

The shapes follow each API's ``*Response.json``: where a refused partition keeps
its index and which offsets it carries as -1 (:data:`TOPIC_SHAPES`), and, for the
other APIs whose errors sit in entries mirroring the request, how those entries
are built (:data:`MIRRORS`); the remaining APIs carry one top-level ``error_code``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from types import MappingProxyType
from typing import Any, Final

import attrs

from kproto.broker.handlers.cluster_info import MIN_VERSIONS
from kproto.broker.handlers.context import RequestContext, respond
from kproto.errors import ErrorCode
from kproto.index import ApiKey, api_versions, response_type
from kproto.meta import wire_fields

__all__ = [
    "Each",
    "MIRRORS",
    "TOPIC_SHAPES",
    "TopicShape",
    "check_error_response",
    "error_response",
    "refused_topic",
    "refused_topics",
    "unsupported_version",
]

log = logging.getLogger("kproto.broker")


@attrs.frozen(kw_only=True)
class TopicShape:
    """Where a topic-keyed request and its response keep topics and partitions,
    and what a refused partition carries besides its ``error_code``; by default
    as most topic-keyed APIs name them (``topics``, ``partitions``,
    ``partition_index``, ``name``)."""

    topics: str = "topics"  # request: the topics field
    partitions: str = "partitions"  # request topic: the partitions field
    index: str = "partition_index"  # request partition: the partition index field
    out_topics: str = "topics"  # response: the topics field
    out_partitions: str = "partitions"  # response topic: the partitions field
    out_index: str = "partition_index"  # response partition: its index field
    #: what a refused partition carries besides its index and error (-1 offsets)
    defaults: Mapping[str, Any] = attrs.field(factory=dict)
    name: str = "name"  # request topic: the name field
    out_name: str = "name"  # response topic: the name field


def _unknown(*offsets: str, **fields: Any) -> dict[str, Any]:
    """A refused partition's ``offsets`` (and timestamps, epochs): unknown, -1;
    and ``fields``."""
    return {**dict.fromkeys(offsets, -1), **fields}


#: The topic-keyed APIs (``ProduceResponse.json``, ``FetchResponse.json``, ...).
TOPIC_SHAPES: Final[Mapping[ApiKey, TopicShape]] = MappingProxyType(
    {
        ApiKey.PRODUCE: TopicShape(
            topics="topic_data",
            partitions="partition_data",
            index="index",
            out_topics="responses",
            out_partitions="partition_responses",
            out_index="index",
            defaults=_unknown("base_offset", "log_append_time_ms", "log_start_offset"),
        ),
        ApiKey.FETCH: TopicShape(
            index="partition",
            out_topics="responses",
            defaults=_unknown(
                "high_watermark", "last_stable_offset", "log_start_offset", records=b""
            ),
            name="topic",
            out_name="topic",
        ),
        ApiKey.LIST_OFFSETS: TopicShape(defaults=_unknown("timestamp", "offset")),
        ApiKey.DELETE_RECORDS: TopicShape(defaults=_unknown("low_watermark")),
        ApiKey.OFFSET_COMMIT: TopicShape(),
        ApiKey.TXN_OFFSET_COMMIT: TopicShape(),
        ApiKey.OFFSET_FOR_LEADER_EPOCH: TopicShape(
            index="partition",
            out_index="partition",
            defaults=_unknown("leader_epoch", "end_offset"),
            name="topic",
            out_name="topic",
        ),
    }
)


def refused_topic(
    shape: TopicShape, topic: Any, name: str, error: ErrorCode
) -> dict[str, Any]:
    """The response entry of one request ``topic`` (named ``name``; its
    ``topic_id`` kept where the request has one) with ``error`` on every
    partition it named."""
    return {
        shape.out_name: name,
        "topic_id": getattr(topic, "topic_id", None),
        shape.out_partitions: [
            {
                shape.out_index: getattr(p, shape.index),
                "error_code": error,
                **shape.defaults,
            }
            for p in getattr(topic, shape.partitions) or ()
        ],
    }


def refused_topics(
    shape: TopicShape, topics: Iterable[Any], error: ErrorCode
) -> list[dict[str, Any]]:
    """:func:`refused_topic` of each request topic, named as the request names it
    (``""`` for one given by id alone)."""
    return [
        refused_topic(shape, t, getattr(t, shape.name, None) or "", error)
        for t in topics or ()
    ]


#: How the entries of one API's response mirror its request: ``(request, error,
#: message) -> response fields`` (``None``: this mirror does not fit the request's
#: version).
Mirror = Callable[[Any, ErrorCode, str | None], dict[str, Any] | None]


@attrs.frozen
class Each:
    """A mirror: response entries ``out``, one per entry of the request's first
    field of ``sources`` its version has (none when that field is null). Each
    entry copies the request entry's ``copied`` fields (an entry that is not a
    struct, a name or a partition index, is itself their value), carries the error
    in ``error_field`` (``None``: no error there) and, with ``message``, in
    ``error_message``, ``fields`` as given, and the fields of the ``nested``
    mirrors of the request entry. ``None`` when the version has none of
    ``sources``."""

    out: str
    sources: tuple[str, ...]
    copied: tuple[str, ...] = ()
    error_field: str | None = "error_code"
    message: bool = False
    fields: Mapping[str, Any] = attrs.field(factory=dict)
    nested: tuple[Each, ...] = ()

    def __call__(
        self, request: Any, error: ErrorCode, message: str | None
    ) -> dict[str, Any] | None:
        for source in self.sources:
            if hasattr(request, source):
                entries = getattr(request, source) or ()
                return {self.out: [self._entry(e, error, message) for e in entries]}
        return None

    def _entry(self, entry: Any, error: ErrorCode, message: str | None) -> Any:
        plain = not attrs.has(type(entry))
        out = {f: entry if plain else getattr(entry, f, None) for f in self.copied}
        if self.error_field is not None:
            out[self.error_field] = error
        if self.message:
            out["error_message"] = message
        out.update(self.fields)
        for mirror in self.nested:
            out.update(mirror(entry, error, message) or {})
        return out


def _first(*mirrors: Mirror) -> Mirror:
    """The first of ``mirrors`` that fits the request's version."""

    def mirror(request: Any, error: ErrorCode, message: str | None) -> Any:
        for m in mirrors:
            fields = m(request, error, message)
            if fields is not None:
                return fields
        return None

    return mirror


def _fields(**fields: Any) -> Mirror:
    """Top-level fields besides the error (no coordinator, no producer: -1)."""
    return lambda request, error, message: fields


def _topic_keyed(api_key: ApiKey, **top: Any) -> Mirror:
    shape = TOPIC_SHAPES[api_key]

    def mirror(request: Any, error: ErrorCode, message: str | None) -> dict[str, Any]:
        topics = refused_topics(shape, getattr(request, shape.topics), error)
        return {shape.out_topics: topics, **top}

    return mirror


def _alter_scram(request: Any, error: ErrorCode, message: str | None) -> dict[str, Any]:
    users = dict.fromkeys(e.name for e in (*request.deletions, *request.upsertions))
    return {
        "results": [
            {"user": u, "error_code": error, "error_message": message} for u in users
        ]
    }


def _named(out: str, source: str, key: str = "name") -> Each:
    """Entries ``{key, error_code, error_message}``, one per named entry."""
    return Each(out, (source,), (key,), message=True)


def _configs(out: str) -> Each:
    return Each(out, ("resources",), ("resource_type", "resource_name"), message=True)


def _topics(out: str, source: str, copied: tuple[str, ...], partitions: Each) -> Each:
    """Topic entries without an error of their own, each with its ``partitions``
    entries."""
    return Each(out, (source,), copied, error_field=None, nested=(partitions,))


def _indexes(**how: Any) -> Each:
    """Partition entries, one per index of the request topic's
    ``partition_indexes``."""
    return Each("partitions", ("partition_indexes",), ("partition_index",), **how)


_NO_COORDINATOR = {"node_id": -1, "host": "", "port": -1}
#: OffsetFetch's topics (before v8 the request's, from v8 each group's).
_OFFSET_FETCH_TOPICS = _topics(
    "topics", "topics", ("name", "topic_id"), _indexes(fields={"committed_offset": -1})
)
#: AddPartitionsToTxn's partitions, their error in ``partition_error_code``.
_TXN_PARTITIONS = Each(
    "results_by_partition",
    ("partitions",),
    ("partition_index",),
    error_field="partition_error_code",
)


#: The APIs whose errors sit in entries mirroring the request's (the others carry
#: one top-level ``error_code``), or whose error answer carries more than the
#: code (InitProducerId's -1 producer id): how to build those fields.
MIRRORS: Final[Mapping[ApiKey, Mirror]] = MappingProxyType(
    {
        ApiKey.PRODUCE: _topic_keyed(ApiKey.PRODUCE),
        ApiKey.FETCH: _topic_keyed(ApiKey.FETCH, session_id=0),
        ApiKey.LIST_OFFSETS: _topic_keyed(ApiKey.LIST_OFFSETS),
        ApiKey.OFFSET_FOR_LEADER_EPOCH: _topic_keyed(ApiKey.OFFSET_FOR_LEADER_EPOCH),
        ApiKey.METADATA: Each("topics", ("topics",), ("name", "topic_id")),
        ApiKey.OFFSET_COMMIT: _topic_keyed(ApiKey.OFFSET_COMMIT),
        ApiKey.OFFSET_FETCH: _first(  # v8+: each group's topics
            Each("groups", ("groups",), ("group_id",), nested=(_OFFSET_FETCH_TOPICS,)),
            _OFFSET_FETCH_TOPICS,
        ),
        ApiKey.FIND_COORDINATOR: _first(  # v4+: batched keys
            Each(
                "coordinators",
                ("coordinator_keys",),
                ("key",),
                message=True,
                fields=_NO_COORDINATOR,
            ),
            _fields(**_NO_COORDINATOR),
        ),
        ApiKey.DELETE_RECORDS: _topic_keyed(ApiKey.DELETE_RECORDS),
        ApiKey.CREATE_TOPICS: _named("topics", "topics"),
        ApiKey.DELETE_TOPICS: Each(  # v6: topics (by name or id)
            "responses", ("topic_names", "topics"), ("name",), message=True
        ),
        ApiKey.CREATE_PARTITIONS: _named("results", "topics"),
        ApiKey.DESCRIBE_CONFIGS: _configs("results"),
        ApiKey.ALTER_CONFIGS: _configs("responses"),
        ApiKey.INCREMENTAL_ALTER_CONFIGS: _configs("responses"),
        ApiKey.DESCRIBE_GROUPS: _named("groups", "groups", "group_id"),
        ApiKey.DELETE_GROUPS: _named("results", "groups_names", "group_id"),
        ApiKey.TXN_OFFSET_COMMIT: _topic_keyed(ApiKey.TXN_OFFSET_COMMIT),
        ApiKey.INIT_PRODUCER_ID: _fields(producer_id=-1, producer_epoch=-1),
        ApiKey.CREATE_ACLS: Each("results", ("creations",), message=True),
        ApiKey.DELETE_ACLS: Each(
            "filter_results", ("filters",), message=True, fields={"matching_acls": []}
        ),
        ApiKey.ALTER_USER_SCRAM_CREDENTIALS: _alter_scram,
        ApiKey.ALTER_CLIENT_QUOTAS: Each(
            "entries",
            ("entries",),
            message=True,
            nested=(Each("entity", ("entity",), ("entity_type", "entity_name"), None),),
        ),
        ApiKey.CONSUMER_GROUP_DESCRIBE: _named("groups", "group_ids", "group_id"),
        ApiKey.SHARE_GROUP_DESCRIBE: _named("groups", "group_ids", "group_id"),
        ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS: Each(
            "groups",
            ("groups",),
            ("group_id",),
            message=True,
            nested=(
                _topics(
                    "topics",
                    "topics",
                    ("topic_name",),
                    Each("partitions", ("partitions",), ("partition_index",)),
                ),
            ),
        ),
        ApiKey.ADD_PARTITIONS_TO_TXN: _first(  # v4+: batched by transactional id
            Each(
                "results_by_transaction",
                ("transactions",),
                ("transactional_id",),
                error_field=None,
                nested=(
                    _topics("topic_results", "topics", ("name",), _TXN_PARTITIONS),
                ),
            ),
            _topics(
                "results_by_topic_v3_and_below",
                "v3_and_below_topics",
                ("name",),
                _TXN_PARTITIONS,
            ),
        ),
        ApiKey.DESCRIBE_PRODUCERS: _topics(
            "topics", "topics", ("name",), _indexes(message=True)
        ),
        ApiKey.DESCRIBE_TRANSACTIONS: _named(
            "transaction_states", "transactional_ids", "transactional_id"
        ),
    }
)


def _has_top_level_error(api_key: ApiKey) -> bool:
    """Whether every version's response has a top-level ``error_code``."""
    return all(
        any(f.name == "error_code" for f, _ in wire_fields(response_type(api_key, v)))
        for v in api_versions(api_key)
    )


def check_error_response(api_key: ApiKey) -> None:
    """Raise ValueError unless :func:`error_response` can answer ``api_key``."""
    if api_key not in MIRRORS and not _has_top_level_error(api_key):
        raise ValueError(
            f"cannot inject an error into {api_key.name} responses (their errors sit in "
            "entries kproto does not mirror); answer it with cluster.on_request instead"
        )


def error_response(
    ctx: RequestContext, request: Any, error: ErrorCode, message: str | None = None
) -> Any:
    """The response to ``request`` with ``error`` in its top-level ``error_code``
    (where the version has one) and in the entry (``error_code``, or
    AddPartitionsToTxn's ``partition_error_code``) of every topic, partition, group
    or resource the request named, with ``message`` in each ``error_message`` the
    version has. Metadata also lists the live brokers, so a client can go on.

    Raises:
        ValueError: (from building the entity) an API :func:`check_error_response`
            refuses.
    """
    api_key = ApiKey(ctx.header.request_api_key)
    mirror = MIRRORS.get(api_key)
    fields: dict[str, Any] = {
        "error_code": error,
        "error_message": message,
        "throttle_time_ms": 0,
    }
    if mirror is not None:
        fields.update(mirror(request, error, message) or {})
    if api_key == ApiKey.METADATA:
        state = ctx.state
        fields.update(
            brokers=[
                {"node_id": n.node_id, "host": n.host, "port": n.port, "rack": n.rack}
                for n in state.nodes.values()
            ],
            cluster_id=state.cluster_id,
            controller_id=state.controller_id,
        )
    return respond(ctx, **fields)


async def unsupported_version(ctx: RequestContext, request: Any) -> Any:
    """The handler of a version ApiVersions advertises but this broker does not
    serve (Produce v0-v2, magic 0/1 message sets): every partition
    UNSUPPORTED_VERSION, nothing stored; none with ``acks=0``, which has no
    response (the broker's log says why). Kafka 4 closes the connection instead;
    a per-partition error tells the client why."""
    low = MIN_VERSIONS[ApiKey(ctx.header.request_api_key)]
    log.warning(
        "node %d: %s v%d from %s refused (UNSUPPORTED_VERSION): this broker serves v%d+",
        ctx.node_id,
        type(request).__name__,
        ctx.api_version,
        ctx.client_id,
        low,
    )
    if getattr(request, "acks", None) == 0:
        return None
    return error_response(ctx, request, ErrorCode.UNSUPPORTED_VERSION)
