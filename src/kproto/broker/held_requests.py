"""Held requests: a test parks requests of an API before they are handled, looks at
them, then lets them through, answers them with an error, or drops them, in the
order it chooses (franz-go kfake's ``ControlKey`` with ``KeepControl`` and
``SleepControl``: a control that parks a request until the test wakes it).

A :class:`Hold` takes the requests of one api_key (on one node or any, optionally
only those ``match`` accepts, at most ``count`` of them). A parked request waits off
its client's turn (:func:`~kproto.broker.connection_limits.off_turn`), so other
clients, and the client's other requests on other connections, go on; the
connection it came on waits, as a Kafka broker answers a connection's requests in
order. A request parked longer than ``timeout_ms`` is answered REQUEST_TIMED_OUT
(Kafka's answer to a request that outlived its deadline; an API whose error response
kproto cannot build closes the connection instead), so nothing hangs past a test.
Cluster shutdown drops every parked request unanswered.

The test thread calls :class:`Hold`'s methods; they marshal onto the cluster's loop
(the ``on_loop`` given by :class:`kproto.broker.Cluster`).
"""

from __future__ import annotations

import asyncio
import collections
import threading
from collections.abc import Callable
from typing import Any, Final, TypeVar

import attrs

from kproto.broker.connection_limits import off_turn
from kproto.broker.handlers.context import RequestContext
from kproto.broker.handlers.refusals import check_error_response
from kproto.broker.introspect import ReceivedRequest
from kproto.errors import ErrorCode
from kproto.index import ApiKey

__all__ = ["Hold", "HeldRequest", "RELEASE", "Outcome"]

T = TypeVar("T")

#: Let a parked request go on to its handler (and to any queued error).
RELEASE: Final = "release"

#: What a parked request gets: :data:`RELEASE`, an error code to answer with, or
#: ``"disconnect"`` (close its connection unanswered).
Outcome = ErrorCode | str

#: Runs a function on the cluster's loop thread and returns its result.
OnLoop = Callable[[Callable[[], Any]], Any]


@attrs.frozen
class HeldRequest(ReceivedRequest):
    """One parked request, as the test sees it (the attributes of
    :class:`~kproto.broker.introspect.ReceivedRequest`: ``node_id``,
    ``client_id``, ``api_key``, ``api_version``, ``correlation_id``,
    ``request``)."""


@attrs.define
class _Parked:
    seen: HeldRequest
    outcome: asyncio.Future[Outcome]
    timer: asyncio.TimerHandle | None = None


@attrs.define(eq=False)
class Hold:
    """Parks requests of ``api_key`` until the test decides (from
    :meth:`kproto.broker.Cluster.hold`).

    Args:
        api_key: the API whose requests are parked.
        on_loop: runs a function on the cluster's loop thread.
        node_id: park only requests to this node (``None``: any node).
        count: park at most this many requests in all, then let the rest through
            (``None``: every request until :meth:`stop`).
        timeout_ms: answer a request parked this long REQUEST_TIMED_OUT (ms, > 0).
        match: park only the requests for which ``match(ctx, request)`` is true.

    Raises:
        ValueError: ``count`` < 1 or ``timeout_ms`` <= 0.
    """

    api_key: ApiKey = attrs.field(converter=ApiKey)
    _on_loop: OnLoop
    node_id: int | None = attrs.field(default=None, kw_only=True)
    count: int | None = attrs.field(default=None, kw_only=True)
    timeout_ms: int = attrs.field(default=10_000, kw_only=True)
    _match: Callable[[RequestContext, Any], bool] | None = attrs.field(
        default=None, kw_only=True
    )
    _parked: collections.deque[_Parked] = attrs.field(
        init=False, factory=collections.deque
    )
    _taken: int = attrs.field(init=False, default=0)
    _stopped: bool = attrs.field(init=False, default=False)
    # notified (loop thread) whenever a request is parked, for wait()
    _arrived: threading.Condition = attrs.field(init=False, factory=threading.Condition)
    #: what a request parked ``timeout_ms`` gets: REQUEST_TIMED_OUT where the API's
    #: error response can be built, else the connection closes
    _on_timeout: Outcome = attrs.field(init=False)

    @count.validator
    def _check_count(self, _: object, count: int | None) -> None:
        if count is not None and count < 1:
            raise ValueError(
                f"count must be >= 1 (or None: every request), got {count}"
            )

    @timeout_ms.validator
    def _check_timeout(self, _: object, timeout_ms: int) -> None:
        if timeout_ms <= 0:
            raise ValueError(f"timeout_ms must be > 0, got {timeout_ms}")

    @_on_timeout.default
    def _timeout_outcome(self) -> Outcome:
        try:
            check_error_response(self.api_key)
        except ValueError:
            return "disconnect"
        return ErrorCode.REQUEST_TIMED_OUT

    # ------------------------------------------------------------ loop side

    @property
    def done(self) -> bool:
        """Takes no more requests and has none parked (the injector drops it)."""
        exhausted = self._stopped or (
            self.count is not None and self._taken >= self.count
        )
        return exhausted and not self._parked

    def takes(self, ctx: RequestContext, request: Any) -> bool:
        """Whether this hold parks ``request`` (counted when it does)."""
        if self._stopped or ctx.header.request_api_key != self.api_key:
            return False
        if self.count is not None and self._taken >= self.count:
            return False
        if self.node_id is not None and ctx.node_id != self.node_id:
            return False
        if self._match is not None and not self._match(ctx, request):
            return False
        self._taken += 1
        return True

    async def park(self, ctx: RequestContext, request: Any) -> Outcome:
        """Wait, off the client's turn, for the test's decision on ``request``
        (or the timeout's)."""
        loop = asyncio.get_running_loop()
        header = ctx.header
        parked = _Parked(
            HeldRequest(
                ctx.node_id,
                ctx.client_id,
                header.request_api_key,
                ctx.api_version,
                header.correlation_id,
                request,
            ),
            loop.create_future(),
        )
        parked.timer = loop.call_later(
            self.timeout_ms / 1000, self._decide, parked, self._on_timeout
        )
        self._parked.append(parked)
        with self._arrived:
            self._arrived.notify_all()
        try:
            return await off_turn(parked.outcome)
        finally:
            parked.timer.cancel()
            if parked in self._parked:  # e.g. the connection closed meanwhile
                self._parked.remove(parked)

    def _decide(self, parked: _Parked, outcome: Outcome) -> None:
        if parked in self._parked:
            self._parked.remove(parked)
        if not parked.outcome.done():
            parked.outcome.set_result(outcome)

    def _resolve(self, outcome: Outcome, n: int | None) -> int:
        todo = list(self._parked)[:n] if n is not None else list(self._parked)
        for parked in todo:
            self._decide(parked, outcome)
        return len(todo)

    def end(self, outcome: Outcome = RELEASE) -> int:
        """Stop taking requests and give every parked one ``outcome`` (loop side)."""
        self._stopped = True
        return self._resolve(outcome, None)

    # ----------------------------------------------------------- test side

    def requests(self) -> list[HeldRequest]:
        """The requests parked now, oldest first."""
        return self._on_loop(lambda: [p.seen for p in self._parked])  # type: ignore[no-any-return]

    @property
    def taken(self) -> int:
        """How many requests this hold has parked so far (released ones included)."""
        return self._taken

    def wait(self, n: int = 1, timeout_s: float = 10.0) -> list[HeldRequest]:
        """Block until at least ``n`` requests are parked at once; return them,
        oldest first. Call it from the test's thread (a ``with`` cluster), not
        from the cluster's loop.

        Raises:
            TimeoutError: fewer than ``n`` were parked after ``timeout_s`` seconds.
        """
        with self._arrived:
            if not self._arrived.wait_for(
                lambda: len(self._parked) >= n, timeout=timeout_s
            ):
                raise TimeoutError(
                    f"{len(self._parked)} {self.api_key.name} request(s) parked "
                    f"after {timeout_s} s, waiting for {n}"
                )
        return self.requests()

    def release(self, n: int | None = None) -> int:
        """Let the oldest ``n`` parked requests (``None``: all) go on to their
        handlers; return how many. Errors queued by ``inject_errors`` apply then."""
        return self._on_loop(lambda: self._resolve(RELEASE, n))  # type: ignore[no-any-return]

    def answer(self, error_code: ErrorCode, n: int | None = None) -> int:
        """Answer the oldest ``n`` parked requests (``None``: all) with
        ``error_code`` in every ``error_code`` of the response, unhandled, as
        ``inject_errors`` does; return how many.

        Raises:
            ValueError: not an error code, or an API whose error response kproto
                cannot build.
        """
        code = ErrorCode(error_code)
        check_error_response(self.api_key)
        return self._on_loop(lambda: self._resolve(code, n))  # type: ignore[no-any-return]

    def disconnect(self, n: int | None = None) -> int:
        """Close the connections of the oldest ``n`` parked requests (``None``:
        all) unanswered; return how many."""
        return self._on_loop(lambda: self._resolve("disconnect", n))  # type: ignore[no-any-return]

    def stop(self) -> int:
        """Park no more requests and release the parked ones; return how many."""
        return self._on_loop(lambda: self.end(RELEASE))  # type: ignore[no-any-return]

    def __enter__(self) -> Hold:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
