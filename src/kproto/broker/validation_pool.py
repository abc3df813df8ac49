"""Where produced batches are validated: on the event loop or on a thread.

Kafka validates on its request-handler threads, never on the network threads, so
one client's large or compressed batch costs the others no more than a share of the
CPU. Here the event loop is the network thread: a small request is validated
inline, because handing it to a thread costs more CPU than validating a typical
batch, and anything larger, or any compressed batch that expands past a bound,
goes to a pool of two threads (cramjam's decompression releases the GIL).

:class:`ValidationPool` is per cluster: it remembers which clients recently sent a
batch past the inline bound, so a client sending decompression bombs costs the
event loop one bounded attempt in :data:`OFF_LOOP_REQUESTS`.
"""

from __future__ import annotations

import asyncio
import collections
import concurrent.futures
from collections.abc import Awaitable, Callable, Hashable

from kproto.broker.log_validator import (
    InlineBoundExceeded,
    LogPolicy,
    ValidBatch,
    validate_batches,
    validate_inline,
)

__all__ = ["OFF_LOOP_REQUESTS", "ValidationPool"]

#: Requests up to this many bytes validate inline ...
INLINE_MAX_BYTES = 64 * 1024
#: ... when compressed, if their records expand to at most this many bytes;
#: decompression stops there and a larger batch goes to the threads.
INLINE_MAX_DECOMPRESSED = 1024 * 1024
#: A client whose compressed batch expanded past that bound has its next this
#: many requests validated on the threads without an inline attempt ...
OFF_LOOP_REQUESTS = 100
#: ... remembered for at most this many clients (the least recent forgotten).
OFF_LOOP_CLIENTS = 1024

#: The threads validating large or compressed batches, shared by every cluster of
#: the process; at most ``queued.max.requests`` wait for them per connection.
_THREADS = concurrent.futures.ThreadPoolExecutor(
    max_workers=2, thread_name_prefix="kproto-validate"
)


class ValidationPool:
    """Validates produced records inline or on the validation threads.

    Attributes:
        executor: where large batches are validated (the process's two threads;
            tests may swap it).
        off_loop_clients: client key -> requests left to send straight to the
            threads (event loop thread only; at most :data:`OFF_LOOP_CLIENTS`).
    """

    def __init__(self, executor: concurrent.futures.Executor | None = None) -> None:
        self.executor: concurrent.futures.Executor = executor or _THREADS
        self.off_loop_clients: collections.OrderedDict[Hashable, int] = (
            collections.OrderedDict()
        )

    async def validate(
        self,
        records: bytes,
        policy: LogPolicy,
        *,
        wait: (
            Callable[[Awaitable[list[ValidBatch]]], Awaitable[list[ValidBatch]]] | None
        ) = None,
        client: Hashable | None = None,
    ) -> list[ValidBatch]:
        """:func:`~kproto.broker.log_validator.validate_batches` where it does not
        hold up the event loop: inline for requests up to 64 KiB whose records, if
        compressed, expand to at most 1 MiB (decompression stops there: a bomb
        costs the loop no more), else on the threads. ``wait`` wraps the wait for
        the thread (the broker passes
        :func:`kproto.broker.connection_limits.off_turn`). A ``client`` (any key:
        the broker passes the address, principal and client id) whose compressed
        batch expanded past the inline bound goes to the threads directly for its
        next :data:`OFF_LOOP_REQUESTS` requests.

        Raises:
            RecordValidationError: as ``validate_batches``.
        """
        remembered = self.off_loop_clients
        left = None if client is None else remembered.get(client)
        if left is not None:
            if left > 1:
                remembered[client] = left - 1
            else:
                del remembered[client]
        elif len(records) <= INLINE_MAX_BYTES:
            try:
                return validate_inline(records, policy, INLINE_MAX_DECOMPRESSED)
            except InlineBoundExceeded:
                if client is not None:
                    remembered[client] = OFF_LOOP_REQUESTS
                    if len(remembered) > OFF_LOOP_CLIENTS:
                        remembered.popitem(last=False)
        loop = asyncio.get_running_loop()
        future = loop.run_in_executor(self.executor, validate_batches, records, policy)
        return await (future if wait is None else wait(future))
