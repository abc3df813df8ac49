"""Produce: the request translated into
:meth:`kproto.broker.replica_manager.ReplicaManager.append_records` and its results
into the response.

Sources: ``ProduceRequest/Response.json``; Kafka's ``KafkaApis.handleProduceRequest``
(the append itself, after ``ReplicaManager.appendRecords``, is
:mod:`kproto.broker.replica_manager`).
"""

from __future__ import annotations

import logging
import uuid
from functools import cache
from typing import Any, NamedTuple

from kproto.broker.handlers.context import RequestContext
from kproto.broker.replica_manager import PartitionResult, resolve_topic
from kproto.index import ApiKey, response_type
from kproto.meta import wire_fields

__all__ = ["PartitionResult", "produce", "produce_response"]

log = logging.getLogger("kproto.broker")


class _Layout(NamedTuple):
    """The classes of one ProduceResponse version and the fields it has."""

    response: Any
    topic: Any
    partition: Any
    record_error: Any
    name: bool
    topic_id: bool
    log_start_offset: bool
    errors: bool  # record_errors and error_message (v8+)


def _element(cls: Any, name: str) -> Any:
    """The entity class of the array field ``name`` of ``cls``."""
    for field, w in wire_fields(cls):
        if field.name == name and w.element is not None:
            return w.element.entity
    raise LookupError(f"{cls.__qualname__} has no array of structs {name!r}")


@cache
def _layout(version: int) -> _Layout:
    response = response_type(ApiKey.PRODUCE, version)
    topic = _element(response, "responses")
    partition = _element(topic, "partition_responses")
    topic_fields = {f.name for f, _ in wire_fields(topic)}
    fields = {f.name for f, _ in wire_fields(partition)}
    errors = "record_errors" in fields
    return _Layout(
        response,
        topic,
        partition,
        _element(partition, "record_errors") if errors else None,
        "name" in topic_fields,
        "topic_id" in topic_fields,
        "log_start_offset" in fields,
        errors,
    )


def produce_response(
    version: int,
    topics: list[tuple[str, uuid.UUID | None, list[PartitionResult]]],
) -> Any:
    """The ProduceResponse entity of ``version`` (``ProduceResponse.json``) for
    ``topics``, ``(name, topic_id, partitions)`` each, ``throttle_time_ms`` 0.

    Equal to what :func:`kproto.broker.handlers.context.build` makes of the
    same values (fields a version lacks dropped, a ``None`` topic id the
    default), without its generic walk: the classes of each version are looked
    up once."""
    lay = _layout(version)
    partition, record_error = lay.partition, lay.record_error
    built = []
    for name, topic_id, results in topics:
        parts = []
        for r in results:
            kw: dict[str, Any] = {
                "index": r.partition_index,
                "error_code": r.error_code,
                "base_offset": r.base_offset,
                "log_append_time_ms": r.log_append_time_ms,
            }
            if lay.log_start_offset:
                kw["log_start_offset"] = r.log_start_offset
            if lay.errors:
                kw["error_message"] = r.error_message
                if r.record_errors:
                    kw["record_errors"] = tuple(
                        record_error(batch_index=i, batch_index_error_message=m)
                        for i, m in r.record_errors
                    )
            parts.append(partition(**kw))
        tkw: dict[str, Any] = {"partition_responses": tuple(parts)}
        if lay.name:
            tkw["name"] = name
        if lay.topic_id and topic_id is not None:
            tkw["topic_id"] = topic_id
        built.append(lay.topic(**tkw))
    return lay.response(responses=tuple(built), throttle_time_ms=0)


async def produce(ctx: RequestContext, request: Any) -> Any:
    """Append each partition's batches; with ``acks=0`` answer nothing. ``acks``
    1 and -1 (all) are the same here: there are no followers to wait for.

    Produce v0-v2 (magic 0/1 message sets) is advertised but not served, as Kafka 4
    (KAFKA-18659): :mod:`kproto.broker.dispatch` routes it to
    :func:`kproto.broker.handlers.refusals.unsupported_version`, never here."""
    state = ctx.state
    # one pass, no comprehension (each is a call): this runs for every Produce
    entries = []
    names = []
    topic_ids = []
    for topic_data in request.topic_data:
        topic_id = getattr(topic_data, "topic_id", None)
        name, topic_error = resolve_topic(
            state, getattr(topic_data, "name", None), topic_id
        )
        entries.append((name, topic_error, topic_data.partition_data))
        names.append(name)
        topic_ids.append(topic_id)
    results = await ctx.replicas.append_records(
        entries,
        acks=request.acks,
        transactional_id=getattr(request, "transactional_id", None),
        client=(ctx.client_host, ctx.principal, ctx.client_id),
        # KIP-890 part 2: v12+ adds its partitions to the transaction (at TV2)
        add_to_transaction=ctx.api_version >= 12,
    )
    if request.acks == 0:
        return None
    return produce_response(
        ctx.api_version,
        list(zip(names, topic_ids, results, strict=True)),
    )
