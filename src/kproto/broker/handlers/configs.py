"""DescribeConfigs, AlterConfigs and IncrementalAlterConfigs for topics, groups
(KIP-848 group configs, :mod:`kproto.broker.group_config`, and the KIP-932
``share.*`` ones, which the share coordinator holds), client metrics subscriptions
(KIP-714, :mod:`kproto.broker.client_metrics`) and brokers (a node id, or ``""``
for the cluster-wide default: Kafka's dynamically updatable broker configs,
:mod:`kproto.broker.broker_config`, after Kafka's ``DynamicBrokerConfig`` and
``ConfigHelper``: sources DYNAMIC_BROKER_CONFIG, DYNAMIC_DEFAULT_BROKER_CONFIG,
STATIC_BROKER_CONFIG, DEFAULT_CONFIG, with synonyms).

Sources: ``DescribeConfigsRequest/Response.json`` (synonyms since v1, KIP-226;
types and documentation since v3, KIP-569), ``AlterConfigsRequest/Response.json``,
``IncrementalAlterConfigsRequest/Response.json`` (KIP-339); Kafka's
``ConfigAdminManager`` and ``ConfigurationControlManager.incrementalAlterConfig``
(APPEND and SUBTRACT on LIST configs, from the value in effect).
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterator, Mapping
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
from kproto.broker.handlers.share import coordinator
from kproto.broker.share import GROUP_PROPERTIES
from kproto.broker.state import ClusterState, TopicMetadata
from kproto.broker.topic_config import (
    TOPIC_CONFIGS,
    ConfigType,
    TopicConfig,
    TopicConfigDef,
)
from kproto.errors import ErrorCode

__all__ = [
    "ConfigResourceType",
    "describe_configs",
    "alter_configs",
    "incremental_alter_configs",
]


class ConfigResourceType(enum.IntEnum):
    """A config resource's ``resource_type`` (Kafka's ``ConfigResource.Type``)."""

    UNKNOWN = 0
    TOPIC = 2
    BROKER = 4
    BROKER_LOGGER = 8
    CLIENT_METRICS = 16
    GROUP = 32


# AlterConfigOp.OpType: SET 0, DELETE 1, APPEND 2, SUBTRACT 3.
_SET, _DELETE, _APPEND, _SUBTRACT = 0, 1, 2, 3


def _synonym(name: str, value: str, source: ConfigSource) -> dict[str, Any]:
    return {"name": name, "value": value, "source": source}


def _entry(
    name: str,
    chain: list[dict[str, Any]],
    config_type: ConfigType,
    documentation: str | None,
    *,
    read_only: bool = False,
    synonyms: bool = False,
) -> dict[str, Any]:
    """A DescribeConfigs entry whose value is the first of ``chain`` (the
    synonyms, listed when ``synonyms``)."""
    return {
        "name": name,
        "value": chain[0]["value"],
        "read_only": read_only,
        "is_default": chain[0]["source"] == ConfigSource.DEFAULT_CONFIG,
        "config_source": chain[0]["source"],
        "is_sensitive": False,
        "synonyms": chain if synonyms else [],
        "config_type": config_type,
        "documentation": documentation,
    }


def _group_chain(name: str, value: str, own: Mapping[str, str]) -> list[dict[str, Any]]:
    """A group config's ``value``: the group's own (GROUP_CONFIG) when ``own`` sets
    ``name``, else the default."""
    source = ConfigSource.GROUP_CONFIG if name in own else ConfigSource.DEFAULT_CONFIG
    return [_synonym(name, value, source)]


def _group_entries(
    ctx: RequestContext, group_id: str, keys: set[str] | None
) -> list[dict[str, Any]]:
    """A group's configs: its own (GROUP_CONFIG) or the default, and with a share
    coordinator the ``share.*`` ones it holds (the group's own, or the cluster's)."""
    explicit = ctx.state.dynamic.group_configs.get(group_id, {})
    entries = [
        _entry(
            name,
            _group_chain(name, explicit.get(name, default), explicit),
            GROUP_CONFIGS[name].type,
            GROUP_CONFIGS[name].documentation,
        )
        for name, default in GROUP_CONFIG_DEFAULTS.items()
        if keys is None or name in keys
    ]
    if ctx.share is not None:
        own = ctx.share.group_configs.get(group_id, {})
        effective = ctx.share.config_for(group_id)
        for name, attribute in GROUP_PROPERTIES.items():
            if keys is None or name in keys:
                value = getattr(effective, attribute)
                config_type = (
                    ConfigType.STRING if isinstance(value, str) else ConfigType.INT
                )
                chain = _group_chain(name, str(value), own)
                entries.append(_entry(name, chain, config_type, None))
    return sorted(entries, key=lambda e: str(e["name"]))


def _client_metrics_entries(
    ctx: RequestContext, name: str, keys: set[str] | None
) -> list[dict[str, Any]]:
    """A subscription's explicitly set configs (Kafka describes only those, with
    source CLIENT_METRICS_CONFIG; an unknown name has none)."""
    if not name:
        raise TopicError(
            ErrorCode.INVALID_REQUEST,
            "Client metrics subscription name must not be empty",
        )
    explicit = ctx.state.dynamic.client_metrics.get(name, {})
    return [
        _entry(
            key,
            [_synonym(key, value, ConfigSource.CLIENT_METRICS_CONFIG)],
            CLIENT_METRICS_CONFIGS[key].type,
            CLIENT_METRICS_CONFIGS[key].documentation,
        )
        for key, value in sorted(explicit.items())
        if keys is None or key in keys
    ]


def _topic_entries(
    state: ClusterState,
    name: str,
    keys: set[str] | None,
    synonyms: bool,
) -> list[dict[str, Any]]:
    """A topic's DescribeConfigs entries: the value in effect, where it comes from
    (the topic, a broker property, the default) and with ``synonyms`` the chain
    (Kafka's ``ConfigHelper.createTopicConfigEntry``).

    Raises:
        TopicError: UNKNOWN_TOPIC_OR_PARTITION.
    """
    info = _topic(state, name)
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
            _entry(
                name,
                chain,
                definition.type,
                definition.documentation,
                synonyms=synonyms,
            )
        )
    return entries


def _topic(state: ClusterState, name: str) -> TopicMetadata:
    """Raises: TopicError UNKNOWN_TOPIC_OR_PARTITION."""
    info = state.topics.get(name)
    if info is None:
        raise TopicError(
            ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"unknown topic {name!r}"
        )
    return info


def _broker_entries(
    ctx: RequestContext, name: str, keys: set[str] | None, synonyms: bool
) -> list[dict[str, Any]]:
    """A broker's DescribeConfigs entries (Kafka's ``ConfigHelper.
    createBrokerConfigEntries``): every property of this node (``name`` its id: a
    broker answers for itself), read-only unless Kafka updates it at run time; for
    ``""`` only the cluster-wide dynamic defaults.

    Raises:
        TopicError: INVALID_REQUEST (``name`` not this node's id).
    """
    node_id = _broker_id(name)
    if node_id is not None and node_id != ctx.node_id:
        raise TopicError(
            ErrorCode.INVALID_REQUEST,
            f"Unexpected broker id, expected {ctx.node_id} or empty string, but "
            f"received {name}",
        )
    layers = ctx.state.layers(node_id)
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
                d.definition.type,
                d.definition.documentation,
                read_only=d.dynamic is Dynamic.READ_ONLY,
                synonyms=synonyms,
            )
        )
    return entries


def _broker_id(name: str) -> int | None:
    """A BROKER resource's node id (``None`` for ``""``, every broker).

    Raises:
        TopicError: INVALID_REQUEST (not an integer).
    """
    if name == "":
        return None
    try:
        return int(name)
    except ValueError:
        raise TopicError(
            ErrorCode.INVALID_REQUEST,
            f"Broker id must be an integer, but it is: {name}",
        ) from None


def _unsupported(resource_type: int) -> TopicError:
    return TopicError(
        ErrorCode.INVALID_REQUEST, f"resource type {resource_type} is not supported"
    )


def _per_resource(
    request: Any, answer: Callable[[Any], dict[str, Any] | None]
) -> list[dict[str, Any]]:
    """The response entry of each of the request's ``resources``: its type and
    name with ``answer(resource)``'s fields, or the error (``error_code``,
    ``error_message``) of the :class:`TopicError` ``answer`` raised."""
    results = []
    for r in request.resources:
        result = {
            "error_code": ErrorCode.NONE,
            "error_message": None,
            "resource_type": r.resource_type,
            "resource_name": r.resource_name,
        }
        try:
            result.update(answer(r) or {})
        except TopicError as err:
            result.update(error_code=err.error_code, error_message=str(err))
        results.append(result)
    return results


def _described(ctx: RequestContext, r: Any, synonyms: bool) -> dict[str, Any]:
    """The ``configs`` entries of one DescribeConfigs resource.

    Raises:
        TopicError: the resource's error.
    """
    keys = None if r.configuration_keys is None else set(r.configuration_keys)
    if r.resource_type == ConfigResourceType.TOPIC:
        configs = _topic_entries(ctx.state, r.resource_name, keys, synonyms)
    elif r.resource_type == ConfigResourceType.GROUP and r.resource_name:
        configs = _group_entries(ctx, r.resource_name, keys)
    elif r.resource_type == ConfigResourceType.CLIENT_METRICS:
        configs = _client_metrics_entries(ctx, r.resource_name, keys)
    elif r.resource_type == ConfigResourceType.BROKER:
        configs = _broker_entries(ctx, r.resource_name, keys, synonyms)
    else:
        raise _unsupported(r.resource_type)
    return {"configs": configs}


async def describe_configs(ctx: RequestContext, request: Any) -> Any:
    synonyms = bool(getattr(request, "include_synonyms", False))
    results = _per_resource(request, lambda r: _described(ctx, r, synonyms))
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


def _applied(
    current: Mapping[str, str], changes: Mapping[str, str | None], replace: bool
) -> dict[str, str]:
    """The configs after ``changes`` (``None``: delete) on ``current`` (on nothing
    when ``replace``, AlterConfigs' whole-set semantics)."""
    new = {} if replace else dict(current)
    for key, value in changes.items():
        if value is None:
            new.pop(key, None)
        else:
            new[key] = value
    return new


def _stored(store: dict[str, dict[str, str]], name: str, new: dict[str, str]) -> None:
    """Keep ``new`` as ``name``'s configs in ``store`` (none left: no entry)."""
    if new:
        store[name] = new
    else:
        store.pop(name, None)


def _alter(
    ctx: RequestContext, request: Any, changes_of: Any, replace: bool
) -> list[dict[str, Any]]:
    alters = {
        ConfigResourceType.TOPIC: _alter_topic,
        ConfigResourceType.BROKER: _alter_broker,
        ConfigResourceType.GROUP: _alter_group,
        ConfigResourceType.CLIENT_METRICS: _alter_client_metrics,
    }

    def alter(r: Any) -> None:
        how = alters.get(r.resource_type)
        if how is None:
            raise _unsupported(r.resource_type)
        how(ctx, r, changes_of, replace, request.validate_only)

    return _per_resource(request, alter)


def _alter_topic(
    ctx: RequestContext, r: Any, changes_of: Any, replace: bool, validate_only: bool
) -> None:
    """Apply ``r``'s changes to a topic's configs (:meth:`ClusterState.set_configs`),
    or with ``validate_only`` only check the result.

    Raises:
        TopicError: UNKNOWN_TOPIC_OR_PARTITION, INVALID_CONFIG, INVALID_REQUEST.
    """
    info = ctx.state.topics.get(r.resource_name)
    changes = changes_of(
        r,
        TOPIC_CONFIGS,
        info.configs if info else {},
        _TopicDefaults(ctx.state, info),
    )
    if validate_only:
        info = _topic(ctx.state, r.resource_name)
        ctx.state.topic_config(_applied(info.configs, changes, replace))
    else:
        ctx.state.set_configs(r.resource_name, changes, replace=replace)


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
    node_id = _broker_id(name)
    if node_id is not None and node_id not in state.node_ids:
        raise TopicError(
            ErrorCode.INVALID_REQUEST, f"Broker {node_id} is not a known broker"
        )
    store = state.dynamic.broker_configs
    current = store.get(name, {})
    effective = state.layers(node_id).effective()
    in_effect = {n: effective.string(n) for n in BROKER_CONFIGS}
    changes = changes_of(r, _BROKER_DEFINITIONS, current, in_effect)
    try:
        check_dynamic(changes, per_broker=node_id is not None)
    except BrokerConfigError as exc:
        raise TopicError(ErrorCode.INVALID_CONFIG, str(exc)) from None
    stored = dict(store)
    _stored(stored, name, _applied(current, changes, replace))
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
) -> None:
    """Apply ``r``'s changes to a group's configs (Kafka's ``GroupConfig.validate``
    on the result), unless ``validate_only``: the ``share.*`` ones through the share
    coordinator (:func:`_alter_share_group`, incremental only), the others to
    :attr:`ClusterState.dynamic`. Nothing is changed when the share coordinator
    refuses.

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
    new = _applied(current, changes, replace)
    validate_group_configs(new, ctx.state.config.group_config_bounds)
    if shared:
        if replace or ctx.share is None:
            raise TopicError(
                ErrorCode.INVALID_CONFIG,
                "share group configs are set with IncrementalAlterConfigs "
                "(and need the share coordinator)",
            )
        _alter_share_group(ctx, r.resource_name, shared, validate_only)
    if validate_only or new == current:
        return
    _stored(store.group_configs, r.resource_name, new)
    store.save()


def _alter_share_group(
    ctx: RequestContext, group_id: str, configs: list[Any], validate_only: bool
) -> None:
    """IncrementalAlterConfigs SET and DELETE of a group's ``share.*`` configs
    (:meth:`kproto.broker.share.ShareCoordinator.set_group_configs`).

    Raises:
        TopicError: INVALID_CONFIG (another operation, an unknown name, a bad
            value).
    """
    share = coordinator(ctx)
    changes: dict[str, str | None] = {}
    for c in configs:
        if c.config_operation not in (_SET, _DELETE):
            raise TopicError(
                ErrorCode.INVALID_CONFIG,
                f"operation {c.config_operation} on {c.name} is not supported",
            )
        changes[c.name] = c.value if c.config_operation == _SET else None
    try:
        if validate_only:
            merged = _applied(share.group_configs.get(group_id, {}), changes, False)
            share.config.with_properties(merged, GROUP_PROPERTIES)
        else:
            share.set_group_configs(group_id, changes)
    except ValueError as exc:
        raise TopicError(ErrorCode.INVALID_CONFIG, str(exc)) from None


def _alter_client_metrics(
    ctx: RequestContext, r: Any, changes_of: Any, replace: bool, validate_only: bool
) -> None:
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
    new = _applied(current, changes, replace)
    if new:
        Subscription.parse(r.resource_name, new)
    if validate_only or new == current:
        return
    ctx.state.client_metrics.set_subscription(r.resource_name, new)
    _stored(store.client_metrics, r.resource_name, new)
    store.save()


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
