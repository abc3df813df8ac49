"""kproto.client's transactional producer against kproto's broker at transaction
version 1 and 2: commits seen by a read_committed confluent-kafka consumer,
aborts not, the epoch bumped by every EndTxn at TV2 (and kept at TV1), fencing by
a second producer, consume-transform-produce with the offsets in the
transaction, TV2's implicit partition adds (no AddPartitionsToTxn on the wire),
and the state machine's refusals."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Iterator

import pytest

from kproto.broker import Cluster
from kproto.client import (
    AsyncTransactionalProducer,
    Client,
    ConsumerGroupMetadata,
    ProducerFencedError,
    TopicPartition,
    TransactionAbortableError,
    TransactionalProducer,
    TransactionStateError,
)
from kproto.client.transactions import TransactionState
from kproto.connection import KafkaConnectionError
from kproto.errors import ErrorCode
from kproto.index import ApiKey
from tests.eventually import eventually

ck = pytest.importorskip("confluent_kafka")

_ids = itertools.count()


@pytest.fixture(scope="module", params=[1, 2], ids=["tv1", "tv2"])
def cluster(request: pytest.FixtureRequest) -> Iterator[Cluster]:
    level = request.param
    with Cluster(nodes=2, transaction_version=level if level == 2 else None) as c:
        yield c


def topic(cluster: Cluster, partitions: int = 2) -> str:
    name = f"txn-{next(_ids)}"
    cluster.create_topic(name, partitions)
    return name


def state(producer: TransactionalProducer) -> TransactionState:
    return producer.manager.state


def level(cluster: Cluster) -> int:
    return 2 if cluster.txn.transaction_version >= 2 else 1


def read_committed(cluster: Cluster, name: str, expected: int) -> list[bytes]:
    """Every value a read_committed confluent-kafka consumer gets from ``name``
    (waiting for ``expected`` of them, then for the end of every partition)."""
    consumer = ck.Consumer(
        {
            "bootstrap.servers": cluster.bootstrap_servers,
            "group.id": f"reader-{next(_ids)}",
            "isolation.level": "read_committed",
            "auto.offset.reset": "earliest",
            "enable.partition.eof": True,
            "log_level": 0,
        }
    )
    consumer.subscribe([name])
    values: list[bytes] = []
    eof: set[int] = set()
    partitions = cluster.state.topic_partitions(name) or 0

    def done() -> bool:
        msg = consumer.poll(0.2)
        if msg is not None:
            if msg.error() is None:
                values.append(msg.value())
            elif msg.error().code() == ck.KafkaError._PARTITION_EOF:
                eof.add(msg.partition())
        return len(values) >= expected and len(eof) == partitions

    try:
        eventually(done, 20, interval_s=0)
    finally:
        consumer.close()
    return sorted(values)


def test_commit_is_visible_and_abort_is_not(cluster: Cluster) -> None:
    name = topic(cluster)
    with TransactionalProducer(cluster.bootstrap_servers, f"vis-{name}") as p:
        p.init_transactions()
        assert p.manager.transaction_version == level(cluster)
        with p.transaction():
            p.send(name, [(b"k1", b"committed-1"), (b"k2", b"committed-2")])
        p.begin_transaction()
        p.send(name, [(b"k1", b"aborted")])
        p.abort_transaction()
        with p.transaction():
            p.send(name, [(None, b"committed-3")], partition=1)
        assert p.manager.state == TransactionState.READY
    assert read_committed(cluster, name, 3) == [
        b"committed-1",
        b"committed-2",
        b"committed-3",
    ]
    with Client(cluster.bootstrap_servers) as client:
        uncommitted = [
            r.value
            for part in (0, 1)
            for r in client.fetch(name, part, 0, isolation_level=0).records
        ]
    assert b"aborted" in uncommitted


def test_epoch_per_end_txn(cluster: Cluster) -> None:
    name = topic(cluster)
    cluster.requests.clear()
    txn_id = f"epoch-{name}"
    with TransactionalProducer(cluster.bootstrap_servers, txn_id) as p:
        p.init_transactions()
        pid, epoch = p.manager.producer_id, p.manager.producer_epoch
        for committed in (True, False, True):
            p.begin_transaction()
            p.send(name, [(b"k", b"v")])
            if committed:
                p.commit_transaction()
            else:
                p.abort_transaction()
        ends = [
            r.response
            for r in cluster.requests.filter(api_key=ApiKey.END_TXN)
            if r.request.transactional_id == txn_id
        ]
        assert len(ends) == 3
        if level(cluster) == 2:
            # EndTxn v5: every end answers the bumped epoch, which the next uses
            assert [(e.producer_id, e.producer_epoch) for e in ends] == [
                (pid, epoch + 1),
                (pid, epoch + 2),
                (pid, epoch + 3),
            ]
            assert p.manager.producer_epoch == epoch + 3
        else:
            assert p.manager.producer_epoch == epoch
        assert cluster.txn.producer_of(txn_id) == (pid, p.manager.producer_epoch)
    assert read_committed(cluster, name, 2) == [b"v", b"v"]


def test_a_second_producer_fences_the_first(cluster: Cluster) -> None:
    name = topic(cluster)
    txn_id = f"fence-{name}"
    first = TransactionalProducer(cluster.bootstrap_servers, txn_id)
    second = TransactionalProducer(cluster.bootstrap_servers, txn_id)
    try:
        first.init_transactions()
        first.begin_transaction()
        first.send(name, [(b"k", b"zombie")])
        second.init_transactions()  # aborts the first's open transaction
        with pytest.raises(ProducerFencedError):
            first.send(name, [(b"k", b"zombie-2")])
        assert first.manager.state == TransactionState.FATAL_ERROR
        with pytest.raises(ProducerFencedError):
            first.commit_transaction()
        with second.transaction():
            second.send(name, [(b"k", b"alive")])
    finally:
        first.close()
        second.close()
    assert read_committed(cluster, name, 1) == [b"alive"]


def test_consume_transform_produce(cluster: Cluster) -> None:
    source, sink = topic(cluster, 1), topic(cluster)
    group = f"ctp-{source}"
    with Client(cluster.bootstrap_servers) as client:
        client.produce(source, [(None, b"a"), (None, b"b"), (None, b"c")], partition=0)
        records = client.fetch(source, 0, 0).records
    with TransactionalProducer(cluster.bootstrap_servers, f"ctp-{source}") as p:
        p.init_transactions()
        with p.transaction():
            p.send(sink, [(None, r.value.upper()) for r in records[:2] if r.value])
            p.send_offsets_to_transaction(
                {TopicPartition(source, 0): records[1].offset + 1},
                ConsumerGroupMetadata(group),
            )
        # an aborted transaction's offsets are not committed
        p.begin_transaction()
        p.send(sink, [(None, b"C")])
        p.send_offsets_to_transaction(
            {TopicPartition(source, 0): records[2].offset + 1},
            ConsumerGroupMetadata(group),
        )
        p.abort_transaction()
    with Client(cluster.bootstrap_servers) as client:
        committed = client.fetch_offsets(group, [TopicPartition(source, 0)])
    assert committed == {TopicPartition(source, 0): 2}
    assert read_committed(cluster, sink, 2) == [b"A", b"B"]


def test_a_stale_generation_makes_the_transaction_abortable(cluster: Cluster) -> None:
    """The group metadata reaches the coordinator: a live member's commit with a
    wrong generation is refused, which only an abort clears (Java's
    CommitFailedException)."""
    source = topic(cluster, 1)
    group = f"member-{source}"
    consumer = ck.Consumer(
        {
            "bootstrap.servers": cluster.bootstrap_servers,
            "group.id": group,
            "auto.offset.reset": "earliest",
            "log_level": 0,
        }
    )
    consumer.subscribe([source])
    try:
        eventually(lambda: consumer.poll(0.2) is None and consumer.assignment(), 20)
        member_id = consumer.memberid()
        with TransactionalProducer(cluster.bootstrap_servers, f"gen-{source}") as p:
            p.init_transactions()
            p.begin_transaction()
            p.send(source, [(None, b"x")])
            with pytest.raises(TransactionAbortableError):
                p.send_offsets_to_transaction(
                    {TopicPartition(source, 0): 1},
                    ConsumerGroupMetadata(group, 999, member_id),
                )
            assert p.manager.state == TransactionState.ABORTABLE_ERROR
            with pytest.raises(TransactionAbortableError):
                p.commit_transaction()
            p.abort_transaction()
            # usable again
            with p.transaction():
                p.send(source, [(None, b"y")])
    finally:
        consumer.close()


def test_implicit_partition_adds(cluster: Cluster) -> None:
    name = topic(cluster)
    txn_id = f"implicit-{name}"
    cluster.requests.clear()
    with TransactionalProducer(cluster.bootstrap_servers, txn_id) as p:
        p.init_transactions()
        with p.transaction():
            p.send(name, [(None, b"p0")], partition=0)
            p.send(name, [(None, b"p1")], partition=1)
            p.send_offsets_to_transaction(
                {TopicPartition(name, 0): 1}, ConsumerGroupMetadata(f"g-{name}")
            )
    adds = [
        r
        for r in cluster.requests.filter(api_key=ApiKey.ADD_PARTITIONS_TO_TXN)
        + cluster.requests.filter(api_key=ApiKey.ADD_OFFSETS_TO_TXN)
        if r.client_id == "kproto"
    ]
    produces = [
        r.api_version
        for r in cluster.requests.filter(api_key=ApiKey.PRODUCE)
        if r.request.transactional_id == txn_id
    ]
    commits = [
        r.api_version for r in cluster.requests.filter(api_key=ApiKey.TXN_OFFSET_COMMIT)
    ]
    if level(cluster) == 2:
        assert adds == [] and min(produces) >= 12 and commits == [5]
    else:
        assert len(adds) == 3 and max(produces) == 11 and commits == [4]
        assert [
            r.api_version for r in adds if r.api_key == ApiKey.ADD_PARTITIONS_TO_TXN
        ] == [3, 3]
    assert read_committed(cluster, name, 2) == [b"p0", b"p1"]


def test_state_errors(cluster: Cluster) -> None:
    name = topic(cluster)
    with TransactionalProducer(cluster.bootstrap_servers, f"state-{name}") as p:
        with pytest.raises(TransactionStateError):
            p.begin_transaction()  # before init_transactions
        p.init_transactions()
        with pytest.raises(TransactionStateError):
            p.send(name, [(None, b"v")])  # outside a transaction
        with pytest.raises(TransactionStateError):
            p.commit_transaction()
        p.begin_transaction()
        with pytest.raises(TransactionStateError):
            p.begin_transaction()
        # nothing sent: commit sends no EndTxn
        p.commit_transaction()
        with pytest.raises(ValueError):
            with p.transaction():
                p.send(name, [(None, b"dropped")])
                raise ValueError("the block failed")
        assert p.manager.state == TransactionState.READY
    with Client(cluster.bootstrap_servers) as client:
        values = [r.value for r in client.fetch(name, 0, 0, isolation_level=1).records]
        values += [r.value for r in client.fetch(name, 1, 0, isolation_level=1).records]
    assert values == []


def test_async_producer(cluster: Cluster) -> None:
    name = topic(cluster)

    async def run() -> int:
        async with AsyncTransactionalProducer(
            cluster.bootstrap_servers, f"aio-{name}"
        ) as p:
            await p.init_transactions()
            async with p.transaction():
                await p.send(name, [(None, b"async")], partition=0)
            return p.manager.producer_epoch

    epoch = asyncio.run(run())
    assert epoch == (1 if level(cluster) == 2 else 0)
    assert read_committed(cluster, name, 1) == [b"async"]


def test_async_fencing_waits_out_concurrent_transactions(cluster: Cluster) -> None:
    """The second producer's InitProducerId is first answered
    CONCURRENT_TRANSACTIONS (the first's transaction being aborted): the asyncio
    driver waits the backoff and sends it again."""
    name = topic(cluster)
    txn_id = f"aio-fence-{name}"

    async def run() -> None:
        first = AsyncTransactionalProducer(cluster.bootstrap_servers, txn_id)
        second = AsyncTransactionalProducer(cluster.bootstrap_servers, txn_id)
        async with first, second:
            await first.init_transactions()
            first.begin_transaction()
            await first.send(name, [(None, b"zombie")], partition=0)
            cluster.requests.clear()
            await second.init_transactions()
            with pytest.raises(ProducerFencedError):
                await first.send(name, [(None, b"zombie-2")], partition=0)
            async with second.transaction():
                await second.send(name, [(None, b"alive")], partition=0)

    asyncio.run(run())
    inits = [
        r.response.error_code
        for r in cluster.requests.filter(api_key=ApiKey.INIT_PRODUCER_ID)
    ]
    assert inits[0] == ErrorCode.CONCURRENT_TRANSACTIONS and inits[-1] == 0
    assert read_committed(cluster, name, 1) == [b"alive"]


def test_end_txn_errors_are_retried_and_a_lost_commit_resent(cluster: Cluster) -> None:
    """EndTxn answered NOT_COORDINATOR (the coordinator is found again) then
    CONCURRENT_TRANSACTIONS (resent after a backoff) commits; a commit whose
    connection dropped can be called again."""
    name = topic(cluster)
    txn_id = f"retry-{name}"
    with TransactionalProducer(cluster.bootstrap_servers, txn_id) as p:
        p.init_transactions()
        p.begin_transaction()
        p.send(name, [(None, b"first")], partition=0)
        cluster.requests.clear()
        cluster.inject_errors(
            ApiKey.END_TXN,
            [ErrorCode.NOT_COORDINATOR, ErrorCode.CONCURRENT_TRANSACTIONS],
        )
        p.commit_transaction()
        seen = [
            r.api_key
            for r in cluster.requests
            if r.api_key in (ApiKey.END_TXN, ApiKey.FIND_COORDINATOR)
        ]
        assert seen == [
            ApiKey.END_TXN,
            ApiKey.FIND_COORDINATOR,
            ApiKey.END_TXN,
            ApiKey.END_TXN,
        ]
        p.begin_transaction()
        p.send(name, [(None, b"second")], partition=0)
        cluster.inject_errors(ApiKey.END_TXN, ["disconnect"])
        with pytest.raises(KafkaConnectionError):
            p.commit_transaction()
        assert state(p) == TransactionState.COMMITTING_TRANSACTION
        p.commit_transaction()
        assert state(p) == TransactionState.READY
    assert read_committed(cluster, name, 2) == [b"first", b"second"]
