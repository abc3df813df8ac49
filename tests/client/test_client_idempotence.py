"""The idempotent producer (``enable_idempotence=True``) against the in-process
broker: producer id and per-partition sequences in the batch headers, a resent
batch stored once, epoch bumps after the broker refuses the sequence state."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any, TypeVar

import attrs
import pytest

from kproto.broker import Cluster
from kproto.client import AsyncClient, Client, ClientError, ProducerSequenceError
from kproto.client.protocol import Op, fit
from kproto.errors import ErrorCode
from kproto.index import ApiKey, request_type
from kproto.records import Compression, RecordBatch, decode_batches

T = TypeVar("T")


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    with Cluster(num_partitions=2) as c:
        yield c


def batches(client: Client, topic: str, partition: int) -> list[RecordBatch]:
    raw = client.fetch(topic, partition, 0, decode=False).raw
    return list(decode_batches(raw))


def with_produce_error(response: Any, code: int) -> Any:
    """``response`` with its first partition's error code replaced (the answer of
    a batch the broker stored, as if it had been lost and replaced by an error)."""
    topic = response.responses[0]
    part = attrs.evolve(topic.partition_responses[0], error_code=code)
    topic = attrs.evolve(topic, partition_responses=(part,))
    return attrs.evolve(response, responses=(topic,))


def run_faulty(client: Client, op: Op[T], code: int) -> T:
    """Drive ``op`` as :meth:`Client.run` does, replacing the first Produce
    answer's error code with ``code`` after the broker has handled it."""
    faulted = False
    call = next(op)
    try:
        while True:
            conn = client.connection(call.node)
            version = conn.version_for(call.api_key)
            fields = fit(request_type(call.api_key, version), call.build(version))
            response = conn.send(conn.build_request(call.api_key, fields))
            if call.api_key == ApiKey.PRODUCE and not faulted:
                faulted = True
                response = with_produce_error(response, code)
            call = op.send(response)
    except StopIteration as stop:
        result: T = stop.value
        return result


def test_sequences_advance_per_partition(cluster: Cluster) -> None:
    with Client(cluster.bootstrap_servers, enable_idempotence=True) as client:
        client.produce(
            "idem-seq", [(None, b"a"), (None, b"b"), (None, b"c")], partition=0
        )
        client.produce("idem-seq", [(None, b"d"), (None, b"e")], partition=0)
        client.produce("idem-seq", [(None, b"x")], partition=1)
        idem = client.core.idempotence
        assert idem is not None and idem.producer_id >= 0
        first, second = batches(client, "idem-seq", 0)
        (other,) = batches(client, "idem-seq", 1)
    assert [b.base_sequence for b in (first, second, other)] == [0, 3, 0]
    assert {(b.producer_id, b.producer_epoch) for b in (first, second, other)} == {
        (idem.producer_id, idem.producer_epoch)
    }
    assert idem.sequences == {("idem-seq", 0): 5, ("idem-seq", 1): 1}


@pytest.mark.parametrize(
    "code", [ErrorCode.REQUEST_TIMED_OUT, ErrorCode.NOT_LEADER_OR_FOLLOWER]
)
def test_resent_batch_is_stored_once(cluster: Cluster, code: ErrorCode) -> None:
    topic = f"idem-retry-{int(code)}"
    with Client(cluster.bootstrap_servers, enable_idempotence=True) as client:
        client.produce(topic, [(b"k0", b"first")], partition=0)
        op = client.core.produce(
            topic,
            [(b"k1", b"v1"), (b"k2", b"v2")],
            partition=0,
            acks=-1,
            compression=Compression.NONE,
            timeout_ms=30_000,
        )
        sent = run_faulty(client, op, code)
        assert [r.offset for r in sent] == [1, 2]  # the first send's offsets
        client.produce(topic, [(b"k3", b"after")], partition=0)
        stored = batches(client, topic, 0)
    assert [r.value for r in cluster.records(topic)] == [
        b"first",
        b"v1",
        b"v2",
        b"after",
    ]
    assert [b.base_sequence for b in stored] == [0, 1, 3]


def test_plain_client_would_store_a_resend_twice(cluster: Cluster) -> None:
    """The control: without idempotence the same fault duplicates the records."""
    topic = "idem-control"
    with Client(cluster.bootstrap_servers) as client:
        op = client.core.produce(
            topic,
            [(None, b"v")],
            partition=0,
            acks=-1,
            compression=Compression.NONE,
            timeout_ms=30_000,
        )
        run_faulty(client, op, ErrorCode.NOT_LEADER_OR_FOLLOWER)
    assert [r.value for r in cluster.records(topic)] == [b"v", b"v"]


def test_out_of_order_sequence_raises_then_bumps(cluster: Cluster) -> None:
    topic = "idem-ooo"
    with Client(cluster.bootstrap_servers, enable_idempotence=True) as client:
        client.produce(topic, [(None, b"a")], partition=0)
        idem = client.core.idempotence
        assert idem is not None
        before = (idem.producer_id, idem.producer_epoch)
        idem.sequences[(topic, 0)] = 7  # a gap the broker refuses
        with pytest.raises(ProducerSequenceError) as info:
            client.produce(topic, [(None, b"lost")], partition=0)
        assert info.value.error_code == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
        assert info.value.partition == 0 and idem.bump_needed
        client.produce(topic, [(None, b"b")], partition=0)
        after = (idem.producer_id, idem.producer_epoch)
        last = batches(client, topic, 0)[-1]
    assert after != before and not idem.bump_needed
    assert (last.producer_id, last.producer_epoch, last.base_sequence) == (*after, 0)
    assert [r.value for r in cluster.records(topic)] == [b"a", b"b"]


def test_unknown_producer_id_bumps_and_resends(cluster: Cluster) -> None:
    """UNKNOWN_PRODUCER_ID bumps the epoch and resends the batch from sequence 0
    (the answer is made up after the broker stored the first send, so here the
    resend is a second batch: the point is its header)."""
    topic = "idem-unknown"
    with Client(cluster.bootstrap_servers, enable_idempotence=True) as client:
        client.produce(topic, [(None, b"a")], partition=0)
        idem = client.core.idempotence
        assert idem is not None
        before = (idem.producer_id, idem.producer_epoch)
        op = client.core.produce(
            topic,
            [(None, b"b")],
            partition=0,
            acks=-1,
            compression=Compression.NONE,
            timeout_ms=30_000,
        )
        run_faulty(client, op, ErrorCode.UNKNOWN_PRODUCER_ID)
        stored = batches(client, topic, 0)
    # The broker stored the first send too (the fault is made up): the resend
    # under the new epoch is a new batch, with sequence 0.
    assert (idem.producer_id, idem.producer_epoch) != before
    assert [(b.producer_id, b.producer_epoch, b.base_sequence) for b in stored][-1] == (
        idem.producer_id,
        idem.producer_epoch,
        0,
    )


def test_idempotence_needs_acks_all(cluster: Cluster) -> None:
    with Client(cluster.bootstrap_servers, enable_idempotence=True) as client:
        with pytest.raises(ClientError, match="acks must be -1"):
            client.produce("idem-acks", [(None, b"v")], acks=1)


def test_async_client_idempotent(cluster: Cluster) -> None:
    async def main() -> list[int]:
        async with AsyncClient(
            cluster.bootstrap_servers, enable_idempotence=True
        ) as client:
            await client.produce(
                "idem-async", [(None, b"a"), (None, b"b")], partition=0
            )
            await client.produce("idem-async", [(None, b"c")], partition=0)
            raw = (await client.fetch("idem-async", 0, 0, decode=False)).raw
            return [b.base_sequence for b in decode_batches(raw)]

    assert asyncio.run(main()) == [0, 2]
