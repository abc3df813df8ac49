"""The registry's resources: one handler per route of Confluent's REST API v1
(``SubjectsResource``, ``SubjectVersionsResource``, ``SchemasResource``,
``ConfigResource``, ``ModeResource``, ``CompatibilityResource``,
``ContextsResource``, ``ServerMetadataResource``), each turning a request into a
:class:`~kproto.registry.registry.SchemaRegistry` call and its answer into
Confluent's body. Errors are raised as
:class:`~kproto.registry.errors.RegistryError` and answered by the application's
middleware (:mod:`kproto.registry.app`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Container
from typing import Any, Final, Literal

from aiohttp import web

from kproto.registry.errors import RegistryError, RegistryErrorCode
from kproto.registry.registry import SchemaRegistry, parse_version
from kproto.registry.rest import (
    CONTENT_TYPE,
    REGISTRY_KEY,
    SETTINGS_KEY,
    dump,
    dump_large,
    flag,
    optional_int,
    page,
    read_body,
    schema_fields,
    schema_request,
)
from kproto.registry.store import SubjectVersion

# list entries built between two yields to the event loop
_YIELD_EVERY: Final = 500


def _subject(request: web.Request) -> str:
    return request.match_info["subject"]


def _schema_id(request: web.Request) -> int:
    return int(request.match_info["id"])


def _registry(request: web.Request) -> SchemaRegistry:
    return request.app[REGISTRY_KEY]


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
        **schema_fields(stored, await _formatted(request, entry.schema_id)),
    }


# ---------------------------------------------------------------- subjects


async def list_subjects(request: web.Request) -> web.Response:
    """GET /subjects (``subjectPrefix``, ``deleted``, ``deletedOnly``)."""
    state = _registry(request).state
    prefix = request.query.get("subjectPrefix", "")
    deleted_only = flag(request, "deletedOnly", "deleted_only")
    deleted = flag(request, "deleted")
    out = []
    for subject, versions in state.subjects.items():
        if not subject.startswith(prefix):
            continue
        live = any(not v.deleted for v in versions.values())
        if (deleted_only and not live) or (not deleted_only and (live or deleted)):
            out.append(subject)
    return await dump_large(page(request, sorted(out)))


async def lookup(request: web.Request) -> web.Response:
    """POST /subjects/{subject}: the version holding a schema."""
    registry = _registry(request)
    subject = _subject(request)
    schema_type, text, refs = schema_request(await read_body(request))
    normalize = flag(request, "normalize")
    deleted = flag(request, "deleted")
    registry.live_versions(subject, deleted=deleted)
    parsed = await registry.parse(schema_type, text, refs, normalize=normalize)
    entry = await registry.lookup(subject, parsed, normalize=normalize, deleted=deleted)
    return dump(await _version_body(request, entry))


async def delete_subject(request: web.Request) -> web.Response:
    """DELETE /subjects/{subject} (``permanent``)."""
    versions = await _registry(request).delete_subject(
        _subject(request), permanent=flag(request, "permanent")
    )
    return dump(versions)


async def list_versions(request: web.Request) -> web.Response:
    """GET /subjects/{subject}/versions (``deleted``, ``deletedOnly``)."""
    subject = _subject(request)
    deleted_only = flag(request, "deletedOnly", "deleted_only")
    entries = _registry(request).live_versions(
        subject, deleted=deleted_only or flag(request, "deleted")
    )
    versions = [e.version for e in entries if e.deleted or not deleted_only]
    return dump(page(request, versions))


async def register(request: web.Request) -> web.Response:
    """POST /subjects/{subject}/versions (``normalize``): ``{"id": N}``."""
    registry = _registry(request)
    subject = _subject(request)
    body = await read_body(request)
    schema_type, text, refs = schema_request(body)
    schema_id = optional_int(body, "id")
    version = optional_int(body, "version")
    parsed = await registry.parse(
        schema_type, text, refs, normalize=flag(request, "normalize")
    )
    new_id = await registry.register(
        subject, parsed, schema_id=schema_id, version=version
    )
    return dump({"id": new_id, "guid": registry.schema(new_id).guid})


async def get_version(request: web.Request) -> web.Response:
    """GET /subjects/{subject}/versions/{version} (``deleted``, ``format``)."""
    entry = _registry(request).get_version(
        _subject(request),
        parse_version(request.match_info["version"]),
        deleted=flag(request, "deleted"),
    )
    return dump(await _version_body(request, entry))


async def get_version_schema(request: web.Request) -> web.Response:
    """GET /subjects/{subject}/versions/{version}/schema: the schema text alone."""
    registry = _registry(request)
    entry = registry.get_version(
        _subject(request),
        parse_version(request.match_info["version"]),
        deleted=flag(request, "deleted"),
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
    return dump(
        page(request, registry.state.referenced_by(entry.subject, entry.version))
    )


async def delete_version(request: web.Request) -> web.Response:
    """DELETE /subjects/{subject}/versions/{version} (``permanent``)."""
    version = await _registry(request).delete_version(
        _subject(request),
        parse_version(request.match_info["version"]),
        permanent=flag(request, "permanent"),
    )
    return dump(version)


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
    return dump(schema_fields(stored, await _formatted(request, schema_id)))


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
    return dump(
        {
            "id": schema_id,
            **schema_fields(stored, await _formatted(request, schema_id)),
        }
    )


async def list_schemas(request: web.Request) -> web.Response:
    """GET /schemas (``subjectPrefix``, ``deleted``, ``latestOnly``, ``offset``,
    ``limit``): every version's schema, by subject and version."""
    registry = _registry(request)
    prefix = request.query.get("subjectPrefix", "")
    deleted = flag(request, "deleted")
    latest_only = flag(request, "latestOnly")
    out = []
    for subject in sorted(registry.state.subjects):
        if not subject.startswith(prefix):
            continue
        versions = registry.state.versions(subject, deleted=deleted)
        for entry in versions[-1:] if latest_only else versions:
            out.append(await _version_body(request, entry))
            if len(out) % _YIELD_EVERY == 0:
                await asyncio.sleep(0)  # let the Kafka listeners have the loop
    return await dump_large(page(request, out))


async def get_schema_text(request: web.Request) -> web.Response:
    """GET /schemas/ids/{id}/schema: the schema text alone."""
    registry = _registry(request)
    schema_id = _schema_id(request)
    text = await _formatted(request, schema_id) or registry.schema(schema_id).schema
    return web.Response(text=text, content_type=CONTENT_TYPE)


async def schema_subjects(request: web.Request) -> web.Response:
    """GET /schemas/ids/{id}/subjects (``deleted``)."""
    found = _registry(request).subjects_of(
        _schema_id(request), deleted=flag(request, "deleted")
    )
    return dump(page(request, sorted(found)))


async def schema_versions(request: web.Request) -> web.Response:
    """GET /schemas/ids/{id}/versions (``deleted``): ``[{"subject", "version"}]``."""
    found = _registry(request).subjects_of(
        _schema_id(request), deleted=flag(request, "deleted")
    )
    pairs = [{"subject": s, "version": v} for s in sorted(found) for v in found[s]]
    return dump(page(request, pairs))


async def schema_types(request: web.Request) -> web.Response:
    """GET /schemas/types."""
    return dump(_registry(request).schema_types())


# ---------------------------------------------------------------- config, mode


def _subject_or_global(request: web.Request) -> str | None:
    return request.match_info.get("subject")


def _configured_subject(
    request: web.Request, setting: Literal["compatibility", "mode"]
) -> str | None:
    """The subject a GET /config (``setting`` compatibility) or /mode names (None:
    the global setting).

    Raises:
        RegistryError: 40408 (compatibility) or 40409 (mode) for a subject without a
            subject-level ``setting`` of its own, unless ``defaultToGlobal`` is set.
    """
    state = _registry(request).state
    configured: Container[str | None]
    if setting == "compatibility":
        configured = state.configs
        code = RegistryErrorCode.SUBJECT_LEVEL_COMPATIBILITY_NOT_CONFIGURED
    else:
        configured = state.modes
        code = RegistryErrorCode.SUBJECT_LEVEL_MODE_NOT_CONFIGURED
    subject = _subject_or_global(request)
    if (
        subject is not None
        and subject not in configured
        and not flag(request, "defaultToGlobal")
    ):
        raise RegistryError(
            code,
            f"Subject '{subject}' does not have subject-level {setting} configured",
        )
    return subject


async def get_config(request: web.Request) -> web.Response:
    """GET /config and /config/{subject} (``defaultToGlobal``)."""
    subject = _configured_subject(request, "compatibility")
    level = _registry(request).compatibility(subject)
    return dump({"compatibilityLevel": level.value})


async def put_config(request: web.Request) -> web.Response:
    """PUT /config and /config/{subject}: ``{"compatibility": LEVEL}``."""
    body = await read_body(request)
    level = body.get("compatibility", body.get("compatibilityLevel"))
    set_to = await _registry(request).set_config(_subject_or_global(request), level)
    return dump({"compatibility": set_to.value})


async def delete_config(request: web.Request) -> web.Response:
    """DELETE /config and /config/{subject}: the level that was set."""
    previous = await _registry(request).delete_config(_subject_or_global(request))
    return dump({"compatibilityLevel": previous.value})


async def get_mode(request: web.Request) -> web.Response:
    """GET /mode and /mode/{subject} (``defaultToGlobal``)."""
    subject = _configured_subject(request, "mode")
    return dump({"mode": _registry(request).mode(subject)})


async def put_mode(request: web.Request) -> web.Response:
    """PUT /mode and /mode/{subject} (``force``): ``{"mode": MODE}``."""
    body = await read_body(request)
    mode = await _registry(request).set_mode(
        _subject_or_global(request), body.get("mode"), force=flag(request, "force")
    )
    return dump({"mode": mode})


async def delete_mode(request: web.Request) -> web.Response:
    """DELETE /mode/{subject}: the mode that was set."""
    return dump({"mode": await _registry(request).delete_mode(_subject(request))})


# ---------------------------------------------------------------- compatibility


async def test_compatibility(request: web.Request) -> web.Response:
    """POST /compatibility/subjects/{subject}/versions[/{version}] (``verbose``,
    ``normalize``): ``{"is_compatible": bool[, "messages": [...]]}``."""
    registry = _registry(request)
    subject = _subject(request)
    schema_type, text, refs = schema_request(await read_body(request))
    parsed = await registry.parse(
        schema_type, text, refs, normalize=flag(request, "normalize")
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
    if flag(request, "verbose"):
        body["messages"] = messages
    return dump(body)


# ---------------------------------------------------------------- the rest


async def root(request: web.Request) -> web.Response:
    """GET /: ``{}``, as Confluent's root resource."""
    return dump({})


async def contexts(request: web.Request) -> web.Response:
    """GET /contexts: the default context only."""
    return dump(["."])


async def metadata_version(request: web.Request) -> web.Response:
    """GET /v1/metadata/version: kproto's version (no commit id)."""
    from kproto import __version__

    return dump({"version": __version__, "commitId": ""})


async def metadata_id(request: web.Request) -> web.Response:
    """GET /v1/metadata/id: the cluster ids (Confluent's ``ServerMetadataResource``)."""
    settings = request.app[SETTINGS_KEY]
    return dump(
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
