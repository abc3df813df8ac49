"""DescribeConfigs, AlterConfigs and IncrementalAlterConfigs for topics and groups
(KIP-848 group configs, :mod:`kproto.broker.group_config`), and a read-only view of
broker configs.

Sources: ``DescribeConfigsRequest/Response.json`` (synonyms since v1, KIP-226;
types and documentation since v3, KIP-569), ``AlterConfigsRequest/Response.json``,
``IncrementalAlterConfigsRequest/Response.json`` (KIP-339); Kafka's
``ConfigAdminManager`` and ``ConfigurationControlManager.incrementalAlterConfig``
(APPEND and SUBTRACT on LIST configs, from the value in effect).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import attrs

from kproto.broker.broker_config import BROKER_CONFIGS, Dynamic, topic_synonyms
from kproto.broker.errors import TopicError
from kproto.broker.group_config import (
    GROUP_CONFIG_DEFAULTS,
    GROUP_CONFIGS,
    validate_group_configs,
)
from kproto.broker.handlers.context import RequestContext, respond
from kproto.broker.handlers.share_admin import alter_group_configs, group_configs
from kproto.broker.state import ClusterState, TopicMetadata
from kproto.broker.topic_config import (
    TOPIC_CONFIGS,
    ConfigType,
    TopicConfigDef,
)
from kproto.errors import ErrorCode

__all__ = ["describe_configs", "alter_configs", "incremental_alter_configs"]

# ConfigResource.Type: TOPIC 2, BROKER 4, GROUP 32.
_TOPIC, _BROKER, _GROUP = 2, 4, 32
# ConfigSource: DYNAMIC_TOPIC_CONFIG 1, STATIC_BROKER_CONFIG 4, DEFAULT_CONFIG 5,
# GROUP_CONFIG 8.
_DYNAMIC_TOPIC, _STATIC_BROKER, _DEFAULT, _GROUP_CONFIG = 1, 4, 5, 8
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


def _topic_entries(
    state: ClusterState,
    info: TopicMetadata,
    keys: set[str] | None,
    synonyms: bool,
) -> list[dict[str, Any]]:
    """A topic's DescribeConfigs entries: the value in effect, where it comes from
    (the topic, a broker property, the default) and with ``synonyms`` the chain
    (Kafka's ``ConfigHelper.createTopicConfigEntry``)."""
    broker_names = topic_synonyms()
    broker = state.config
    entries = []
    for name in sorted(TOPIC_CONFIGS):
        if keys is not None and name not in keys:
            continue
        definition = TOPIC_CONFIGS[name]
        if definition.internal and name not in info.configs:
            continue
        chain: list[dict[str, Any]] = []
        if name in info.configs:
            chain.append(_synonym(name, info.configs[name], _DYNAMIC_TOPIC))
        broker_name = broker_names.get(name)
        if broker_name is not None and broker_name in broker.explicit:
            source = _broker_source(state, broker_name)
            chain.append(_synonym(broker_name, broker.string(broker_name), source))
        default = (
            BROKER_CONFIGS[broker_name].definition.default
            if broker_name is not None
            else definition.default
        )
        chain.append(_synonym(broker_name or name, default, _DEFAULT))
        entries.append(
            {
                "name": name,
                "value": chain[0]["value"],
                "read_only": False,
                "is_default": chain[0]["source"] == _DEFAULT,
                "config_source": chain[0]["source"],
                "is_sensitive": False,
                "synonyms": chain if synonyms else [],
                "config_type": definition.type,
                "documentation": definition.documentation,
            }
        )
    return entries


def _synonym(name: str, value: str, source: int) -> dict[str, Any]:
    return {"name": name, "value": value, "source": source}


def _broker_source(state: ClusterState, name: str) -> int:
    """Where broker property ``name``'s value comes from (it is explicit)."""
    return _STATIC_BROKER


def _broker_entries(
    state: ClusterState, keys: set[str] | None, synonyms: bool
) -> list[dict[str, Any]]:
    """A broker's DescribeConfigs entries (Kafka's
    ``ConfigHelper.createBrokerConfigEntries``): every property, read-only unless
    Kafka updates it at run time."""
    config = state.config
    entries = []
    for name in sorted(BROKER_CONFIGS):
        if keys is not None and name not in keys:
            continue
        d = BROKER_CONFIGS[name]
        chain = []
        if name in config.explicit:
            chain.append(
                _synonym(name, config.string(name), _broker_source(state, name))
            )
        chain.append(_synonym(name, d.definition.default, _DEFAULT))
        entries.append(
            {
                "name": name,
                "value": chain[0]["value"],
                "read_only": d.dynamic is Dynamic.READ_ONLY,
                "is_default": chain[0]["source"] == _DEFAULT,
                "config_source": chain[0]["source"],
                "is_sensitive": False,
                "synonyms": chain if synonyms else [],
                "config_type": d.definition.type,
                "documentation": d.definition.documentation,
            }
        )
    return entries


def _check_broker(ctx: RequestContext, name: str) -> tuple[ErrorCode, str | None]:
    """A BROKER resource's name: ``""`` (the cluster-wide default) or the id of
    the node asked (Kafka's ``ConfigHelper``: a broker answers for itself)."""
    if name == "":
        return ErrorCode.NONE, None
    try:
        broker_id = int(name)
    except ValueError:
        return (
            ErrorCode.INVALID_REQUEST,
            f"Broker id must be an integer, but it is: {name}",
        )
    if broker_id != ctx.node_id:
        return (
            ErrorCode.INVALID_REQUEST,
            f"Unexpected broker id, expected {ctx.node_id} or empty string, but "
            f"received {name}",
        )
    return ErrorCode.NONE, None


async def describe_configs(ctx: RequestContext, request: Any) -> Any:
    state = ctx.state
    synonyms = bool(getattr(request, "include_synonyms", False))
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
                entries = _topic_entries(state, info, keys, synonyms)
        elif r.resource_type == _GROUP and r.resource_name:
            entries = _group_entries(ctx, r.resource_name, keys)
            if ctx.share is not None:  # the share.* configs: the share coordinator's
                error, message, shared = group_configs(ctx, r.resource_name, keys)
                entries = sorted(entries + shared, key=lambda e: str(e["name"]))
        elif r.resource_type == _BROKER:
            error, message = _check_broker(ctx, r.resource_name)
            if not error:
                entries = _broker_entries(state, keys, synonyms)
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


class _TopicDefaults(Mapping[str, str]):
    """The string in effect of each topic config without an explicit value (for
    APPEND and SUBTRACT on a list the topic does not set)."""

    def __init__(self, state: ClusterState, info: TopicMetadata | None) -> None:
        self._config = info.topic_config if info else state.topic_defaults

    def __getitem__(self, name: str) -> str:
        return self._config.string(name)

    def __iter__(self) -> Iterator[str]:
        return iter(TOPIC_CONFIGS)

    def __len__(self) -> int:
        return len(TOPIC_CONFIGS)


def _alter(
    ctx: RequestContext, request: Any, changes_of: Any, replace: bool
) -> list[dict[str, Any]]:
    responses = []
    for r in request.resources:
        error, message = ErrorCode.NONE, None
        if r.resource_type == _GROUP:
            try:
                error, message = _alter_group(
                    ctx, r, changes_of, replace, request.validate_only
                )
            except TopicError as err:
                error, message = err.error_code, str(err)
        elif r.resource_type != _TOPIC:
            error, message = (
                ErrorCode.INVALID_REQUEST,
                "only topic and group configs can be altered",
            )
        else:
            try:
                info = ctx.state.topics.get(r.resource_name)
                changes = changes_of(
                    r,
                    TOPIC_CONFIGS,
                    info.configs if info else {},
                    _TopicDefaults(ctx.state, info),
                )
                if request.validate_only:
                    if info is None:
                        raise TopicError(
                            ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                            f"unknown topic {r.resource_name!r}",
                        )
                    merged = {} if replace else dict(info.configs)
                    merged.update(changes)
                    ctx.state.topic_config(
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
    """SET, DELETE, APPEND and SUBTRACT on topic and group configs (KIP-339)."""
    responses = _alter(ctx, request, _incremental_changes, False)
    return respond(ctx, throttle_time_ms=0, responses=responses)
