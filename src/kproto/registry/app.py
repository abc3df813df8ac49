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

import logging

from aiohttp import web
from aiohttp.typedefs import Middleware

from kproto.registry import routes
from kproto.registry.errors import RegistryError, RegistryErrorCode
from kproto.registry.registry import SchemaRegistry
from kproto.registry.rest import (
    ACCEPTED_TYPES,
    CONTENT_TYPE,
    DEFAULT_MAX_REQUEST_BYTES,
    REGISTRY_KEY,
    SETTINGS_KEY,
    Handler,
    error_response,
    too_large,
)
from kproto.registry.security import BasicAuth

__all__ = ["build_app"]

log = logging.getLogger("kproto.registry")


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
            return error_response(exc)
        except web.HTTPRequestEntityTooLarge:
            return error_response(
                too_large(request.app[SETTINGS_KEY]["max_request_bytes"])
            )
        except web.HTTPException as exc:
            if exc.status < 400:
                raise
            return error_response(
                RegistryError(exc.status, f"HTTP {exc.status} {exc.reason}")
            )
        except ConnectionError:  # the client left mid-request: nobody to answer
            log.debug("registry: %s %s: the client left", request.method, request.path)
            return error_response(
                RegistryError(RegistryErrorCode.BAD_REQUEST, "the connection was lost")
            )
        except Exception:
            log.exception("registry: %s %s failed", request.method, request.path)
            return error_response(
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
    app[REGISTRY_KEY] = registry
    app[SETTINGS_KEY] = {
        "max_request_bytes": max_request_bytes,
        "cluster_id": cluster_id,
    }
    subject = "/subjects/{subject}"
    version = subject + "/versions/{version}"
    schema = "/schemas/ids/{id:-?[0-9]{1,10}}"
    app.router.add_get("/", routes.root)
    app.router.add_get("/subjects", routes.list_subjects)
    app.router.add_post(subject, routes.lookup)
    app.router.add_delete(subject, routes.delete_subject)
    app.router.add_get(subject + "/versions", routes.list_versions)
    app.router.add_post(subject + "/versions", routes.register)
    app.router.add_get(version, routes.get_version)
    app.router.add_delete(version, routes.delete_version)
    app.router.add_get(version + "/schema", routes.get_version_schema)
    app.router.add_get(version + "/referencedby", routes.referenced_by)
    app.router.add_get(schema, routes.get_schema)
    app.router.add_get(schema + "/schema", routes.get_schema_text)
    app.router.add_get(schema + "/subjects", routes.schema_subjects)
    app.router.add_get(schema + "/versions", routes.schema_versions)
    app.router.add_get("/schemas/types", routes.schema_types)
    app.router.add_get("/schemas", routes.list_schemas)
    app.router.add_get("/schemas/guids/{guid}", routes.get_schema_by_guid)
    for path in ("/config", "/config/{subject}"):
        app.router.add_get(path, routes.get_config)
        app.router.add_put(path, routes.put_config)
        app.router.add_delete(path, routes.delete_config)
    for path in ("/mode", "/mode/{subject}"):
        app.router.add_get(path, routes.get_mode)
        app.router.add_put(path, routes.put_mode)
    app.router.add_delete("/mode/{subject}", routes.delete_mode)
    app.router.add_post("/compatibility" + version, routes.test_compatibility)
    app.router.add_post(
        "/compatibility" + subject + "/versions", routes.test_compatibility
    )
    app.router.add_get("/contexts", routes.contexts)
    app.router.add_get("/v1/metadata/id", routes.metadata_id)
    app.router.add_get("/v1/metadata/version", routes.metadata_version)
    return app
