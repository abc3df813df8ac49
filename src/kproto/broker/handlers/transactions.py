"""InitProducerId and the transaction APIs: AddPartitionsToTxn, AddOffsetsToTxn,
EndTxn, TxnOffsetCommit, DescribeTransactions, ListTransactions, DescribeProducers.

Sources: the JSON definitions of each (``InitProducerIdRequest.json`` v0-v5,
``AddPartitionsToTxnRequest.json`` v0-v5 (v4+ batched, with ``verify_only``),
``AddOffsetsToTxnRequest.json`` v0-v4, ``EndTxnRequest.json`` v0-v5,
``TxnOffsetCommitRequest.json`` v0-v6, ``DescribeTransactionsRequest.json``,
``ListTransactionsRequest.json`` v0-v2, ``DescribeProducersRequest.json``) and
Kafka's ``KafkaApis`` handlers of them; the state machine is
:class:`kproto.broker.txn.TransactionCoordinator` (``ctx.txn``).

Transaction version 2 (KIP-890 part 2, the cluster's ``transaction.version``
feature at 2): EndTxn v5+ bumps the epoch and answers the producer id and epoch to
go on with; TxnOffsetCommit v5+ adds the group to the transaction itself (no
AddOffsetsToTxn); AddPartitionsToTxn v4+ adding partitions (not ``verify_only``),
which is the brokers' form, is refused (UNSUPPORTED_VERSION: a client of TV2
adds nothing, a client of TV1 sends v0-v3).

PRODUCER_FENCED (KIP-588) is answered as INVALID_PRODUCER_EPOCH to the versions
before it existed (InitProducerId < v4, AddPartitionsToTxn / AddOffsetsToTxn /
EndTxn < v2), as Kafka's ``KafkaApis`` does.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from kproto.broker.groups import OFFSETS_TOPIC
from kproto.broker.handlers.context import RequestContext, respond
from kproto.broker.handlers.groups import commit, committed_topics, requested_offsets
from kproto.broker.txn import TransactionMetadata
from kproto.errors import ErrorCode

__all__ = [
    "init_producer_id",
    "add_partitions_to_txn",
    "add_offsets_to_txn",
    "end_txn",
    "txn_offset_commit",
    "describe_transactions",
    "list_transactions",
    "describe_producers",
    "no_transaction",
]


#: The first version of each API that knows PRODUCER_FENCED (KIP-588).
_FENCED_SINCE = {
    "InitProducerId": 4,
    "AddPartitionsToTxn": 2,
    "AddOffsetsToTxn": 2,
    "EndTxn": 2,
}


def _fenced(ctx: RequestContext, api: str, error: ErrorCode) -> ErrorCode:
    if error == ErrorCode.PRODUCER_FENCED and ctx.api_version < _FENCED_SINCE[api]:
        return ErrorCode.INVALID_PRODUCER_EPOCH
    return error


def _with_producer(
    ctx: RequestContext, api: str, error: int, producer_id: int, producer_epoch: int
) -> Any:
    """InitProducerId's and EndTxn's answer: ``error`` (:func:`_fenced`) and the
    producer id and epoch to go on with (-1 on error)."""
    return respond(
        ctx,
        throttle_time_ms=0,
        error_code=_fenced(ctx, api, ErrorCode(error)),
        producer_id=producer_id,
        producer_epoch=producer_epoch,
    )


def _coordinator_error(ctx: RequestContext, txn_id: str | None) -> ErrorCode:
    """NONE when this node coordinates ``txn_id``, else its error
    (NOT_COORDINATOR, ...); INVALID_REQUEST for an empty or null id."""
    if not txn_id:
        return ErrorCode.INVALID_REQUEST
    return ErrorCode(ctx.txn.check_coordinator(txn_id, ctx.node_id))


async def init_producer_id(ctx: RequestContext, request: Any) -> Any:
    """A new producer id at epoch 0 for an idempotent producer (no
    ``transactional_id``; Kafka's ``ProducerIdManager``); for a transactional one,
    the coordinator's answer (:meth:`TransactionCoordinator.init_producer_id`):
    v3+ ``producer_id``/``producer_epoch`` other than -1 ask for a KIP-360 bump."""
    state = ctx.state
    txn_id = request.transactional_id
    if txn_id is None:
        producer_id = state.next_producer_id
        state.next_producer_id += 1
        return _with_producer(ctx, "InitProducerId", ErrorCode.NONE, producer_id, 0)
    error = ctx.txn.check_coordinator(txn_id, ctx.node_id) if txn_id else ErrorCode.NONE
    producer_id = producer_epoch = -1
    if error == ErrorCode.NONE:
        pid = getattr(request, "producer_id", -1)
        epoch = getattr(request, "producer_epoch", -1)
        expected = (pid, epoch) if pid >= 0 else None
        error, producer_id, producer_epoch = ctx.txn.init_producer_id(
            txn_id, request.transaction_timeout_ms, expected
        )
    return _with_producer(ctx, "InitProducerId", error, producer_id, producer_epoch)


def _partition_results(
    topics: Any, results: dict[tuple[str, int], ErrorCode]
) -> list[dict[str, Any]]:
    return [
        {
            "name": t.name,
            "results_by_partition": [
                {"partition_index": p, "partition_error_code": results[(t.name, p)]}
                for p in t.partitions
            ],
        }
        for t in topics
    ]


def _add(
    ctx: RequestContext,
    txn_id: str,
    producer_id: int,
    epoch: int,
    topics: Any,
    verify_only: bool,
) -> dict[tuple[str, int], ErrorCode]:
    asked = [(t.name, p) for t in topics for p in t.partitions]
    error = _coordinator_error(ctx, txn_id)
    if error != ErrorCode.NONE:
        return dict.fromkeys(asked, error)
    results = ctx.txn.add_partitions(
        txn_id, producer_id, epoch, asked, verify_only=verify_only
    )
    return {tp: _fenced(ctx, "AddPartitionsToTxn", e) for tp, e in results.items()}


async def add_partitions_to_txn(ctx: RequestContext, request: Any) -> Any:
    """Add partitions to a transaction: one transaction before v4 (clients), a batch
    of ``transactions`` from v4 (brokers), each possibly ``verify_only``
    (KIP-890 part 1: check the partitions are in the transaction, add nothing).
    At transaction version 2, v4+ adds are refused with UNSUPPORTED_VERSION."""
    if ctx.api_version < 4:
        results = _add(
            ctx,
            request.v3_and_below_transactional_id,
            request.v3_and_below_producer_id,
            request.v3_and_below_producer_epoch,
            request.v3_and_below_topics,
            False,
        )
        return respond(
            ctx,
            throttle_time_ms=0,
            results_by_topic_v3_and_below=_partition_results(
                request.v3_and_below_topics, results
            ),
        )
    if ctx.txn.transaction_version >= 2 and any(
        not txn.verify_only for txn in request.transactions
    ):
        # Kafka authorizes v4+ as CLUSTER_ACTION (a broker's request): with no
        # inter-broker traffic here, a v4+ add can only come from a client
        return respond(
            ctx,
            throttle_time_ms=0,
            error_code=ErrorCode.UNSUPPORTED_VERSION,
            results_by_transaction=[],
        )
    out = []
    for txn in request.transactions:
        results = _add(
            ctx,
            txn.transactional_id,
            txn.producer_id,
            txn.producer_epoch,
            txn.topics,
            txn.verify_only,
        )
        out.append(
            {
                "transactional_id": txn.transactional_id,
                "topic_results": _partition_results(txn.topics, results),
            }
        )
    return respond(
        ctx, throttle_time_ms=0, error_code=ErrorCode.NONE, results_by_transaction=out
    )


async def add_offsets_to_txn(ctx: RequestContext, request: Any) -> Any:
    """Add the group's ``__consumer_offsets`` partition to the transaction."""
    txn_id = request.transactional_id
    error = _coordinator_error(ctx, txn_id)
    if error == ErrorCode.NONE:
        error = ctx.txn.add_offsets(
            txn_id, request.producer_id, request.producer_epoch, request.group_id
        )
    return respond(
        ctx, throttle_time_ms=0, error_code=_fenced(ctx, "AddOffsetsToTxn", error)
    )


async def end_txn(ctx: RequestContext, request: Any) -> Any:
    """Commit (``committed``) or abort the transaction: markers on every partition.
    v5+ at transaction version 2 bumps the epoch and answers the producer id and
    epoch to go on with (``producer_id``, ``producer_epoch``; -1 on error)."""
    txn_id = request.transactional_id
    error = _coordinator_error(ctx, txn_id)
    producer_id = producer_epoch = -1
    if error == ErrorCode.NONE:
        error = ctx.txn.end_txn(
            txn_id,
            request.producer_id,
            request.producer_epoch,
            request.committed,
            tv2=ctx.api_version >= 5,
        )
        if error == ErrorCode.NONE:
            producer_id, producer_epoch = ctx.txn.producer_of(txn_id)
    return _with_producer(ctx, "EndTxn", error, producer_id, producer_epoch)


async def txn_offset_commit(ctx: RequestContext, request: Any) -> Any:
    """Offsets committed inside the transaction, sent to the group coordinator:
    stored pending and visible to OffsetFetch only once the COMMIT marker reaches
    the group's ``__consumer_offsets`` partition. v3+ carries the member's
    generation, checked as OffsetCommit's (KIP-447); v6 names topics by id
    (KIP-1319; UNKNOWN_TOPIC_ID if unknown). Without AddOffsetsToTxn first the
    commit gets INVALID_TXN_STATE (KIP-890 part 1 verification), a fenced producer
    INVALID_PRODUCER_EPOCH; v5+ at transaction version 2 adds the group's
    partition to the transaction instead (KIP-890 part 2)."""
    groups = ctx.groups
    names, offsets = requested_offsets(ctx, request, ctx.api_version >= 6)
    error = groups.check_coordinator(request.group_id, ctx.node_id)
    if error == ErrorCode.NONE:
        # KIP-890 part 1: the group's partition must be in the transaction
        # (AddOffsetsToTxn), as the coordinator verifies before appending
        error = ctx.txn.in_transaction(
            request.transactional_id,
            request.producer_id,
            request.producer_epoch,
            OFFSETS_TOPIC,
            groups.partition_for(request.group_id),
            add=ctx.api_version >= 5,  # KIP-890 part 2: the group added implicitly
        )
        if error == ErrorCode.PRODUCER_FENCED:
            error = ErrorCode.INVALID_PRODUCER_EPOCH
    results: Mapping[tuple[str, int], int]
    if error != ErrorCode.NONE:
        results = dict.fromkeys(offsets, error)
    elif not offsets:
        results = {}
    else:
        producer = (request.producer_id, request.producer_epoch)
        results = await commit(ctx, request, offsets, producer=producer)
    topics = committed_topics(request, names, results, error)
    return respond(ctx, throttle_time_ms=0, topics=topics)


def no_transaction(txn_id: str, error: ErrorCode) -> dict[str, Any]:
    """The DescribeTransactions entry of a transactional id answered ``error``
    (no state, no producer: -1)."""
    return {
        "error_code": error,
        "transactional_id": txn_id,
        "transaction_state": "",
        "transaction_timeout_ms": 0,
        "transaction_start_time_ms": -1,
        "producer_id": -1,
        "producer_epoch": -1,
        "topics": [],
    }


def _described(ctx: RequestContext, txn_id: str) -> dict[str, Any]:
    error = _coordinator_error(ctx, txn_id)
    meta: TransactionMetadata | None = None
    if error == ErrorCode.NONE:
        meta = ctx.txn.describe(txn_id)
        if meta is None:
            error = ErrorCode.TRANSACTIONAL_ID_NOT_FOUND
    if meta is None:
        return no_transaction(txn_id, ErrorCode(error))
    by_topic: dict[str, list[int]] = {}
    for topic, partition in sorted(meta.partitions):
        by_topic.setdefault(topic, []).append(partition)
    return {
        "error_code": ErrorCode.NONE,
        "transactional_id": txn_id,
        "transaction_state": meta.state.kafka_name,
        "transaction_timeout_ms": meta.txn_timeout_ms,
        "transaction_start_time_ms": meta.txn_start_timestamp_ms,
        "producer_id": meta.producer_id,
        "producer_epoch": meta.producer_epoch,
        "topics": [{"topic": t, "partitions": ps} for t, ps in by_topic.items()],
    }


async def describe_transactions(ctx: RequestContext, request: Any) -> Any:
    """DescribeTransactions (KIP-664): each id's state, producer and partitions;
    NOT_COORDINATOR for ids another node coordinates, TRANSACTIONAL_ID_NOT_FOUND
    for unknown ones."""
    return respond(
        ctx,
        throttle_time_ms=0,
        transaction_states=[_described(ctx, t) for t in request.transactional_ids],
    )


async def list_transactions(ctx: RequestContext, request: Any) -> Any:
    """ListTransactions (KIP-664): the transactions this node coordinates, filtered
    by state names, producer ids, v1 ``duration_filter`` (ms) and v2
    ``transactional_id_pattern`` (a regular expression; INVALID_REQUEST if bad)."""
    try:
        found, unknown = ctx.txn.list_transactions(
            ctx.node_id,
            request.state_filters,
            request.producer_id_filters,
            getattr(request, "duration_filter", -1),
            getattr(request, "transactional_id_pattern", None),
        )
    except re.error:
        return respond(
            ctx,
            throttle_time_ms=0,
            error_code=ErrorCode.INVALID_REQUEST,
            unknown_state_filters=[],
            transaction_states=[],
        )
    return respond(
        ctx,
        throttle_time_ms=0,
        error_code=ErrorCode.NONE,
        unknown_state_filters=unknown,
        transaction_states=[
            {
                "transactional_id": m.transactional_id,
                "producer_id": m.producer_id,
                "transaction_state": m.state.kafka_name,
            }
            for m in found
        ],
    )


async def describe_producers(ctx: RequestContext, request: Any) -> Any:
    """DescribeProducers (KIP-664): the producers a partition's leader knows, with
    their epoch, last sequence, last batch's max timestamp (ms), the coordinator
    epoch of their last marker and the first offset of their open transaction
    (-1: none)."""
    topics = []
    for t in request.topics:
        partitions = []
        for index in t.partition_indexes:
            plog, error = ctx.replicas.leader_log(t.name, index)
            producers = []
            if plog is not None:
                ongoing = plog.txn_index.ongoing
                for pid, entry in sorted(plog.producer_state.producers.items()):
                    producers.append(
                        {
                            "producer_id": pid,
                            "producer_epoch": entry.producer_epoch,
                            "last_sequence": entry.last_sequence,
                            "last_timestamp": entry.last_timestamp,
                            "coordinator_epoch": entry.coordinator_epoch,
                            "current_txn_start_offset": ongoing.get(pid, -1),
                        }
                    )
            partitions.append(
                {
                    "partition_index": index,
                    "error_code": error,
                    "error_message": None if error == ErrorCode.NONE else error.name,
                    "active_producers": producers,
                }
            )
        topics.append({"name": t.name, "partitions": partitions})
    return respond(ctx, throttle_time_ms=0, topics=topics)
