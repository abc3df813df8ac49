"""The asyncio :class:`AsyncClient`: :class:`kproto.client.Client`'s twin."""

from __future__ import annotations

import asyncio
import contextlib
import ssl
from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from kproto._closing import AsyncClosing
from kproto.aio import AsyncConnection
from kproto.connection import KafkaConnectionError
from kproto.index import request_type
from kproto.meta import build_entity
from kproto.records import Compression, Record, RecordInput
from kproto.sasl import SaslConfig

from . import admin, describe
from .core import LATEST, ClientCore
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
from .sync import DEFAULT_FETCH_MAX_BYTES
from .transactions import (
    ConsumerGroupMetadata,
    TransactionFatalError,
    TransactionManager,
)

if TYPE_CHECKING:
    from kproto.serde import Deserializer, Serializer

__all__ = ["AsyncClient", "AsyncTransactionalProducer"]

T = TypeVar("T")


class AsyncClient(AsyncClosing):
    """:class:`kproto.client.Client` for asyncio: the same arguments, methods,
    results and errors (including: no hidden retries beyond one metadata
    refresh), with ``async`` methods, ``iter_records`` an async iterator, and
    ``async with``. Requests are sent one at a time per client."""

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
        self._conns: dict[tuple[str, int], AsyncConnection] = {}

    async def connection(self, node: int) -> AsyncConnection:
        """As :meth:`kproto.client.Client.connection`."""
        addresses = self.core.addresses(node)
        for address in addresses:
            if address in self._conns:
                return self._conns[address]
        last: KafkaConnectionError | None = None
        for host, port in addresses:
            conn = AsyncConnection(
                host,
                port,
                client_id=self.client_id,
                timeout_s=self.timeout_s,
                ssl_context=self.ssl_context,
                sasl=self.sasl,
            )
            try:
                await conn.__aenter__()  # connects (the context-manager surface)
                await conn.negotiate(caps=self.version_caps)
            except BaseException as err:
                await conn.close()
                if not isinstance(err, KafkaConnectionError):
                    raise
                last = err
                continue
            self._conns[(host, port)] = conn
            return conn
        assert last is not None
        raise last

    async def run(self, op: WaitingOp[T]) -> T:
        """As :meth:`kproto.client.Client.run`."""
        try:
            call = next(op)
            while True:
                if isinstance(call, Backoff):
                    await asyncio.sleep(call.ms / 1000)
                    call = op.send(None)
                    continue
                conn = await self.connection(call.node)
                version = call_version(call, conn.version_for(call.api_key))
                request_cls = request_type(call.api_key, version)
                request: Any = build_entity(
                    request_cls, fit(request_cls, call.build(version))
                )
                try:
                    response = await conn.send(request)
                except KafkaConnectionError:
                    await self._drop(conn)
                    raise
                call = op.send(response)
        except StopIteration as stop:
            result: T = stop.value
            return result
        finally:
            op.close()

    async def _drop(self, conn: AsyncConnection) -> None:
        await conn.close()
        self._conns = {a: c for a, c in self._conns.items() if c is not conn}

    async def produce(
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
        """As :meth:`kproto.client.Client.produce`. The serializers run on the event
        loop (a registry-backed one blocks it for its first registry request)."""
        if key_serializer is not None or value_serializer is not None:
            from kproto.serde.records import serialize_records

            records = serialize_records(
                topic, records, key_serializer, value_serializer
            )
        return await self.run(
            self.core.produce(
                topic,
                records,
                partition=partition,
                acks=acks,
                compression=compression,
                timeout_ms=timeout_ms,
            )
        )

    async def fetch(
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
        """As :meth:`kproto.client.Client.fetch` (the deserializers run on the
        event loop)."""
        result = await self.run(
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

    async def iter_records(
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
    ) -> AsyncIterator[Record]:
        """As :meth:`kproto.client.Client.iter_records` (``async for``)."""
        pager = Pager(offset, follow=follow, isolation_level=isolation_level)
        while not pager.done:
            result = await self.fetch(
                topic,
                partition,
                pager.offset,
                max_bytes=max_bytes,
                max_wait_ms=max_wait_ms if follow else 0,
                isolation_level=isolation_level,
                key_deserializer=key_deserializer,
                value_deserializer=value_deserializer,
            )
            for record in pager.take(result, f"{topic}-{partition}"):
                yield record

    async def list_offsets(
        self,
        topic: str,
        partitions: Iterable[int] | None = None,
        *,
        timestamp: int = LATEST,
        isolation_level: int = 0,
    ) -> dict[int, ListedOffset]:
        """As :meth:`kproto.client.Client.list_offsets`."""
        return await self.run(
            self.core.list_offsets(topic, partitions, timestamp, isolation_level)
        )

    async def create_topics(
        self,
        names: Sequence[str],
        *,
        num_partitions: int = -1,
        replication_factor: int = -1,
        configs: Mapping[str, str | None] | None = None,
        timeout_ms: int = 30_000,
        validate_only: bool = False,
    ) -> None:
        """As :meth:`kproto.client.Client.create_topics`."""
        await self.run(
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

    async def delete_topics(
        self, names: Sequence[str], *, timeout_ms: int = 30_000
    ) -> None:
        """As :meth:`kproto.client.Client.delete_topics`."""
        await self.run(admin.delete_topics(self.core, names, timeout_ms=timeout_ms))

    async def commit_offsets(
        self,
        group_id: str,
        offsets: Mapping[TopicPartition, int],
        *,
        metadata: str | None = "",
    ) -> None:
        """As :meth:`kproto.client.Client.commit_offsets`."""
        await self.run(
            admin.commit_offsets(self.core, group_id, offsets, metadata=metadata)
        )

    async def fetch_offsets(
        self, group_id: str, partitions: Sequence[TopicPartition] | None
    ) -> dict[TopicPartition, int]:
        """As :meth:`kproto.client.Client.fetch_offsets`."""
        return await self.run(admin.fetch_offsets(self.core, group_id, partitions))

    async def describe_topics(
        self, names: Sequence[str] | None = None
    ) -> list[TopicDescription]:
        """As :meth:`kproto.client.Client.describe_topics`."""
        return await self.run(describe.describe_topics(self.core, names))

    async def describe_configs(
        self, topics: Sequence[str]
    ) -> dict[str, list[ConfigEntry]]:
        """As :meth:`kproto.client.Client.describe_configs`."""
        return await self.run(describe.describe_configs(self.core, topics))

    async def list_groups(self) -> list[GroupListing]:
        """As :meth:`kproto.client.Client.list_groups`."""
        return await self.run(describe.list_groups(self.core))

    async def describe_groups(self, group_ids: Sequence[str]) -> list[GroupDescription]:
        """As :meth:`kproto.client.Client.describe_groups`."""
        return await self.run(describe.describe_groups(self.core, group_ids))

    async def close(self) -> None:
        """Close every connection. Idempotent."""
        conns, self._conns = self._conns, {}
        for conn in conns.values():
            await conn.close()

    def __repr__(self) -> str:
        return f"<AsyncClient {','.join(f'{h}:{p}' for h, p in self.core.bootstrap)}>"


class AsyncTransactionalProducer(AsyncClosing):
    """:class:`kproto.client.TransactionalProducer` for asyncio: the same
    arguments and methods, awaited (``transaction()`` is an async context
    manager), over an :class:`AsyncClient`."""

    def __init__(
        self,
        bootstrap_servers: str,
        transactional_id: str,
        *,
        transaction_timeout_ms: int = 60_000,
        client_id: str = "kproto",
        timeout_s: float = 30.0,
        ssl_context: ssl.SSLContext | None = None,
        sasl: SaslConfig | None = None,
        version_caps: Mapping[int, int] | None = None,
    ) -> None:
        self.client = AsyncClient(
            bootstrap_servers,
            client_id=client_id,
            timeout_s=timeout_s,
            ssl_context=ssl_context,
            sasl=sasl,
            version_caps=version_caps,
            enable_idempotence=True,
        )
        self.manager = TransactionManager(
            self.client.core,
            transactional_id,
            transaction_timeout_ms=transaction_timeout_ms,
        )

    async def init_transactions(self) -> None:
        await self.client.run(self.manager.init_transactions())

    def begin_transaction(self) -> None:
        self.manager.begin_transaction()

    async def send(
        self,
        topic: str,
        records: Sequence[RecordInput],
        *,
        partition: int | None = None,
        compression: Compression = Compression.NONE,
        timeout_ms: int = 30_000,
    ) -> list[ProducedRecord]:
        return await self.client.produce(
            topic,
            records,
            partition=partition,
            acks=-1,
            compression=compression,
            timeout_ms=timeout_ms,
        )

    async def send_offsets_to_transaction(
        self,
        offsets: Mapping[TopicPartition, int],
        group_metadata: ConsumerGroupMetadata,
    ) -> None:
        await self.client.run(
            self.manager.send_offsets_to_transaction(offsets, group_metadata)
        )

    async def commit_transaction(self) -> None:
        await self.client.run(self.manager.commit_transaction())

    async def abort_transaction(self) -> None:
        await self.client.run(self.manager.abort_transaction())

    @contextlib.asynccontextmanager
    async def transaction(self) -> AsyncIterator[AsyncTransactionalProducer]:
        """Begin; commit when the block ends, abort when it raises (not after a
        fatal error)."""
        self.begin_transaction()
        try:
            yield self
        except BaseException as err:
            if not isinstance(err, TransactionFatalError):
                await self.abort_transaction()
            raise
        await self.commit_transaction()

    async def close(self) -> None:
        await self.client.close()
