"""What every API family's checks share: asking the authorizer, and running a
handler on the part of a request the principal may use while answering the rest
with Kafka's refusal (``KafkaApis``'s ``authHelper.authorize`` /
``filterByAuthorized`` pattern).

A check is ``async (ctx, handler, request) -> response``: it calls ``handler`` on
the request (or on the authorized part of it) and merges in the refusals.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from typing import Any

import attrs

from kproto.broker.acl import AclOperation, ResourceType
from kproto.broker.handlers.context import Handler, RequestContext, respond
from kproto.broker.handlers.partitions import topic_name
from kproto.broker.handlers.refusals import TOPIC_SHAPES, refused_topic
from kproto.errors import ErrorCode

__all__ = [
    "CLUSTER",
    "Check",
    "TOPIC_DENIED",
    "GROUP_DENIED",
    "CLUSTER_DENIED",
    "all_described",
    "allowed",
    "call",
    "coordinator_keys",
    "entries",
    "group_allowed",
    "refuse_whole",
    "split",
]

TOPIC_DENIED = ErrorCode.TOPIC_AUTHORIZATION_FAILED
GROUP_DENIED = ErrorCode.GROUP_AUTHORIZATION_FAILED
CLUSTER_DENIED = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
#: The name of the one CLUSTER resource (Kafka's ``Resource.CLUSTER_NAME``).
CLUSTER = "kafka-cluster"

#: One API's check: ``(ctx, handler, request) -> response`` (None for acks=0).
Check = Callable[[RequestContext, Handler, Any], Awaitable[Any]]


async def call(handler: Handler, ctx: RequestContext, request: Any) -> Any:
    """``handler``'s answer (typed ``Any``: a response entity, or None for acks=0)."""
    return await handler(ctx, request)


def allowed(ctx: RequestContext, op: AclOperation, rt: ResourceType, name: str) -> bool:
    """Whether the connection's principal, from its host, may ``op`` on the
    resource (:meth:`kproto.broker.acl.AclStore.authorize`)."""
    store = ctx.security.acls
    assert store is not None  # the checks run only with ACLs on
    return store.authorize(ctx.principal, ctx.client_host, op, rt, name)


def group_allowed(ctx: RequestContext, op: AclOperation) -> Callable[[Any], bool]:
    """A predicate on a group id, or on an entry with a ``group_id``."""

    def check(entry: Any) -> bool:
        group = entry if isinstance(entry, str) else entry.group_id
        return allowed(ctx, op, ResourceType.GROUP, group)

    return check


def all_described(ctx: RequestContext, names: Iterable[str]) -> bool:
    """Whether the principal may DESCRIBE every one of the topics ``names``."""
    return all(
        allowed(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, n) for n in names
    )


async def split(
    ctx: RequestContext,
    handler: Handler,
    request: Any,
    op: AclOperation,
    everything_denied: ErrorCode | None = None,
) -> Any:
    """Run ``handler`` on the topics of a topic-keyed request
    (:data:`~kproto.broker.handlers.refusals.TOPIC_SHAPES`) the principal may
    ``op``; answer each partition of the others TOPIC_AUTHORIZATION_FAILED (or of
    every topic ``everything_denied``)."""
    spec = TOPIC_SHAPES[ctx.header.request_api_key]
    permitted, denied = [], []
    for t in getattr(request, spec.topics):
        name, error = topic_name(ctx, t, spec.name)
        if everything_denied is None and (
            error or allowed(ctx, op, ResourceType.TOPIC, name)
        ):
            permitted.append(t)  # an unknown topic gets the handler's own error
        else:
            denied.append(
                refused_topic(spec, t, name, everything_denied or TOPIC_DENIED)
            )
    if not denied:
        return await handler(ctx, request)
    extra = respond(ctx, **{spec.out_topics: denied})
    if not permitted:
        if getattr(request, "acks", None) == 0:
            return None
        return respond(
            ctx,
            throttle_time_ms=0,
            error_code=ErrorCode.NONE,
            **{spec.out_topics: denied},
        )
    response = await handler(
        ctx, attrs.evolve(request, **{spec.topics: tuple(permitted)})
    )
    if response is None:
        return None
    merged = getattr(response, spec.out_topics) + getattr(extra, spec.out_topics)
    return attrs.evolve(response, **{spec.out_topics: merged})


async def entries(
    ctx: RequestContext,
    handler: Handler,
    request: Any,
    field: str,
    permitted: Callable[[Any], bool],
    out_field: str,
    refusal: Callable[[Any], dict[str, Any]],
) -> Any:
    """Run ``handler`` on the entries of ``request.<field>`` the principal may use;
    answer each other one ``refusal(entry)`` in ``response.<out_field>``."""
    items = getattr(request, field)
    verdicts = [permitted(e) for e in items]
    if all(verdicts):
        return await handler(ctx, request)
    refused = [refusal(e) for e, ok in zip(items, verdicts, strict=True) if not ok]
    if not any(verdicts):
        return respond(
            ctx, throttle_time_ms=0, error_code=ErrorCode.NONE, **{out_field: refused}
        )
    kept = tuple(e for e, ok in zip(items, verdicts, strict=True) if ok)
    response = await call(handler, ctx, attrs.evolve(request, **{field: kept}))
    extra = getattr(respond(ctx, **{out_field: refused}), out_field)
    return attrs.evolve(response, **{out_field: getattr(response, out_field) + extra})


def refuse_whole(ctx: RequestContext, error_code: ErrorCode, **fields: Any) -> Any:
    """The answer of an API refused whole: its top-level ``error_code``."""
    return respond(ctx, throttle_time_ms=0, error_code=error_code, **fields)


async def coordinator_keys(
    ctx: RequestContext,
    handler: Handler,
    request: Any,
    permitted: Callable[[str], bool],
    denied: ErrorCode,
) -> Any:
    """FindCoordinator: run ``handler`` on the keys ``permitted`` (v4+
    ``coordinator_keys``; before v4 the one ``key``); answer each other key
    ``denied`` with no coordinator (node -1)."""
    missing: dict[str, Any] = {"node_id": -1, "host": "", "port": -1}
    if not hasattr(request, "coordinator_keys"):
        if permitted(request.key):
            return await handler(ctx, request)
        return refuse_whole(ctx, denied, **missing)
    return await entries(
        ctx,
        handler,
        request,
        "coordinator_keys",
        permitted,
        "coordinators",
        lambda key: {"key": key, "error_code": denied, **missing},
    )
