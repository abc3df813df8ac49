"""DescribeClientQuotas and AlterClientQuotas (KIP-546): quota entities (user,
client-id, ip; a null name is the default entity) and their values, stored only.

Sources: ``DescribeClientQuotasRequest/Response.json`` v0-v1,
``AlterClientQuotasRequest/Response.json`` v0-v1; Kafka's
``ClientQuotaControlManager`` (``validateEntity``, ``validateQuotaKeyValue``),
``ClientQuotasImage.describe`` (the filter) and ``QuotaConfig`` (the keys and
their types). Quotas are kept in :class:`kproto.broker.dynamic_config.DynamicConfigs`
and described; this broker does not enforce them (every ``throttle_time_ms`` is 0).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from typing import Any

from kproto.broker.dynamic_config import QuotaEntity
from kproto.broker.handlers.context import RequestContext, respond
from kproto.errors import ErrorCode

__all__ = [
    "describe_client_quotas",
    "alter_client_quotas",
    "QUOTA_KEYS",
    "IP_QUOTA_KEYS",
    "QuotaError",
]

USER, CLIENT_ID, IP = "user", "client-id", "ip"

#: ``QuotaConfig.userAndClientQuotaConfigs``: key -> ConfigDef type.
QUOTA_KEYS: Mapping[str, str] = {
    "producer_byte_rate": "LONG",
    "consumer_byte_rate": "LONG",
    "request_percentage": "DOUBLE",
    "controller_mutation_rate": "DOUBLE",
}
#: ``QuotaConfig.ipConfigs``.
IP_QUOTA_KEYS: Mapping[str, str] = {"connection_creation_rate": "INT"}

_LIMITS = {"INT": 2**31 - 1, "LONG": 2**63 - 1}
# DescribeClientQuotas match_type: EXACT 0, DEFAULT 1, SPECIFIED (any) 2.
_EXACT, _DEFAULT, _SPECIFIED = 0, 1, 2


class QuotaError(Exception):
    """A quota entity, filter or value Kafka refuses: INVALID_REQUEST, message."""


def _entity(pairs: Any) -> QuotaEntity:
    """The entity of request ``pairs``, checked as ``validateEntity``.

    Raises:
        QuotaError: empty, a type twice, an unknown type, an empty name, ip
            combined with user or client-id, an ip name that is not an address.
    """
    seen: dict[str, str | None] = {}
    for pair in pairs:
        kind, name = pair.entity_type, pair.entity_name
        if kind in seen:
            raise QuotaError(
                f"Invalid empty client quota entity, duplicate entity entry {kind}"
            )
        if kind not in (USER, CLIENT_ID, IP):
            raise QuotaError(f"Unhandled client quota entity type: {kind}")
        if name is not None and not name:
            raise QuotaError(f"Empty {kind} not supported")
        seen[kind] = name
    if not seen:
        raise QuotaError("Invalid empty client quota entity")
    if IP in seen and len(seen) > 1:
        raise QuotaError(
            "Invalid quota entity combination, IP entity should not be combined "
            "with User or ClientId"
        )
    if seen.get(IP) is not None:
        try:
            ipaddress.ip_address(seen[IP] or "")
        except ValueError:
            raise QuotaError(
                f"{seen[IP]} is not a valid IP or resolvable host."
            ) from None
    return tuple(sorted(seen.items()))


def _check_value(entity: QuotaEntity, key: str, value: float) -> None:
    """``validateQuotaKeyValue``.

    Raises:
        QuotaError: unknown key for the entity, a value not above 0, a fractional
            or too large value for an integral key.
    """
    keys = IP_QUOTA_KEYS if entity[0][0] == IP else QUOTA_KEYS
    kind = keys.get(key)
    if kind is None:
        raise QuotaError(f"Invalid configuration key {key}")
    if value <= 0.0:
        raise QuotaError(f"Quota {key} must be greater than 0")
    if kind in _LIMITS:
        if value > _LIMITS[kind]:
            raise QuotaError(f"Proposed value for {key} is too large for a {kind}.")
        if abs(value - round(value)) > 1e-6:
            raise QuotaError(f"{key} cannot be a fractional value.")


async def alter_client_quotas(ctx: RequestContext, request: Any) -> Any:
    """Set or remove each entry's quota values (stored, not enforced)."""
    store = ctx.state.dynamic
    entries = []
    changed = False
    for entry in request.entries:
        error, message = ErrorCode.NONE, None
        try:
            entity = _entity(entry.entity)
            values = dict(store.quotas.get(entity, {}))
            keys = set()
            for op in entry.ops:
                if op.key in keys:
                    raise QuotaError(f"Duplicate quota key {op.key} not updating quota")
                keys.add(op.key)
                if op.remove:
                    values.pop(op.key, None)
                else:
                    _check_value(entity, op.key, op.value)
                    values[op.key] = op.value
        except QuotaError as err:
            error, message = ErrorCode.INVALID_REQUEST, str(err)
        else:
            if not request.validate_only:
                if values:
                    store.quotas[entity] = values
                else:
                    store.quotas.pop(entity, None)
                changed = True
        entries.append(
            {
                "error_code": error,
                "error_message": message,
                "entity": [
                    {"entity_type": e.entity_type, "entity_name": e.entity_name}
                    for e in entry.entity
                ],
            }
        )
    if changed:
        store.save()
    return respond(ctx, throttle_time_ms=0, entries=entries)


def _matcher(components: Any, strict: bool) -> Any:
    """A predicate over stored entities for the request's filter.

    Raises:
        QuotaError: a type twice, an unknown type or match type, EXACT without a
            name, ip combined with user or client-id.
    """
    wanted: dict[str, tuple[int, str | None]] = {}
    for c in components:
        if c.entity_type in wanted:
            raise QuotaError(
                f"Entity type {c.entity_type} cannot appear more than once in the filter."
            )
        if c.entity_type not in (USER, CLIENT_ID, IP):
            raise QuotaError(f"Unknown entity type {c.entity_type}")
        if c.match_type not in (_EXACT, _DEFAULT, _SPECIFIED):
            raise QuotaError(f"Unknown match type {c.match_type}")
        if c.match_type == _EXACT and c.match is None:
            raise QuotaError("A null match with an exact match type is invalid.")
        wanted[c.entity_type] = (c.match_type, c.match)
    if IP in wanted and len(wanted) > 1:
        raise QuotaError(
            "Invalid entity filter component combination, IP filter component "
            "should not be used with user or clientId filter component."
        )

    def matches(entity: QuotaEntity) -> bool:
        names = dict(entity)
        if strict and set(names) != set(wanted):
            return False
        for kind, (match_type, match) in wanted.items():
            if kind not in names:
                return False
            name = names[kind]
            if match_type == _EXACT and name != match:
                return False
            if match_type == _DEFAULT and name is not None:
                return False
            if match_type == _SPECIFIED and name is None:
                return False
        return True

    return matches


async def describe_client_quotas(ctx: RequestContext, request: Any) -> Any:
    """The stored entities the filter matches, with their values."""
    try:
        matches = _matcher(request.components, request.strict)
    except QuotaError as err:
        return respond(
            ctx,
            throttle_time_ms=0,
            error_code=ErrorCode.INVALID_REQUEST,
            error_message=str(err),
            entries=None,
        )
    entries = [
        {
            "entity": [
                {"entity_type": kind, "entity_name": name} for kind, name in entity
            ],
            "values": [{"key": k, "value": v} for k, v in sorted(values.items())],
        }
        for entity, values in sorted(
            ctx.state.dynamic.quotas.items(), key=lambda kv: repr(kv[0])
        )
        if matches(entity)
    ]
    return respond(
        ctx,
        throttle_time_ms=0,
        error_code=ErrorCode.NONE,
        error_message=None,
        entries=entries,
    )
