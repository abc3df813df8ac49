"""DescribeConfigs, AlterConfigs and IncrementalAlterConfigs for topics, groups
(KIP-848 group configs, :mod:`kproto.broker.group_config`) and client metrics
subscriptions (KIP-714, :mod:`kproto.broker.client_metrics`), and a read-only view of
broker configs.

Sources: ``DescribeConfigsRequest/Response.json`` (synonyms since v1, KIP-226;
types and documentation since v3, KIP-569), ``AlterConfigsRequest/Response.json``,
``IncrementalAlterConfigsRequest/Response.json`` (KIP-339); Kafka's
``ConfigAdminManager`` and ``ConfigurationControlManager.incrementalAlterConfig``
(APPEND and SUBTRACT on LIST configs, from the value in effect).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from kproto.broker.client_metrics import (
    CLIENT_METRICS_CONFIG_DEFAULTS,
    CLIENT_METRICS_CONFIGS,
    Subscription,
)
from kproto.broker.errors import TopicError
from kproto.broker.group_config import (
    GROUP_CONFIG_DEFAULTS,
    GROUP_CONFIGS,
    validate_group_configs,
)
from kproto.broker.handlers.context import RequestContext, respond
from kproto.broker.handlers.share_admin import alter_group_configs, group_configs
from kproto.broker.state import TOPIC_CONFIG_DEFAULTS, ClusterState
from kproto.broker.topic_config import (
    TOPIC_CONFIGS,
    ConfigType,
    TopicConfigDef,
    validate_topic_configs,
)
from kproto.errors import ErrorCode

__all__ = ["describe_configs", "alter_configs", "incremental_alter_configs"]

# ConfigResource.Type: TOPIC 2, BROKER 4, CLIENT_METRICS 16, GROUP 32.
_TOPIC, _BROKER, _CLIENT_METRICS, _GROUP = 2, 4, 16, 32
# ConfigSource: DYNAMIC_TOPIC_CONFIG 1, STATIC_BROKER_CONFIG 4, DEFAULT_CONFIG 5,
# CLIENT_METRICS_CONFIG 7, GROUP_CONFIG 8.
_DYNAMIC_TOPIC, _STATIC_BROKER, _DEFAULT, _CLIENT_METRICS_CONFIG, _GROUP_CONFIG = (
    1,
    4,
    5,
    7,
    8,
)
# AlterConfigOp.OpType: SET 0, DELETE 1, APPEND 2, SUBTRACT 3.
_SET, _DELETE, _APPEND, _SUBTRACT = 0, 1, 2, 3


def _group_entries(
    ctx: RequestContext, group_id: str, keys: set[str] | None
) -> list[dict[str, Any]]:
    explicit = ctx.state.dynamic.group_configs.get(group_id, {})
    return [
        {
            "name": name,
            "value": explicit.get(name, default),
            "read_only": False,
            "is_default": name not in explicit,
            "config_source": _GROUP_CONFIG if name in explicit else _DEFAULT,
            "is_sensitive": False,
            "synonyms": [],
            "config_type": GROUP_CONFIGS[name].type,
            "documentation": GROUP_CONFIGS[name].documentation,
        }
        for name, default in sorted(GROUP_CONFIG_DEFAULTS.items())
        if keys is None or name in keys
    ]


def _client_metrics_entries(
    ctx: RequestContext, name: str, keys: set[str] | None
) -> list[dict[str, Any]]:
    """A subscription's explicitly set configs (Kafka describes only those, with
    source CLIENT_METRICS_CONFIG; an unknown name has none)."""
    explicit = ctx.state.dynamic.client_metrics.get(name, {})
    return [
        {
            "name": key,
            "value": value,
            "read_only": False,
            "is_default": False,
            "config_source": _CLIENT_METRICS_CONFIG,
            "is_sensitive": False,
            "synonyms": [],
            "config_type": CLIENT_METRICS_CONFIGS[key].type,
            "documentation": CLIENT_METRICS_CONFIGS[key].documentation,
        }
        for key, value in sorted(explicit.items())
        if keys is None or key in keys
    ]


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
        elif r.resource_type == _GROUP and r.resource_name:
            entries = _group_entries(ctx, r.resource_name, keys)
            if ctx.share is not None:  # the share.* configs: the share coordinator's
                error, message, shared = group_configs(ctx, r.resource_name, keys)
                entries = sorted(entries + shared, key=lambda e: str(e["name"]))
        elif r.resource_type == _CLIENT_METRICS:
            if r.resource_name:
                entries = _client_metrics_entries(ctx, r.resource_name, keys)
            else:
                error, message = (
                    ErrorCode.INVALID_REQUEST,
                    "Client metrics subscription name must not be empty",
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
        if r.resource_type in (_GROUP, _CLIENT_METRICS):
            alter = _alter_group if r.resource_type == _GROUP else _alter_client_metrics
            try:
                error, message = alter(
                    ctx, r, changes_of, replace, request.validate_only
                )
            except TopicError as err:
                error, message = err.error_code, str(err)
        elif r.resource_type != _TOPIC:
            error, message = (
                ErrorCode.INVALID_REQUEST,
                "only topic, group and client metrics configs can be altered",
            )
        else:
            try:
                info = ctx.state.topics.get(r.resource_name)
                changes = changes_of(
                    r,
                    TOPIC_CONFIGS,
                    info.configs if info else {},
                    TOPIC_CONFIG_DEFAULTS,
                )
                if request.validate_only:
                    if info is None:
                        raise TopicError(
                            ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                            f"unknown topic {r.resource_name!r}",
                        )
                    merged = {} if replace else dict(info.configs)
                    merged.update(changes)
                    validate_topic_configs(
                        {k: v for k, v in merged.items() if v is not None}
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


def _alter_group(
    ctx: RequestContext, r: Any, changes_of: Any, replace: bool, validate_only: bool
) -> tuple[ErrorCode, str | None]:
    """Apply ``r``'s changes to a group's configs (Kafka's ``GroupConfig.validate``
    on the result), unless ``validate_only``: the ``share.*`` ones through the share
    coordinator (:func:`~kproto.broker.handlers.share_admin.alter_group_configs`,
    incremental only), the others to :attr:`ClusterState.dynamic`. Returns the share
    coordinator's refusal, if any (nothing is then changed).

    Raises:
        TopicError: INVALID_REQUEST (no group name), INVALID_CONFIG.
    """
    if not r.resource_name:
        raise TopicError(
            ErrorCode.INVALID_REQUEST, "Default group resources are not allowed."
        )
    shared = [c for c in r.configs if c.name.startswith("share.")]
    r = attrs.evolve(r, configs=[c for c in r.configs if c not in shared])
    store = ctx.state.dynamic
    current = store.group_configs.get(r.resource_name, {})
    changes = changes_of(r, GROUP_CONFIGS, current, GROUP_CONFIG_DEFAULTS)
    new = {} if replace else dict(current)
    for key, value in changes.items():
        if value is None:
            new.pop(key, None)
        else:
            new[key] = value
    validate_group_configs(new)
    if shared:
        if replace or ctx.share is None:
            raise TopicError(
                ErrorCode.INVALID_CONFIG,
                "share group configs are set with IncrementalAlterConfigs "
                "(and need the share coordinator)",
            )
        error, message = alter_group_configs(
            ctx, attrs.evolve(r, configs=shared), validate_only
        )
        if error != ErrorCode.NONE:
            return error, message
    if validate_only or new == current:
        return ErrorCode.NONE, None
    if new:
        store.group_configs[r.resource_name] = new
    else:
        store.group_configs.pop(r.resource_name, None)
    store.save()
    return ErrorCode.NONE, None


def _alter_client_metrics(
    ctx: RequestContext, r: Any, changes_of: Any, replace: bool, validate_only: bool
) -> tuple[ErrorCode, str | None]:
    """Apply ``r``'s changes to a client metrics subscription (validated as Kafka's
    ``ClientMetricsConfigs.validate`` on the result; no configs left removes it).

    Raises:
        TopicError: INVALID_REQUEST (no name), INVALID_CONFIG.
    """
    if not r.resource_name:
        raise TopicError(ErrorCode.INVALID_REQUEST, "Subscription name can't be empty")
    store = ctx.state.dynamic
    current = store.client_metrics.get(r.resource_name, {})
    changes = changes_of(
        r, CLIENT_METRICS_CONFIGS, current, CLIENT_METRICS_CONFIG_DEFAULTS
    )
    new = {} if replace else dict(current)
    for key, value in changes.items():
        if value is None:
            new.pop(key, None)
        else:
            new[key] = value
    if new:
        Subscription.parse(r.resource_name, new)
    if validate_only or new == current:
        return ErrorCode.NONE, None
    ctx.state.client_metrics.set_subscription(r.resource_name, new)
    if new:
        store.client_metrics[r.resource_name] = new
    else:
        store.client_metrics.pop(r.resource_name, None)
    store.save()
    return ErrorCode.NONE, None


def _replace_changes(resource: Any, *_: Any) -> dict[str, str | None]:
    return {c.name: c.value for c in resource.configs}


async def alter_configs(ctx: RequestContext, request: Any) -> Any:
    """Replace a topic's or group's configs with those given (Kafka's legacy
    AlterConfigs)."""
    responses = _alter(ctx, request, _replace_changes, True)
    return respond(ctx, throttle_time_ms=0, responses=responses)


def _incremental_changes(
    resource: Any,
    definitions: Mapping[str, TopicConfigDef],
    current: Mapping[str, str],
    defaults: Mapping[str, str],
) -> dict[str, str | None]:
    """The new value (``None``: delete) of each config ``resource`` changes.
    APPEND adds the comma-separated items missing from the list in effect
    (``current``, else the default), SUBTRACT removes them.

    Raises:
        TopicError: INVALID_REQUEST (a config named twice), INVALID_CONFIG (APPEND
            or SUBTRACT on a config that is not a LIST, an unknown operation).
    """
    changes: dict[str, str | None] = {}
    for c in resource.configs:
        if c.name in changes:
            raise TopicError(
                ErrorCode.INVALID_REQUEST, "Error due to duplicate config keys"
            )
        if c.config_operation == _SET:
            changes[c.name] = c.value
        elif c.config_operation == _DELETE:
            changes[c.name] = None
        elif c.config_operation in (_APPEND, _SUBTRACT):
            op = "APPEND" if c.config_operation == _APPEND else "SUBTRACT"
            definition = definitions.get(c.name)
            if definition is None or definition.type is not ConfigType.LIST:
                raise TopicError(
                    ErrorCode.INVALID_CONFIG,
                    f"Can't {op} to key {c.name} because its type is not LIST.",
                )
            value = current.get(c.name, defaults.get(c.name, ""))
            items = [v.strip() for v in value.split(",") if v.strip()]
            given = [v.strip() for v in (c.value or "").split(",") if v.strip()]
            if c.config_operation == _APPEND:
                items += [v for v in given if v not in items]
            else:
                items = [v for v in items if v not in given]
            changes[c.name] = ",".join(items)
        else:
            raise TopicError(
                ErrorCode.INVALID_CONFIG,
                f"unknown config operation {c.config_operation} on {c.name}",
            )
    return changes


async def incremental_alter_configs(ctx: RequestContext, request: Any) -> Any:
    """SET, DELETE, APPEND and SUBTRACT on topic, group and client metrics configs
    (KIP-339)."""
    responses = _alter(ctx, request, _incremental_changes, False)
    return respond(ctx, throttle_time_ms=0, responses=responses)
