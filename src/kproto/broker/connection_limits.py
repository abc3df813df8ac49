"""Connection and request-queue limits of one broker node.

Follows Kafka's ``ConnectionQuotas`` (``max.connections``,
``max.connections.per.ip`` with ``max.connections.per.ip.overrides``; a connection
over a limit is closed right after accept) and ``RequestChannel``'s bounded queue
(``queued.max.requests``, default 500: when it is full the processors stop reading
requests until a slot frees), and kproto's own per-client turns
(:class:`ClientTurns`).

Requests that wait for something else (a Fetch for data, JoinGroup and
SyncGroup for the rest of the group: Kafka's purgatory) hold neither a queue slot
nor a turn (:data:`WAITING_APIS`; ShareFetch too).
"""

from __future__ import annotations

import asyncio
import collections
import contextvars
import logging
from collections import Counter
from collections.abc import Awaitable, Hashable, Mapping
from typing import Final, TypeVar

from kproto.index import ApiKey

__all__ = [
    "ClientTurns",
    "ConnectionQuotas",
    "Pass",
    "RequestQueue",
    "WAITING_APIS",
    "admit",
    "admit_now",
    "client_key",
    "close_open_pass",
    "off_turn",
]

log = logging.getLogger("kproto.broker")
T = TypeVar("T")

#: APIs whose handlers wait on other clients or on data, outside every bound here.
WAITING_APIS: Final = frozenset(
    {ApiKey.FETCH, ApiKey.SHARE_FETCH, ApiKey.JOIN_GROUP, ApiKey.SYNC_GROUP}
)


class ConnectionQuotas:
    """Counts the open connections of a node, in all and per client address.

    Args:
        max_connections: the most open at once (``None``: unlimited, Kafka's
            default ``Integer.MAX_VALUE``).
        max_connections_per_ip: the most from one address (``None``: unlimited).
        per_ip_overrides: ``{address: limit}`` replacing the per-IP limit for
            those addresses (Kafka's ``max.connections.per.ip.overrides``).

    Raises:
        ValueError: a limit below 0.
    """

    def __init__(
        self,
        max_connections: int | None = None,
        max_connections_per_ip: int | None = None,
        per_ip_overrides: Mapping[str, int] | None = None,
    ) -> None:
        for name, value in (
            ("max_connections", max_connections),
            ("max_connections_per_ip", max_connections_per_ip),
            *(
                ("max_connections_per_ip_overrides", v)
                for v in (per_ip_overrides or {}).values()
            ),
        ):
            if value is not None and value < 0:
                raise ValueError(f"{name} must be >= 0, got {value}")
        self.max_connections = max_connections
        self.max_connections_per_ip = max_connections_per_ip
        self.per_ip_overrides = dict(per_ip_overrides or {})
        self.by_ip: Counter[str] = Counter()
        self.total = 0

    def admit(self, host: str) -> str | None:
        """Count a new connection from ``host``; return ``None`` if admitted, else
        why not (nothing is counted then: close the connection)."""
        per_ip = self.per_ip_overrides.get(host, self.max_connections_per_ip)
        if per_ip is not None and self.by_ip[host] >= per_ip:
            return f"{host} has {self.by_ip[host]} connections, max.connections.per.ip is {per_ip}"
        if self.max_connections is not None and self.total >= self.max_connections:
            return f"{self.total} connections open, max.connections is {self.max_connections}"
        self.by_ip[host] += 1
        self.total += 1
        return None

    def release(self, host: str) -> None:
        """Forget an admitted connection from ``host`` that closed."""
        self.total -= 1
        self.by_ip[host] -= 1
        if self.by_ip[host] <= 0:
            del self.by_ip[host]


class RequestQueue:
    """At most ``queued_max_requests`` requests between being read and answered,
    across the node's connections; a connection whose request finds the queue full
    waits (reads nothing more) until a slot frees.

    Each connection has at most one request in flight (the server reads its next
    frame only after answering), so the queue bounds the requests in flight, and
    the request bytes held, across connections.

    Raises:
        ValueError: ``queued_max_requests`` < 1.
    """

    def __init__(self, queued_max_requests: int = 500) -> None:
        if queued_max_requests < 1:
            raise ValueError(
                f"queued_max_requests must be >= 1, got {queued_max_requests}"
            )
        self.capacity = queued_max_requests
        self._slots = asyncio.Semaphore(queued_max_requests)
        #: the most requests seen in the queue at once
        self.peak = 0

    @property
    def size(self) -> int:
        """Requests in the queue now."""
        return self.capacity - self._slots._value

    async def __aenter__(self) -> RequestQueue:
        await self._slots.acquire()
        self.peak = max(self.peak, self.size)
        return self

    async def __aexit__(self, *exc: object) -> None:
        self._slots.release()


class _Turn:
    __slots__ = ("client", "held")

    def __init__(self, client: Hashable) -> None:
        self.client = client
        self.held = False


_CURRENT: contextvars.ContextVar[tuple[ClientTurns, _Turn] | None] = (
    contextvars.ContextVar("kproto_broker_turn", default=None)
)


class ClientTurns:
    """One request at a time per client, across all of its connections.

    A client is a ``(address, principal, client id)`` key. A single-threaded
    broker serves ready connections in turn, so without this a client with 50
    connections gets 50 requests handled for each one of a client with one. A
    client's turn passes on to its next waiting request only on the event loop's
    next round (``call_soon``), after every other ready connection had its go.
    A handler that waits for other work (produce validation on a thread) gives
    the turn up meanwhile (:func:`off_turn`). A request that finds its client's
    turn being handed on with nobody waiting (the next pipelined request of the
    connection just answered) queues itself, not a future, and waits that one
    round (the hand-off, scheduled first, gives it the turn): one loop round
    per request fewer than waking it through a future.

    Args:
        enabled: ``False``: requests are handled as they come (no turns).
    """

    def __init__(self, enabled: bool = True) -> None:
        self.enabled = enabled
        self._busy: set[Hashable] = set()
        # per client, who waits for its turn, first first: a future to resolve,
        # or a _Turn whose task already wakes on the next round (_acquire)
        self._waiting: dict[
            Hashable, collections.deque[asyncio.Future[None] | _Turn]
        ] = {}
        # clients whose turn a scheduled _pass_on hands on at the next round
        self._passing: set[Hashable] = set()

    def waiting(self, client: Hashable) -> int:
        """Requests of ``client`` waiting for a turn."""
        return len(self._waiting.get(client, ()))

    async def _acquire(self, turn: _Turn) -> None:
        client = turn.client
        if client not in self._busy:
            self._busy.add(client)
            turn.held = True
            return
        if client in self._passing and client not in self._waiting:
            # first in line for the turn _pass_on hands on at the next round; this
            # task's wake-up is scheduled after it
            self._waiting[client] = collections.deque((turn,))
            try:
                await asyncio.sleep(0)
            except asyncio.CancelledError:
                if turn.held:
                    self._release(turn)
                else:
                    self._unqueue(client, turn)
                raise
            if turn.held:
                return
            self._unqueue(client, turn)  # not handed on (not expected): wait on
            if client not in self._busy:
                self._busy.add(client)
                turn.held = True
                return
        future = asyncio.get_running_loop().create_future()
        self._waiting.setdefault(turn.client, collections.deque()).append(future)
        try:
            await future
        except asyncio.CancelledError:
            if future.done() and not future.cancelled():
                turn.held = True  # handed over just before the cancellation
                self._release(turn)
            else:
                self._unqueue(turn.client, future)
            raise
        turn.held = True

    def _unqueue(self, client: Hashable, waiter: asyncio.Future[None] | _Turn) -> None:
        queue = self._waiting.get(client)
        if queue is not None and waiter in queue:
            queue.remove(waiter)
            if not queue:
                del self._waiting[client]

    def _release(self, turn: _Turn) -> None:
        if not turn.held:
            return
        turn.held = False
        self._passing.add(turn.client)
        asyncio.get_running_loop().call_soon(self._pass_on, turn.client)

    def _pass_on(self, client: Hashable) -> None:
        self._passing.discard(client)
        queue = self._waiting.get(client)
        while queue:
            waiter = queue.popleft()
            if not queue:
                del self._waiting[client]
            if isinstance(waiter, _Turn):
                waiter.held = True  # its task wakes next, the client stays busy
                return
            if not waiter.done():
                waiter.set_result(None)  # the client stays busy
                return
        self._busy.discard(client)


async def off_turn(awaitable: Awaitable[T]) -> T:
    """Await ``awaitable`` without holding the current request's turn (if any),
    then wait for a turn again."""
    current = _CURRENT.get()
    if current is None:
        return await awaitable
    turns, turn = current
    turns._release(turn)
    try:
        return await awaitable
    finally:
        await turns._acquire(turn)


def client_key(frame: bytes, host: str, principal: str) -> tuple[str, str, bytes]:
    """The ``(address, principal, client id)`` of a request frame, the client id
    read from the request header (v1+: int16 length and bytes after api_key,
    api_version and correlation_id) without decoding the request."""
    client_id = b""
    if len(frame) >= 10:
        size = int.from_bytes(frame[8:10], "big", signed=True)
        if size > 0:
            client_id = bytes(frame[10 : 10 + size])
    return host, principal, client_id


class Pass:
    """What one request holds while it is handled: a queue slot and a turn
    (released by :meth:`end_turn` and :meth:`close`; both idempotent)."""

    __slots__ = ("queue", "turns", "turn")

    def __init__(
        self, queue: RequestQueue | None, turns: ClientTurns, turn: _Turn | None
    ) -> None:
        self.queue = queue
        self.turns = turns
        self.turn = turn

    def end_turn(self) -> None:
        """Give the turn up (before writing the response: a client that does not
        read must not hold the node)."""
        if self.turn is not None:
            self.turns._release(self.turn)
            self.turn = None
            _CURRENT.set(None)

    def close(self) -> None:
        """Give the turn and the queue slot up."""
        self.end_turn()
        if self.queue is not None:
            self.queue._slots.release()
            self.queue = None
        _PASS.set(None)


def admit_now(
    queue: RequestQueue, turns: ClientTurns, frame: bytes, host: str, principal: str
) -> Pass | None:
    """:func:`admit` when it would not wait (a queue slot free, the client's turn
    free), without a coroutine; ``None`` (nothing taken) when it would."""
    api_key = int.from_bytes(frame[:2], "big") if len(frame) >= 2 else -1
    held: RequestQueue | None = None
    if api_key not in WAITING_APIS:
        slots = queue._slots
        # no slot free, or others already waiting for one (Semaphore.locked
        # without its scan for cancelled waiters: admit sorts those out)
        if slots._value <= 0 or slots._waiters:
            return None
        held = queue
    if not turns.enabled:
        if held is not None:
            slots._value -= 1  # Semaphore.acquire's own step when not locked
            queue.peak = max(queue.peak, queue.size)
        return Pass(held, turns, None)
    turn = _Turn(client_key(frame, host, principal))
    if turn.client in turns._busy:
        return None
    if held is not None:
        slots._value -= 1
        queue.peak = max(queue.peak, queue.size)
    turns._busy.add(turn.client)
    turn.held = True
    _CURRENT.set((turns, turn))
    admitted = Pass(held, turns, turn)
    _PASS.set(admitted)
    return admitted


async def admit(
    queue: RequestQueue, turns: ClientTurns, frame: bytes, host: str, principal: str
) -> Pass:
    """Wait for a queue slot (unless the frame's api_key is one of
    :data:`WAITING_APIS`), then for a turn of the frame's client; the caller
    closes the :class:`Pass` once the request is answered."""
    api_key = int.from_bytes(frame[:2], "big") if len(frame) >= 2 else -1
    held: RequestQueue | None = None
    if api_key not in WAITING_APIS:
        await queue.__aenter__()
        held = queue
    if not turns.enabled:
        return Pass(held, turns, None)
    turn = _Turn(client_key(frame, host, principal))
    try:
        await turns._acquire(turn)
    except BaseException:
        if held is not None:
            held._slots.release()
        raise
    _CURRENT.set((turns, turn))
    admitted = Pass(held, turns, turn)
    _PASS.set(admitted)
    return admitted


_PASS: contextvars.ContextVar[Pass | None] = contextvars.ContextVar(
    "kproto_broker_pass", default=None
)


def close_open_pass() -> None:
    """Close the :class:`Pass` the current connection task still holds (a
    request that ended the connection), if any."""
    held = _PASS.get()
    if held is not None:
        held.close()
