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
from kproto.client.core import ClientCore
from kproto.client.protocol import Op, fit
from kproto.errors import ErrorCode
from kproto.index import ApiKey, request_type, response_type
from kproto.meta import build_entity
from kproto.records import RecordBatch, decode_batches

from .test_client_core import produce_op

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
        op = produce_op(
            client.core, topic, [(b"k1", b"v1"), (b"k2", b"v2")], timeout_ms=30_000
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
        op = produce_op(client.core, topic, [(None, b"v")], timeout_ms=30_000)
        run_faulty(client, op, ErrorCode.NOT_LEADER_OR_FOLLOWER)
    assert [r.value for r in cluster.records(topic)] == [b"v", b"v"]


def _first_record(client: Client, topic: str) -> tuple[Any, tuple[int, int]]:
    """Produce b"a" to ``topic``-0 (the client gets its producer id); the client's
    idempotence state and its (producer id, producer epoch) then."""
    client.produce(topic, [(None, b"a")], partition=0)
    idem = client.core.idempotence
    assert idem is not None
    return idem, (idem.producer_id, idem.producer_epoch)


def test_out_of_order_sequence_raises_then_bumps(cluster: Cluster) -> None:
    topic = "idem-ooo"
    with Client(cluster.bootstrap_servers, enable_idempotence=True) as client:
        idem, before = _first_record(client, topic)
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
        idem, before = _first_record(client, topic)
        op = produce_op(client.core, topic, [(None, b"b")], timeout_ms=30_000)
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


# Scripted (no broker): what InitProducerId asks for an epoch bump (KIP-360).

INIT = ApiKey.INIT_PRODUCER_ID


def init_answer(producer_id: int, epoch: int, error: int = 0) -> dict[str, Any]:
    return {
        "throttle_time_ms": 0,
        "error_code": error,
        "producer_id": producer_id,
        "producer_epoch": epoch,
    }


def test_epoch_bump_sends_the_current_id_and_epoch() -> None:
    from .test_client_core import Script, metadata, produce_answer

    core = ClientCore("b1:9001", enable_idempotence=True)
    versions: dict[int, int] = {ApiKey.METADATA: 12, INIT: 5, ApiKey.PRODUCE: 11}
    script = Script(
        versions,
        (ApiKey.METADATA, metadata({0: 1})),
        (INIT, init_answer(4000, 0)),
        (ApiKey.PRODUCE, produce_answer({0: (ErrorCode.UNKNOWN_PRODUCER_ID, -1)})),
        (INIT, init_answer(4000, 1)),
        (ApiKey.PRODUCE, produce_answer({0: (0, 10)})),
    )
    op = produce_op(core, "orders", [(b"k", b"v")], timeout_ms=1000)
    assert [r.offset for r in script.run(op)] == [10]
    first, bump = (r for _, r in script.requests(INIT))
    assert (first.producer_id, first.producer_epoch) == (-1, -1)
    assert (bump.producer_id, bump.producer_epoch) == (4000, 0)
    sent = [r for _, r in script.requests(ApiKey.PRODUCE)]
    headers = [
        (b.producer_id, b.producer_epoch, b.base_sequence)
        for r in sent
        for b in decode_batches(r.topic_data[0].partition_data[0].records)
    ]
    assert headers == [(4000, 0, 0), (4000, 1, 0)]
    idem = core.idempotence
    assert idem is not None and idem.sequences == {("orders", 0): 1}


def test_refused_bump_asks_a_new_id() -> None:
    from .test_client_core import Script

    core = ClientCore("b1:9001", enable_idempotence=True)
    idem = core.idempotence
    assert idem is not None
    idem.producer_id, idem.producer_epoch, idem.bump_needed = 7, 3, True
    script = Script(
        {INIT: 4},
        (INIT, init_answer(-1, -1, ErrorCode.INVALID_PRODUCER_EPOCH)),
        (INIT, init_answer(8, 0)),
    )
    script.run(idem.ensure())
    asked = [(r.producer_id, r.producer_epoch) for _, r in script.requests(INIT)]
    assert asked == [(7, 3), (-1, -1)]
    assert (idem.producer_id, idem.producer_epoch, idem.bump_needed) == (8, 0, False)


def test_a_produce_left_unanswered_bumps_the_epoch_next_time() -> None:
    """A connection lost after the Produce went out (the driver closes the
    operation): the batch may be stored, so the next produce starts a new epoch."""
    from .test_client_core import metadata

    core = ClientCore("b1:9001", enable_idempotence=True)
    idem = core.idempotence
    assert idem is not None
    idem.producer_id, idem.producer_epoch = 9, 0
    core.metadata.update(
        build_entity(
            response_type(ApiKey.METADATA, 12),
            fit(response_type(ApiKey.METADATA, 12), metadata({0: 1})),
        )
    )
    op = produce_op(core, "orders", [(None, b"v")], timeout_ms=1000)
    call = next(op)
    assert call.api_key == ApiKey.PRODUCE and not idem.bump_needed
    op.close()  # what Client.run does when the connection fails
    assert idem.bump_needed
