"""DescribeConfigs, AlterConfigs and IncrementalAlterConfigs for topics, groups
(KIP-848 group configs, :mod:`kproto.broker.group_config`), client metrics
subscriptions (KIP-714, :mod:`kproto.broker.client_metrics`) and brokers (a node id,
or ``""`` for the cluster-wide default: Kafka's dynamically updatable broker
configs, :mod:`kproto.broker.broker_config`, after Kafka's ``DynamicBrokerConfig``
and ``ConfigHelper``: sources DYNAMIC_BROKER_CONFIG, DYNAMIC_DEFAULT_BROKER_CONFIG,
STATIC_BROKER_CONFIG, DEFAULT_CONFIG, with synonyms).

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

from kproto.broker.broker_config import (
    BROKER_CONFIGS,
    BrokerConfigError,
    Dynamic,
    topic_synonyms,
)
from kproto.broker.client_metrics import (
    CLIENT_METRICS_CONFIG_DEFAULTS,
    CLIENT_METRICS_CONFIGS,
    Subscription,
)
from kproto.broker.dynamic_broker_config import (
    BrokerConfigLayers,
    ConfigSource,
    check_dynamic,
)
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
    TopicConfig,
    TopicConfigDef,
)
from kproto.errors import ErrorCode

__all__ = ["describe_configs", "alter_configs", "incremental_alter_configs"]

# ConfigResource.Type: TOPIC 2, BROKER 4, CLIENT_METRICS 16, GROUP 32.
_TOPIC, _BROKER, _CLIENT_METRICS, _GROUP = 2, 4, 16, 32
_DEFAULT, _GROUP_CONFIG = ConfigSource.DEFAULT_CONFIG, ConfigSource.GROUP_CONFIG
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
            "config_source": ConfigSource.CLIENT_METRICS_CONFIG,
            "is_sensitive": False,
            "synonyms": [],
            "config_type": CLIENT_METRICS_CONFIGS[key].type,
            "documentation": CLIENT_METRICS_CONFIGS[key].documentation,
        }
        for key, value in sorted(explicit.items())
        if keys is None or key in keys
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
    layers = state.layers()
    entries = []
    for name in sorted(TOPIC_CONFIGS):
        if keys is not None and name not in keys:
            continue
        definition = TOPIC_CONFIGS[name]
        if definition.internal and name not in info.configs:
            continue
        chain: list[dict[str, Any]] = []
        if name in info.configs:
            chain.append(
                _synonym(name, info.configs[name], ConfigSource.DYNAMIC_TOPIC_CONFIG)
            )
        broker_name = broker_names.get(name)
        if broker_name is None:
            chain.append(
                _synonym(name, definition.default, ConfigSource.DEFAULT_CONFIG)
            )
        else:
            chain += [
                _synonym(broker_name, value, source)
                for value, source in layers.chain(broker_name)
            ]
        entries.append(
            _entry(name, chain, False, definition.type, definition.documentation)
            | {"synonyms": chain if synonyms else []}
        )
    return entries


def _synonym(name: str, value: str, source: ConfigSource) -> dict[str, Any]:
    return {"name": name, "value": value, "source": source}


def _entry(
    name: str,
    chain: list[dict[str, Any]],
    read_only: bool,
    config_type: ConfigType,
    documentation: str,
) -> dict[str, Any]:
    """A DescribeConfigs entry whose value is the first of ``chain``."""
    return {
        "name": name,
        "value": chain[0]["value"],
        "read_only": read_only,
        "is_default": chain[0]["source"] == ConfigSource.DEFAULT_CONFIG,
        "config_source": chain[0]["source"],
        "is_sensitive": False,
        "synonyms": chain,
        "config_type": config_type,
        "documentation": documentation,
    }


def _broker_entries(
    state: ClusterState, node_id: int | None, keys: set[str] | None, synonyms: bool
) -> list[dict[str, Any]]:
    """A broker's DescribeConfigs entries (Kafka's ``ConfigHelper.
    createBrokerConfigEntries``): every property of node ``node_id``, read-only
    unless Kafka updates it at run time; for ``None`` (the ``""`` resource) only
    the cluster-wide dynamic defaults."""
    layers = state.layers(node_id)
    entries = []
    for name in sorted(BROKER_CONFIGS):
        if keys is not None and name not in keys:
            continue
        chain = [_synonym(name, value, source) for value, source in layers.chain(name)]
        if node_id is None:
            chain = [
                c
                for c in chain
                if c["source"] == ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG
            ]
            if not chain:
                continue
        d = BROKER_CONFIGS[name]
        entries.append(
            _entry(
                name,
                chain,
                d.dynamic is Dynamic.READ_ONLY,
                d.definition.type,
                d.definition.documentation,
            )
            | {"synonyms": chain if synonyms else []}
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
        elif r.resource_type == _CLIENT_METRICS:
            if r.resource_name:
                entries = _client_metrics_entries(ctx, r.resource_name, keys)
            else:
                error, message = (
                    ErrorCode.INVALID_REQUEST,
                    "Client metrics subscription name must not be empty",
                )
        elif r.resource_type == _BROKER:
            error, message = _check_broker(ctx, r.resource_name)
            if not error:
                node = int(r.resource_name) if r.resource_name else None
                entries = _broker_entries(state, node, keys, synonyms)
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
        if r.resource_type in (_GROUP, _CLIENT_METRICS):
            alter = _alter_group if r.resource_type == _GROUP else _alter_client_metrics
            try:
                error, message = alter(
                    ctx, r, changes_of, replace, request.validate_only
                )
            except TopicError as err:
                error, message = err.error_code, str(err)
        elif r.resource_type == _BROKER:
            try:
                _alter_broker(ctx, r, changes_of, replace, request.validate_only)
            except TopicError as err:
                error, message = err.error_code, str(err)
        elif r.resource_type != _TOPIC:
            error, message = (
                ErrorCode.INVALID_REQUEST,
                f"resource type {r.resource_type} is not supported",
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


#: Broker property -> its definition (for APPEND and SUBTRACT on LIST configs).
_BROKER_DEFINITIONS = {name: d.definition for name, d in BROKER_CONFIGS.items()}


def _alter_broker(
    ctx: RequestContext, r: Any, changes_of: Any, replace: bool, validate_only: bool
) -> None:
    """Apply ``r``'s changes to the dynamic configs of a broker (``r.resource_name``
    a node id) or of every broker (``""``), as Kafka's ``DynamicBrokerConfig``:
    only the configs it updates at run time, each validated, then the new
    configuration put in effect (:meth:`ClusterState.reconfigure`) and saved.

    Raises:
        TopicError: INVALID_REQUEST (not a node id of the cluster), INVALID_CONFIG
            (unknown, read-only, refused value, or a topic's configs conflicting
            with the new defaults).
    """
    state = ctx.state
    name = r.resource_name
    if name != "":
        try:
            node_id = int(name)
        except ValueError:
            raise TopicError(
                ErrorCode.INVALID_REQUEST,
                f"Broker id must be an integer, but it is: {name}",
            ) from None
        if node_id not in state.node_ids:
            raise TopicError(
                ErrorCode.INVALID_REQUEST, f"Broker {node_id} is not a known broker"
            )
    store = state.dynamic.broker_configs
    current = store.get(name, {})
    layers = state.layers(None if name == "" else int(name))
    effective = layers.effective()
    in_effect = {n: effective.string(n) for n in BROKER_CONFIGS}
    changes = changes_of(r, _BROKER_DEFINITIONS, current, in_effect)
    try:
        check_dynamic(changes, per_broker=name != "")
    except BrokerConfigError as exc:
        raise TopicError(ErrorCode.INVALID_CONFIG, str(exc)) from None
    new = {} if replace else dict(current)
    for key, value in changes.items():
        if value is None:
            new.pop(key, None)
        else:
            new[key] = value
    stored = dict(store)
    if new:
        stored[name] = new
    else:
        stored.pop(name, None)
    controller = BrokerConfigLayers(
        state.static_config,
        stored.get("", {}),
        stored.get(str(state.controller_id), {}),
    )
    try:
        config = controller.effective()
        defaults = config.topic_defaults()
        for info in state.topics.values():
            TopicConfig.from_properties(info.configs, defaults)
    except BrokerConfigError as exc:
        raise TopicError(ErrorCode.INVALID_CONFIG, str(exc)) from None
    if validate_only or stored == store:
        return
    state.dynamic.broker_configs = stored
    state.reconfigure(config)
    state.dynamic.save()


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
    validate_group_configs(new, ctx.state.config.group_config_bounds)
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
