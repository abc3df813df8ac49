"""The sans-IO TransactionManager driven with made-up responses: the transaction
version chosen from ApiVersions, backoff on CONCURRENT_TRANSACTIONS (bounded), a
moved coordinator found again, the id and epoch adopted from EndTxn v5 (a
rotated producer id included), the request versions capped at TV1."""

from __future__ import annotations

from collections.abc import Callable
from types import SimpleNamespace as NS
from typing import Any

import pytest

from kproto.client.core import ClientCore
from kproto.client.protocol import Backoff, Call, WaitingOp
from kproto.client.transactions import (
    ProducerFencedError,
    TransactionFatalError,
    TransactionManager,
    TransactionState,
)
from kproto.errors import ErrorCode
from kproto.index import ApiKey

Answer = Callable[[Call], Any]


def drive(op: WaitingOp[Any], answer: Answer) -> list[Call | Backoff]:
    """Run ``op`` answering each call with ``answer(call)``; the calls and waits
    it yielded, in order."""
    seen: list[Call | Backoff] = []
    try:
        step = next(op)
        while True:
            seen.append(step)
            step = op.send(None if isinstance(step, Backoff) else answer(step))
    except StopIteration:
        return seen


def coordinator(node: int = 1) -> Any:
    return NS(coordinators=[NS(error_code=0, node_id=node, host="h", port=node)])


def api_versions(tv: int, end_txn_max: int = 5) -> Any:
    keys = {ApiKey.END_TXN: end_txn_max, ApiKey.PRODUCE: 13}
    keys[ApiKey.TXN_OFFSET_COMMIT] = 5
    return NS(
        api_keys=[NS(api_key=k, max_version=v) for k, v in keys.items()],
        finalized_features=[NS(name="transaction.version", max_version_level=tv)],
    )


def answers(tv: int = 2, **per_api: list[Any]) -> Answer:
    """Answer FindCoordinator and ApiVersions; each other API from its list in
    ``per_api`` (by ApiKey name), in order."""
    queues = {ApiKey[k]: list(v) for k, v in per_api.items()}

    def answer(call: Call) -> Any:
        if call.api_key == ApiKey.FIND_COORDINATOR:
            return coordinator()
        if call.api_key == ApiKey.API_VERSIONS:
            return api_versions(tv)
        return queues[ApiKey(call.api_key)].pop(0)

    return answer


def init_ok(pid: int = 7, epoch: int = 0, code: int = 0) -> Any:
    return NS(error_code=code, producer_id=pid, producer_epoch=epoch)


def manager() -> TransactionManager:
    return TransactionManager(ClientCore("h:1"), "tx", retry_backoff_ms=10)


@pytest.mark.parametrize(
    ("tv", "end_txn_max", "expected"), [(2, 5, 2), (0, 5, 1), (2, 4, 1), (1, 5, 1)]
)
def test_transaction_version_from_api_versions(
    tv: int, end_txn_max: int, expected: int
) -> None:
    m = manager()

    def answer(call: Call) -> Any:
        if call.api_key == ApiKey.FIND_COORDINATOR:
            assert call.build(4)["key_type"] == 1  # TRANSACTION
            return coordinator()
        if call.api_key == ApiKey.API_VERSIONS:
            return api_versions(tv, end_txn_max)
        return init_ok()

    drive(m.init_transactions(), answer)
    assert m.transaction_version == expected
    assert m.produce_max_version == (None if expected == 2 else 11)
    assert (m.producer_id, m.producer_epoch, m.state) == (7, 0, TransactionState.READY)


def test_concurrent_transactions_backs_off_then_succeeds() -> None:
    m = manager()
    busy = init_ok(-1, -1, ErrorCode.CONCURRENT_TRANSACTIONS)
    seen = drive(
        m.init_transactions(), answers(INIT_PRODUCER_ID=[busy, busy, init_ok()])
    )
    assert [s for s in seen if isinstance(s, Backoff)] == [Backoff(10), Backoff(20)]
    assert m.state == TransactionState.READY


def test_retries_are_bounded() -> None:
    m = TransactionManager(ClientCore("h:1"), "tx", retry_backoff_ms=1, max_retries=3)
    busy = init_ok(-1, -1, ErrorCode.CONCURRENT_TRANSACTIONS)
    with pytest.raises(TransactionFatalError, match="CONCURRENT_TRANSACTIONS"):
        drive(m.init_transactions(), answers(INIT_PRODUCER_ID=[busy] * 4))
    assert m.state == TransactionState.FATAL_ERROR


def test_fenced_at_init() -> None:
    m = manager()
    fenced = init_ok(-1, -1, ErrorCode.PRODUCER_FENCED)
    with pytest.raises(ProducerFencedError):
        drive(m.init_transactions(), answers(INIT_PRODUCER_ID=[fenced]))


def test_a_moved_coordinator_is_found_again_and_tv2_adopts_a_new_id() -> None:
    m = manager()
    drive(m.init_transactions(), answers(INIT_PRODUCER_ID=[init_ok(7, 32766)]))
    m.begin_transaction()
    drive(m.add_partitions("t", [0]), answers())  # TV2: noted, nothing sent
    assert m.partitions == {("t", 0)}
    m.idempotence.sequences[("t", 0)] = 3
    moved = NS(error_code=ErrorCode.NOT_COORDINATOR, producer_id=-1, producer_epoch=-1)
    rotated = NS(error_code=0, producer_id=8, producer_epoch=0)
    nodes = iter([2, 3])

    def answer(call: Call) -> Any:
        if call.api_key == ApiKey.FIND_COORDINATOR:
            return coordinator(next(nodes))
        assert call.api_key == ApiKey.END_TXN and call.max_version is None
        fields = call.build(5)
        assert (fields["producer_id"], fields["producer_epoch"]) == (7, 32766)
        return moved if call.node == 1 else rotated

    seen = drive(m.commit_transaction(), answer)
    assert [(c.node, c.api_key) for c in seen if isinstance(c, Call)] == [
        (1, ApiKey.END_TXN),
        (-1, ApiKey.FIND_COORDINATOR),
        (2, ApiKey.END_TXN),
    ]
    # the epoch was exhausted: EndTxn v5 answered a new id at epoch 0
    assert (m.producer_id, m.producer_epoch) == (8, 0)
    assert m.idempotence.sequences == {} and m.coordinator == 2
    assert m.state == TransactionState.READY


def test_tv1_caps_versions_and_adds_partitions_first() -> None:
    m = manager()
    drive(m.init_transactions(), answers(tv=0, INIT_PRODUCER_ID=[init_ok()]))
    m.begin_transaction()
    added = NS(
        results_by_topic_v3_and_below=[
            NS(results_by_partition=[NS(partition_error_code=0)] * 2)
        ]
    )
    seen = drive(m.add_partitions("t", [1, 0]), answers(ADD_PARTITIONS_TO_TXN=[added]))
    (call,) = seen
    assert isinstance(call, Call) and call.max_version == 3
    assert call.build(3)["v3_and_below_topics"] == [{"name": "t", "partitions": [0, 1]}]
    # known partitions are not added again
    assert drive(m.add_partitions("t", [0]), answers()) == []
    end = NS(error_code=0, producer_id=-1, producer_epoch=-1)
    (call,) = drive(m.commit_transaction(), answers(tv=0, END_TXN=[end]))
    assert isinstance(call, Call) and call.max_version == 4
    assert (m.producer_id, m.producer_epoch) == (7, 0)  # TV1: the epoch stays
