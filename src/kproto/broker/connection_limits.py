"""Connection and request-queue limits of one broker node.

Follows Kafka's ``ConnectionQuotas`` (``max.connections``,
``max.connections.per.ip`` with ``max.connections.per.ip.overrides``; a connection
over a limit is closed right after accept) and ``RequestChannel``'s bounded queue
(``queued.max.requests``, default 500: when it is full the processors stop reading
requests until a slot frees).
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from collections.abc import Mapping

__all__ = ["ConnectionQuotas", "RequestQueue"]

log = logging.getLogger("kproto.broker")


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
