"""read_committed in the client against the in-process broker: a confluent-kafka
transactional producer commits one transaction and aborts another; Fetch and
iter_records with isolation_level 1 drop the aborted records (Java's
``CompletedFetch``), read_uncommitted returns both."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from kproto.broker import Cluster
from kproto.client import AbortedTransaction, AsyncClient, Client

ck = pytest.importorskip("confluent_kafka")

COMMITTED = [b"committed-%d" % i for i in range(5)]
ABORTED = [b"aborted-%d" % i for i in range(4)]
LAST = [b"last"]


@pytest.fixture(scope="module")
def topic(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Cluster, str]]:
    with Cluster(nodes=1, data_dir=tmp_path_factory.mktemp("rc")) as cluster:
        cluster.create_topic("rc", 1)
        p = ck.Producer(
            {
                "bootstrap.servers": cluster.bootstrap_servers,
                "transactional.id": "rc-app",
                "linger.ms": 1,
                "log_level": 0,
            }
        )
        p.init_transactions(20)
        for values in (COMMITTED, ABORTED, LAST):
            p.begin_transaction()
            for v in values:
                p.produce("rc", v, partition=0)
            if values is ABORTED:
                p.flush(10)
                p.abort_transaction(20)
            else:
                p.commit_transaction(20)
        yield cluster, "rc"


def test_fetch_read_committed_drops_aborted(topic: tuple[Cluster, str]) -> None:
    cluster, name = topic
    with Client(cluster.bootstrap_servers) as client:
        committed = client.fetch(name, 0, 0, isolation_level=1)
        uncommitted = client.fetch(name, 0, 0, isolation_level=0)
    assert [r.value for r in committed.records] == COMMITTED + LAST
    assert [r.value for r in uncommitted.records] == COMMITTED + ABORTED + LAST
    # the aborted transaction starts after the first one and its COMMIT marker
    producer_id = committed.aborted_transactions[0].producer_id
    assert committed.aborted_transactions == (
        AbortedTransaction(producer_id, len(COMMITTED) + 1),
    )
    assert uncommitted.aborted_transactions == ()
    assert committed.last_stable_offset == committed.high_watermark
    # raw keeps the aborted batch for callers that filter themselves
    assert committed.raw == uncommitted.raw


def test_iter_records_read_committed(topic: tuple[Cluster, str]) -> None:
    cluster, name = topic
    with Client(cluster.bootstrap_servers) as client:
        # one batch per page: the aborted set is per Fetch response
        committed = list(
            client.iter_records(name, 0, 0, max_bytes=1, isolation_level=1)
        )
        everything = list(client.iter_records(name, 0, 0, isolation_level=0))
    assert [r.value for r in committed] == COMMITTED + LAST
    assert [r.value for r in everything] == COMMITTED + ABORTED + LAST


def test_async_iter_records_read_committed(topic: tuple[Cluster, str]) -> None:
    cluster, name = topic

    async def run() -> list[bytes | None]:
        async with AsyncClient(cluster.bootstrap_servers) as client:
            return [
                r.value
                async for r in client.iter_records(name, 0, 3, isolation_level=1)
            ]

    assert asyncio.run(run()) == COMMITTED[3:] + LAST
