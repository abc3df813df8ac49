"""CreateAcls, DescribeAcls and DeleteAcls (KIP-140; prefixed patterns KIP-290) over
the cluster's :class:`kproto.broker.acl.AclStore`.

Without ``Cluster(acls_enabled=True)`` each answers SECURITY_DISABLED, as Kafka does
without an authorizer. The caller must be allowed ALTER (create, delete) or
DESCRIBE on the cluster, else CLUSTER_AUTHORIZATION_FAILED (checked by
:mod:`.authorize`).
"""

from __future__ import annotations

import functools
from collections import defaultdict
from collections.abc import Callable
from typing import Any

import attrs

from kproto.broker.acl import AclBinding, AclFilter, AclStore, PatternType
from kproto.broker.handlers.context import (
    Handler,
    RequestContext,
    request_fields,
    respond,
)
from kproto.broker.handlers.refusals import error_response
from kproto.errors import ErrorCode

__all__ = ["create_acls", "delete_acls", "describe_acls"]

_DISABLED = "No Authorizer is configured on the broker"


#: An ACL API served with the cluster's store: ``(ctx, request, store) -> response``.
_AclApi = Callable[[RequestContext, Any, AclStore], Any]


def _with_authorizer(api: _AclApi) -> Handler:
    """The handler of an ACL API: ``api`` with the cluster's ACL store; without an
    authorizer, SECURITY_DISABLED in the response's top level or in each entry
    (Kafka's answer when no authorizer is configured)."""

    @functools.wraps(api)
    async def handler(ctx: RequestContext, request: Any) -> Any:
        store: AclStore | None = ctx.security.acls
        if store is None:
            return error_response(ctx, request, ErrorCode.SECURITY_DISABLED, _DISABLED)
        return api(ctx, request, store)

    return handler


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


def _create(store: AclStore, creation: Any) -> dict[str, Any]:
    binding = AclBinding(
        **request_fields(creation, AclBinding),
        pattern_type=_pattern(creation, "resource_pattern_type"),
    )
    problem = binding.check()
    if problem is None:
        store.add(binding)
    error = ErrorCode.INVALID_REQUEST if problem else ErrorCode.NONE
    return {"error_code": error, "error_message": problem}


@_with_authorizer
def create_acls(ctx: RequestContext, request: Any, store: AclStore) -> Any:
    """Store each binding; INVALID_REQUEST (with the reason) for one Kafka refuses."""
    results = [_create(store, c) for c in request.creations]
    return respond(ctx, throttle_time_ms=0, results=results)


@_with_authorizer
def describe_acls(ctx: RequestContext, request: Any, store: AclStore) -> Any:
    """The bindings the filter matches, grouped by resource pattern."""
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


def _delete(store: AclStore, acl_filter: Any) -> dict[str, Any]:
    gone = store.remove(_filter(acl_filter))
    return {
        "error_code": ErrorCode.NONE,
        "error_message": None,
        "matching_acls": [
            {"error_code": ErrorCode.NONE, "error_message": None, **attrs.asdict(b)}
            for b in gone
        ],
    }


@_with_authorizer
def delete_acls(ctx: RequestContext, request: Any, store: AclStore) -> Any:
    """Remove what each filter matches; answer the removed bindings per filter."""
    results = [_delete(store, f) for f in request.filters]
    return respond(ctx, throttle_time_ms=0, filter_results=results)
