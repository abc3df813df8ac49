"""The live-test harness: librdkafka's mock cluster, run in-process on 127.0.0.1,
and raw per-version request helpers over :class:`kproto.connection.Connection`.

:class:`MockCluster` starts the cluster (through ``confluent-kafka``, a dev
dependency); :class:`Brokers` keeps one negotiated connection per node;
:func:`produce_batch`, :func:`fetch_partition` and :func:`fetch_all` send one
partition's Produce/Fetch at a chosen version (the tests of
:class:`kproto.connection.Connection` need that; applications use
:mod:`kproto.client`), building fields with :func:`kproto.client.protocol.fit`.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
from typing import Any

from kproto._closing import Closing
from kproto.client.protocol import fit
from kproto.connection import Connection
from kproto.errors import KafkaProtocolError
from kproto.index import ApiKey, data_type, request_type
from kproto.meta import build_entity
from kproto.records import decode_batches
from kproto.serial import encode
from tests.eventually import eventually

#: Versions librdkafka's mock cluster advertises but mishandles (2.16): it closes
#: the connection on JoinGroup v6 and SyncGroup v4 (flexible versions it misparses)
#: and answers LeaveGroup v3+ without the ``members`` array.
MOCK_VERSION_CAPS: dict[int, int] = {
    ApiKey.JOIN_GROUP: 5,
    ApiKey.SYNC_GROUP: 3,
    ApiKey.LEAVE_GROUP: 2,
}


class MockCluster(Closing):
    """librdkafka's mock cluster, run inside this process.

    The cluster lives as long as a ``confluent_kafka.Producer`` configured with
    ``test.mock.num.brokers``; brokers listen on 127.0.0.1 ports chosen by the OS.
    Topics are auto-created (4 partitions, replication 3) by Metadata requests with
    ``allow_auto_topic_creation`` and by produce.

    Args:
        num_brokers: number of brokers (node ids 1..n).
        timeout_s: seconds to wait for the cluster's first metadata.

    Attributes:
        brokers: ``{node_id: (host, port)}``.
        bootstrap: ``"host:port,..."`` for Kafka clients.

    Raises:
        ImportError: confluent-kafka is not installed (``pip install -e .[dev]``).
        RuntimeError: the cluster did not answer within ``timeout_s``.
    """

    def __init__(self, num_brokers: int = 3, *, timeout_s: float = 20.0) -> None:
        try:
            import confluent_kafka
        except ImportError as err:  # pragma: no cover - environment problem
            raise ImportError(
                "the mock cluster needs confluent-kafka: pip install -e '.[dev]'"
            ) from err
        self._producer: Any = confluent_kafka.Producer(
            {
                "bootstrap.servers": "",
                "test.mock.num.brokers": num_brokers,
                "log_level": 2,
            }
        )

        def listed() -> dict[int, tuple[str, int]] | None:
            md = self._producer.list_topics(timeout=min(timeout_s, 5.0))
            found = {b.id: (b.host, b.port) for b in md.brokers.values()}
            return found if len(found) >= num_brokers else None

        try:
            brokers = eventually(listed, timeout_s, interval_s=0)
        except AssertionError:
            self.close()
            raise RuntimeError(
                f"mock cluster did not come up within {timeout_s} s"
            ) from None
        self.brokers: dict[int, tuple[str, int]] = dict(sorted(brokers.items()))
        self.bootstrap = ",".join(f"{h}:{p}" for h, p in self.brokers.values())

    def close(self) -> None:
        """Stop the cluster (destroys the owning librdkafka handle). Idempotent."""
        producer, self._producer = self._producer, None
        if producer is not None:
            producer.flush(5)
            close = getattr(producer, "close", None)
            if close is not None:
                close()
            del producer


class Brokers(Closing):
    """One negotiated :class:`Connection` per broker node id, opened on first use.

    Args:
        addresses: ``{node_id: (host, port)}``.
        timeout_s: passed to each :class:`Connection`.
        caps: version caps for :meth:`Connection.negotiate` (default
            :data:`MOCK_VERSION_CAPS`).

    Raises (from :meth:`get`):
        KeyError: unknown node id.
        kproto.connection.KafkaConnectionError: connecting or negotiating failed.
    """

    def __init__(
        self,
        addresses: dict[int, tuple[str, int]],
        *,
        timeout_s: float = 10.0,
        caps: dict[int, int] | None = None,
    ):
        self.addresses = dict(addresses)
        self.timeout_s = timeout_s
        self.caps = MOCK_VERSION_CAPS if caps is None else caps
        self._conns: dict[int, Connection] = {}

    def get(self, node_id: int) -> Connection:
        """The connection to ``node_id``, negotiated."""
        conn = self._conns.get(node_id)
        if conn is None or conn.closed:
            host, port = self.addresses[node_id]
            conn = Connection(
                host, port, client_id="kproto-tests", timeout_s=self.timeout_s
            )
            try:
                conn.negotiate(caps=self.caps)
            except BaseException:
                conn.close()
                raise
            self._conns[node_id] = conn
        return conn

    @property
    def any(self) -> Connection:
        """The connection to the lowest node id."""
        return self.get(min(self.addresses))

    def close(self) -> None:
        """Close every connection."""
        for conn in self._conns.values():
            conn.close()
        self._conns.clear()


# --------------------------------------------------------------------------- helpers


def check(error_code: int, where: str, *, allow: Iterable[int] = ()) -> None:
    """Raise :class:`KafkaProtocolError` unless ``error_code`` is NONE or in ``allow``."""
    if error_code != 0 and error_code not in set(allow):
        raise KafkaProtocolError(error_code, where)


def produce_batch(
    conn: Connection,
    topic: str,
    partition: int,
    records: bytes,
    *,
    topic_id: Any = None,
    version: int | None = None,
    acks: int = -1,
    transactional_id: str | None = None,
    timeout_ms: int = 10_000,
) -> Any:
    """Produce raw ``records`` to one partition at ``version`` (default: the
    negotiated one); ``conn`` must be the leader's. v13+ address the topic by
    ``topic_id``.

    Returns:
        the partition's ``PartitionProduceResponse``, or ``None`` for ``acks=0``.
    """
    cls = request_type(
        ApiKey.PRODUCE, conn.version_for(ApiKey.PRODUCE) if version is None else version
    )
    fields = {
        "transactional_id": transactional_id,
        "acks": acks,
        "timeout_ms": timeout_ms,
        "topic_data": [
            {
                "name": topic,
                "topic_id": topic_id,
                "partition_data": [{"index": partition, "records": records}],
            }
        ],
    }
    response = conn.send(build_entity(cls, fit(cls, fields)))
    return None if response is None else response.responses[0].partition_responses[0]


def fetch_partition(
    conn: Connection,
    topic: str,
    partition: int,
    offset: int = 0,
    *,
    topic_id: Any = None,
    version: int | None = None,
    max_bytes: int = 1 << 20,
    max_wait_ms: int = 100,
    isolation_level: int = 0,
) -> Any:
    """One Fetch of one partition at ``version`` (default: negotiated); ``conn``
    must be the leader's. Returns the partition's ``PartitionData``."""
    cls = request_type(
        ApiKey.FETCH, conn.version_for(ApiKey.FETCH) if version is None else version
    )
    part = {"partition": partition, "fetch_offset": offset}
    fields = {
        "replica_id": -1,
        "max_wait_ms": max_wait_ms,
        "min_bytes": 1,
        "max_bytes": max_bytes,
        "isolation_level": isolation_level,
        "topics": [
            {
                "topic": topic,
                "topic_id": topic_id,
                "partitions": [{**part, "partition_max_bytes": max_bytes}],
            }
        ],
    }
    response = conn.send(build_entity(cls, fit(cls, fields)))
    check(getattr(response, "error_code", 0), "FetchResponse")
    return response.responses[0].partitions[0]


def fetch_all(
    conn: Connection,
    topic: str,
    partition: int,
    start: int = 0,
    *,
    topic_id: Any = None,
    end: int | None = None,
    max_rounds: int = 200,
    **kwargs: Any,
) -> tuple[bytes, Any]:
    """Fetch from ``start`` up to ``end`` (default: the high watermark), at most
    ``max_rounds`` requests. Returns ``(complete raw batches, last PartitionData)``.

    Raises:
        KafkaProtocolError: a partition error code.
        RuntimeError: no progress, or ``max_rounds`` used up.
    """
    chunks: list[bytes] = []
    offset = start
    for _ in range(max_rounds):
        data = fetch_partition(
            conn, topic, partition, offset, topic_id=topic_id, **kwargs
        )
        check(data.error_code, f"Fetch {topic}-{partition}")
        stop = data.high_watermark if end is None else end
        if offset >= stop:
            return b"".join(chunks), data
        raw = complete_batches(data.records)
        batches = list(decode_batches(raw, check_crc=False))
        if not batches:
            raise RuntimeError(f"Fetch {topic}-{partition}@{offset}: no progress")
        chunks.append(raw)
        offset = batches[-1].base_offset + batches[-1].last_offset_delta + 1
    raise RuntimeError(f"Fetch {topic}-{partition}: {max_rounds} rounds, no end")


def complete_batches(data: bytes | None) -> bytes:
    """``data`` without a trailing partial batch (Fetch responses may end with one)."""
    if not data:
        return b""
    it = decode_batches(data, check_crc=False)
    for _ in it:
        pass
    end = it.partial_tail_position
    return data if end is None else data[:end]


def consumer_protocol_bytes(name: str, version: int, **fields: Any) -> bytes:
    """Embedded consumer-protocol data (``ConsumerProtocolSubscription`` /
    ``ConsumerProtocolAssignment``): int16 version, then the struct."""
    cls = data_type(name, version)
    return struct.pack(">h", version) + encode(build_entity(cls, fields))
