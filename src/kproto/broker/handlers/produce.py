"""Produce.

Sources: ``ProduceRequest/Response.json``;
Kafka's ``KafkaApis.handleProduceRequest``, ``ReplicaManager.appendRecords``,
``LogValidator`` (CRC, record count, max.message.bytes) and ``ProducerAppendInfo``
(idempotent sequence checks, implemented in :mod:`kproto.broker.log`).
"""

from __future__ import annotations

import logging
import struct
import uuid
from functools import cache
from typing import Any, NamedTuple

import attrs

from kproto.broker.connection_limits import off_turn
from kproto.broker.errors import LogAppendError
from kproto.broker.handlers.context import RequestContext
from kproto.broker.handlers.partitions import leader_log, topic_name
from kproto.broker.log_validator import LogPolicy, RecordValidationError
from kproto.broker.state import TopicMetadata
from kproto.errors import ErrorCode
from kproto.index import ApiKey, response_type
from kproto.meta import wire_fields

__all__ = ["PartitionResult", "produce", "produce_response"]

#: DefaultRecordBatch: attributes (int16) at byte 21, producer id (int64) at 43,
#: producer epoch (int16) at 51; attribute bit 4 is "transactional".
_ATTRIBUTES = struct.Struct(">h")
_PRODUCER = struct.Struct(">qh")
_TRANSACTIONAL = 0x10


#: ``{topic name: (its configs, the policy's fields but now_ms, last policy)}``.
_POLICIES: dict[str, tuple[dict[str, str], dict[str, Any], LogPolicy]] = {}
_POLICIES_MAX = 1024


def produce_policy(info: TopicMetadata, now_ms: int) -> LogPolicy:
    """``LogPolicy.for_produce(info.config, now_ms)``, its config-derived fields
    reused while the topic's configs are the ones they were read from (a changed
    config reads them again), the whole policy while the clock's millisecond is
    the same too (the partitions of one request)."""
    hit = _POLICIES.get(info.name)
    if hit is None or hit[0] != info.configs:
        policy = LogPolicy.for_produce(info.config, now_ms)
        fields = attrs.asdict(policy, recurse=False)
        del fields["now_ms"]
        if len(_POLICIES) >= _POLICIES_MAX:
            _POLICIES.clear()
        _POLICIES[info.name] = (dict(info.configs), fields, policy)
        return policy
    configs, fields, policy = hit
    if policy.now_ms != now_ms:
        policy = LogPolicy(now_ms=now_ms, **fields)
        _POLICIES[info.name] = (configs, fields, policy)
    return policy


def _verify_transaction(
    ctx: RequestContext,
    transactional_id: str | None,
    records: bytes,
    name: str,
    index: int,
) -> ErrorCode:
    """KIP-890 part 1: a transactional batch is appended only to a partition in the
    producer's open transaction (Kafka's partition leader asks the coordinator with
    AddPartitionsToTxn ``verify_only``); otherwise INVALID_TXN_STATE, or the
    producer's fencing error."""
    if transactional_id is None or len(records) < 61 or records[16] != 2:
        return ErrorCode.NONE
    (attributes,) = _ATTRIBUTES.unpack_from(records, 21)
    if not attributes & _TRANSACTIONAL:
        return ErrorCode.NONE
    producer_id, epoch = _PRODUCER.unpack_from(records, 43)
    error = ctx.txn.in_transaction(transactional_id, producer_id, epoch, name, index)
    if error == ErrorCode.PRODUCER_FENCED:
        return ErrorCode.INVALID_PRODUCER_EPOCH
    return error


log = logging.getLogger("kproto.broker")


class PartitionResult(NamedTuple):
    """What a Produce did with one partition's records (``ProduceResponse.json``'s
    PartitionProduceResponse: offsets -1 when nothing was appended;
    ``record_errors``: ``(batch_index, message)`` pairs)."""

    partition_index: int
    error_code: int
    base_offset: int = -1
    log_append_time_ms: int = -1
    log_start_offset: int = -1
    record_errors: tuple[tuple[int, str | None], ...] = ()
    error_message: str | None = None


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
    acks = request.acks
    bad_acks = acks not in (0, 1, -1)
    transactional_id = getattr(request, "transactional_id", None)
    client = (ctx.client_host, ctx.principal, ctx.client_id)
    validate = state.validation.validate
    topics = []
    for topic_data in request.topic_data:
        name, topic_error = topic_name(ctx, topic_data)
        partitions = []
        for pdata in topic_data.partition_data:
            error, message = topic_error, None
            record_errors: tuple[tuple[int, str | None], ...] = ()
            base_offset, append_time, start = -1, -1, -1
            if bad_acks:
                error = ErrorCode.INVALID_REQUIRED_ACKS
            elif not error:
                plog, error = leader_log(ctx, name, pdata.index)
                if plog is not None:
                    error = _verify_transaction(
                        ctx,
                        transactional_id,
                        pdata.records or b"",
                        name,
                        pdata.index,
                    )
                if plog is not None and not error:
                    info = state.topics[name]
                    policy = produce_policy(info, state.now_ms())
                    records = pdata.records or b""
                    try:
                        # small requests inline, large or bombs off the event loop
                        checked = await validate(
                            records, policy, wait=off_turn, client=client
                        )
                        result = plog.append_batches(
                            records,
                            policy,
                            checked=checked,
                            log_append_time_ms=(
                                policy.now_ms if policy.log_append_time else None
                            ),
                        )
                    except LogAppendError as err:
                        error, message = err.error_code, str(err)
                        if isinstance(err, RecordValidationError):
                            record_errors = err.record_errors
                    else:
                        base_offset = result.base_offset
                        append_time = result.log_append_time_ms
                        if info.configs.get("retention.bytes") or info.configs.get(
                            "retention.ms"
                        ):
                            state.apply_retention(name, pdata.index)
                        start = plog.log_start_offset
            partitions.append(
                PartitionResult(
                    pdata.index,
                    error,
                    base_offset,
                    append_time,
                    start,
                    record_errors,
                    message,
                )
            )
        topics.append((name, getattr(topic_data, "topic_id", None), partitions))
    if acks == 0:
        return None
    return produce_response(ctx.api_version, topics)
