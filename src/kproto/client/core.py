"""The operations of :class:`kproto.client.Client`, as sans-IO generators.

Each public method of :class:`ClientCore` returns an :data:`~.protocol.Op`: see
:mod:`kproto.client.protocol`. The only retry anywhere is the one after a stale
metadata answer: a partition error in :data:`~.protocol.REFRESH_CODES` (or
NOT_CONTROLLER, or NOT_COORDINATOR / COORDINATOR_NOT_AVAILABLE) refreshes the
metadata (or the coordinator) and sends the request once more; any other error,
and the same error twice, is raised. (The transactional producer's retries after
CONCURRENT_TRANSACTIONS, with a backoff, are in :mod:`kproto.client.transactions`;
with :attr:`ClientCore.transaction` set, :meth:`ClientCore.produce` sends inside
its transaction.)
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from kproto.errors import ErrorCode
from kproto.index import ApiKey
from kproto.meta import ZERO_UUID
from kproto.records import Compression, Record, RecordInput, encode_batch

from .idempotence import (
    IDEMPOTENT_ATTEMPTS,
    RESET_CODES,
    Idempotence,
    ProducerSequenceError,
)
from .metadata import MetadataCache, parse_bootstrap
from .partitioner import StickyPartitioner, partition_for_key
from .protocol import (
    ANY_NODE,
    REFRESH_CODES,
    Call,
    Op,
    Pager,
    WaitingOp,
    check_code,
    interpret_fetch,
)
from .results import (
    BrokerError,
    ClientError,
    FetchResult,
    ListedOffset,
    ProducedRecord,
    TopicInfo,
)

if TYPE_CHECKING:
    from kproto.serde import Deserializer, Serializer

__all__ = [
    "DEFAULT_FETCH_MAX_BYTES",
    "EARLIEST",
    "LATEST",
    "ClientCore",
    "ProduceTransaction",
]

#: ListOffsets timestamps (Kafka's ``ListOffsetsRequest.EARLIEST_TIMESTAMP`` etc.).
EARLIEST = -2
LATEST = -1
#: Fetch's default ``max_bytes`` (1 MiB), for the response and the partition.
DEFAULT_FETCH_MAX_BYTES = 1 << 20


class ProduceTransaction(Protocol):
    """What :meth:`ClientCore.produce` asks of the transaction it sends in:
    :class:`kproto.client.transactions.TransactionManager` is the one there is."""

    transactional_id: str

    @property
    def produce_max_version(self) -> int | None:
        """The highest Produce version to send (None: any)."""

    def add_partitions(self, topic: str, partitions: Iterable[int]) -> WaitingOp[None]:
        """Add ``topic``'s ``partitions`` to the transaction before a send."""

    def produce_failed(self, err: Exception) -> Exception:
        """The error to raise for a send of the transaction that failed with ``err``."""


class ClientCore:
    """Metadata cache, partitioner and the operations; no I/O.

    Args:
        bootstrap_servers: ``"host1:9092,host2:9092"``.
        allow_auto_topic_creation: sent in the Metadata requests of :meth:`produce`
            (the Java producer's default is to allow it).
        partitioner: the null-key partitioner (tests pass a seeded one).
        enable_idempotence: produce as an idempotent producer (KIP-98, Java's
            ``enable.idempotence``); see :mod:`kproto.client.idempotence`.

    Raises:
        ClientError: a malformed ``bootstrap_servers``.
    """

    def __init__(
        self,
        bootstrap_servers: str,
        *,
        allow_auto_topic_creation: bool = True,
        partitioner: StickyPartitioner | None = None,
        enable_idempotence: bool = False,
    ) -> None:
        self.bootstrap = parse_bootstrap(bootstrap_servers)
        self.metadata = MetadataCache()
        self.allow_auto_topic_creation = allow_auto_topic_creation
        self.partitioner = partitioner or StickyPartitioner()
        self.idempotence = Idempotence() if enable_idempotence else None
        #: the transactional producer's state machine, set by
        #: :class:`kproto.client.transactions.TransactionManager` (None: not
        #: transactional); :meth:`produce` then sends inside its transaction
        self.transaction: ProduceTransaction | None = None

    def addresses(self, node: int) -> list[tuple[str, int]]:
        """Where to send a call for ``node``: its address, or for :data:`ANY_NODE`
        the known brokers, then the bootstrap servers."""
        if node != ANY_NODE:
            return [self.metadata.address(node)]
        known = [a for _, a in sorted(self.metadata.brokers.items())]
        return known + [a for a in self.bootstrap if a not in known]

    # ------------------------------------------------------------------ metadata

    def refresh(self, topics: Sequence[str] | None, *, create: bool = False) -> Op[Any]:
        """Metadata for ``topics`` (None: every topic; []: brokers only) into the
        cache; returns the response."""

        def build(v: int) -> dict[str, Any]:
            wanted = None if topics is None else [{"name": t} for t in topics]
            return {
                "topics": [] if wanted is None and v == 0 else wanted,
                "allow_auto_topic_creation": create,
            }

        response = yield Call(ANY_NODE, ApiKey.METADATA, build)
        self.metadata.update(response)
        return response

    def topic(
        self, name: str, *, create: bool = False, fresh: bool = False
    ) -> Op[TopicInfo]:
        """The cached layout of ``name``, asking Metadata if unknown or ``fresh``.

        Raises:
            BrokerError: the topic's Metadata error (UNKNOWN_TOPIC_OR_PARTITION...).
        """
        info = None if fresh else self.metadata.topics.get(name)
        if info is None:
            response = yield from self.refresh([name], create=create)
            for t in response.topics:
                if t.name == name:
                    check_code(t.error_code, f"Metadata {name}", topic=name)
            info = self.metadata.topics.get(name)
            if info is None:
                raise BrokerError(
                    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Metadata {name}", topic=name
                )
        return info

    def leader(self, topic: str, partition: int, *, create: bool = False) -> Op[int]:
        """The leader node of a partition, refreshing once if it has none.

        Raises:
            BrokerError: UNKNOWN_TOPIC_OR_PARTITION (no such partition) or
                LEADER_NOT_AVAILABLE (none after a refresh).
        """
        info = yield from self.topic(topic, create=create)
        for attempt in range(2):
            leader = info.leaders.get(partition)
            where = f"Metadata {topic}-{partition}"
            if leader is None:
                raise BrokerError(
                    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                    where,
                    topic=topic,
                    partition=partition,
                )
            if leader >= 0:
                return leader
            if attempt == 0:
                info = yield from self.topic(topic, fresh=True)
        raise BrokerError(
            ErrorCode.LEADER_NOT_AVAILABLE, where, topic=topic, partition=partition
        )

    def _stale(self, code: int, attempt: int, topic: str) -> bool:
        """True (and the topic forgotten) if ``code`` calls for a metadata refresh
        and this is the first attempt."""
        if attempt == 0 and code in REFRESH_CODES:
            self.metadata.forget(topic)
            return True
        return False

    # ------------------------------------------------------------------ produce

    def assign(
        self, info: TopicInfo, records: Sequence[RecordInput], partition: int | None
    ) -> dict[int, list[int]]:
        """``{partition: [indexes of records]}``: ``partition`` if given, else the
        murmur2 partition for keyed records and one sticky partition for the rest.

        Raises:
            ClientError: a key that is neither bytes-like nor None (named by index).
        """
        if partition is not None:
            return {partition: list(range(len(records)))}
        out: dict[int, list[int]] = {}
        count = len(info.leaders)
        sticky: int | None = None
        for i, record in enumerate(records):
            key = record.key if hasattr(record, "key") else record[0]
            if isinstance(key, bytes | bytearray | memoryview):
                p = partition_for_key(bytes(key), count)
            elif key is not None:
                raise ClientError(
                    f"records[{i}].key: bytes or None expected, got {type(key).__name__}"
                )
            else:
                if sticky is None:
                    sticky = self.partitioner.next(info.name, info.available)
                p = sticky
            out.setdefault(p, []).append(i)
        return out

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
    ) -> WaitingOp[list[ProducedRecord]]:
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
        if not records:
            return []
        if acks not in (-1, 0, 1):
            raise ClientError(f"acks must be -1 (all), 0 or 1, got {acks}")
        idem = self.idempotence
        if idem is not None and acks != -1:
            raise ClientError(
                f"acks must be -1 (all) with enable_idempotence, got {acks} "
                "(as Java's producer)"
            )
        info = yield from self.topic(topic, create=self.allow_auto_topic_creation)
        assignment = self.assign(info, records, partition)
        txn = self.transaction
        if txn is not None:
            yield from txn.add_partitions(topic, sorted(assignment))
            try:
                out = yield from self._send_batches(
                    topic, records, assignment, acks, compression, timeout_ms
                )
            except Exception as err:
                raise txn.produce_failed(err) from err
            return out
        if idem is None:
            out = yield from self._send_batches(
                topic, records, assignment, acks, compression, timeout_ms
            )
            return out
        yield from idem.ensure()
        try:
            out = yield from self._send_batches(
                topic, records, assignment, acks, compression, timeout_ms
            )
        except BaseException:
            # A batch may be stored without its answer (or the broker refused
            # the sequence state): start a new epoch before the next produce.
            idem.bump_needed = True
            raise
        return out

    def _send_batches(
        self,
        topic: str,
        records: Sequence[RecordInput],
        assignment: dict[int, list[int]],
        acks: int,
        compression: Compression,
        timeout_ms: int,
    ) -> Op[list[ProducedRecord]]:
        """Encode and send one batch per partition of ``assignment``; resend
        those answered with a stale-metadata error (once), or, idempotent, with
        any retriable error (the same batch, so the broker stores it once) up to
        :data:`~.idempotence.IDEMPOTENT_ATTEMPTS` sends, and UNKNOWN_PRODUCER_ID
        after an epoch bump."""
        idem = self.idempotence
        txn = self.transaction
        transactional_id = None if txn is None else txn.transactional_id
        produce_max = None if txn is None else txn.produce_max_version

        def encode(p: int) -> bytes:
            chosen = [records[i] for i in assignment[p]]
            if idem is None:
                return encode_batch(chosen, compression=compression)
            producer_id, epoch, sequence = idem.batch_header(topic, p)
            return encode_batch(
                chosen,
                compression=compression,
                producer_id=producer_id,
                producer_epoch=epoch,
                base_sequence=sequence,
                is_transactional=txn is not None,
            )

        batches = {p: encode(p) for p in assignment}
        out: list[ProducedRecord | None] = [None] * len(records)
        pending = sorted(batches)
        attempts = 2 if idem is None else IDEMPOTENT_ATTEMPTS
        for attempt in range(attempts):
            last = attempt == attempts - 1
            by_leader: dict[int, list[int]] = {}
            for p in pending:
                node = yield from self.leader(topic, p)
                by_leader.setdefault(node, []).append(p)
            info = yield from self.topic(topic)
            retry: list[int] = []
            bump = False
            for node, parts in sorted(by_leader.items()):

                def build(
                    v: int,
                    parts: list[int] = parts,
                    topic_id: uuid.UUID = info.topic_id,
                ) -> dict[str, Any]:
                    return {
                        "transactional_id": transactional_id,
                        "acks": acks,
                        "timeout_ms": timeout_ms,
                        "topic_data": [
                            {
                                "name": topic,
                                "topic_id": topic_id,
                                "partition_data": [
                                    {"index": p, "records": batches[p]} for p in parts
                                ],
                            }
                        ],
                    }

                response = yield Call(node, ApiKey.PRODUCE, build, produce_max)
                if response is None:  # acks=0
                    for p in parts:
                        for i in assignment[p]:
                            out[i] = ProducedRecord(topic, p, -1)
                    continue
                for pr in response.responses[0].partition_responses:
                    code = pr.error_code
                    where = f"Produce {topic}-{pr.index}"
                    message = getattr(pr, "error_message", None)
                    base_offset = pr.base_offset
                    if idem is not None and code == ErrorCode.DUPLICATE_SEQUENCE_NUMBER:
                        code, base_offset = ErrorCode.NONE, -1  # stored before
                    if self._stale(code, 0 if idem else attempt, topic) and not last:
                        retry.append(pr.index)
                        continue
                    if idem is not None and code != ErrorCode.NONE:
                        if (
                            code == ErrorCode.UNKNOWN_PRODUCER_ID
                            and not last
                            and txn is None  # a transaction aborts instead
                        ):
                            retry.append(pr.index)  # not stored: new epoch, resend
                            bump = True
                            continue
                        if code in RESET_CODES:
                            raise ProducerSequenceError(
                                code,
                                where,
                                topic=topic,
                                partition=pr.index,
                                error_message=message,
                            )
                        if _retriable(code) and not last:
                            retry.append(pr.index)
                            continue
                    check_code(
                        code,
                        where,
                        topic=topic,
                        partition=pr.index,
                        error_message=message,
                    )
                    if idem is not None:
                        idem.acknowledged(topic, pr.index, len(assignment[pr.index]))
                    append_ms = getattr(pr, "log_append_time_ms", -1)
                    for n, i in enumerate(assignment[pr.index]):
                        offset = base_offset + n if base_offset >= 0 else -1
                        out[i] = ProducedRecord(topic, pr.index, offset, append_ms)
            if not retry:
                break
            if bump and idem is not None:
                idem.bump_needed = True
                yield from idem.ensure()
                batches.update({p: encode(p) for p in retry})
            pending = retry
        missing = [i for i, r in enumerate(out) if r is None]
        if missing:
            raise ClientError(f"Produce {topic}: no answer for records {missing}")
        return [r for r in out if r is not None]

    # ------------------------------------------------------------------ fetch

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
    ) -> Op[FetchResult]:
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
        result = yield from self._fetch(
            topic, partition, offset, max_bytes, max_wait_ms, isolation_level, decode
        )
        if key_deserializer is None and value_deserializer is None:
            return result
        from kproto.serde.records import deserialize_result

        return deserialize_result(
            result, topic, partition, key_deserializer, value_deserializer
        )

    def _fetch(
        self,
        topic: str,
        partition: int,
        offset: int,
        max_bytes: int,
        max_wait_ms: int,
        isolation_level: int,
        decode: bool,
    ) -> Op[FetchResult]:
        """:meth:`fetch` without the deserializers."""
        where = f"Fetch {topic}-{partition}@{offset}"
        for attempt in range(2):
            node = yield from self.leader(topic, partition)
            info = yield from self.topic(topic)

            def build(v: int, topic_id: uuid.UUID = info.topic_id) -> dict[str, Any]:
                if v >= 13 and topic_id == ZERO_UUID:
                    raise ClientError(
                        f"{where}: Fetch v{v} needs a topic id; Metadata gave none"
                    )
                return {
                    "replica_id": -1,
                    "max_wait_ms": max_wait_ms,
                    "min_bytes": 1,
                    "max_bytes": max_bytes,
                    "isolation_level": isolation_level,
                    "session_id": 0,
                    "session_epoch": -1,
                    "topics": [
                        {
                            "topic": topic,
                            "topic_id": topic_id,
                            "partitions": [
                                {
                                    "partition": partition,
                                    "fetch_offset": offset,
                                    "log_start_offset": -1,
                                    "partition_max_bytes": max_bytes,
                                }
                            ],
                        }
                    ],
                }

            response = yield Call(node, ApiKey.FETCH, build)
            check_code(getattr(response, "error_code", 0), where, topic=topic)
            data = response.responses[0].partitions[0]
            if self._stale(data.error_code, attempt, topic):
                continue
            check_code(data.error_code, where, topic=topic, partition=partition)
            return interpret_fetch(
                data,
                offset,
                max_bytes,
                where,
                decode=decode,
                isolation_level=isolation_level,
            )
        raise AssertionError("unreachable")  # pragma: no cover

    def pages(
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
    ) -> Iterator[Op[list[Record]]]:
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
            yield _take(pager, result, f"{topic}-{partition}")

    def list_offsets(
        self,
        topic: str,
        partitions: Iterable[int] | None = None,
        timestamp: int = LATEST,
        isolation_level: int = 0,
    ) -> Op[dict[int, ListedOffset]]:
        """ListOffsets: per partition (default: all), the offset for ``timestamp``:
        :data:`LATEST` (-1, the high watermark), :data:`EARLIEST` (-2, the log
        start) or a time in ms (the first record at or after it).
        ``isolation_level`` 1 (read_committed, v2+) makes LATEST the last stable
        offset.

        Returns:
            ``{partition: ListedOffset(offset, timestamp)}``.
        """
        info = yield from self.topic(topic)
        pending = sorted(info.leaders if partitions is None else set(partitions))
        out: dict[int, ListedOffset] = {}
        for attempt in range(2):
            by_leader: dict[int, list[int]] = {}
            for p in pending:
                node = yield from self.leader(topic, p)
                by_leader.setdefault(node, []).append(p)
            retry: list[int] = []
            for node, parts in sorted(by_leader.items()):

                def build(v: int, parts: list[int] = parts) -> dict[str, Any]:
                    entries = [
                        {
                            "partition_index": p,
                            "timestamp": timestamp,
                            "max_num_offsets": 1,
                        }
                        for p in parts
                    ]
                    return {
                        "replica_id": -1,
                        "isolation_level": isolation_level,
                        "topics": [{"name": topic, "partitions": entries}],
                    }

                response = yield Call(node, ApiKey.LIST_OFFSETS, build)
                for pr in response.topics[0].partitions:
                    if self._stale(pr.error_code, attempt, topic):
                        retry.append(pr.partition_index)
                        continue
                    where = f"ListOffsets {topic}-{pr.partition_index}"
                    check_code(
                        pr.error_code, where, topic=topic, partition=pr.partition_index
                    )
                    if hasattr(pr, "offset"):
                        found = ListedOffset(pr.offset, pr.timestamp)
                    else:  # v0: a list of offsets
                        olds = pr.old_style_offsets
                        found = ListedOffset(olds[0] if olds else -1, -1)
                    out[pr.partition_index] = found
            if not retry:
                break
            pending = retry
        return dict(sorted(out.items()))


def _retriable(code: int) -> bool:
    """Kafka's retriable flag for an error code (False if unknown)."""
    try:
        return ErrorCode(code).retriable
    except ValueError:
        return False


def _take(pager: Pager, page: Op[FetchResult], where: str) -> Op[list[Record]]:
    """``page``'s records for :meth:`ClientCore.pages`, through ``pager``."""
    result = yield from page
    return pager.take(result, where)
