"""Fault injection: errors, disconnects, latency and request hooks a test sets on a
running cluster (configured by :class:`kproto.broker.Cluster`, applied by each node's
:class:`~kproto.broker.dispatch.Dispatcher`).

Modelled on librdkafka's mock cluster (``rdkafka_mock.h``):

* :meth:`FaultInjector.push_errors` is ``rd_kafka_mock_push_request_errors`` /
  ``rd_kafka_mock_broker_push_request_error_rtts``: a queue of outcomes per api_key
  (per node, or for any node), one consumed per request, in order. An error is
  answered without running the handler (nothing is appended or committed), with the
  error in every ``error_code`` of the response: the top level and each entry the
  request named (``rd_kafka_mock_next_request_error`` and its handlers; built by
  :func:`kproto.broker.handlers.refusals.error_response`);
  :data:`DISCONNECT` closes the connection without answering (librdkafka's
  ``RD_KAFKA_RESP_ERR__TRANSPORT``).
* :meth:`FaultInjector.set_latency` is ``rd_kafka_mock_broker_set_rtt``: every
  response of the node waits that long (only its own connection waits).
* :meth:`FaultInjector.add_hook` is franz-go kfake's ``ControlKey``: a function that
  sees each request of an api_key first and may answer it instead of the handler.
* :meth:`FaultInjector.add_hold` parks requests until the test decides
  (:mod:`kproto.broker.held_requests`, kfake's ``SleepControl``).

Every method runs on the cluster's event-loop thread (``Cluster`` marshals calls).
"""

from __future__ import annotations

import asyncio
import collections
import inspect
import itertools
import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any, Final

import attrs

from kproto.broker.handlers.context import RequestContext, respond
from kproto.broker.handlers.refusals import check_error_response, error_response
from kproto.broker.held_requests import RELEASE, Hold
from kproto.broker.partition_errors import PartitionErrors
from kproto.errors import ErrorCode
from kproto.index import ApiKey

__all__ = [
    "DISCONNECT",
    "PASS",
    "Fault",
    "FaultInjector",
    "HookHandle",
    "InjectedDisconnect",
    "RequestHook",
    "to_fault",
]

log = logging.getLogger("kproto.broker")

#: Close the connection instead of answering (librdkafka's ``__TRANSPORT``).
DISCONNECT: Final = "disconnect"

#: Handle the request as usual, after the fault's delay (librdkafka's error 0 in
#: ``rd_kafka_mock_broker_push_request_error_rtts``).
PASS: Final = "pass"

#: What a test may push: an error code, :data:`DISCONNECT`, or either with a
#: round-trip time in ms as ``(outcome, rtt_ms)``.
FaultSpec = ErrorCode | int | str | tuple[ErrorCode | int | str, int]

#: A request hook: ``fn(ctx, request)`` returns the response entity (or a mapping of
#: its fields, or :data:`DISCONNECT`) to answer instead of the handler, or ``None``
#: to fall through. It may be a coroutine function.
RequestHook = Callable[[RequestContext, Any], Any]


class InjectedDisconnect(Exception):
    """Raised by the dispatcher: close this connection without answering."""


@attrs.frozen
class Fault:
    """One queued outcome: an error code (``None``: disconnect) and a delay (ms);
    ``handled``: the request goes to its handler (:data:`PASS`)."""

    error_code: ErrorCode | None
    rtt_ms: int = 0
    handled: bool = False


def to_fault(spec: FaultSpec) -> Fault:
    """Parse what a test pushed.

    Raises:
        ValueError: not an ErrorCode, ``"disconnect"``, ``"pass"`` or
            ``(any of them, rtt_ms >= 0)``.
    """
    rtt = 0
    outcome: Any = spec
    if isinstance(spec, tuple):
        if len(spec) != 2 or not isinstance(spec[1], int) or spec[1] < 0:
            raise ValueError(
                f"a fault with a delay is (error_code | 'disconnect', rtt_ms >= 0), got {spec!r}"
            )
        outcome, rtt = spec
    if outcome == DISCONNECT:
        return Fault(None, rtt)
    if outcome == PASS:
        return Fault(ErrorCode.NONE, rtt, handled=True)
    if isinstance(outcome, str) or not isinstance(outcome, int):
        raise ValueError(
            f"a fault is an ErrorCode or {DISCONNECT!r} (or {PASS!r}), got {outcome!r}"
        )
    try:
        return Fault(ErrorCode(outcome), rtt)
    except ValueError:
        raise ValueError(f"{outcome!r} is not a Kafka error code") from None


@attrs.frozen
class HookHandle:
    """What :meth:`FaultInjector.add_hook` returns; pass it to ``remove_hook``."""

    api_key: ApiKey
    hook_id: int


class FaultInjector:
    """The faults set on one cluster: error queues, node latencies, request hooks."""

    def __init__(self) -> None:
        # (api_key, node id or None for any node) -> outcomes, oldest first
        self._errors: dict[tuple[int, int | None], collections.deque[Fault]] = {}
        self._latency_ms: dict[int, int] = {}
        self._hooks: dict[int, dict[int, RequestHook]] = {}
        self._holds: list[Hold] = []
        #: errors queued per topic-partition and set per topic
        self.partition_errors = PartitionErrors(on_change=self._wake)
        self._ids = itertools.count(1)
        # True: nothing is injected; set False by whatever injects, and True
        # again by the first idle check that finds everything used up
        self._idle = True

    # ----------------------------------------------------------------- errors

    def push_errors(
        self, api_key: ApiKey, faults: Iterable[FaultSpec], node_id: int | None = None
    ) -> None:
        """Queue outcomes for the next requests of ``api_key`` (on ``node_id``, or
        on any node when ``None``); a node's own queue is used before the any-node one.

        Raises:
            ValueError: an api_key the broker cannot answer with an error response
                (use a hook instead), or a malformed fault.
        """
        api_key = ApiKey(api_key)
        parsed = [to_fault(f) for f in faults]
        if any(f.error_code is not None and not f.handled for f in parsed):
            check_error_response(api_key)
        self._errors.setdefault((api_key, node_id), collections.deque()).extend(parsed)
        if parsed:
            self._idle = False

    def _wake(self) -> None:
        """Something was injected: the next :attr:`idle` check looks."""
        self._idle = False

    @property
    def idle(self) -> bool:
        """Nothing is injected (no queued outcome, latency or hook): requests go
        straight to their handlers. A flag while nothing was injected since the
        last check that found nothing (no scan per request)."""
        if self._idle:
            return True
        if self._holds:
            self._holds = [h for h in self._holds if not h.done]
        self._idle = (
            not self._latency_ms
            and not any(self._hooks.values())
            and not self._holds
            and not self.partition_errors
            and not any(self._errors.values())
        )
        return self._idle

    def pop_error(self, api_key: int, node_id: int) -> Fault | None:
        """The next queued outcome for a request of ``api_key`` on ``node_id``."""
        for key in ((api_key, node_id), (api_key, None)):
            queue = self._errors.get(key)
            if queue:
                return queue.popleft()
        return None

    def pending(self, api_key: int | None = None) -> int:
        """How many queued outcomes are left (of ``api_key``, or all)."""
        return sum(
            len(q)
            for (key, _), q in list(self._errors.items())
            if api_key is None or key == api_key
        )

    def clear(self) -> None:
        """Drop every queued outcome, latency and hook; end every hold (its parked
        requests go on to their handlers)."""
        self._errors.clear()
        self._latency_ms.clear()
        self._hooks.clear()
        self.partition_errors.clear()
        self.end_holds(RELEASE)
        self._idle = True

    # ------------------------------------------------------------------ holds

    def add_hold(self, hold: Hold) -> Hold:
        """Park the requests ``hold`` takes (after the hooks, before queued errors)."""
        self._holds.append(hold)
        self._idle = False
        return hold

    def end_holds(self, outcome: str = RELEASE) -> int:
        """End every hold, giving each parked request ``outcome``
        (:data:`~kproto.broker.held_requests.RELEASE` or ``"disconnect"``);
        return how many were parked."""
        holds, self._holds = self._holds, []
        return sum(hold.end(outcome) for hold in holds)

    async def _park(self, ctx: RequestContext, request: Any) -> str | ErrorCode:
        """The outcome of ``request`` from the first hold that takes it (else
        :data:`~kproto.broker.held_requests.RELEASE`)."""
        self._holds = [h for h in self._holds if not h.done]
        for hold in self._holds:
            if hold.takes(ctx, request):
                return await hold.park(ctx, request)
        return RELEASE

    # ---------------------------------------------------------------- latency

    def set_latency(self, node_id: int, ms: int) -> None:
        """Delay every response of ``node_id`` by ``ms`` (0: no delay).

        Raises:
            ValueError: ``ms`` < 0.
        """
        if ms < 0:
            raise ValueError(f"latency must be >= 0 ms, got {ms}")
        if ms:
            self._latency_ms[node_id] = ms
            self._idle = False
        else:
            self._latency_ms.pop(node_id, None)

    def latency_ms(self, node_id: int) -> int:
        return self._latency_ms.get(node_id, 0)

    # ------------------------------------------------------------------ hooks

    def add_hook(self, api_key: ApiKey, fn: RequestHook) -> HookHandle:
        """Call ``fn(ctx, request)`` on every request of ``api_key`` before anything
        else; hooks run in the order added, the first non-``None`` answer wins."""
        if not callable(fn):
            raise TypeError(f"a request hook must be callable, got {fn!r}")
        handle = HookHandle(ApiKey(api_key), next(self._ids))
        self._hooks.setdefault(handle.api_key, {})[handle.hook_id] = fn
        self._idle = False
        return handle

    def remove_hook(self, handle: HookHandle) -> bool:
        """Remove a hook; False if it was already removed."""
        hooks = self._hooks.get(handle.api_key, {})
        return hooks.pop(handle.hook_id, None) is not None

    async def run_hooks(self, ctx: RequestContext, request: Any) -> Any:
        """The first hook answer for ``request`` (an entity, or :data:`DISCONNECT`),
        else ``None``. A mapping answer is built into the response entity."""
        hooks = self._hooks.get(ctx.header.request_api_key)
        if not hooks:
            return None
        for fn in list(hooks.values()):
            answer = fn(ctx, request)
            if inspect.isawaitable(answer):
                answer = await answer
            if answer is None:
                continue
            if isinstance(answer, Mapping):
                return respond(ctx, **answer)
            return answer
        return None

    # ------------------------------------------------------------------ apply

    async def apply(
        self,
        ctx: RequestContext,
        request: Any,
        handle: Callable[[Any], Awaitable[Any]],
    ) -> Any:
        """Answer ``request`` through the faults: the hooks first, then the holds
        (the request waits for the test's decision), then the next queued outcome (instead of ``handle``, the handler), else ``handle(request)``
        with the errors set on the partitions and topics it names;
        then the node's latency and the outcome's delay.

        Raises:
            InjectedDisconnect: the outcome or a hook says to close the connection.
        """
        node_id = ctx.node_id
        api_key = ctx.header.request_api_key
        delay_ms = self.latency_ms(node_id)
        response = await self.run_hooks(ctx, request)
        if response is None and self._holds:
            outcome = await self._park(ctx, request)
            if outcome == DISCONNECT:
                response = DISCONNECT
            elif isinstance(outcome, ErrorCode):
                response = error_response(ctx, request, outcome)
                if api_key == ApiKey.PRODUCE and request.acks == 0:
                    return None  # acks=0 is never answered
        fault = None if response is not None else self.pop_error(api_key, node_id)
        answered = response is not None or (fault is not None and not fault.handled)
        if fault is not None:
            delay_ms += fault.rtt_ms
            if fault.error_code is not None and not fault.handled:
                response = error_response(ctx, request, fault.error_code)
                if api_key == ApiKey.PRODUCE and request.acks == 0:
                    response = None  # acks=0 is never answered
        if not answered:
            if self.partition_errors:
                response = await self.partition_errors.apply(ctx, request, handle)
            else:
                response = await handle(request)
        if delay_ms:
            await asyncio.sleep(delay_ms / 1000)
        disconnect = isinstance(response, str) and response == DISCONNECT
        if disconnect or (fault is not None and fault.error_code is None):
            log.info(
                "node %d: injected disconnect of %s v%d (correlation id %d)",
                node_id,
                type(request).__name__,
                ctx.api_version,
                ctx.header.correlation_id,
            )
            raise InjectedDisconnect(ctx.header.correlation_id)
        return response
