"""A transactional broker's data dir stays readable: ``kproto dump-log`` shows the
control records (transaction markers) with valid CRCs and the
``__transaction_state`` records."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest

from kproto.broker import Cluster
from kproto.broker.txn import TransactionState, decode_record
from kproto.cli import main
from tests.broker.txn.support import commit_kept_abort_dropped, transactional_producer


def test_dump_log_shows_markers_and_transaction_state(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "data"
    with Cluster(data_dir=data) as cluster:
        cluster.create_topic("orders", 1)
        commit_kept_abort_dropped(transactional_producer(cluster, "dumped"), "orders")
        txn_partition = cluster.txn.partition_for("dumped")
    segments = sorted(data.glob("orders-0/*.log"))
    assert main(["dump-log", "--json", "--fail-on-corrupt", *map(str, segments)]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [(r["is_control"], r["is_transactional"]) for r in rows] == [
        (False, True),
        (True, True),
        (False, True),
        (True, True),
    ]
    assert all(r["is_valid"] for r in rows)
    assert [r["control"] for r in rows if r["is_control"]] == [
        {"type": "COMMIT", "coordinator_epoch": 0},
        {"type": "ABORT", "coordinator_epoch": 0},
    ]
    assert [r["size"] for r in rows if r["is_control"]] == [78, 78]  # as Kafka's
    assert len({r["producer_id"] for r in rows}) == 1
    assert main(["dump-log", *map(str, segments)]) == 0
    text = capsys.readouterr().out
    assert text.count("endTxnMarker: COMMIT coordinatorEpoch: 0") == 1
    assert text.count("endTxnMarker: ABORT coordinatorEpoch: 0") == 1
    assert "isvalid: false" not in text

    state_dir = data / f"__transaction_state-{txn_partition}"
    assert (
        main(["dump-log", "--json", "--transaction-log-decoder", str(state_dir)]) == 0
    )
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    # kafka-dump-log.sh --transaction-log-decoder's shapes: the key type and
    # TransactionLogKey, the value version and TransactionLogValue
    assert {json.dumps(r["decoded"]["key"]) for r in rows} == {
        json.dumps({"type": "0", "data": {"transactionalId": "dumped"}})
    }
    statuses = [r["decoded"]["value"]["data"]["transactionStatus"] for r in rows]
    expected = [
        TransactionState.EMPTY,
        TransactionState.ONGOING,
        TransactionState.PREPARE_COMMIT,
        TransactionState.COMPLETE_COMMIT,
        TransactionState.ONGOING,
        TransactionState.PREPARE_ABORT,
        TransactionState.COMPLETE_ABORT,
    ]
    assert statuses == [int(s) for s in expected]
    # the coordinator's own decoder reads the same records
    states = [
        decode_record(base64.b64decode(r["key"]), base64.b64decode(r["value"]))[1]
        for r in rows
    ]
    assert [s.state for s in states if s is not None] == expected
