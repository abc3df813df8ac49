"""The REST plumbing of the registry: content types, JSON bodies in and out, query
parameters, and the keys of the application's state.

Confluent's conventions (``io.confluent.kafka.schemaregistry.rest``): responses are
``application/vnd.schemaregistry.v1+json``; request bodies may be that,
``application/vnd.schemaregistry+json``, ``application/json`` or
``application/octet-stream``; errors are ``{"error_code": N, "message": "..."}``;
booleans in queries are ``true`` in any case; lists page with ``offset``/``limit``.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from typing import Any, Final

from aiohttp import web

from kproto.registry.errors import RegistryError, RegistryErrorCode
from kproto.registry.registry import SchemaRegistry
from kproto.registry.schemas import SchemaReference, SchemaType
from kproto.registry.security import REALM
from kproto.registry.store import StoredSchema

__all__ = [
    "ACCEPTED_TYPES",
    "CONTENT_TYPE",
    "DEFAULT_MAX_REQUEST_BYTES",
    "REGISTRY_KEY",
    "SETTINGS_KEY",
    "Handler",
    "LARGE_LIST",
    "dump",
    "dump_large",
    "error_response",
    "flag",
    "optional_int",
    "page",
    "read_body",
    "schema_fields",
    "schema_request",
    "too_large",
]

#: The content type of every response.
CONTENT_TYPE: Final = "application/vnd.schemaregistry.v1+json"
#: Request content types accepted (Confluent's ``Versions.PREFERRED_REQUEST_TYPES``
#: and octet-stream, which Jersey takes for a missing type).
ACCEPTED_TYPES: Final = frozenset(
    {
        CONTENT_TYPE,
        "application/vnd.schemaregistry+json",
        "application/json",
        "application/octet-stream",
    }
)
#: Lists longer than this are JSON-encoded in a worker thread.
LARGE_LIST: Final = 2000
#: The default bound of a request body: 16 MiB (bytes).
DEFAULT_MAX_REQUEST_BYTES: Final = 16 * 1024 * 1024

REGISTRY_KEY: Final = web.AppKey("registry", SchemaRegistry)
SETTINGS_KEY: Final = web.AppKey("settings", dict)

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def dump(body: object, status: int = 200) -> web.Response:
    """``body`` as the registry's JSON response."""
    return web.Response(
        body=json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode(),
        status=status,
        content_type=CONTENT_TYPE,
    )


async def dump_large(items: list[Any]) -> web.Response:
    """:func:`dump` for a list that may be long (every subject, every schema):
    encoded in a worker thread past :data:`LARGE_LIST` items, so that the loop
    (and the Kafka listeners on it) keeps running meanwhile."""
    if len(items) <= LARGE_LIST:
        return dump(items)
    data = await asyncio.to_thread(
        lambda: json.dumps(items, separators=(",", ":"), ensure_ascii=False).encode()
    )
    return web.Response(body=data, content_type=CONTENT_TYPE)


def error_response(exc: RegistryError) -> web.Response:
    """Confluent's error body for ``exc`` (a 401 with its Basic challenge)."""
    response = dump(exc.to_json(), exc.http_status)
    if exc.http_status == 401:
        response.headers["WWW-Authenticate"] = f'Basic realm="{REALM}"'
    return response


def flag(request: web.Request, *names: str) -> bool:
    """A boolean query parameter (any of ``names``): ``true`` in any case is true."""
    return any(request.query.get(n, "").lower() == "true" for n in names)


def page(request: web.Request, items: list[Any]) -> list[Any]:
    """Confluent's ``offset``/``limit`` pagination (``limit`` <= 0: all)."""
    try:
        offset = max(int(request.query.get("offset", "0")), 0)
        limit = int(request.query.get("limit", "-1"))
    except ValueError:
        raise RegistryError(
            RegistryErrorCode.UNPROCESSABLE_ENTITY, "offset and limit must be integers"
        ) from None
    return items[offset : offset + limit] if limit > 0 else items[offset:]


def schema_fields(stored: StoredSchema, text: str | None = None) -> dict[str, Any]:
    """``guid``, ``schemaType`` (left out for AVRO, as Confluent), ``references``
    (left out when none) and ``schema``."""
    fields: dict[str, Any] = {"guid": stored.guid}
    if stored.schema_type != SchemaType.AVRO:
        fields["schemaType"] = stored.schema_type
    if stored.references:
        fields["references"] = [
            {"name": r.name, "subject": r.subject, "version": r.version}
            for r in stored.references
        ]
    fields["schema"] = stored.schema if text is None else text
    return fields


async def read_body(request: web.Request) -> dict[str, Any]:
    """The request's JSON object, read within the app's bound.

    Raises:
        RegistryError: 42209 too large, 400 not JSON, 422 not an object.
    """
    limit = request.app[SETTINGS_KEY]["max_request_bytes"]
    if request.content_length is not None and request.content_length > limit:
        raise too_large(limit)
    try:
        data = await request.read()
    except web.HTTPRequestEntityTooLarge:
        raise too_large(limit) from None
    try:
        value = json.loads(data)
    except (ValueError, RecursionError) as exc:
        raise RegistryError(
            RegistryErrorCode.BAD_REQUEST, f"The request body is not JSON: {exc}"
        ) from None
    if not isinstance(value, dict):
        raise RegistryError(
            RegistryErrorCode.UNPROCESSABLE_ENTITY,
            f"The request body must be a JSON object, not {type(value).__name__}",
        )
    return value


def too_large(limit: int) -> RegistryError:
    """42209 naming the bound."""
    return RegistryError(
        RegistryErrorCode.SCHEMA_TOO_LARGE,
        f"The request body is larger than the registry's limit of {limit} bytes",
    )


def optional_int(body: dict[str, Any], name: str) -> int | None:
    """An optional positive int field (``id``, ``version``); absent, 0 or -1:
    not given (as Confluent's entities).

    Raises:
        RegistryError: 422, not an integer.
    """
    value = body.get(name)
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool):
        raise RegistryError(
            RegistryErrorCode.UNPROCESSABLE_ENTITY, f"{name!r} must be an integer"
        )
    return value if value > 0 else None


def schema_request(
    body: dict[str, Any],
) -> tuple[str, str, tuple[SchemaReference, ...]]:
    """``(schemaType, schema, references)`` of a register/lookup/compatibility body.

    Raises:
        RegistryError: 42201 no schema or an unknown type; 422 malformed references.
    """
    schema = body.get("schema")
    if not isinstance(schema, str) or not schema.strip():
        raise RegistryError(
            RegistryErrorCode.INVALID_SCHEMA,
            "Invalid schema: 'schema' must be a non-empty string",
        )
    schema_type = body.get("schemaType") or SchemaType.AVRO.value
    if schema_type not in SchemaType.__members__:
        raise RegistryError(
            RegistryErrorCode.INVALID_SCHEMA,
            f"Invalid schema: unknown schemaType {schema_type!r} "
            f"(known: {', '.join(SchemaType.__members__)})",
        )
    refs = body.get("references") or []
    if not isinstance(refs, list):
        raise RegistryError(
            RegistryErrorCode.UNPROCESSABLE_ENTITY, "'references' must be a list"
        )
    references = []
    for ref in refs:
        if not (
            isinstance(ref, dict)
            and isinstance(ref.get("name"), str)
            and isinstance(ref.get("subject"), str)
            and isinstance(ref.get("version"), int)
            and not isinstance(ref.get("version"), bool)
        ):
            raise RegistryError(
                RegistryErrorCode.UNPROCESSABLE_ENTITY,
                'a reference must be {"name": str, "subject": str, "version": int}',
            )
        references.append(SchemaReference(ref["name"], ref["subject"], ref["version"]))
    return schema_type, schema, tuple(references)
