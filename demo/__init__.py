"""A tour of kproto against librdkafka's in-process mock cluster.

Run ``python -m demo [OUT_DIR]`` (or ``make demo``). It starts a 3-broker
mock cluster inside this process (through ``confluent-kafka``, a dev dependency),
then talks to it with :class:`kproto.connection.Connection` only:

1. ApiVersions (negotiation), Metadata (auto-creating two new topics), Metadata
   again (every topic, with topic ids), FindCoordinator;
2. Produce: record batches built with :func:`kproto.records.encode_batch`, one
   per codec, sent to each partition's leader; ListOffsets; Fetch them back and
   decode them with :func:`kproto.records.decode_batches`;
3. a classic consumer-group round: JoinGroup, SyncGroup, Heartbeat, LeaveGroup.

Results are printed as tables. The fetched raw record batches are written as Kafka
log segments, ``OUT_DIR/segments/<topic>-<partition>/<base offset:020d>.log``
(default ``OUT_DIR`` = ``demo-out``), for the Spark step (:mod:`kproto.spark`).

The helpers :class:`MockCluster`, :class:`Brokers`, :func:`produce_batch`,
:func:`fetch_partition` and :func:`format_table` are reused by the live tests.
"""

from __future__ import annotations

import argparse
import logging
import os
import struct
import sys
import time
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from types import TracebackType
from typing import IO, Any

import attrs

from kproto.connection import Connection
from kproto.errors import ErrorCode, KafkaProtocolError
from kproto.index import ApiKey, api_versions, data_type, request_type
from kproto.records import Compression, RecordBatch, decode_batches, encode_batch
from kproto.serial import encode

__all__ = [
    "MockCluster",
    "Brokers",
    "format_table",
    "check",
    "produce_batch",
    "fetch_partition",
    "fetch_all",
    "MOCK_VERSION_CAPS",
    "consumer_protocol_bytes",
    "write_segments",
    "run_demo",
    "main",
]

DEFAULT_OUT_DIR = Path("demo-out")
TOPICS = ("kproto-demo-orders", "kproto-demo-clicks")
GROUP = "kproto-demo-group"

#: Versions librdkafka's mock cluster advertises but mishandles (2.16): it closes
#: the connection on JoinGroup v6 and SyncGroup v4 (flexible versions it misparses)
#: and answers LeaveGroup v3+ without the ``members`` array.
MOCK_VERSION_CAPS: dict[int, int] = {
    ApiKey.JOIN_GROUP: 5,
    ApiKey.SYNC_GROUP: 3,
    ApiKey.LEAVE_GROUP: 2,
}


# --------------------------------------------------------------------------- cluster


class MockCluster:
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
        deadline = time.monotonic() + timeout_s
        brokers: dict[int, tuple[str, int]] = {}
        while len(brokers) < num_brokers:
            left = deadline - time.monotonic()
            if left <= 0:
                self.close()
                raise RuntimeError(f"mock cluster did not come up within {timeout_s} s")
            md = self._producer.list_topics(timeout=min(left, 5.0))
            brokers = {b.id: (b.host, b.port) for b in md.brokers.values()}
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

    def __enter__(self) -> MockCluster:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


class Brokers:
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
                host, port, client_id="kproto-demo", timeout_s=self.timeout_s
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

    def __enter__(self) -> Brokers:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


# --------------------------------------------------------------------------- helpers


def check(error_code: int, where: str, *, allow: Iterable[int] = ()) -> None:
    """Raise :class:`KafkaProtocolError` unless ``error_code`` is NONE or in ``allow``."""
    if error_code != 0 and error_code not in set(allow):
        raise KafkaProtocolError(error_code, where)


def error_name(error_code: int) -> str:
    """``"NONE"``, ``"UNKNOWN_TOPIC_OR_PARTITION"``, ... (or the number if unknown)."""
    try:
        return ErrorCode(error_code).name
    except ValueError:
        return str(error_code)


def format_table(headers: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    """Render rows as a plain-text table with a header rule; cells are ``str()``-ed."""
    cells = [[str(h) for h in headers]] + [[_cell(c) for c in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    lines = [
        "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip()
        for row in cells
    ]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, bytes):
        try:
            text = value.decode()
        except UnicodeDecodeError:
            return "0x" + value.hex()
        return text if text.isprintable() else "0x" + value.hex()
    if isinstance(value, list | tuple):
        return ",".join(_cell(v) for v in value) or "-"
    return str(value)


def _field_names(cls: type) -> set[str]:
    return set(attrs.fields_dict(cls))


def _nested(cls: type, field: str) -> type:
    """The element class of array field ``field`` of ``cls``."""
    from kproto.meta import wire

    w = wire(attrs.fields_dict(cls)[field])
    ent = w.element.entity if w.element is not None else w.entity
    assert ent is not None, f"{cls.__name__}.{field} is not an array of structs"
    return ent


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
    """Produce raw ``records`` (batches or a legacy message set) to one partition.

    ``conn`` must be the partition leader's connection. ``version`` defaults to the
    negotiated Produce version; v13+ address the topic by ``topic_id``.

    Returns:
        the partition's ``PartitionProduceResponse`` (``error_code``,
        ``base_offset``, ...), or ``None`` for ``acks=0``.

    Raises:
        kproto.connection.KafkaConnectionError: as :meth:`Connection.send`.
    """
    v = conn.version_for(ApiKey.PRODUCE) if version is None else version
    cls = request_type(ApiKey.PRODUCE, v)
    topic_cls = _nested(cls, "topic_data")
    topic_key = (
        {"topic_id": topic_id}
        if "topic_id" in _field_names(topic_cls)
        else {"name": topic}
    )
    fields: dict[str, Any] = {
        "acks": acks,
        "timeout_ms": timeout_ms,
        "topic_data": [
            {**topic_key, "partition_data": [{"index": partition, "records": records}]}
        ],
    }
    if transactional_id is not None:
        fields["transactional_id"] = transactional_id
    from kproto.framing import build_entity

    response = conn.send(build_entity(cls, fields))
    if response is None:
        return None
    return response.responses[0].partition_responses[0]


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
    """Fetch one partition from ``offset`` (one Fetch request, no sessions).

    ``conn`` must be the partition leader's connection. ``version`` defaults to the
    negotiated Fetch version; v13+ address the topic by ``topic_id``.

    Returns:
        the partition's ``PartitionData`` (``error_code``, ``high_watermark``,
        ``records`` (raw bytes or ``None``), ``aborted_transactions``, ...).

    Raises:
        kproto.connection.KafkaConnectionError: as :meth:`Connection.send`.
    """
    v = conn.version_for(ApiKey.FETCH) if version is None else version
    cls = request_type(ApiKey.FETCH, v)
    topic_cls = _nested(cls, "topics")
    topic_key = (
        {"topic_id": topic_id}
        if "topic_id" in _field_names(topic_cls)
        else {"topic": topic}
    )
    part: dict[str, Any] = {"partition": partition, "fetch_offset": offset}
    if "partition_max_bytes" in _field_names(_nested(topic_cls, "partitions")):
        part["partition_max_bytes"] = max_bytes
    fields: dict[str, Any] = {
        "replica_id": -1,
        "max_wait_ms": max_wait_ms,
        "min_bytes": 1,
        "topics": [{**topic_key, "partitions": [part]}],
    }
    names = _field_names(cls)
    if "replica_id" not in names:
        del fields["replica_id"]
    if "max_bytes" in names:
        fields["max_bytes"] = max_bytes
    if "isolation_level" in names:
        fields["isolation_level"] = isolation_level
    from kproto.framing import build_entity

    response = conn.send(build_entity(cls, fields))
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
    """Fetch one partition from ``start`` up to ``end`` (default: the high
    watermark), repeating Fetch requests (at most ``max_rounds``) since brokers may
    return fewer batches than asked for.

    Returns:
        ``(raw complete batches concatenated, the last PartitionData)``.

    Raises:
        kproto.errors.KafkaProtocolError: a partition error code.
        RuntimeError: no progress, or ``max_rounds`` exhausted before ``end``.
        kproto.connection.KafkaConnectionError: as :meth:`Connection.send`.
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
            raise RuntimeError(
                f"Fetch {topic}-{partition}@{offset}: no progress (hw {stop})"
            )
        chunks.append(raw)
        last = batches[-1]
        offset = last.base_offset + last.last_offset_delta + 1
    raise RuntimeError(
        f"Fetch {topic}-{partition}: {max_rounds} rounds did not reach the end"
    )


def consumer_protocol_bytes(name: str, version: int, **fields: Any) -> bytes:
    """Encode embedded consumer-protocol data (``ConsumerProtocolSubscription`` /
    ``ConsumerProtocolAssignment``): int16 version, then the struct."""
    from kproto.framing import build_entity

    return struct.pack(">h", version) + encode(
        build_entity(data_type(name, version), fields)
    )


def complete_batches(data: bytes | None) -> bytes:
    """``data`` without a trailing partial batch (Fetch responses may end with one)."""
    if not data:
        return b""
    it = decode_batches(data, check_crc=False)
    for _ in it:
        pass
    end = it.partial_tail_position
    return data if end is None else data[:end]


def write_segments(out_dir: Path, fetched: dict[tuple[str, int], bytes]) -> list[Path]:
    """Write ``{(topic, partition): raw batches}`` as Kafka log segments:
    ``out_dir/<topic>-<partition>/<first base offset, 20 digits>.log``.

    Returns:
        the files written, sorted.
    """
    written = []
    for (topic, partition), data in sorted(fetched.items()):
        if not data:
            continue
        first = next(iter(decode_batches(data, check_crc=False)))
        d = out_dir / f"{topic}-{partition}"
        d.mkdir(parents=True, exist_ok=True)
        for old in d.glob("*.log"):
            old.unlink()
        path = d / f"{first.base_offset:020d}.log"
        path.write_bytes(data)
        written.append(path)
    return written


# --------------------------------------------------------------------------- the tour


class _Printer:
    def __init__(self, out: IO[str]) -> None:
        self.out = out

    def section(self, title: str) -> None:
        print(f"\n== {title} " + "=" * max(0, 70 - len(title)), file=self.out)

    def line(self, text: str = "") -> None:
        print(text, file=self.out)

    def table(self, headers: Sequence[str], rows: Iterable[Sequence[Any]]) -> None:
        print(format_table(headers, rows), file=self.out)


def _api_versions_section(p: _Printer, conn: Connection) -> None:
    p.section(f"ApiVersions (answered at v{conn.api_versions_version})")
    assert conn.broker_api_versions is not None
    rows = []
    for key, (lo, hi) in conn.broker_api_versions.items():
        try:
            name = ApiKey(key).name
            ours = api_versions(key)
            kp = f"{ours.start}-{ours.stop - 1}"
        except ValueError:
            name, kp = "?", "-"
        chosen = conn.versions.get(key)
        rows.append(
            (key, name, f"{lo}-{hi}", kp, "-" if chosen is None else f"v{chosen}")
        )
    p.table(("key", "api", "broker", "kproto", "using"), rows)


def _metadata_section(p: _Printer, title: str, md: Any) -> None:
    p.section(title)
    p.line(f"cluster id: {md.cluster_id}   controller: {md.controller_id}")
    p.table(
        ("node", "host", "port", "rack"),
        ((b.node_id, b.host, b.port, b.rack) for b in md.brokers),
    )
    p.line()
    rows = []
    for t in md.topics:
        for part in sorted(t.partitions, key=lambda x: x.partition_index):
            rows.append(
                (
                    t.name,
                    getattr(t, "topic_id", None),
                    part.partition_index,
                    part.leader_id,
                    list(part.replica_nodes),
                    list(part.isr_nodes),
                    error_name(part.error_code),
                )
            )
    p.table(
        ("topic", "topic id", "partition", "leader", "replicas", "isr", "error"), rows
    )


def _sample_records(
    topic: str, partition: int, codec: Compression, n: int
) -> list[Any]:
    base = int(time.time() * 1000)
    return [
        (
            f"{topic[-6:]}-{partition}-{codec.label}-{i}".encode(),
            f'{{"n": {i}, "codec": "{codec.label}"}}'.encode(),
            [("source", b"kproto-demo"), ("seq", str(i).encode())],
            base + i,
        )
        for i in range(n)
    ]


def _group_section(p: _Printer, brokers: Brokers, topics: Sequence[str]) -> None:
    coord = brokers.any.request(ApiKey.FIND_COORDINATOR, key=GROUP, key_type=0)
    if hasattr(coord, "coordinators"):  # v4+
        node = coord.coordinators[0]
        check(node.error_code, "FindCoordinatorResponse")
        node_id = node.node_id
    else:
        check(coord.error_code, "FindCoordinatorResponse")
        node_id = coord.node_id
    conn = brokers.get(node_id)
    p.section(f"Consumer group {GROUP!r} (coordinator: node {node_id})")
    subscription = consumer_protocol_bytes(
        "ConsumerProtocolSubscription", 1, topics=list(topics)
    )
    join_fields: dict[str, Any] = {
        "group_id": GROUP,
        "session_timeout_ms": 10_000,
        "rebalance_timeout_ms": 10_000,
        "member_id": "",
        "protocol_type": "consumer",
        "protocols": [{"name": "range", "metadata": subscription}],
    }
    steps = []
    join = conn.request(ApiKey.JOIN_GROUP, **join_fields)
    steps.append(
        (
            "JoinGroup",
            conn.version_for(ApiKey.JOIN_GROUP),
            error_name(join.error_code),
            join.member_id or "-",
        )
    )
    if (
        join.error_code == ErrorCode.MEMBER_ID_REQUIRED
    ):  # KIP-394: join again with the id
        join = conn.request(
            ApiKey.JOIN_GROUP, **{**join_fields, "member_id": join.member_id}
        )
        steps.append(
            (
                "JoinGroup",
                conn.version_for(ApiKey.JOIN_GROUP),
                error_name(join.error_code),
                join.member_id,
            )
        )
    check(join.error_code, "JoinGroupResponse")
    is_leader = join.leader == join.member_id
    assignments = []
    if is_leader:
        assigned = [{"topic": t, "partitions": [0, 1, 2, 3]} for t in topics]
        blob = consumer_protocol_bytes(
            "ConsumerProtocolAssignment", 1, assigned_partitions=assigned
        )
        assignments = [
            {"member_id": m.member_id, "assignment": blob} for m in join.members
        ]
    sync_fields: dict[str, Any] = {
        "group_id": GROUP,
        "generation_id": join.generation_id,
        "member_id": join.member_id,
        "assignments": assignments,
    }
    sync_cls = request_type(ApiKey.SYNC_GROUP, conn.version_for(ApiKey.SYNC_GROUP))
    if "protocol_type" in _field_names(sync_cls):
        sync_fields.update(protocol_type="consumer", protocol_name=join.protocol_name)
    sync = conn.request(ApiKey.SYNC_GROUP, **sync_fields)
    steps.append(
        (
            "SyncGroup",
            conn.version_for(ApiKey.SYNC_GROUP),
            error_name(sync.error_code),
            join.member_id,
        )
    )
    check(sync.error_code, "SyncGroupResponse")
    hb = conn.request(
        ApiKey.HEARTBEAT,
        group_id=GROUP,
        generation_id=join.generation_id,
        member_id=join.member_id,
    )
    steps.append(
        (
            "Heartbeat",
            conn.version_for(ApiKey.HEARTBEAT),
            error_name(hb.error_code),
            join.member_id,
        )
    )
    leave_cls = request_type(ApiKey.LEAVE_GROUP, conn.version_for(ApiKey.LEAVE_GROUP))
    if "members" in _field_names(leave_cls):
        leave = conn.request(
            ApiKey.LEAVE_GROUP, group_id=GROUP, members=[{"member_id": join.member_id}]
        )
    else:
        leave = conn.request(
            ApiKey.LEAVE_GROUP, group_id=GROUP, member_id=join.member_id
        )
    steps.append(
        (
            "LeaveGroup",
            conn.version_for(ApiKey.LEAVE_GROUP),
            error_name(leave.error_code),
            join.member_id,
        )
    )
    p.table(("step", "version", "error", "member id"), steps)
    p.line()
    p.line(
        f"generation {join.generation_id}, protocol {join.protocol_name!r}, "
        f"leader {'(us)' if is_leader else join.leader}, {len(join.members)} member(s)"
    )
    if sync.assignment:
        version = struct.unpack_from(">h", sync.assignment)[0]
        from kproto.serial import decode

        decoded: Any = decode(
            data_type("ConsumerProtocolAssignment", version), sync.assignment[2:]
        )
        p.table(
            ("assigned topic", "partitions"),
            ((tp.topic, list(tp.partitions)) for tp in decoded.assigned_partitions),
        )


def run_demo(
    out_dir: str | os.PathLike[str] = DEFAULT_OUT_DIR, *, out: IO[str] | None = None
) -> Path:
    """Run the tour (see the module docstring) and return the segment directory.

    Args:
        out_dir: where to write; segments go to ``out_dir/segments``.
        out: where to print the tables (default ``sys.stdout``).

    Returns:
        ``Path(out_dir) / "segments"``, holding ``<topic>-<partition>/*.log``.

    Raises:
        ImportError: confluent-kafka is missing (it runs the mock cluster).
        kproto.connection.KafkaConnectionError, kproto.errors.KafkaProtocolError:
            a request failed.
    """
    p = _Printer(out or sys.stdout)
    segments = Path(out_dir) / "segments"
    started = time.monotonic()
    with MockCluster(3) as cluster, Brokers(cluster.brokers) as brokers:
        p.section("Mock cluster")
        p.table(
            ("node", "host", "port"),
            ((n, h, pt) for n, (h, pt) in cluster.brokers.items()),
        )
        conn = brokers.any
        _api_versions_section(p, conn)

        md = conn.request(
            ApiKey.METADATA,
            topics=[{"name": t} for t in TOPICS],
            allow_auto_topic_creation=True,
        )
        _metadata_section(p, "Metadata (auto-creating two topics)", md)
        # the mock may report partitions before their leaders are known: re-ask
        md = conn.request(ApiKey.METADATA, topics=None, allow_auto_topic_creation=False)
        _metadata_section(p, "Metadata again (all topics)", md)
        layout: dict[str, tuple[Any, dict[int, int]]] = {}
        for t in md.topics:
            if t.name in TOPICS:
                leaders = {
                    part.partition_index: part.leader_id for part in t.partitions
                }
                layout[t.name] = (getattr(t, "topic_id", None), leaders)

        coord = conn.request(ApiKey.FIND_COORDINATOR, key=GROUP, key_type=0)
        p.section(f"FindCoordinator (group {GROUP!r})")
        if hasattr(coord, "coordinators"):
            p.table(
                ("key", "node", "host", "port", "error"),
                (
                    (c.key, c.node_id, c.host, c.port, error_name(c.error_code))
                    for c in coord.coordinators
                ),
            )
        else:
            p.table(
                ("node", "host", "port", "error"),
                [(coord.node_id, coord.host, coord.port, error_name(coord.error_code))],
            )

        p.section(
            f"Produce v{conn.version_for(ApiKey.PRODUCE)} (batches from kproto.records.encode_batch)"
        )
        rows: list[tuple[Any, ...]] = []
        for topic, (topic_id, leaders) in layout.items():
            for partition in sorted(leaders)[:2]:
                leader = brokers.get(leaders[partition])
                for codec in Compression:
                    batch = encode_batch(
                        _sample_records(topic, partition, codec, 3), compression=codec
                    )
                    res = produce_batch(
                        leader, topic, partition, batch, topic_id=topic_id
                    )
                    check(res.error_code, f"Produce {topic}-{partition}")
                    rows.append(
                        (
                            topic,
                            partition,
                            leaders[partition],
                            codec.label,
                            3,
                            len(batch),
                            res.base_offset,
                            error_name(res.error_code),
                        )
                    )
        p.table(
            (
                "topic",
                "partition",
                "leader",
                "codec",
                "records",
                "bytes",
                "base offset",
                "error",
            ),
            rows,
        )

        p.section(
            f"ListOffsets v{conn.version_for(ApiKey.LIST_OFFSETS)} (earliest / latest)"
        )
        rows = []
        for topic, (_, leaders) in layout.items():
            for partition in sorted(leaders):
                leader = brokers.get(leaders[partition])
                found = []
                for ts in (-2, -1):
                    lo = leader.request(
                        ApiKey.LIST_OFFSETS,
                        replica_id=-1,
                        topics=[
                            {
                                "name": topic,
                                "partitions": [
                                    {"partition_index": partition, "timestamp": ts}
                                ],
                            }
                        ],
                    )
                    pr = lo.topics[0].partitions[0]
                    check(pr.error_code, f"ListOffsets {topic}-{partition}")
                    found.append(pr.offset)
                rows.append((topic, partition, found[0], found[1]))
        p.table(("topic", "partition", "earliest", "latest"), rows)

        p.section(
            f"Fetch v{conn.version_for(ApiKey.FETCH)} (decoded with kproto.records)"
        )
        fetched: dict[tuple[str, int], bytes] = {}
        rows = []
        summary = []
        for topic, (topic_id, leaders) in layout.items():
            for partition in sorted(leaders):
                raw, data = fetch_all(
                    brokers.get(leaders[partition]),
                    topic,
                    partition,
                    0,
                    topic_id=topic_id,
                )
                fetched[(topic, partition)] = raw
                batches: list[RecordBatch] = list(decode_batches(raw))
                summary.append(
                    (
                        topic,
                        partition,
                        data.high_watermark,
                        len(batches),
                        sum(len(b.records) for b in batches),
                        len(raw),
                    )
                )
                for b in batches:
                    for r in (
                        b.records[:1] + b.records[-1:]
                        if len(b.records) > 1
                        else b.records
                    ):
                        rows.append(
                            (
                                topic,
                                partition,
                                r.offset,
                                r.timestamp,
                                r.key,
                                r.value,
                                [f"{k}={_cell(v)}" for k, v in r.headers],
                                b.compression.label,
                            )
                        )
        p.table(
            ("topic", "partition", "high watermark", "batches", "records", "bytes"),
            summary,
        )
        p.line()
        p.line("first and last record of each batch:")
        p.table(
            (
                "topic",
                "partition",
                "offset",
                "timestamp (ms)",
                "key",
                "value",
                "headers",
                "codec",
            ),
            rows,
        )

        _group_section(p, brokers, TOPICS)

        written = write_segments(segments, fetched)
        p.section("Segments")
        p.table(("file", "bytes"), ((str(f), f.stat().st_size) for f in written))
    p.line()
    p.line(f"mock cluster stopped; done in {time.monotonic() - started:.1f} s")
    return segments


def _iter_args(argv: Sequence[str] | None) -> Iterator[str]:
    yield from (sys.argv[1:] if argv is None else argv)


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m demo [OUT_DIR]``: run :func:`run_demo`; return the exit status."""
    parser = argparse.ArgumentParser(
        prog="python -m demo", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument(
        "out_dir",
        nargs="?",
        default=str(DEFAULT_OUT_DIR),
        help="output directory (default: demo-out)",
    )
    parser.add_argument(
        "--master",
        default="local[*]",
        help="Spark master URL for the pipeline step (default: embedded local[*])",
    )
    parser.add_argument(
        "--no-spark", action="store_true", help="skip the Spark pipeline step"
    )
    args = parser.parse_args(list(_iter_args(argv)))
    logging.basicConfig(level=logging.WARNING, format="  (%(name)s: %(message)s)")
    segments = run_demo(args.out_dir)
    if not args.no_spark:
        spark_step(segments, master=args.master)
    return 0


def spark_step(
    segments: Path, *, master: str = "local[*]", out: IO[str] = sys.stdout
) -> None:
    """Run the Spark pipeline (:mod:`kproto.spark`) on the segments the demo wrote and
    print the resulting tables: a per-partition summary and the first records."""
    p = _Printer(out)
    p.section(f"Spark: read_log_segments({segments}) on {master}")
    try:
        from pyspark.sql import SparkSession
        from pyspark.sql import functions as F

        import kproto.spark
    except ImportError as exc:
        p.line(f"skipped: {exc}; install the extra with pip install -e '.[spark]'")
        return
    # The Python workers must import kproto: run them on this interpreter.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    started = time.monotonic()
    spark = (
        SparkSession.builder.master(master)
        .appName("kproto-demo")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.sql.session.timeZone", "UTC")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    try:
        summary = kproto.spark.demo_table(spark, segments).collect()
        p.table(
            (
                "topic",
                "partition",
                "records",
                "offsets",
                "codecs",
                "value bytes",
                "corrupt",
            ),
            (
                (
                    r["topic"],
                    r["partition"],
                    r["records"],
                    f"{r['first_offset']}-{r['last_offset']}",
                    ",".join(r["codecs"] or ()),
                    r["value_bytes"],
                    r["corrupt_batches"],
                )
                for r in summary
            ),
        )
        records = kproto.spark.records_only(
            kproto.spark.read_log_segments(spark, segments)
        )
        first = (
            records.select(
                "topic",
                "partition",
                "offset",
                F.date_format("timestamp", "yyyy-MM-dd HH:mm:ss.SSS").alias(
                    "timestamp"
                ),
                F.col("key").cast("string").alias("key"),
                F.col("value").cast("string").alias("value"),
                "compression",
            )
            .orderBy("topic", "partition", "offset")
            .limit(8)
            .collect()
        )
        p.line()
        p.table(
            (
                "topic",
                "partition",
                "offset",
                "timestamp (UTC)",
                "key",
                "value",
                "codec",
            ),
            (tuple(r) for r in first),
        )
        p.line()
        p.line(
            f"{records.count()} records decoded by Spark in "
            f"{time.monotonic() - started:.1f} s (including Spark's start)"
        )
    finally:
        spark.stop()
