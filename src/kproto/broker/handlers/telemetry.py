"""GetTelemetrySubscriptions and PushTelemetry (KIP-714 client metrics), and
ListConfigResources (KIP-1000, widened by KIP-1142).

Sources: ``GetTelemetrySubscriptionsRequest/Response.json`` and
``PushTelemetryRequest/Response.json`` (v0), ``ListConfigResourcesRequest/Response.json``
(v0: client metrics resources only; v1: the ``resource_types`` filter and each
resource's type); Kafka's ``KafkaApis.handleGetTelemetrySubscriptionsRequest``,
``handlePushTelemetryRequest`` and ``handleListConfigResources``. The state machine is
:class:`kproto.broker.client_metrics.ClientMetricsManager`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from kproto.broker.handlers.configs import ConfigResourceType
from kproto.broker.handlers.context import RequestContext, respond
from kproto.broker.handlers.refusals import error_response
from kproto.errors import ErrorCode

__all__ = [
    "get_telemetry_subscriptions",
    "push_telemetry",
    "list_config_resources",
]


async def get_telemetry_subscriptions(ctx: RequestContext, request: Any) -> Any:
    """The client's subscription set (a new client instance id for the zero one)."""
    fields = ctx.state.client_metrics.get_subscriptions(
        request.client_instance_id, ctx.client_id, ctx.client_host, ctx.state.now_ms()
    )
    return respond(ctx, throttle_time_ms=0, **fields)


async def push_telemetry(ctx: RequestContext, request: Any) -> Any:
    """Keep one push of metrics (see the manager for every error code)."""
    error = ctx.state.client_metrics.push(
        request,
        client_id=ctx.client_id,
        client_host=ctx.client_host,
        node_id=ctx.node_id,
        now_ms=ctx.state.now_ms(),
    )
    return respond(ctx, throttle_time_ms=0, error_code=error)


async def list_config_resources(ctx: RequestContext, request: Any) -> Any:
    """The config resources of the given types (v0: client metrics only; v1 with no
    types: every type this broker describes). A type it does not describe is
    UNSUPPORTED_VERSION, as Kafka answers."""
    state = ctx.state
    names: dict[ConfigResourceType, Callable[[], Iterable[str]]] = {
        ConfigResourceType.TOPIC: lambda: sorted(state.topics),
        ConfigResourceType.BROKER: lambda: (str(n) for n in state.node_ids),
        ConfigResourceType.CLIENT_METRICS: state.client_metrics.subscription_names,
        ConfigResourceType.GROUP: lambda: sorted(state.dynamic.group_configs),
    }
    supported = (
        (ConfigResourceType.CLIENT_METRICS,) if ctx.api_version == 0 else tuple(names)
    )
    wanted = tuple(getattr(request, "resource_types", ()) or supported)
    if any(t not in supported for t in wanted):
        return error_response(ctx, request, ErrorCode.UNSUPPORTED_VERSION)
    found = [
        {"resource_name": name, "resource_type": resource_type}
        for resource_type, listed in names.items()
        if resource_type in wanted
        for name in listed()
    ]
    return respond(
        ctx, throttle_time_ms=0, error_code=ErrorCode.NONE, config_resources=found
    )
