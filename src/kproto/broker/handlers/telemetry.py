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

from typing import Any, Final

from kproto.broker.handlers.context import RequestContext, respond
from kproto.errors import ErrorCode

__all__ = [
    "get_telemetry_subscriptions",
    "push_telemetry",
    "list_config_resources",
    "CLIENT_METRICS",
]

#: ``ConfigResource.Type`` codes (Kafka's ``ConfigResource.Type``).
TOPIC: Final = 2
BROKER: Final = 4
BROKER_LOGGER: Final = 8
CLIENT_METRICS: Final = 16
GROUP: Final = 32


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
    supported = (
        (CLIENT_METRICS,)
        if ctx.api_version == 0
        else (TOPIC, BROKER, CLIENT_METRICS, GROUP)
    )
    wanted = tuple(getattr(request, "resource_types", ()) or supported)
    if any(t not in supported for t in wanted):
        return respond(
            ctx,
            throttle_time_ms=0,
            error_code=ErrorCode.UNSUPPORTED_VERSION,
            config_resources=[],
        )
    state = ctx.state
    found: list[dict[str, Any]] = []

    def add(names: Any, resource_type: int) -> None:
        found.extend(
            {"resource_name": n, "resource_type": resource_type} for n in names
        )

    if TOPIC in wanted:
        add(sorted(state.topics), TOPIC)
    if BROKER in wanted:
        add((str(node) for node in state.node_ids), BROKER)
    if CLIENT_METRICS in wanted:
        add(state.client_metrics.subscription_names(), CLIENT_METRICS)
    if GROUP in wanted:
        add(sorted(state.dynamic.group_configs), GROUP)
    return respond(
        ctx, throttle_time_ms=0, error_code=ErrorCode.NONE, config_resources=found
    )
