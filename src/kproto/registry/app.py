"""Confluent Schema Registry's REST API v1 as an aiohttp application.

Routes, query parameters, bodies and error bodies as Confluent's
(``io.confluent.kafka.schemaregistry.rest.resources``): ``/subjects``,
``/schemas``, ``/config``, ``/mode``, ``/compatibility``, ``/contexts`` and
``/v1/metadata/id``. Responses are ``application/vnd.schemaregistry.v1+json``;
request bodies may be that, ``application/vnd.schemaregistry+json``,
``application/json`` or ``application/octet-stream`` (415 otherwise). Every error,
the client's or ours, is answered ``{"error_code": N, "message": "..."}``:

* a body over ``max_request_bytes`` -> 422 / 42209 (read no further);
* a body that is not JSON -> 400 / 400; JSON of the wrong shape -> 422 / 422;
* an unknown route -> 404 / 404; a method the route lacks -> 405 / 405;
* a bug of ours -> 500 / 500 (logged with its traceback; a client's mistake
  is never logged as one).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any, Final

from aiohttp import web
from aiohttp.typedefs import Middleware

from kproto.registry.errors import RegistryError, RegistryErrorCode
from kproto.registry.registry import SchemaRegistry, parse_version
from kproto.registry.schemas import SchemaReference, SchemaType
from kproto.registry.security import REALM, BasicAuth
from kproto.registry.store import StoredSchema, SubjectVersion

__all__ = ["CONTENT_TYPE", "DEFAULT_MAX_REQUEST_BYTES", "build_app"]

log = logging.getLogger("kproto.registry")

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
#: The default bound of a request body: 16 MiB (bytes).
DEFAULT_MAX_REQUEST_BYTES: Final = 16 * 1024 * 1024

_REGISTRY: Final = web.AppKey("registry", SchemaRegistry)
_SETTINGS: Final = web.AppKey("settings", dict)

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def _dump(body: object, status: int = 200) -> web.Response:
    return web.Response(
        body=json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode(),
        status=status,
        content_type=CONTENT_TYPE,
    )


def _error(exc: RegistryError) -> web.Response:
    response = _dump(exc.to_json(), exc.http_status)
    if exc.http_status == 401:
        response.headers["WWW-Authenticate"] = f'Basic realm="{REALM}"'
    return response


def _flag(request: web.Request, *names: str) -> bool:
    """A boolean query parameter (any of ``names``): ``true`` in any case is true."""
    return any(request.query.get(n, "").lower() == "true" for n in names)


def _page(request: web.Request, items: list[Any]) -> list[Any]:
    """Confluent's ``offset``/``limit`` pagination (``limit`` <= 0: all)."""
    try:
        offset = max(int(request.query.get("offset", "0")), 0)
        limit = int(request.query.get("limit", "-1"))
    except ValueError:
        raise RegistryError(
            RegistryErrorCode.UNPROCESSABLE_ENTITY, "offset and limit must be integers"
        ) from None
    return items[offset : offset + limit] if limit > 0 else items[offset:]


def _subject(request: web.Request) -> str:
    return request.match_info["subject"]


def _schema_id(request: web.Request) -> int:
    return int(request.match_info["id"])


def _schema_fields(stored: StoredSchema, text: str | None = None) -> dict[str, Any]:
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


def _registry(request: web.Request) -> SchemaRegistry:
    return request.app[_REGISTRY]


async def _formatted(request: web.Request, schema_id: int) -> str | None:
    """The schema in the request's ``format`` (None: no format asked)."""
    fmt = request.query.get("format", "")
    if not fmt:
        return None
    return (await _registry(request).parsed(schema_id)).formatted(fmt)


async def _version_body(request: web.Request, entry: SubjectVersion) -> dict[str, Any]:
    stored = _registry(request).state.schemas[entry.schema_id]
    return {
        "subject": entry.subject,
        "version": entry.version,
        "id": entry.schema_id,
        **_schema_fields(stored, await _formatted(request, entry.schema_id)),
    }


async def _body(request: web.Request) -> dict[str, Any]:
    """The request's JSON object, read within the app's bound.

    Raises:
        RegistryError: 42209 too large, 400 not JSON, 422 not an object.
    """
    limit = request.app[_SETTINGS]["max_request_bytes"]
    if request.content_length is not None and request.content_length > limit:
        raise _too_large(limit)
    try:
        data = await request.read()
    except web.HTTPRequestEntityTooLarge:
        raise _too_large(limit) from None
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


def _too_large(limit: int) -> RegistryError:
    return RegistryError(
        RegistryErrorCode.SCHEMA_TOO_LARGE,
        f"The request body is larger than the registry's limit of {limit} bytes",
    )


def _optional_int(body: dict[str, Any], name: str) -> int | None:
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


def _schema_request(
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


# ---------------------------------------------------------------- subjects


async def list_subjects(request: web.Request) -> web.Response:
    """GET /subjects (``subjectPrefix``, ``deleted``, ``deletedOnly``)."""
    state = _registry(request).state
    prefix = request.query.get("subjectPrefix", "")
    deleted_only = _flag(request, "deletedOnly", "deleted_only")
    deleted = _flag(request, "deleted")
    out = []
    for subject, versions in state.subjects.items():
        if not subject.startswith(prefix):
            continue
        live = any(not v.deleted for v in versions.values())
        if (deleted_only and not live) or (not deleted_only and (live or deleted)):
            out.append(subject)
    return _dump(_page(request, sorted(out)))


async def lookup(request: web.Request) -> web.Response:
    """POST /subjects/{subject}: the version holding a schema."""
    registry = _registry(request)
    subject = _subject(request)
    schema_type, text, refs = _schema_request(await _body(request))
    normalize = _flag(request, "normalize")
    deleted = _flag(request, "deleted")
    registry.live_versions(subject, deleted=deleted)
    parsed = await registry.parse(schema_type, text, refs, normalize=normalize)
    entry = await registry.lookup(subject, parsed, normalize=normalize, deleted=deleted)
    return _dump(await _version_body(request, entry))


async def delete_subject(request: web.Request) -> web.Response:
    """DELETE /subjects/{subject} (``permanent``)."""
    versions = await _registry(request).delete_subject(
        _subject(request), permanent=_flag(request, "permanent")
    )
    return _dump(versions)


async def list_versions(request: web.Request) -> web.Response:
    """GET /subjects/{subject}/versions (``deleted``, ``deletedOnly``)."""
    subject = _subject(request)
    deleted_only = _flag(request, "deletedOnly", "deleted_only")
    entries = _registry(request).live_versions(
        subject, deleted=deleted_only or _flag(request, "deleted")
    )
    versions = [e.version for e in entries if e.deleted or not deleted_only]
    return _dump(_page(request, versions))


async def register(request: web.Request) -> web.Response:
    """POST /subjects/{subject}/versions (``normalize``): ``{"id": N}``."""
    registry = _registry(request)
    subject = _subject(request)
    body = await _body(request)
    schema_type, text, refs = _schema_request(body)
    schema_id = _optional_int(body, "id")
    version = _optional_int(body, "version")
    parsed = await registry.parse(
        schema_type, text, refs, normalize=_flag(request, "normalize")
    )
    new_id = await registry.register(
        subject, parsed, schema_id=schema_id, version=version
    )
    return _dump({"id": new_id, "guid": registry.schema(new_id).guid})


async def get_version(request: web.Request) -> web.Response:
    """GET /subjects/{subject}/versions/{version} (``deleted``, ``format``)."""
    entry = _registry(request).get_version(
        _subject(request),
        parse_version(request.match_info["version"]),
        deleted=_flag(request, "deleted"),
    )
    return _dump(await _version_body(request, entry))


async def get_version_schema(request: web.Request) -> web.Response:
    """GET /subjects/{subject}/versions/{version}/schema: the schema text alone."""
    registry = _registry(request)
    entry = registry.get_version(
        _subject(request),
        parse_version(request.match_info["version"]),
        deleted=_flag(request, "deleted"),
    )
    text = (
        await _formatted(request, entry.schema_id)
        or registry.schema(entry.schema_id).schema
    )
    return web.Response(text=text, content_type=CONTENT_TYPE)


async def referenced_by(request: web.Request) -> web.Response:
    """GET /subjects/{subject}/versions/{version}/referencedby: ids."""
    registry = _registry(request)
    entry = registry.get_version(
        _subject(request), parse_version(request.match_info["version"]), deleted=True
    )
    return _dump(
        _page(request, registry.state.referenced_by(entry.subject, entry.version))
    )


async def delete_version(request: web.Request) -> web.Response:
    """DELETE /subjects/{subject}/versions/{version} (``permanent``)."""
    version = await _registry(request).delete_version(
        _subject(request),
        parse_version(request.match_info["version"]),
        permanent=_flag(request, "permanent"),
    )
    return _dump(version)


# ---------------------------------------------------------------- schemas


async def get_schema(request: web.Request) -> web.Response:
    """GET /schemas/ids/{id} (``subject``, ``format``)."""
    registry = _registry(request)
    schema_id = _schema_id(request)
    stored = registry.schema(schema_id)
    subject = request.query.get("subject")
    if subject and subject not in registry.subjects_of(schema_id, deleted=True):
        raise RegistryError(
            RegistryErrorCode.SCHEMA_NOT_FOUND,
            f"Schema {schema_id} not found in subject {subject!r}",
        )
    return _dump(_schema_fields(stored, await _formatted(request, schema_id)))


async def get_schema_by_guid(request: web.Request) -> web.Response:
    """GET /schemas/guids/{guid} (``format``)."""
    registry = _registry(request)
    schema_id = registry.state.by_guid(request.match_info["guid"].lower())
    if schema_id is None:
        raise RegistryError(
            RegistryErrorCode.SCHEMA_NOT_FOUND,
            f"Schema {request.match_info['guid']} not found",
        )
    stored = registry.schema(schema_id)
    return _dump(
        {
            "id": schema_id,
            **_schema_fields(stored, await _formatted(request, schema_id)),
        }
    )


async def list_schemas(request: web.Request) -> web.Response:
    """GET /schemas (``subjectPrefix``, ``deleted``, ``latestOnly``, ``offset``,
    ``limit``): every version's schema, by subject and version."""
    registry = _registry(request)
    prefix = request.query.get("subjectPrefix", "")
    deleted = _flag(request, "deleted")
    latest_only = _flag(request, "latestOnly")
    out = []
    for subject in sorted(registry.state.subjects):
        if not subject.startswith(prefix):
            continue
        versions = registry.state.versions(subject, deleted=deleted)
        for entry in versions[-1:] if latest_only else versions:
            out.append(await _version_body(request, entry))
    return _dump(_page(request, out))


async def get_schema_text(request: web.Request) -> web.Response:
    """GET /schemas/ids/{id}/schema: the schema text alone."""
    registry = _registry(request)
    schema_id = _schema_id(request)
    text = await _formatted(request, schema_id) or registry.schema(schema_id).schema
    return web.Response(text=text, content_type=CONTENT_TYPE)


async def schema_subjects(request: web.Request) -> web.Response:
    """GET /schemas/ids/{id}/subjects (``deleted``)."""
    found = _registry(request).subjects_of(
        _schema_id(request), deleted=_flag(request, "deleted")
    )
    return _dump(_page(request, sorted(found)))


async def schema_versions(request: web.Request) -> web.Response:
    """GET /schemas/ids/{id}/versions (``deleted``): ``[{"subject", "version"}]``."""
    found = _registry(request).subjects_of(
        _schema_id(request), deleted=_flag(request, "deleted")
    )
    pairs = [{"subject": s, "version": v} for s in sorted(found) for v in found[s]]
    return _dump(_page(request, pairs))


async def schema_types(request: web.Request) -> web.Response:
    """GET /schemas/types."""
    return _dump(_registry(request).schema_types())


# ---------------------------------------------------------------- config, mode


def _subject_or_global(request: web.Request) -> str | None:
    return request.match_info.get("subject")


async def get_config(request: web.Request) -> web.Response:
    """GET /config and /config/{subject} (``defaultToGlobal``)."""
    registry = _registry(request)
    subject = _subject_or_global(request)
    if (
        subject is not None
        and subject not in registry.state.configs
        and not _flag(request, "defaultToGlobal")
    ):
        raise RegistryError(
            RegistryErrorCode.SUBJECT_LEVEL_COMPATIBILITY_NOT_CONFIGURED,
            f"Subject '{subject}' does not have subject-level compatibility configured",
        )
    return _dump({"compatibilityLevel": registry.compatibility(subject).value})


async def put_config(request: web.Request) -> web.Response:
    """PUT /config and /config/{subject}: ``{"compatibility": LEVEL}``."""
    body = await _body(request)
    level = body.get("compatibility", body.get("compatibilityLevel"))
    set_to = await _registry(request).set_config(_subject_or_global(request), level)
    return _dump({"compatibility": set_to.value})


async def delete_config(request: web.Request) -> web.Response:
    """DELETE /config and /config/{subject}: the level that was set."""
    previous = await _registry(request).delete_config(_subject_or_global(request))
    return _dump({"compatibilityLevel": previous.value})


async def get_mode(request: web.Request) -> web.Response:
    """GET /mode and /mode/{subject} (``defaultToGlobal``)."""
    registry = _registry(request)
    subject = _subject_or_global(request)
    if (
        subject is not None
        and subject not in registry.state.modes
        and not _flag(request, "defaultToGlobal")
    ):
        raise RegistryError(
            RegistryErrorCode.SUBJECT_LEVEL_MODE_NOT_CONFIGURED,
            f"Subject '{subject}' does not have subject-level mode configured",
        )
    return _dump({"mode": registry.mode(subject)})


async def put_mode(request: web.Request) -> web.Response:
    """PUT /mode and /mode/{subject} (``force``): ``{"mode": MODE}``."""
    body = await _body(request)
    mode = await _registry(request).set_mode(
        _subject_or_global(request), body.get("mode"), force=_flag(request, "force")
    )
    return _dump({"mode": mode})


async def delete_mode(request: web.Request) -> web.Response:
    """DELETE /mode/{subject}: the mode that was set."""
    return _dump({"mode": await _registry(request).delete_mode(_subject(request))})


# ---------------------------------------------------------------- compatibility


async def test_compatibility(request: web.Request) -> web.Response:
    """POST /compatibility/subjects/{subject}/versions[/{version}] (``verbose``,
    ``normalize``): ``{"is_compatible": bool[, "messages": [...]]}``."""
    registry = _registry(request)
    subject = _subject(request)
    schema_type, text, refs = _schema_request(await _body(request))
    parsed = await registry.parse(
        schema_type, text, refs, normalize=_flag(request, "normalize")
    )
    against: list[SubjectVersion] | None
    if "version" in request.match_info:
        version = parse_version(request.match_info["version"])
        if version is None:
            against = registry.state.versions(subject)[-1:]
        else:
            against = [registry.get_version(subject, version)]
        messages = await registry.check(subject, parsed, against) if against else []
    else:
        messages = await registry.check(subject, parsed)
    body: dict[str, Any] = {"is_compatible": not messages}
    if _flag(request, "verbose"):
        body["messages"] = messages
    return _dump(body)


# ---------------------------------------------------------------- the rest


async def root(request: web.Request) -> web.Response:
    """GET /: ``{}``, as Confluent's root resource."""
    return _dump({})


async def contexts(request: web.Request) -> web.Response:
    """GET /contexts: the default context only."""
    return _dump(["."])


async def metadata_version(request: web.Request) -> web.Response:
    """GET /v1/metadata/version: kproto's version (no commit id)."""
    from kproto import __version__

    return _dump({"version": __version__, "commitId": ""})


async def metadata_id(request: web.Request) -> web.Response:
    """GET /v1/metadata/id: the cluster ids (Confluent's ``ServerMetadataResource``)."""
    settings = request.app[_SETTINGS]
    return _dump(
        {
            "scope": {
                "path": [],
                "clusters": {
                    "kafka-cluster": settings["cluster_id"],
                    "schema-registry-cluster": "schema-registry",
                },
            }
        }
    )


def _middleware(auth: BasicAuth) -> Middleware:
    @web.middleware
    async def registry_errors(
        request: web.Request, handler: Handler
    ) -> web.StreamResponse:
        try:
            auth.authenticate(request.headers.get("Authorization"))
            if (
                request.method in ("POST", "PUT")
                and request.content_type not in ACCEPTED_TYPES
            ):
                raise RegistryError(
                    RegistryErrorCode.UNSUPPORTED_MEDIA_TYPE,
                    f"HTTP 415 Unsupported Media Type: {request.content_type!r} "
                    f"(send {CONTENT_TYPE} or application/json)",
                )
            return await handler(request)
        except RegistryError as exc:
            return _error(exc)
        except web.HTTPRequestEntityTooLarge:
            return _error(_too_large(request.app[_SETTINGS]["max_request_bytes"]))
        except web.HTTPException as exc:
            if exc.status < 400:
                raise
            return _error(RegistryError(exc.status, f"HTTP {exc.status} {exc.reason}"))
        except ConnectionError:  # the client left mid-request: nobody to answer
            log.debug("registry: %s %s: the client left", request.method, request.path)
            return _error(
                RegistryError(RegistryErrorCode.BAD_REQUEST, "the connection was lost")
            )
        except Exception:
            log.exception("registry: %s %s failed", request.method, request.path)
            return _error(
                RegistryError(
                    RegistryErrorCode.INTERNAL_SERVER_ERROR,
                    "Internal Server Error (the registry's log has the details)",
                )
            )

    return registry_errors


def build_app(
    registry: SchemaRegistry,
    auth: BasicAuth,
    *,
    cluster_id: str,
    max_request_bytes: int = DEFAULT_MAX_REQUEST_BYTES,
) -> web.Application:
    """The registry's aiohttp application.

    Args:
        registry: the operations and state.
        auth: Basic authentication (a no-op when the cluster has no SASL).
        cluster_id: the Kafka cluster id ``/v1/metadata/id`` answers.
        max_request_bytes: the largest request body (bytes); larger -> 42209.
    """
    app = web.Application(
        middlewares=[_middleware(auth)], client_max_size=max_request_bytes
    )
    app[_REGISTRY] = registry
    app[_SETTINGS] = {"max_request_bytes": max_request_bytes, "cluster_id": cluster_id}
    subject = "/subjects/{subject}"
    version = subject + "/versions/{version}"
    schema = "/schemas/ids/{id:-?[0-9]{1,10}}"
    app.router.add_get("/", root)
    app.router.add_get("/subjects", list_subjects)
    app.router.add_post(subject, lookup)
    app.router.add_delete(subject, delete_subject)
    app.router.add_get(subject + "/versions", list_versions)
    app.router.add_post(subject + "/versions", register)
    app.router.add_get(version, get_version)
    app.router.add_delete(version, delete_version)
    app.router.add_get(version + "/schema", get_version_schema)
    app.router.add_get(version + "/referencedby", referenced_by)
    app.router.add_get(schema, get_schema)
    app.router.add_get(schema + "/schema", get_schema_text)
    app.router.add_get(schema + "/subjects", schema_subjects)
    app.router.add_get(schema + "/versions", schema_versions)
    app.router.add_get("/schemas/types", schema_types)
    app.router.add_get("/schemas", list_schemas)
    app.router.add_get("/schemas/guids/{guid}", get_schema_by_guid)
    for path in ("/config", "/config/{subject}"):
        app.router.add_get(path, get_config)
        app.router.add_put(path, put_config)
        app.router.add_delete(path, delete_config)
    for path in ("/mode", "/mode/{subject}"):
        app.router.add_get(path, get_mode)
        app.router.add_put(path, put_mode)
    app.router.add_delete("/mode/{subject}", delete_mode)
    app.router.add_post("/compatibility" + version, test_compatibility)
    app.router.add_post("/compatibility" + subject + "/versions", test_compatibility)
    app.router.add_get("/contexts", contexts)
    app.router.add_get("/v1/metadata/id", metadata_id)
    app.router.add_get("/v1/metadata/version", metadata_version)
    return app
