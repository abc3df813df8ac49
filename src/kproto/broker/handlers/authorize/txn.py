"""ACL checks of the transaction APIs, as Kafka's ``KafkaApis`` makes them
(``authHelper.authorize`` on the ``TRANSACTIONAL_ID`` resource), for
:func:`kproto.broker.handlers.authorize.guarded`.

==========================  ===========================================================
API                         check (resource, operation) and answer when refused
==========================  ===========================================================
FindCoordinator key type 1  transactional id DESCRIBE: TRANSACTIONAL_ID_AUTHORIZATION_FAILED
InitProducerId (with an id) transactional id WRITE: TRANSACTIONAL_ID_AUTHORIZATION_FAILED
Produce (with an id)        transactional id WRITE: every partition
                            TRANSACTIONAL_ID_AUTHORIZATION_FAILED (then topic WRITE)
AddPartitionsToTxn v0-v3    transactional id WRITE (every partition
                            TRANSACTIONAL_ID_AUTHORIZATION_FAILED), then topic WRITE
                            (TOPIC_AUTHORIZATION_FAILED, the others
                            OPERATION_NOT_ATTEMPTED)
AddPartitionsToTxn v4+      cluster CLUSTER_ACTION (broker to broker):
                            CLUSTER_AUTHORIZATION_FAILED
AddOffsetsToTxn             transactional id WRITE, then group READ
                            (GROUP_AUTHORIZATION_FAILED)
EndTxn                      transactional id WRITE
TxnOffsetCommit             transactional id WRITE, group READ, then topic READ
                            (per partition)
DescribeTransactions        transactional id DESCRIBE (per id)
ListTransactions            transactional id DESCRIBE (others left out)
DescribeProducers           topic READ: its partitions TOPIC_AUTHORIZATION_FAILED
==========================  ===========================================================
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs

from kproto.broker.acl import AclOperation, ResourceType
from kproto.broker.handlers.authorize.common import CLUSTER as _CLUSTER
from kproto.broker.handlers.authorize.common import (
    allowed,
    call,
    coordinator_keys,
    entries,
    refuse_whole,
)
from kproto.broker.handlers.context import Handler, RequestContext, respond
from kproto.broker.handlers.partitions import topic_ids
from kproto.broker.handlers.transactions import no_transaction
from kproto.errors import ErrorCode
from kproto.index import ApiKey

__all__ = ["TXN_CHECKS", "transactional_produce_denied"]

_TXN_DENIED = ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED


def _txn_ok(ctx: RequestContext, txn_id: str | None, op: AclOperation) -> bool:
    return txn_id is not None and allowed(
        ctx, op, ResourceType.TRANSACTIONAL_ID, txn_id
    )


def transactional_produce_denied(ctx: RequestContext, request: Any) -> bool:
    """A Produce naming a transactional id the principal may not WRITE."""
    txn_id = getattr(request, "transactional_id", None)
    return txn_id is not None and not _txn_ok(ctx, txn_id, AclOperation.WRITE)


async def _find_coordinator(ctx: RequestContext, handler: Handler, request: Any) -> Any:
    def permitted(txn_id: str) -> bool:
        return _txn_ok(ctx, txn_id, AclOperation.DESCRIBE)

    return await coordinator_keys(ctx, handler, request, permitted, _TXN_DENIED)


async def _txn_write(ctx: RequestContext, handler: Handler, request: Any) -> Any:
    """InitProducerId and EndTxn: WRITE on the request's transactional id, else
    TRANSACTIONAL_ID_AUTHORIZATION_FAILED with producer id and epoch -1 where the
    response version has them."""
    if _txn_ok(ctx, request.transactional_id, AclOperation.WRITE):
        return await handler(ctx, request)
    return refuse_whole(ctx, _TXN_DENIED, producer_id=-1, producer_epoch=-1)


async def _add_partitions(ctx: RequestContext, handler: Handler, request: Any) -> Any:
    if ctx.api_version >= 4:
        if allowed(ctx, AclOperation.CLUSTER_ACTION, ResourceType.CLUSTER, _CLUSTER):
            return await handler(ctx, request)
        return refuse_whole(
            ctx, ErrorCode.CLUSTER_AUTHORIZATION_FAILED, results_by_transaction=[]
        )
    topics = request.v3_and_below_topics
    if _txn_ok(ctx, request.v3_and_below_transactional_id, AclOperation.WRITE):
        denied = {
            t.name
            for t in topics
            if not allowed(ctx, AclOperation.WRITE, ResourceType.TOPIC, t.name)
        }
        if not denied:
            return await handler(ctx, request)
    else:
        denied = None

    def code(name: str) -> ErrorCode:
        if denied is None:
            return _TXN_DENIED
        return (
            ErrorCode.TOPIC_AUTHORIZATION_FAILED
            if name in denied
            else ErrorCode.OPERATION_NOT_ATTEMPTED
        )

    return respond(
        ctx,
        throttle_time_ms=0,
        results_by_topic_v3_and_below=[
            {
                "name": t.name,
                "results_by_partition": [
                    {"partition_index": p, "partition_error_code": code(t.name)}
                    for p in t.partitions
                ],
            }
            for t in topics
        ],
    )


async def _add_offsets(ctx: RequestContext, handler: Handler, request: Any) -> Any:
    error = ErrorCode.NONE
    if not _txn_ok(ctx, request.transactional_id, AclOperation.WRITE):
        error = _TXN_DENIED
    elif not allowed(ctx, AclOperation.READ, ResourceType.GROUP, request.group_id):
        error = ErrorCode.GROUP_AUTHORIZATION_FAILED
    if error == ErrorCode.NONE:
        return await handler(ctx, request)
    return refuse_whole(ctx, error)


async def _txn_offset_commit(
    ctx: RequestContext, handler: Handler, request: Any
) -> Any:
    whole = ErrorCode.NONE
    if not _txn_ok(ctx, request.transactional_id, AclOperation.WRITE):
        whole = _TXN_DENIED
    elif not allowed(ctx, AclOperation.READ, ResourceType.GROUP, request.group_id):
        whole = ErrorCode.GROUP_AUTHORIZATION_FAILED
    by_id = ctx.api_version >= 6
    ids = topic_ids(ctx)

    def name_of(t: Any) -> str | None:
        return ids.get(t.topic_id) if by_id else t.name

    def readable(t: Any) -> bool:
        name = name_of(t)
        return whole == ErrorCode.NONE and (
            name is None or allowed(ctx, AclOperation.READ, ResourceType.TOPIC, name)
        )

    def refusal(t: Any) -> dict[str, Any]:
        error = whole or ErrorCode.TOPIC_AUTHORIZATION_FAILED
        return {
            "name": name_of(t),
            "topic_id": getattr(t, "topic_id", None),
            "partitions": [
                {"partition_index": p.partition_index, "error_code": error}
                for p in t.partitions
            ],
        }

    return await entries(ctx, handler, request, "topics", readable, "topics", refusal)


async def _describe_transactions(
    ctx: RequestContext, handler: Handler, request: Any
) -> Any:
    def permitted(txn_id: str) -> bool:
        return _txn_ok(ctx, txn_id, AclOperation.DESCRIBE)

    def refusal(txn_id: str) -> dict[str, Any]:
        return no_transaction(txn_id, _TXN_DENIED)

    return await entries(
        ctx,
        handler,
        request,
        "transactional_ids",
        permitted,
        "transaction_states",
        refusal,
    )


async def _list_transactions(
    ctx: RequestContext, handler: Handler, request: Any
) -> Any:
    response = await call(handler, ctx, request)
    kept = tuple(
        s
        for s in response.transaction_states
        if _txn_ok(ctx, s.transactional_id, AclOperation.DESCRIBE)
    )
    return attrs.evolve(response, transaction_states=kept)


async def _describe_producers(
    ctx: RequestContext, handler: Handler, request: Any
) -> Any:
    def readable(t: Any) -> bool:
        return allowed(ctx, AclOperation.READ, ResourceType.TOPIC, t.name)

    def refusal(t: Any) -> dict[str, Any]:
        return {
            "name": t.name,
            "partitions": [
                {
                    "partition_index": p,
                    "error_code": ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                    "error_message": None,
                    "active_producers": [],
                }
                for p in t.partition_indexes
            ],
        }

    return await entries(ctx, handler, request, "topics", readable, "topics", refusal)


#: The check of each transaction API (FindCoordinator and InitProducerId only when
#: they name a transactional id: :mod:`.groups` and :mod:`.cluster` route them).
TXN_CHECKS: dict[int, Callable[[RequestContext, Handler, Any], Any]] = {
    ApiKey.FIND_COORDINATOR: _find_coordinator,
    ApiKey.INIT_PRODUCER_ID: _txn_write,
    ApiKey.ADD_PARTITIONS_TO_TXN: _add_partitions,
    ApiKey.ADD_OFFSETS_TO_TXN: _add_offsets,
    ApiKey.END_TXN: _txn_write,
    ApiKey.TXN_OFFSET_COMMIT: _txn_offset_commit,
    ApiKey.DESCRIBE_TRANSACTIONS: _describe_transactions,
    ApiKey.LIST_TRANSACTIONS: _list_transactions,
    ApiKey.DESCRIBE_PRODUCERS: _describe_producers,
}
