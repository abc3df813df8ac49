"""The blocking :class:`Client` (never imports asyncio itself)."""

from __future__ import annotations

import ssl
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from kproto._closing import Closing
from kproto.connection import Connection, KafkaConnectionError
from kproto.index import request_type
from kproto.meta import build_entity
from kproto.records import Compression, Record, RecordInput
from kproto.sasl import SaslConfig

from . import admin, describe
from .core import EARLIEST, LATEST, ClientCore
from .protocol import Backoff, Pager, WaitingOp, call_version, fit
from .results import (
    ConfigEntry,
    FetchResult,
    GroupDescription,
    GroupListing,
    ListedOffset,
    ProducedRecord,
    TopicDescription,
    TopicPartition,
)

if TYPE_CHECKING:
    from kproto.serde import Deserializer, Serializer

__all__ = ["EARLIEST", "LATEST", "Client"]

T = TypeVar("T")

DEFAULT_FETCH_MAX_BYTES = 1 << 20


class Client(Closing):
    """A small blocking Kafka client: produce, fetch, offsets and topic admin.

    Keeps a metadata cache (brokers, partition leaders, topic ids, the controller,
    group coordinators) and one negotiated :class:`~kproto.connection.Connection`
    per broker, opened on first use; sends each request to the partition leader,
    controller or coordinator it is for. Requests are sent one at a time.

    **No hidden retries**: the only request sent again is one answered with a stale
    metadata error (NOT_LEADER_OR_FOLLOWER, UNKNOWN_TOPIC_OR_PARTITION,
    LEADER_NOT_AVAILABLE, FENCED/UNKNOWN_LEADER_EPOCH, UNKNOWN_TOPIC_ID;
    NOT_CONTROLLER; NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE), once, after
    refreshing the metadata or coordinator. Everything else is raised.

    Sources: the request/response definitions of Kafka's ``clients/src/main/
    resources/common/message`` JSON (Produce v0-13, Fetch v0-18 with topic ids from
    v13 (KIP-516), ListOffsets, Metadata, FindCoordinator, OffsetCommit/OffsetFetch,
    CreateTopics/DeleteTopics); partitioning as Java's ``BuiltInPartitioner``; which
    errors mean stale metadata as Java's ``InvalidMetadataException`` subclasses.

    Args:
        bootstrap_servers: ``"host1:9092,host2:9092"``.
        client_id: the request headers' ``client_id``.
        timeout_s: each connection's connect and request timeout (seconds).
        ssl_context: TLS for every connection
            (:func:`kproto.negotiation.client_ssl_context` verifies host names).
        sasl: SASL mechanism and credentials for every connection
            (:class:`kproto.sasl.SaslConfig`), authenticated after ApiVersions and
            again when the broker's session lifetime nears its end (KIP-368).
        version_caps: ``{api_key: highest version}`` passed to
            :meth:`~kproto.connection.Connection.negotiate`.
        allow_auto_topic_creation: let :meth:`produce`'s Metadata request create
            a missing topic (the Java producer's default).
        enable_idempotence: an idempotent producer (KIP-98, Java's
            ``enable.idempotence``): one InitProducerId, then every batch carries
            the producer id, epoch and its partition's next sequence, so a batch
            sent again is stored once. :meth:`produce` then needs ``acks=-1``,
            resends a batch answered with a retriable error (the same bytes, up
            to 4 sends), and bumps the epoch (KIP-360: InitProducerId with the
            current id and epoch, v3+) after UNKNOWN_PRODUCER_ID (the batch is
            resent), after OUT_OF_ORDER_SEQUENCE_NUMBER / INVALID_PRODUCER_EPOCH
            (raised as :class:`kproto.client.ProducerSequenceError`) and after any
            produce that failed with a batch's fate unknown (e.g. a connection
            lost before the answer).

    Raises (any method):
        kproto.client.BrokerError: an error code in a response (``error_code``,
            ``retriable``).
        kproto.client.ClientError: bad arguments, or a response the client cannot use.
        kproto.sasl.SaslAuthenticationError: the broker refused the credentials
            (or the SCRAM server signature did not verify).
        kproto.connection.KafkaConnectionError: connecting, negotiating or a
            request failed (the connection is dropped; the next call reconnects).
    """

    def __init__(
        self,
        bootstrap_servers: str,
        *,
        client_id: str = "kproto",
        timeout_s: float = 30.0,
        ssl_context: ssl.SSLContext | None = None,
        sasl: SaslConfig | None = None,
        version_caps: Mapping[int, int] | None = None,
        allow_auto_topic_creation: bool = True,
        enable_idempotence: bool = False,
        core: ClientCore | None = None,
    ) -> None:
        self.core = core or ClientCore(
            bootstrap_servers,
            allow_auto_topic_creation=allow_auto_topic_creation,
            enable_idempotence=enable_idempotence,
        )
        self.client_id = client_id
        self.timeout_s = timeout_s
        self.ssl_context = ssl_context
        self.sasl = sasl
        self.version_caps = dict(version_caps or {})
        self._conns: dict[tuple[str, int], Connection] = {}

    # ------------------------------------------------------------------ driving

    def connection(self, node: int) -> Connection:
        """The negotiated connection for a node id (or ``protocol.ANY_NODE``: an open
        one to a known broker, else the first known broker or bootstrap server that
        answers), opened on first use.

        Raises:
            KafkaConnectionError: connecting or negotiating failed (for ANY_NODE:
                with every address; the last error).
        """
        addresses = self.core.addresses(node)
        for address in addresses:
            if address in self._conns:
                return self._conns[address]
        last: KafkaConnectionError | None = None
        for host, port in addresses:
            try:
                conn = Connection(
                    host,
                    port,
                    client_id=self.client_id,
                    timeout_s=self.timeout_s,
                    ssl_context=self.ssl_context,
                    sasl=self.sasl,
                )
            except KafkaConnectionError as err:
                last = err
                continue
            try:
                conn.negotiate(caps=self.version_caps)
            except BaseException as err:
                conn.close()
                if not isinstance(err, KafkaConnectionError):
                    raise
                last = err
                continue
            self._conns[(host, port)] = conn
            return conn
        assert last is not None
        raise last

    def run(self, op: WaitingOp[T]) -> T:
        """Drive a sans-IO operation (see :mod:`kproto.client.protocol`): send each
        call's request on its node's connection and feed the response back. A
        connection that fails is closed and dropped (the next call reconnects)."""
        try:
            call = next(op)
            while True:
                if isinstance(call, Backoff):
                    time.sleep(call.ms / 1000)
                    call = op.send(None)
                    continue
                conn = self.connection(call.node)
                version = call_version(call, conn.version_for(call.api_key))
                request_cls = request_type(call.api_key, version)
                request: Any = build_entity(
                    request_cls, fit(request_cls, call.build(version))
                )
                try:
                    response = conn.send(request)
                except KafkaConnectionError:
                    self._drop(conn)
                    raise
                call = op.send(response)
        except StopIteration as stop:
            result: T = stop.value
            return result
        finally:
            op.close()

    def _drop(self, conn: Connection) -> None:
        conn.close()
        self._conns = {a: c for a, c in self._conns.items() if c is not conn}

    # ------------------------------------------------------------------ API

    def produce(
        self,
        topic: str,
        records: Sequence[RecordInput],
        *,
        partition: int | None = None,
        acks: int = -1,
        compression: Compression = Compression.NONE,
        timeout_ms: int = 30_000,
        key_serializer: Serializer | None = None,
        value_serializer: Serializer | None = None,
    ) -> list[ProducedRecord]:
        """Produce ``records`` to ``topic``: one record batch (magic 2) per partition,
        one Produce request per partition leader.

        Args:
            records: ``(key, value[, headers[, timestamp_ms]])`` tuples (or
                :class:`kproto.records.Record`); keys/values bytes or None, headers
                ``(str, bytes | None)`` pairs, timestamp ms (default: now).
            partition: send every record there; default: Java's default
                partitioner (murmur2 of the key; one sticky random partition for
                null keys per call).
            acks: -1 (all in-sync replicas), 1 (leader) or 0 (no answer).
            compression: the batches' codec.
            timeout_ms: the broker's wait for acks (Produce ``timeout_ms``).
            key_serializer / value_serializer: turn each key / value into bytes
                (a :mod:`kproto.serde` serializer, or any ``(value, ctx) ->
                bytes | None``), before partitioning.

        Returns:
            one :class:`ProducedRecord` per record, in order (offset -1 with acks=0).

        Raises:
            kproto.serde.SerializationError: a key or value the serializer refused
                (``KeySerializationError`` / ``ValueSerializationError``).
        """
        if key_serializer is not None or value_serializer is not None:
            from kproto.serde.records import serialize_records

            records = serialize_records(
                topic, records, key_serializer, value_serializer
            )
        return self.run(
            self.core.produce(
                topic,
                records,
                partition=partition,
                acks=acks,
                compression=compression,
                timeout_ms=timeout_ms,
            )
        )

    def fetch(
        self,
        topic: str,
        partition: int,
        offset: int,
        *,
        max_bytes: int = DEFAULT_FETCH_MAX_BYTES,
        max_wait_ms: int = 0,
        isolation_level: int = 0,
        decode: bool = True,
        key_deserializer: Deserializer | None = None,
        value_deserializer: Deserializer | None = None,
    ) -> FetchResult:
        """One Fetch of ``topic``/``partition`` from ``offset``.

        Records below ``offset`` (Fetch returns whole batches) and control records
        are dropped; an incomplete last batch is left for the next fetch, from
        :attr:`FetchResult.next_offset`. Uses the topic id from Metadata for Fetch
        v13+.

        Args:
            max_bytes: the response and partition byte limit (the broker still
                returns a first batch larger than this, Fetch v3+).
            max_wait_ms: how long the broker may wait for data (0: answer now).
            isolation_level: Fetch's ``isolation_level`` (v4+, KIP-98): 0
                read_uncommitted, 1 read_committed (the broker stops at the last
                stable offset and drops the records of aborted transactions, as
                Java's ``CompletedFetch``; ``raw`` keeps them, with
                :attr:`FetchResult.aborted_transactions` to filter by).
            decode: False: read only the batch headers (``records`` empty,
                ``next_offset`` and ``raw`` as usual), for callers that decode
                ``raw`` themselves (e.g. into columns).
            key_deserializer / value_deserializer: turn each record's key / value
                bytes into a value (a :mod:`kproto.serde` deserializer, or any
                ``(data, ctx) -> value``); the records then carry those values.

        Raises:
            BrokerError: OFFSET_OUT_OF_RANGE and other partition errors.
            kproto.serde.SerializationError: bytes the deserializer refused
                (``KeyDeserializationError`` / ``ValueDeserializationError``, naming
                topic, partition and offset).
        """
        result = self.run(
            self.core.fetch(
                topic,
                partition,
                offset,
                max_bytes=max_bytes,
                max_wait_ms=max_wait_ms,
                isolation_level=isolation_level,
                decode=decode,
            )
        )
        if key_deserializer is None and value_deserializer is None:
            return result
        from kproto.serde.records import deserialize_result

        return deserialize_result(
            result, topic, partition, key_deserializer, value_deserializer
        )

    def iter_records(
        self,
        topic: str,
        partition: int,
        offset: int,
        *,
        follow: bool = False,
        max_bytes: int = DEFAULT_FETCH_MAX_BYTES,
        max_wait_ms: int = 500,
        isolation_level: int = 0,
        key_deserializer: Deserializer | None = None,
        value_deserializer: Deserializer | None = None,
    ) -> Iterator[Record]:
        """Yield the records of a partition from ``offset`` on, fetching page by page.

        Without ``follow`` it stops at the high watermark of the first fetch
        (records at or past it are not yielded); with ``follow`` it keeps fetching
        (each Fetch waits up to ``max_wait_ms`` for new data) until the caller stops.
        ``isolation_level`` 1 (read_committed) yields committed records only and
        stops at the last stable offset of the first fetch instead.

        ``key_deserializer`` / ``value_deserializer`` as :meth:`fetch`'s.

        Raises:
            ClientError: without ``follow``, a fetch below the end returned nothing
                (instead of looping).
            BrokerError: as :meth:`fetch` (e.g. OFFSET_OUT_OF_RANGE).
            kproto.serde.SerializationError: as :meth:`fetch`.
        """
        pager = Pager(offset, follow=follow, isolation_level=isolation_level)
        while not pager.done:
            result = self.fetch(
                topic,
                partition,
                pager.offset,
                max_bytes=max_bytes,
                max_wait_ms=max_wait_ms if follow else 0,
                isolation_level=isolation_level,
                key_deserializer=key_deserializer,
                value_deserializer=value_deserializer,
            )
            yield from pager.take(result, f"{topic}-{partition}")

    def list_offsets(
        self,
        topic: str,
        partitions: Iterable[int] | None = None,
        *,
        timestamp: int = LATEST,
        isolation_level: int = 0,
    ) -> dict[int, ListedOffset]:
        """ListOffsets: per partition (default: all), the offset for ``timestamp``:
        :data:`LATEST` (-1, the high watermark), :data:`EARLIEST` (-2, the log
        start) or a time in ms (the first record at or after it).
        ``isolation_level`` 1 (read_committed, v2+) makes LATEST the last stable
        offset.

        Returns:
            ``{partition: ListedOffset(offset, timestamp)}``.
        """
        return self.run(
            self.core.list_offsets(topic, partitions, timestamp, isolation_level)
        )

    def create_topics(
        self,
        names: Sequence[str],
        *,
        num_partitions: int = -1,
        replication_factor: int = -1,
        configs: Mapping[str, str | None] | None = None,
        timeout_ms: int = 30_000,
        validate_only: bool = False,
    ) -> None:
        """CreateTopics, sent to the controller. -1 partitions/replication means the
        broker's defaults (CreateTopics v4+, KIP-464).

        Raises:
            BrokerError: the first topic that failed (TOPIC_ALREADY_EXISTS, ...),
                the others in its notes.
        """
        self.run(
            admin.create_topics(
                self.core,
                names,
                num_partitions=num_partitions,
                replication_factor=replication_factor,
                configs=configs or {},
                timeout_ms=timeout_ms,
                validate_only=validate_only,
            )
        )

    def delete_topics(self, names: Sequence[str], *, timeout_ms: int = 30_000) -> None:
        """DeleteTopics, sent to the controller.

        Raises:
            BrokerError: the first topic that failed, the others in its notes.
        """
        self.run(admin.delete_topics(self.core, names, timeout_ms=timeout_ms))

    def commit_offsets(
        self,
        group_id: str,
        offsets: Mapping[TopicPartition, int],
        *,
        metadata: str | None = "",
    ) -> None:
        """Commit ``{TopicPartition: next offset to read}`` for ``group_id`` without
        joining it (OffsetCommit to the coordinator from FindCoordinator).

        Raises:
            BrokerError: the first partition that failed (e.g.
                UNKNOWN_MEMBER_ID if the group has active members).
        """
        self.run(admin.commit_offsets(self.core, group_id, offsets, metadata=metadata))

    def fetch_offsets(
        self, group_id: str, partitions: Sequence[TopicPartition] | None
    ) -> dict[TopicPartition, int]:
        """The committed offsets of ``group_id`` (-1 where none), via OffsetFetch
        to the group's coordinator; ``partitions`` None: every partition the group
        has committed (OffsetFetch v2+)."""
        return self.run(admin.fetch_offsets(self.core, group_id, partitions))

    def describe_topics(
        self, names: Sequence[str] | None = None
    ) -> list[TopicDescription]:
        """Metadata of ``names`` (None: every topic, internal ones included), sorted
        by name: partitions with leader, replicas, ISR.

        Raises:
            BrokerError: a named topic's error (UNKNOWN_TOPIC_OR_PARTITION, ...).
        """
        return self.run(describe.describe_topics(self.core, names))

    def describe_configs(self, topics: Sequence[str]) -> dict[str, list[ConfigEntry]]:
        """DescribeConfigs: every config of each topic, with its source and whether
        it is the default.

        Raises:
            BrokerError: a topic's error (UNKNOWN_TOPIC_OR_PARTITION, ...).
        """
        return self.run(describe.describe_configs(self.core, topics))

    def list_groups(self) -> list[GroupListing]:
        """ListGroups on every broker, sorted by group id."""
        return self.run(describe.list_groups(self.core))

    def describe_groups(self, group_ids: Sequence[str]) -> list[GroupDescription]:
        """DescribeGroups, each to its coordinator: state, protocol, members and
        (consumer groups) their assigned partitions.

        Raises:
            BrokerError: GROUP_ID_NOT_FOUND for an unknown group (DescribeGroups
                v6+, KIP-1043; older versions answer it in state ``Dead``).
        """
        return self.run(describe.describe_groups(self.core, group_ids))

    # ------------------------------------------------------------------ lifetime

    def close(self) -> None:
        """Close every connection. Idempotent."""
        conns, self._conns = self._conns, {}
        for conn in conns.values():
            conn.close()

    def __repr__(self) -> str:
        return f"<Client {','.join(f'{h}:{p}' for h, p in self.core.bootstrap)}>"
