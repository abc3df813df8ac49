"""DescribeConfigs, AlterConfigs and IncrementalAlterConfigs for topics (and a
read-only view of broker configs).

Sources: ``DescribeConfigsRequest/Response.json`` (synonyms since v1, KIP-226;
types and documentation since v3, KIP-569), ``AlterConfigsRequest/Response.json``,
``IncrementalAlterConfigsRequest/Response.json`` (KIP-339); Kafka's
``ConfigAdminManager``.
"""

from __future__ import annotations

from typing import Any

from kproto.broker.errors import TopicError
from kproto.broker.handlers.context import RequestContext, respond
from kproto.broker.handlers.share_admin import GROUP, alter_group_configs, group_configs
from kproto.broker.state import TOPIC_CONFIG_DEFAULTS, ClusterState
from kproto.broker.topic_config import TOPIC_CONFIGS, ConfigType
from kproto.errors import ErrorCode

__all__ = ["describe_configs", "alter_configs", "incremental_alter_configs"]

_TOPIC, _BROKER = 2, 4
# ConfigSource: DYNAMIC_TOPIC_CONFIG 1, STATIC_BROKER_CONFIG 4, DEFAULT_CONFIG 5.
_DYNAMIC_TOPIC, _STATIC_BROKER, _DEFAULT = 1, 4, 5


def _broker_configs(state: ClusterState) -> dict[str, str]:
    return {
        "auto.create.topics.enable": str(state.auto_create_topics).lower(),
        "num.partitions": str(state.num_partitions),
        "offsets.topic.num.partitions": str(state.offsets_partitions),
        "log.segment.bytes": str(state.segment_bytes),
    }


async def describe_configs(ctx: RequestContext, request: Any) -> Any:
    state = ctx.state
    results = []
    for r in request.resources:
        error, message, entries = ErrorCode.NONE, None, []
        keys = None if r.configuration_keys is None else set(r.configuration_keys)
        if r.resource_type == _TOPIC:
            info = state.topics.get(r.resource_name)
            if info is None:
                error, message = (
                    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                    f"unknown topic {r.resource_name!r}",
                )
            else:
                # the cluster's segment size is the default in effect here
                defaults = {
                    **TOPIC_CONFIG_DEFAULTS,
                    "segment.bytes": str(state.segment_bytes),
                }
                for name in sorted(defaults):
                    if keys is not None and name not in keys:
                        continue
                    if TOPIC_CONFIGS[name].internal and name not in info.configs:
                        continue
                    dynamic = name in info.configs
                    entries.append(
                        {
                            "name": name,
                            "value": info.configs.get(name, defaults[name]),
                            "read_only": False,
                            "is_default": not dynamic,
                            "config_source": _DYNAMIC_TOPIC if dynamic else _DEFAULT,
                            "is_sensitive": False,
                            "synonyms": [],
                            "config_type": TOPIC_CONFIGS[name].type,
                            "documentation": TOPIC_CONFIGS[name].documentation,
                        }
                    )
        elif r.resource_type == _BROKER:
            for name, value in sorted(_broker_configs(state).items()):
                if keys is None or name in keys:
                    entries.append(
                        {
                            "name": name,
                            "value": value,
                            "read_only": True,
                            "is_default": False,
                            "config_source": _STATIC_BROKER,
                            "is_sensitive": False,
                            "synonyms": [],
                            "config_type": ConfigType.STRING,
                            "documentation": None,
                        }
                    )
        elif r.resource_type == GROUP:  # share-group configs (KIP-932)
            error, message, entries = group_configs(ctx, r.resource_name, keys)
        else:
            error, message = (
                ErrorCode.INVALID_REQUEST,
                f"resource type {r.resource_type} is not supported",
            )
        results.append(
            {
                "error_code": error,
                "error_message": message,
                "resource_type": r.resource_type,
                "resource_name": r.resource_name,
                "configs": entries,
            }
        )
    return respond(ctx, throttle_time_ms=0, results=results)


def _alter(
    ctx: RequestContext, request: Any, changes_of: Any, replace: bool
) -> list[dict[str, Any]]:
    responses = []
    for r in request.resources:
        error, message = ErrorCode.NONE, None
        if r.resource_type == GROUP and not replace:
            error, message = alter_group_configs(ctx, r, request.validate_only)
        elif r.resource_type != _TOPIC:
            error, message = (
                ErrorCode.INVALID_REQUEST,
                "only topic configs can be altered",
            )
        else:
            try:
                changes = changes_of(r)
                if request.validate_only:
                    if r.resource_name not in ctx.state.topics:
                        raise TopicError(
                            ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                            f"unknown topic {r.resource_name!r}",
                        )
                else:
                    ctx.state.set_configs(r.resource_name, changes, replace=replace)
            except TopicError as err:
                error, message = err.error_code, str(err)
        responses.append(
            {
                "error_code": error,
                "error_message": message,
                "resource_type": r.resource_type,
                "resource_name": r.resource_name,
            }
        )
    return responses


async def alter_configs(ctx: RequestContext, request: Any) -> Any:
    """Replace a topic's configs with those given (Kafka's legacy AlterConfigs)."""
    responses = _alter(
        ctx, request, lambda r: {c.name: c.value for c in r.configs}, True
    )
    return respond(ctx, throttle_time_ms=0, responses=responses)


def _incremental_changes(resource: Any) -> dict[str, str | None]:
    changes: dict[str, str | None] = {}
    for c in resource.configs:
        if c.config_operation == 0:  # SET
            changes[c.name] = c.value
        elif c.config_operation == 1:  # DELETE
            changes[c.name] = None
        else:  # APPEND / SUBTRACT apply to list configs only
            raise TopicError(
                ErrorCode.INVALID_CONFIG,
                f"operation {c.config_operation} on {c.name} is not supported",
            )
    return changes


async def incremental_alter_configs(ctx: RequestContext, request: Any) -> Any:
    """SET and DELETE operations on topic configs (KIP-339)."""
    responses = _alter(ctx, request, _incremental_changes, False)
    return respond(ctx, throttle_time_ms=0, responses=responses)
