"""CreateAcls, DescribeAcls and DeleteAcls (KIP-140; prefixed patterns KIP-290) over
the cluster's :class:`kproto.broker.acl.AclStore`.

Without ``Cluster(acls_enabled=True)`` each answers SECURITY_DISABLED, as Kafka does
without an authorizer. The caller must be allowed ALTER (create, delete) or
DESCRIBE on the cluster, else CLUSTER_AUTHORIZATION_FAILED (checked by
:mod:`.authorize`).
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from kproto.broker.acl import AclBinding, AclFilter, AclStore, PatternType
from kproto.broker.handlers.context import RequestContext, respond
from kproto.broker.handlers.refusals import error_response
from kproto.errors import ErrorCode

__all__ = ["create_acls", "delete_acls", "describe_acls"]

_DISABLED = "No Authorizer is configured on the broker"


def _store(ctx: RequestContext) -> AclStore | None:
    store: AclStore | None = ctx.security.acls
    return store


def _disabled(ctx: RequestContext, request: Any) -> Any:
    """SECURITY_DISABLED in the response's top level or in each entry."""
    return error_response(ctx, request, ErrorCode.SECURITY_DISABLED, _DISABLED)


def _pattern(entry: Any, name: str) -> int:
    # v0 has no pattern type: LITERAL, as Kafka reads it
    return int(getattr(entry, name, PatternType.LITERAL))


def _filter(f: Any) -> AclFilter:
    return AclFilter(
        resource_type=f.resource_type_filter,
        resource_name=f.resource_name_filter,
        pattern_type=_pattern(f, "pattern_type_filter"),
        principal=f.principal_filter,
        host=f.host_filter,
        operation=f.operation,
        permission_type=f.permission_type,
    )


def _described(b: AclBinding) -> dict[str, Any]:
    return {
        "principal": b.principal,
        "host": b.host,
        "operation": b.operation,
        "permission_type": b.permission_type,
    }


async def create_acls(ctx: RequestContext, request: Any) -> Any:
    """Store each binding; INVALID_REQUEST (with the reason) for one Kafka refuses."""
    store = _store(ctx)
    if store is None:
        return _disabled(ctx, request)
    results = []
    for c in request.creations:
        binding = AclBinding(
            resource_type=c.resource_type,
            resource_name=c.resource_name,
            pattern_type=_pattern(c, "resource_pattern_type"),
            principal=c.principal,
            host=c.host,
            operation=c.operation,
            permission_type=c.permission_type,
        )
        problem = binding.check()
        if problem is None:
            store.add(binding)
        results.append(
            {
                "error_code": ErrorCode.INVALID_REQUEST if problem else ErrorCode.NONE,
                "error_message": problem,
            }
        )
    return respond(ctx, throttle_time_ms=0, results=results)


async def describe_acls(ctx: RequestContext, request: Any) -> Any:
    """The bindings the filter matches, grouped by resource pattern."""
    store = _store(ctx)
    if store is None:
        return _disabled(ctx, request)
    acl_filter = _filter(request)
    grouped: dict[tuple[int, str, int], list[dict[str, Any]]] = defaultdict(list)
    for b in store:
        if acl_filter.matches(b):
            key = (b.resource_type, b.resource_name, b.pattern_type)
            grouped[key].append(_described(b))
    return respond(
        ctx,
        throttle_time_ms=0,
        error_code=ErrorCode.NONE,
        error_message=None,
        resources=[
            {
                "resource_type": rt,
                "resource_name": name,
                "pattern_type": pattern,
                "acls": acls,
            }
            for (rt, name, pattern), acls in grouped.items()
        ],
    )


async def delete_acls(ctx: RequestContext, request: Any) -> Any:
    """Remove what each filter matches; answer the removed bindings per filter."""
    store = _store(ctx)
    if store is None:
        return _disabled(ctx, request)
    results = []
    for f in request.filters:
        gone = store.remove(_filter(f))
        results.append(
            {
                "error_code": ErrorCode.NONE,
                "error_message": None,
                "matching_acls": [
                    {
                        "error_code": ErrorCode.NONE,
                        "error_message": None,
                        "resource_type": b.resource_type,
                        "resource_name": b.resource_name,
                        "pattern_type": b.pattern_type,
                        **_described(b),
                    }
                    for b in gone
                ],
            }
        )
    return respond(ctx, throttle_time_ms=0, filter_results=results)
