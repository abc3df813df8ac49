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


@attrs.frozen
class TopicShape:
    """Where a topic-keyed request and its response keep topics and partitions,
    and what a refused partition carries besides its ``error_code``."""

    topics: str  # request: the topics field
    partitions: str  # request topic: the partitions field
    index: str  # request partition: the partition index field
    out_topics: str  # response: the topics field
    out_partitions: str  # response topic: the partitions field
    out_index: str  # response partition: the partition index field
    #: what a refused partition carries besides its index and error (-1 offsets)
    defaults: Mapping[str, Any] = attrs.field(factory=dict)
    name: str = "name"  # request topic: the name field
    out_name: str = "name"  # response topic: the name field


#: The topic-keyed APIs (``ProduceResponse.json``, ``FetchResponse.json``, ...).
TOPIC_SHAPES: Final[Mapping[ApiKey, TopicShape]] = MappingProxyType(
    {
        ApiKey.PRODUCE: TopicShape(
            "topic_data",
            "partition_data",
            "index",
            "responses",
            "partition_responses",
            "index",
            {"base_offset": -1, "log_append_time_ms": -1, "log_start_offset": -1},
        ),
        ApiKey.FETCH: TopicShape(
            "topics",
            "partitions",
            "partition",
            "responses",
            "partitions",
            "partition_index",
            {
                "high_watermark": -1,
                "last_stable_offset": -1,
                "log_start_offset": -1,
                "records": b"",
            },
            name="topic",
            out_name="topic",
        ),
        ApiKey.LIST_OFFSETS: TopicShape(
            "topics",
            "partitions",
            "partition_index",
            "topics",
            "partitions",
            "partition_index",
            {"timestamp": -1, "offset": -1},
        ),
        ApiKey.DELETE_RECORDS: TopicShape(
            "topics",
            "partitions",
            "partition_index",
            "topics",
            "partitions",
            "partition_index",
            {"low_watermark": -1},
        ),
        ApiKey.OFFSET_COMMIT: TopicShape(
            "topics",
            "partitions",
            "partition_index",
            "topics",
            "partitions",
            "partition_index",
        ),
        ApiKey.TXN_OFFSET_COMMIT: TopicShape(
            "topics",
            "partitions",
            "partition_index",
            "topics",
            "partitions",
            "partition_index",
        ),
        ApiKey.OFFSET_FOR_LEADER_EPOCH: TopicShape(
            "topics",
            "partitions",
            "partition",
            "topics",
            "partitions",
            "partition",
            {"leader_epoch": -1, "end_offset": -1},
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
#: message) -> response fields``.
Mirror = Callable[[Any, ErrorCode, str | None], dict[str, Any]]


def _topic_keyed(api_key: ApiKey, **top: Any) -> Mirror:
    shape = TOPIC_SHAPES[api_key]

    def mirror(request: Any, error: ErrorCode, message: str | None) -> dict[str, Any]:
        topics = refused_topics(shape, getattr(request, shape.topics), error)
        return {shape.out_topics: topics, **top}

    return mirror


def _offset_fetch(
    request: Any, error: ErrorCode, message: str | None
) -> dict[str, Any]:
    def topics(entries: Any) -> list[dict[str, Any]]:
        return [
            {
                "name": getattr(t, "name", ""),
                "topic_id": getattr(t, "topic_id", None),
                "partitions": [
                    {"partition_index": p, "error_code": error, "committed_offset": -1}
                    for p in t.partition_indexes or ()
                ],
            }
            for t in entries or ()
        ]

    groups = getattr(request, "groups", None)
    if groups:  # v8+: one entry per group
        return {
            "groups": [
                {
                    "group_id": g.group_id,
                    "error_code": error,
                    "topics": topics(g.topics),
                }
                for g in groups
            ]
        }
    return {"topics": topics(request.topics)}


def _find_coordinator(
    request: Any, error: ErrorCode, message: str | None
) -> dict[str, Any]:
    missing = {
        "node_id": -1,
        "host": "",
        "port": -1,
        "error_code": error,
        "error_message": message,
    }
    keys = getattr(request, "coordinator_keys", None)
    if keys:  # v4+: batched
        return {"coordinators": [{"key": k, **missing} for k in keys]}
    return missing


def _metadata(request: Any, error: ErrorCode, message: str | None) -> dict[str, Any]:
    return {
        "topics": [
            {
                "name": t.name,
                "topic_id": getattr(t, "topic_id", None),
                "error_code": error,
            }
            for t in request.topics or ()
        ]
    }


def _by_name(out_field: str, key: str, *in_fields: str) -> Mirror:
    """Entries ``{key: name, error_code}`` for each entry of the first of
    ``in_fields`` the request has (strings, or structs with a ``key`` field)."""

    def mirror(request: Any, error: ErrorCode, message: str | None) -> dict[str, Any]:
        entries: Any = ()
        for field in in_fields:
            entries = getattr(request, field, None)
            if entries is not None:
                break
        return {
            out_field: [
                {
                    key: e if isinstance(e, str) else getattr(e, key),
                    "error_code": error,
                    "error_message": message,
                }
                for e in entries or ()
            ]
        }

    return mirror


def _configs(out_field: str) -> Mirror:
    def mirror(request: Any, error: ErrorCode, message: str | None) -> dict[str, Any]:
        return {
            out_field: [
                {
                    "error_code": error,
                    "error_message": message,
                    "resource_type": r.resource_type,
                    "resource_name": r.resource_name,
                }
                for r in request.resources or ()
            ]
        }

    return mirror


def _add_partitions_to_txn(
    request: Any, error: ErrorCode, message: str | None
) -> dict[str, Any]:
    def topics(entries: Any) -> list[dict[str, Any]]:
        return [
            {
                "name": t.name,
                "results_by_partition": [
                    {"partition_index": p, "partition_error_code": error}
                    for p in t.partitions or ()
                ],
            }
            for t in entries or ()
        ]

    transactions = getattr(request, "transactions", None)
    if transactions is not None:  # v4+: batched by transactional id
        return {
            "results_by_transaction": [
                {
                    "transactional_id": t.transactional_id,
                    "topic_results": topics(t.topics),
                }
                for t in transactions
            ]
        }
    return {"results_by_topic_v3_and_below": topics(request.v3_and_below_topics)}


def _describe_producers(
    request: Any, error: ErrorCode, message: str | None
) -> dict[str, Any]:
    return {
        "topics": [
            {
                "name": t.name,
                "partitions": [
                    {
                        "partition_index": p,
                        "error_code": error,
                        "error_message": message,
                    }
                    for p in t.partition_indexes or ()
                ],
            }
            for t in request.topics or ()
        ]
    }


def _each(out_field: str, in_field: str, **extra: Any) -> Mirror:
    """One ``{error_code, error_message}`` entry per entry of the request's
    ``in_field`` (CreateAcls results, DeleteAcls filter results)."""

    def mirror(request: Any, error: ErrorCode, message: str | None) -> dict[str, Any]:
        entry = {"error_code": error, "error_message": message, **extra}
        return {out_field: [entry for _ in getattr(request, in_field) or ()]}

    return mirror


def _alter_scram(request: Any, error: ErrorCode, message: str | None) -> dict[str, Any]:
    users = dict.fromkeys(e.name for e in (*request.deletions, *request.upsertions))
    return {
        "results": [
            {"user": u, "error_code": error, "error_message": message} for u in users
        ]
    }


def _alter_client_quotas(
    request: Any, error: ErrorCode, message: str | None
) -> dict[str, Any]:
    return {
        "entries": [
            {
                "error_code": error,
                "error_message": message,
                "entity": [
                    {"entity_type": e.entity_type, "entity_name": e.entity_name}
                    for e in entry.entity
                ],
            }
            for entry in request.entries or ()
        ]
    }


def _init_producer_id(
    request: Any, error: ErrorCode, message: str | None
) -> dict[str, Any]:
    return {"producer_id": -1, "producer_epoch": -1}


def _describe_share_group_offsets(
    request: Any, error: ErrorCode, message: str | None
) -> dict[str, Any]:
    return {
        "groups": [
            {
                "group_id": g.group_id,
                "error_code": error,
                "error_message": message,
                "topics": [
                    {
                        "topic_name": t.topic_name,
                        "partitions": [
                            {"partition_index": p, "error_code": error}
                            for p in t.partitions or ()
                        ],
                    }
                    for t in g.topics or ()
                ],
            }
            for g in request.groups or ()
        ]
    }


#: The APIs whose errors sit in entries mirroring the request's (the others carry
#: one top-level ``error_code``), or whose error answer carries more than the
#: code (InitProducerId's -1 producer id): how to build those fields.
MIRRORS: Final[Mapping[ApiKey, Mirror]] = MappingProxyType(
    {
        ApiKey.PRODUCE: _topic_keyed(ApiKey.PRODUCE),
        ApiKey.FETCH: _topic_keyed(ApiKey.FETCH, session_id=0),
        ApiKey.LIST_OFFSETS: _topic_keyed(ApiKey.LIST_OFFSETS),
        ApiKey.OFFSET_FOR_LEADER_EPOCH: _topic_keyed(ApiKey.OFFSET_FOR_LEADER_EPOCH),
        ApiKey.METADATA: _metadata,
        ApiKey.OFFSET_COMMIT: _topic_keyed(ApiKey.OFFSET_COMMIT),
        ApiKey.OFFSET_FETCH: _offset_fetch,
        ApiKey.FIND_COORDINATOR: _find_coordinator,
        ApiKey.DELETE_RECORDS: _topic_keyed(ApiKey.DELETE_RECORDS),
        ApiKey.CREATE_TOPICS: _by_name("topics", "name", "topics"),
        ApiKey.DELETE_TOPICS: _by_name("responses", "name", "topic_names", "topics"),
        ApiKey.CREATE_PARTITIONS: _by_name("results", "name", "topics"),
        ApiKey.DESCRIBE_CONFIGS: _configs("results"),
        ApiKey.ALTER_CONFIGS: _configs("responses"),
        ApiKey.INCREMENTAL_ALTER_CONFIGS: _configs("responses"),
        ApiKey.DESCRIBE_GROUPS: _by_name("groups", "group_id", "groups"),
        ApiKey.DELETE_GROUPS: _by_name("results", "group_id", "groups_names"),
        ApiKey.TXN_OFFSET_COMMIT: _topic_keyed(ApiKey.TXN_OFFSET_COMMIT),
        ApiKey.INIT_PRODUCER_ID: _init_producer_id,
        ApiKey.CREATE_ACLS: _each("results", "creations"),
        ApiKey.DELETE_ACLS: _each("filter_results", "filters", matching_acls=[]),
        ApiKey.ALTER_USER_SCRAM_CREDENTIALS: _alter_scram,
        ApiKey.ALTER_CLIENT_QUOTAS: _alter_client_quotas,
        ApiKey.CONSUMER_GROUP_DESCRIBE: _by_name("groups", "group_id", "group_ids"),
        ApiKey.SHARE_GROUP_DESCRIBE: _by_name("groups", "group_id", "group_ids"),
        ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS: _describe_share_group_offsets,
        ApiKey.ADD_PARTITIONS_TO_TXN: _add_partitions_to_txn,
        ApiKey.DESCRIBE_PRODUCERS: _describe_producers,
        ApiKey.DESCRIBE_TRANSACTIONS: _by_name(
            "transaction_states", "transactional_id", "transactional_ids"
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
        fields.update(mirror(request, error, message))
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
