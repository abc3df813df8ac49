"""Fault injection: errors, disconnects, latency and request hooks a test sets on a
running cluster (configured by :class:`kproto.broker.Cluster`, applied by each node's
:class:`~kproto.broker.dispatch.Dispatcher`).

Modelled on librdkafka's mock cluster (``rdkafka_mock.h``):

* :meth:`FaultInjector.push_errors` is ``rd_kafka_mock_push_request_errors`` /
  ``rd_kafka_mock_broker_push_request_error_rtts``: a queue of outcomes per api_key
  (per node, or for any node), one consumed per request, in order. An error is
  answered without running the handler (nothing is appended or committed), with the
  error in every ``error_code`` of the response: the top level and each entry the
  request named (``rd_kafka_mock_next_request_error`` and its handlers);
  :data:`DISCONNECT` closes the connection without answering (librdkafka's
  ``RD_KAFKA_RESP_ERR__TRANSPORT``).
* :meth:`FaultInjector.set_latency` is ``rd_kafka_mock_broker_set_rtt``: every
  response of the node waits that long (only its own connection waits).
* :meth:`FaultInjector.add_hook` is franz-go kfake's ``ControlKey``: a function that
  sees each request of an api_key first and may answer it instead of the handler.

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
from kproto.errors import ErrorCode
from kproto.index import ApiKey, api_versions, response_type
from kproto.meta import wire_fields

__all__ = [
    "DISCONNECT",
    "Fault",
    "FaultInjector",
    "HookHandle",
    "InjectedDisconnect",
    "RequestHook",
    "error_response",
    "to_fault",
]

log = logging.getLogger("kproto.broker")

#: Close the connection instead of answering (librdkafka's ``__TRANSPORT``).
DISCONNECT: Final = "disconnect"

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
    """One queued outcome: an error code (``None``: disconnect) and a delay (ms)."""

    error_code: ErrorCode | None
    rtt_ms: int = 0


def to_fault(spec: FaultSpec) -> Fault:
    """Parse what a test pushed.

    Raises:
        ValueError: not an ErrorCode, ``"disconnect"`` or ``(either, rtt_ms >= 0)``.
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
    if isinstance(outcome, str) or not isinstance(outcome, int):
        raise ValueError(f"a fault is an ErrorCode or {DISCONNECT!r}, got {outcome!r}")
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
        if any(f.error_code is not None for f in parsed):
            check_error_response(api_key)
        self._errors.setdefault((api_key, node_id), collections.deque()).extend(parsed)
        if parsed:
            self._idle = False

    @property
    def idle(self) -> bool:
        """Nothing is injected (no queued outcome, latency or hook): requests go
        straight to their handlers. A flag while nothing was injected since the
        last check that found nothing (no scan per request)."""
        if self._idle:
            return True
        self._idle = (
            not self._latency_ms
            and not any(self._hooks.values())
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
        """Drop every queued outcome, latency and hook."""
        self._errors.clear()
        self._latency_ms.clear()
        self._hooks.clear()
        self._idle = True

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
        handle: Callable[[], Awaitable[Any]],
    ) -> Any:
        """Answer ``request`` through the faults: the hooks first, then the next
        queued outcome (instead of ``handle``, the handler), else ``handle()``;
        then the node's latency and the outcome's delay.

        Raises:
            InjectedDisconnect: the outcome or a hook says to close the connection.
        """
        node_id = ctx.node_id
        api_key = ctx.header.request_api_key
        delay_ms = self.latency_ms(node_id)
        response = await self.run_hooks(ctx, request)
        fault = None if response is not None else self.pop_error(api_key, node_id)
        if fault is not None:
            delay_ms += fault.rtt_ms
            if fault.error_code is not None:
                response = error_response(ctx, request, fault.error_code)
                if api_key == ApiKey.PRODUCE and request.acks == 0:
                    response = None  # acks=0 is never answered
        elif response is None:
            response = await handle()
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


# ---------------------------------------------------------------- error answers

_Mirror = Callable[[Any, ErrorCode], dict[str, Any]]


def _partitions(
    entries: Any, index_in: str, index_out: str, error: ErrorCode, **extra: Any
) -> list[dict[str, Any]]:
    return [
        {index_out: getattr(p, index_in), "error_code": error, **extra}
        for p in entries or ()
    ]


def _produce(request: Any, error: ErrorCode) -> dict[str, Any]:
    return {
        "responses": [
            {
                "name": getattr(t, "name", ""),
                "topic_id": getattr(t, "topic_id", None),
                "partition_responses": _partitions(
                    t.partition_data,
                    "index",
                    "index",
                    error,
                    base_offset=-1,
                    log_append_time_ms=-1,
                    log_start_offset=-1,
                ),
            }
            for t in request.topic_data
        ]
    }


def _fetch(request: Any, error: ErrorCode) -> dict[str, Any]:
    return {
        "error_code": error,
        "session_id": 0,
        "responses": [
            {
                "topic": getattr(t, "topic", ""),
                "topic_id": getattr(t, "topic_id", None),
                "partitions": _partitions(
                    t.partitions,
                    "partition",
                    "partition_index",
                    error,
                    high_watermark=-1,
                    last_stable_offset=-1,
                    log_start_offset=-1,
                    records=b"",
                ),
            }
            for t in request.topics
        ],
    }


def _named_partitions(
    request: Any, error: ErrorCode, **extra: Any
) -> list[dict[str, Any]]:
    return [
        {
            "name": getattr(t, "name", ""),
            "topic_id": getattr(t, "topic_id", None),
            "partitions": _partitions(
                t.partitions, "partition_index", "partition_index", error, **extra
            ),
        }
        for t in request.topics or ()
    ]


def _list_offsets(request: Any, error: ErrorCode) -> dict[str, Any]:
    return {"topics": _named_partitions(request, error, offset=-1, timestamp=-1)}


def _delete_records(request: Any, error: ErrorCode) -> dict[str, Any]:
    return {"topics": _named_partitions(request, error, low_watermark=-1)}


def _offset_commit(request: Any, error: ErrorCode) -> dict[str, Any]:
    return {"topics": _named_partitions(request, error)}


def _offset_fetch(request: Any, error: ErrorCode) -> dict[str, Any]:
    def topics(entries: Any) -> list[dict[str, Any]]:
        return [
            {
                "name": getattr(t, "name", ""),
                "topic_id": getattr(t, "topic_id", None),
                "partitions": [
                    {"partition_index": p, "error_code": error, "committed_offset": -1}
                    for p in t.partition_indexes
                ],
            }
            for t in entries or ()
        ]

    groups = getattr(request, "groups", None)
    if groups:  # v8+: one entry per group
        return {
            "groups": [
                {
                    "group_id": g.group_id,
                    "error_code": error,
                    "topics": topics(g.topics),
                }
                for g in groups
            ]
        }
    return {"error_code": error, "topics": topics(request.topics)}


def _find_coordinator(request: Any, error: ErrorCode) -> dict[str, Any]:
    missing = {"node_id": -1, "host": "", "port": -1, "error_code": error}
    keys = getattr(request, "coordinator_keys", None)
    if keys:  # v4+: batched
        return {"coordinators": [{"key": k, **missing} for k in keys]}
    return missing


def _metadata(request: Any, error: ErrorCode) -> dict[str, Any]:
    return {
        "topics": [
            {
                "name": t.name,
                "topic_id": getattr(t, "topic_id", None),
                "error_code": error,
            }
            for t in request.topics or ()
        ]
    }


def _by_name(out_field: str, key: str, *in_fields: str) -> _Mirror:
    """Entries ``{key: name, error_code}`` for each entry of the first of
    ``in_fields`` the request has (strings, or structs with a ``key`` field)."""

    def mirror(request: Any, error: ErrorCode) -> dict[str, Any]:
        entries: Any = ()
        for field in in_fields:
            entries = getattr(request, field, None)
            if entries is not None:
                break
        return {
            out_field: [
                {key: e if isinstance(e, str) else getattr(e, key), "error_code": error}
                for e in entries or ()
            ]
        }

    return mirror


def _configs(out_field: str) -> _Mirror:
    def mirror(request: Any, error: ErrorCode) -> dict[str, Any]:
        return {
            out_field: [
                {
                    "error_code": error,
                    "resource_type": r.resource_type,
                    "resource_name": r.resource_name,
                }
                for r in request.resources
            ]
        }

    return mirror


def _add_partitions_to_txn(request: Any, error: ErrorCode) -> dict[str, Any]:
    def topics(entries: Any) -> list[dict[str, Any]]:
        return [
            {
                "name": t.name,
                "results_by_partition": [
                    {"partition_index": p, "partition_error_code": error}
                    for p in t.partitions
                ],
            }
            for t in entries or ()
        ]

    transactions = getattr(request, "transactions", None)
    if transactions is not None:  # v4+: batched by transactional id
        return {
            "results_by_transaction": [
                {
                    "transactional_id": t.transactional_id,
                    "topic_results": topics(t.topics),
                }
                for t in transactions
            ]
        }
    return {"results_by_topic_v3_and_below": topics(request.v3_and_below_topics)}


def _describe_producers(request: Any, error: ErrorCode) -> dict[str, Any]:
    return {
        "topics": [
            {
                "name": t.name,
                "partitions": [
                    {"partition_index": p, "error_code": error}
                    for p in t.partition_indexes
                ],
            }
            for t in request.topics
        ]
    }


def _each(out_field: str, in_field: str) -> _Mirror:
    """One ``{error_code}`` entry per entry of the request's ``in_field``
    (CreateAcls results, DeleteAcls filter results)."""

    def mirror(request: Any, error: ErrorCode) -> dict[str, Any]:
        return {out_field: [{"error_code": error} for _ in getattr(request, in_field)]}

    return mirror


def _alter_scram(request: Any, error: ErrorCode) -> dict[str, Any]:
    users = [e.name for e in (*request.deletions, *request.upsertions)]
    return {"results": [{"user": u, "error_code": error} for u in users]}


def _describe_share_group_offsets(request: Any, error: ErrorCode) -> dict[str, Any]:
    return {
        "groups": [
            {
                "group_id": g.group_id,
                "error_code": error,
                "topics": [
                    {
                        "topic_name": t.topic_name,
                        "partitions": [
                            {"partition_index": p, "error_code": error}
                            for p in t.partitions
                        ],
                    }
                    for t in g.topics or ()
                ],
            }
            for g in request.groups
        ]
    }


#: The APIs whose errors sit in entries mirroring the request's (the others carry
#: one top-level ``error_code``): how to build those entries.
_MIRRORS: Final[Mapping[ApiKey, _Mirror]] = {
    ApiKey.PRODUCE: _produce,
    ApiKey.FETCH: _fetch,
    ApiKey.LIST_OFFSETS: _list_offsets,
    ApiKey.METADATA: _metadata,
    ApiKey.OFFSET_COMMIT: _offset_commit,
    ApiKey.OFFSET_FETCH: _offset_fetch,
    ApiKey.FIND_COORDINATOR: _find_coordinator,
    ApiKey.DELETE_RECORDS: _delete_records,
    ApiKey.CREATE_TOPICS: _by_name("topics", "name", "topics"),
    ApiKey.DELETE_TOPICS: _by_name("responses", "name", "topic_names", "topics"),
    ApiKey.CREATE_PARTITIONS: _by_name("results", "name", "topics"),
    ApiKey.DESCRIBE_CONFIGS: _configs("results"),
    ApiKey.ALTER_CONFIGS: _configs("responses"),
    ApiKey.INCREMENTAL_ALTER_CONFIGS: _configs("responses"),
    ApiKey.DESCRIBE_GROUPS: _by_name("groups", "group_id", "groups"),
    ApiKey.DELETE_GROUPS: _by_name("results", "group_id", "groups_names"),
    ApiKey.TXN_OFFSET_COMMIT: _offset_commit,
    ApiKey.CREATE_ACLS: _each("results", "creations"),
    ApiKey.DELETE_ACLS: _each("filter_results", "filters"),
    ApiKey.ALTER_USER_SCRAM_CREDENTIALS: _alter_scram,
    ApiKey.CONSUMER_GROUP_DESCRIBE: _by_name("groups", "group_id", "group_ids"),
    ApiKey.SHARE_GROUP_DESCRIBE: _by_name("groups", "group_id", "group_ids"),
    ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS: _describe_share_group_offsets,
    ApiKey.ADD_PARTITIONS_TO_TXN: _add_partitions_to_txn,
    ApiKey.DESCRIBE_PRODUCERS: _describe_producers,
    ApiKey.DESCRIBE_TRANSACTIONS: _by_name(
        "transaction_states", "transactional_id", "transactional_ids"
    ),
}


def _has_top_level_error(api_key: ApiKey) -> bool:
    """Whether every version's response has a top-level ``error_code``."""
    return all(
        any(f.name == "error_code" for f, _ in wire_fields(response_type(api_key, v)))
        for v in api_versions(api_key)
    )


def check_error_response(api_key: ApiKey) -> None:
    """Raise ValueError unless :func:`error_response` can answer ``api_key``."""
    if api_key not in _MIRRORS and not _has_top_level_error(api_key):
        raise ValueError(
            f"cannot inject an error into {api_key.name} responses (their errors sit in "
            "entries kproto does not mirror); answer it with cluster.on_request instead"
        )


def error_response(ctx: RequestContext, request: Any, error: ErrorCode) -> Any:
    """The response to ``request`` with ``error`` in its top-level ``error_code``
    (where the version has one) and in the entry (``error_code``, or
    AddPartitionsToTxn's ``partition_error_code``) of every topic, partition, group
    or resource the request named (librdkafka's mock handlers with
    ``rd_kafka_mock_next_request_error``). Metadata also lists the live brokers,
    so a client can go on."""
    api_key = ApiKey(ctx.header.request_api_key)
    mirror = _MIRRORS.get(api_key)
    fields: dict[str, Any] = {"error_code": error, "throttle_time_ms": 0}
    if mirror is not None:
        fields.update(mirror(request, error))
    if api_key == ApiKey.METADATA:
        state = ctx.state
        fields.update(
            brokers=[
                {"node_id": n.node_id, "host": n.host, "port": n.port, "rack": n.rack}
                for n in state.nodes.values()
            ],
            cluster_id=state.cluster_id,
            controller_id=state.controller_id,
        )
    return respond(ctx, **fields)
