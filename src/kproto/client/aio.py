"""The asyncio :class:`AsyncClient`: :class:`kproto.client.Client`'s twin."""

from __future__ import annotations

import asyncio
import contextlib
import functools
from collections.abc import (
    AsyncIterator,
    Callable,
    Iterator,
)
from typing import Concatenate, ParamSpec, TypeVar

from kproto._closing import AsyncClosing
from kproto.aio import AsyncConnection
from kproto.connection import KafkaConnectionError
from kproto.records import Record

from .core import ClientCore
from .driver import ClientDriver, ConnectAttempts, TransactionalDriver
from .protocol import Backoff, Op, Steps, WaitingOp
from .transactions import (
    TransactionFatalError,
)

__all__ = ["AsyncClient", "AsyncTransactionalProducer"]

P = ParamSpec("P")
T = TypeVar("T")


def _awaited_pages(
    pages: Callable[Concatenate[ClientCore, P], Iterator[Op[list[Record]]]],
) -> Callable[Concatenate[AsyncClient, P], AsyncIterator[Record]]:
    """``iter_records`` as an async iterator (``async for``)."""

    @functools.wraps(pages)
    async def method(
        self: AsyncClient, /, *args: P.args, **kwargs: P.kwargs
    ) -> AsyncIterator[Record]:
        for page in pages(self.core, *args, **kwargs):
            for record in await self.run(page):
                yield record

    return method


class AsyncClient(ClientDriver[AsyncConnection], AsyncClosing):
    """:class:`kproto.client.Client` for asyncio: the same arguments, methods,
    results and errors (including: no hidden retries beyond one metadata
    refresh), with ``async`` methods, ``iter_records`` an async iterator, and
    ``async with``. Requests are sent one at a time per client."""

    async def connection(self, node: int) -> AsyncConnection:
        """As :meth:`kproto.client.Client.connection`."""
        return self._cached(node) or await self._connect(node)

    async def _connect(self, node: int) -> AsyncConnection:
        attempts = ConnectAttempts()
        for host, port in self.core.addresses(node):
            with attempts:
                conn = AsyncConnection(host, port, **self.connection_settings())
                try:
                    await conn.__aenter__()  # connects (the context-manager surface)
                    await conn.negotiate(caps=self.version_caps)
                except BaseException:
                    await conn.close()
                    raise
                self._conns[(host, port)] = conn
                return conn
        raise attempts.failed()

    async def run(self, op: WaitingOp[T]) -> T:
        """As :meth:`kproto.client.Client.run`."""
        with Steps(op) as steps:
            for call in steps:
                if isinstance(call, Backoff):
                    await asyncio.sleep(call.ms / 1000)
                    continue
                conn = await self.connection(call.node)
                try:
                    steps.answer(await conn.send(self._request(call, conn)))
                except KafkaConnectionError:
                    await self._drop(conn)
                    raise
        return steps.result

    async def _drop(self, conn: AsyncConnection) -> None:
        await conn.close()
        self._forget(conn)

    iter_records = _awaited_pages(ClientCore.pages)

    async def close(self) -> None:
        """Close every connection. Idempotent."""
        conns, self._conns = self._conns, {}
        for conn in conns.values():
            await conn.close()


class AsyncTransactionalProducer(TransactionalDriver[AsyncClient], AsyncClosing):
    """:class:`kproto.client.TransactionalProducer` for asyncio: the same
    arguments and methods, awaited (``transaction()`` is an async context
    manager), over an :class:`AsyncClient`."""

    client_type = AsyncClient

    async def run(self, op: WaitingOp[T]) -> T:
        """Drive ``op`` on :attr:`client`."""
        return await self.client.run(op)

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
