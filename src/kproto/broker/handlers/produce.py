"""Produce.

Sources: ``ProduceRequest/Response.json``;
Kafka's ``KafkaApis.handleProduceRequest``, ``ReplicaManager.appendRecords``,
``LogValidator`` (CRC, record count, max.message.bytes) and ``ProducerAppendInfo``
(idempotent sequence checks, implemented in :mod:`kproto.broker.log`).
"""

from __future__ import annotations

import logging
import struct
from functools import cache
from typing import Any, NamedTuple

from kproto.broker.connection_limits import off_turn
from kproto.broker.errors import LogAppendError
from kproto.broker.handlers.cluster_info import MIN_VERSIONS
from kproto.broker.handlers.context import RequestContext, respond
from kproto.broker.handlers.partitions import leader_log, topic_name
from kproto.broker.log_validator import (
    LogPolicy,
    RecordValidationError,
    validate_off_loop,
)
from kproto.errors import ErrorCode
from kproto.index import ApiKey, response_type
from kproto.meta import wire_fields

__all__ = ["produce", "produce_response"]

#: DefaultRecordBatch: attributes (int16) at byte 21, producer id (int64) at 43,
#: producer epoch (int16) at 51; attribute bit 4 is "transactional".
_ATTRIBUTES = struct.Struct(">h")
_PRODUCER = struct.Struct(">qh")
_TRANSACTIONAL = 0x10


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


class _Level(NamedTuple):
    """One level of the ProduceResponse of a version: its class and
    ``{field name: nullable}``."""

    cls: Any
    fields: dict[str, bool]

    def make(self, values: dict[str, Any]) -> Any:
        """The entity of ``values`` with the names this version lacks dropped, and
        ``None`` for a non-nullable field taken as its default (what
        :func:`kproto.meta.build_entity` with ``drop_absent`` does)."""
        fields = self.fields
        return self.cls(
            **{
                k: v
                for k, v in values.items()
                if k in fields and (v is not None or fields[k])
            }
        )


def _level(cls: Any, child: str | None = None) -> tuple[_Level, Any]:
    nested = None
    fields: dict[str, bool] = {}
    for field, w in wire_fields(cls):
        fields[field.name] = w.nullable
        if field.name == child and w.element is not None:
            nested = w.element.entity
    return _Level(cls, fields), nested


@cache
def _response_levels(version: int) -> tuple[_Level, _Level, _Level, _Level | None]:
    """ProduceResponse ``version``: the response, topic, partition and record
    error levels (``None``: the version has no record errors)."""
    response, topic_cls = _level(response_type(ApiKey.PRODUCE, version), "responses")
    topic, partition_cls = _level(topic_cls, "partition_responses")
    partition, error_cls = _level(partition_cls, "record_errors")
    return (
        response,
        topic,
        partition,
        None if error_cls is None else _level(error_cls)[0],
    )


def produce_response(version: int, topics: list[dict[str, Any]]) -> Any:
    """The ProduceResponse entity of ``version`` (``ProduceResponse.json``) for
    ``topics``, shaped as :func:`kproto.broker.handlers.context.build` takes them
    (``name``, ``topic_id``, ``partition_responses`` of dicts with
    ``record_errors`` as dicts), ``throttle_time_ms`` 0; equal to what ``build``
    makes of them, without its generic walk (a request's cost: the classes and
    their fields are looked up once per version)."""
    response, topic, partition, record_error = _response_levels(version)
    built = []
    for t in topics:
        parts = []
        for p in t["partition_responses"]:
            errors = p.get("record_errors")
            if errors and record_error is not None:  # else dropped, or empty
                p = {**p, "record_errors": tuple(record_error.make(e) for e in errors)}
            parts.append(partition.make(p))
        built.append(topic.make({**t, "partition_responses": tuple(parts)}))
    return response.make({"responses": tuple(built), "throttle_time_ms": 0})


async def produce(ctx: RequestContext, request: Any) -> Any:
    """Append each partition's batches; with ``acks=0`` answer nothing. ``acks``
    1 and -1 (all) are the same here: there are no followers to wait for.

    Produce v0-v2 (magic 0/1 message sets) is advertised but not served, as Kafka 4
    (KAFKA-18659): every partition is answered UNSUPPORTED_VERSION and nothing is
    stored. (Kafka 4 closes the connection instead; a per-partition error tells the
    client why.)"""
    if ctx.api_version < MIN_VERSIONS[ApiKey.PRODUCE]:
        return _unsupported_version(ctx, request)
    state = ctx.state
    acks = request.acks
    topics = []
    for topic_data in request.topic_data:
        name, topic_error = topic_name(ctx, topic_data)
        partitions = []
        for pdata in topic_data.partition_data:
            error, message, record_errors = topic_error, None, []
            base_offset, append_time, start = -1, -1, -1
            if acks not in (0, 1, -1):
                error = ErrorCode.INVALID_REQUIRED_ACKS
            elif not error:
                plog, error = leader_log(ctx, name, pdata.index)
                if plog is not None:
                    error = _verify_transaction(
                        ctx,
                        getattr(request, "transactional_id", None),
                        pdata.records or b"",
                        name,
                        pdata.index,
                    )
                if plog is not None and not error:
                    info = state.topics[name]
                    policy = LogPolicy.for_produce(info.config, state.now_ms())
                    records = pdata.records or b""
                    try:
                        # decompression and record checks off the event loop
                        checked = await validate_off_loop(
                            records, policy, wait=off_turn
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
                        record_errors = [
                            {"batch_index": i, "batch_index_error_message": m}
                            for i, m in (
                                err.record_errors
                                if isinstance(err, RecordValidationError)
                                else ()
                            )
                        ]
                    else:
                        base_offset = result.base_offset
                        append_time = result.log_append_time_ms
                        if info.configs.get("retention.bytes") or info.configs.get(
                            "retention.ms"
                        ):
                            state.apply_retention(name, pdata.index)
                        start = plog.log_start_offset
            partitions.append(
                {
                    "index": pdata.index,
                    "error_code": error,
                    "base_offset": base_offset,
                    "log_append_time_ms": append_time,
                    "log_start_offset": start,
                    "record_errors": record_errors,
                    "error_message": message,
                }
            )
        topics.append(
            {
                "name": name,
                "topic_id": getattr(topic_data, "topic_id", None),
                "partition_responses": partitions,
            }
        )
    if acks == 0:
        return None
    return produce_response(ctx.api_version, topics)


def _unsupported_version(ctx: RequestContext, request: Any) -> Any:
    """The Produce v0-v2 answer: UNSUPPORTED_VERSION for every partition (none
    with ``acks=0``, which has no response: the broker's log says why)."""
    log.warning(
        "node %d: Produce v%d from %s refused (UNSUPPORTED_VERSION): this broker"
        " serves Produce v%d+ (record batches of magic 2)",
        ctx.node_id,
        ctx.api_version,
        ctx.client_id,
        MIN_VERSIONS[ApiKey.PRODUCE],
    )
    if request.acks == 0:
        return None
    topics = [
        {
            "name": topic_data.name,
            "partition_responses": [
                {
                    "index": pdata.index,
                    "error_code": ErrorCode.UNSUPPORTED_VERSION,
                    "base_offset": -1,
                    "log_append_time_ms": -1,
                }
                for pdata in topic_data.partition_data
            ],
        }
        for topic_data in request.topic_data
    ]
    return respond(ctx, responses=topics, throttle_time_ms=0)
