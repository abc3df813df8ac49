"""TxnOffsetCommit against groups with live members, as Kafka's
``OffsetMetadataManager.validateTransactionalOffsetCommit`` checks it: a commit
without member (v0-v2, as aiokafka's ``send_offsets_to_transaction`` sends) is
accepted by a classic or consumer group with members; the classic group's state is
not enforced (no REBALANCE_IN_PROGRESS while it completes a rebalance); a member's
commit is still checked (UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION)."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Iterator
from typing import Any

import pytest

from kproto.broker import Cluster
from kproto.connection import Connection
from kproto.errors import ErrorCode
from kproto.index import ApiKey, request_type
from kproto.meta import build_entity
from tests.broker import wire
from tests.broker.conftest import cluster_with_topic

pytestmark = pytest.mark.timeout(90)
_ids = itertools.count()
TOPIC = "txoc"


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    yield from cluster_with_topic(TOPIC, 2, nodes=1)


@pytest.fixture
def conn(cluster: Cluster) -> Iterator[Connection]:
    # JoinGroup without KIP-394's extra round trip
    with wire.connect(cluster, caps={ApiKey.JOIN_GROUP: 3}, timeout_s=20) as c:
        yield c


class Txn:
    """A transactional producer id with the group's offsets added (AddOffsetsToTxn)."""

    def __init__(self, conn: Connection, group: str) -> None:
        self.conn = conn
        self.group = group
        self.txn_id = f"txoc-{next(_ids)}"
        init = conn.request(
            ApiKey.INIT_PRODUCER_ID,
            transactional_id=self.txn_id,
            transaction_timeout_ms=60_000,
        )
        assert init.error_code == ErrorCode.NONE
        self.pid, self.epoch = init.producer_id, init.producer_epoch
        self.request(ApiKey.ADD_OFFSETS_TO_TXN, group_id=group)

    def request(self, api_key: ApiKey, **fields: Any) -> None:
        """``api_key`` with ``fields`` for this transaction (its id, producer id and
        epoch), answered without error."""
        answer = self.conn.request(
            api_key,
            transactional_id=self.txn_id,
            producer_id=self.pid,
            producer_epoch=self.epoch,
            **fields,
        )
        assert answer.error_code == ErrorCode.NONE

    def commit_offset(
        self, offset: int, version: int, generation: int = -1, member: str = ""
    ) -> int:
        """TxnOffsetCommit of TOPIC-0 at ``version``; the partition's error code."""
        # the fields a version does not have are dropped (v0-v2 carry no member)
        request = build_entity(
            request_type(ApiKey.TXN_OFFSET_COMMIT, version),
            {
                "transactional_id": self.txn_id,
                "group_id": self.group,
                "producer_id": self.pid,
                "producer_epoch": self.epoch,
                "generation_id_or_member_epoch": generation,
                "member_id": member,
                "group_instance_id": None,
                "topics": [
                    {
                        "name": TOPIC,
                        "partitions": [
                            {
                                "partition_index": 0,
                                "committed_offset": offset,
                                "committed_leader_epoch": -1,
                                "committed_metadata": "",
                            }
                        ],
                    }
                ],
            },
            drop_absent=True,
        )
        answer = self.conn.send(request)
        return int(answer.topics[0].partitions[0].error_code)

    def end(self, commit: bool = True) -> None:
        self.request(ApiKey.END_TXN, committed=commit)


def join_classic(conn: Connection, group: str) -> Any:
    joined = wire.join_classic(
        conn, group, metadata=b"\x00\x00\x00\x00\x00\x00", timeout_ms=30_000
    )
    assert joined.error_code == ErrorCode.NONE
    return joined


def sync_classic(conn: Connection, group: str, joined: Any) -> None:
    synced = conn.request(
        ApiKey.SYNC_GROUP,
        group_id=group,
        generation_id=joined.generation_id,
        member_id=joined.member_id,
        assignments=[{"member_id": joined.member_id, "assignment": b""}],
    )
    assert synced.error_code == ErrorCode.NONE


def plain_commit(conn: Connection, group: str, generation: int, member: str) -> int:
    conn.negotiate(caps={ApiKey.OFFSET_COMMIT: 8})
    answer = conn.request(
        ApiKey.OFFSET_COMMIT,
        group_id=group,
        generation_id_or_member_epoch=generation,
        member_id=member,
        group_instance_id=None,
        topics=[
            {
                "name": TOPIC,
                "partitions": [
                    {
                        "partition_index": 0,
                        "committed_offset": 1,
                        "committed_leader_epoch": -1,
                        "committed_metadata": "",
                    }
                ],
            }
        ],
    )
    return int(answer.topics[0].partitions[0].error_code)


def committed(cluster: Cluster, group: str) -> int | None:
    offset = cluster.groups.fetch_offsets(group, [(TOPIC, 0)])[(TOPIC, 0)]
    return None if offset is None else offset.offset


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_memberless_commit_to_a_stable_classic_group(
    cluster: Cluster, conn: Connection, version: int
) -> None:
    group = f"stable-{version}"
    sync_classic(conn, group, join_classic(conn, group))
    # an admin commit without member is refused by a group with members ...
    assert plain_commit(conn, group, -1, "") == ErrorCode.UNKNOWN_MEMBER_ID
    # ... a transactional one is not (ClassicGroup.validateOffsetCommit)
    txn = Txn(conn, group)
    assert txn.commit_offset(17, version) == ErrorCode.NONE
    assert committed(cluster, group) is None  # pending until the marker
    txn.end()
    assert committed(cluster, group) == 17


def test_classic_group_completing_a_rebalance(
    cluster: Cluster, conn: Connection
) -> None:
    group = "completing"
    joined = join_classic(conn, group)  # no SyncGroup: CompletingRebalance
    member, generation = joined.member_id, joined.generation_id
    assert plain_commit(conn, group, generation, member) == (
        ErrorCode.REBALANCE_IN_PROGRESS
    )
    txn = Txn(conn, group)
    # the group state is not enforced for transactional commits
    assert txn.commit_offset(5, 0) == ErrorCode.NONE
    assert txn.commit_offset(6, 3, generation, member) == ErrorCode.NONE
    # the member is still checked
    assert txn.commit_offset(7, 3, generation, "stranger") == (
        ErrorCode.UNKNOWN_MEMBER_ID
    )
    assert txn.commit_offset(7, 3, generation + 1, member) == (
        ErrorCode.ILLEGAL_GENERATION
    )
    txn.end()
    assert committed(cluster, group) == 6


def test_consumer_group_with_members(cluster: Cluster, conn: Connection) -> None:
    group = "kip848"
    beat = wire.join_consumer_group(
        conn, group, "m1", [TOPIC], rebalance_timeout_ms=30_000
    )
    assert beat.error_code == ErrorCode.NONE
    epoch = beat.member_epoch
    txn = Txn(conn, group)
    # ConsumerGroup.validateOffsetCommit: no member, generation -1, transactional
    assert txn.commit_offset(3, 0) == ErrorCode.NONE
    assert txn.commit_offset(4, 3, epoch, "m1") == ErrorCode.NONE
    # a stale epoch is ILLEGAL_GENERATION for TxnOffsetCommit (not STALE_MEMBER_EPOCH)
    assert txn.commit_offset(9, 3, epoch + 1, "m1") == ErrorCode.ILLEGAL_GENERATION
    assert txn.commit_offset(9, 3, epoch, "m2") == ErrorCode.UNKNOWN_MEMBER_ID
    # a plain commit without member is still refused
    assert plain_commit(conn, group, -1, "") == ErrorCode.UNKNOWN_MEMBER_ID
    txn.end()
    assert committed(cluster, group) == 4


def test_aiokafka_consume_transform_produce_exactly_once(cluster: Cluster) -> None:
    """aiokafka's transactional producer commits the consumer's offsets with
    TxnOffsetCommit v0 while the consumer is a live member of its group."""
    aiokafka = pytest.importorskip("aiokafka")
    cluster.create_topic("eos-in", 1)
    cluster.create_topic("eos-out", 1)
    group = "eos-app"

    async def run() -> tuple[list[bytes], int | None]:
        producer = aiokafka.AIOKafkaProducer(
            bootstrap_servers=cluster.bootstrap_servers
        )
        await producer.start()
        for i in range(10):
            await producer.send_and_wait("eos-in", b"v%d" % i, partition=0)
        await producer.stop()
        consumer = aiokafka.AIOKafkaConsumer(
            "eos-in",
            bootstrap_servers=cluster.bootstrap_servers,
            group_id=group,
            enable_auto_commit=False,
            auto_offset_reset="earliest",
            isolation_level="read_committed",
        )
        txn = aiokafka.AIOKafkaProducer(
            bootstrap_servers=cluster.bootstrap_servers,
            transactional_id="eos-app-txn",
        )
        await consumer.start()
        await txn.start()
        try:
            done = 0
            aborted = False
            while done < 10:
                batches = await consumer.getmany(timeout_ms=1000, max_records=4)
                for tp, records in batches.items():
                    if not aborted:
                        # one transaction aborted: its output and offsets vanish
                        aborted = True
                        await txn.begin_transaction()
                        await txn.send("eos-out", b"lost", partition=0)
                        await txn.send_offsets_to_transaction(
                            {tp: records[-1].offset + 1}, group
                        )
                        await txn.abort_transaction()
                        consumer.seek(tp, records[0].offset)
                        break
                    async with txn.transaction():
                        for r in records:
                            await txn.send("eos-out", r.value.upper(), partition=0)
                        await txn.send_offsets_to_transaction(
                            {tp: records[-1].offset + 1}, group
                        )
                    done += len(records)
        finally:
            await txn.stop()
            await consumer.stop()
        reader = aiokafka.AIOKafkaConsumer(
            "eos-out",
            bootstrap_servers=cluster.bootstrap_servers,
            auto_offset_reset="earliest",
            isolation_level="read_committed",
        )
        await reader.start()
        out: list[bytes] = []
        try:
            while len(out) < 10:
                batches = await reader.getmany(timeout_ms=1000)
                out += [r.value for rs in batches.values() for r in rs]
        finally:
            await reader.stop()
        offset = cluster.groups.fetch_offsets(group, [("eos-in", 0)])[("eos-in", 0)]
        return out, None if offset is None else offset.offset

    out, offset = asyncio.run(asyncio.wait_for(run(), 60))
    assert out == [b"V%d" % i for i in range(10)]
    assert offset == 10
