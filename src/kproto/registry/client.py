"""A Confluent Schema Registry client on ``requests``: :class:`SchemaRegistryClient`.

It speaks Schema Registry's REST API v1 with the JSON shapes the server speaks
(``schemaType`` omitted for AVRO, a ``references`` list) and follows Confluent's
``CachedSchemaRegistryClient`` (Java) and confluent-kafka's ``SchemaRegistryClient``
(Python): the same calls, the same caches (schema id -> schema, (subject, schema) ->
schema id, (subject, version) -> registered schema, and the latest version per subject),
Basic auth, TLS, and retries of 5xx answers and connection errors with a bounded,
jittered exponential backoff. Errors are :class:`~kproto.registry.errors.RegistryError`
with the registry's ``error_code`` and HTTP status.
"""

from __future__ import annotations

import random
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Generic, TypeVar
from urllib.parse import quote

import attrs
import requests

from .errors import RegistryError

__all__ = [
    "SchemaReference",
    "Schema",
    "RegisteredSchema",
    "CompatibilityResult",
    "RegistryConnectionError",
    "SchemaRegistryClient",
]

K = TypeVar("K")
V = TypeVar("V")

CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"


@attrs.frozen
class SchemaReference:
    """A reference from one schema to another registered one: ``name`` as the
    referring schema spells it (Avro full name, JSON Schema ``$ref`` URL, Protobuf
    import path), and the ``subject`` and ``version`` it is registered under."""

    name: str
    subject: str
    version: int

    def to_json(self) -> dict[str, object]:
        return {"name": self.name, "subject": self.subject, "version": self.version}


def _references(value: Iterable[SchemaReference]) -> tuple[SchemaReference, ...]:
    return tuple(value)


@attrs.frozen
class Schema:
    """A schema as the registry takes and returns it: the text, its type (``AVRO``,
    ``JSON``, ``PROTOBUF``) and its references."""

    schema_str: str
    schema_type: str = "AVRO"
    references: tuple[SchemaReference, ...] = attrs.field(
        default=(), converter=_references
    )

    def to_json(self) -> dict[str, object]:
        """The request body of register / lookup / compatibility (``schemaType``
        omitted for AVRO, ``references`` only when there are some)."""
        body: dict[str, object] = {"schema": self.schema_str}
        if self.schema_type != "AVRO":
            body["schemaType"] = self.schema_type
        if self.references:
            body["references"] = [r.to_json() for r in self.references]
        return body

    @classmethod
    def from_json(cls, body: Mapping[str, Any]) -> Schema:
        """From a registry answer (``schema``, ``schemaType``, ``references``)."""
        try:
            return cls(
                str(body["schema"]),
                str(body.get("schemaType") or "AVRO"),
                tuple(
                    SchemaReference(
                        str(r["name"]), str(r["subject"]), int(r["version"])
                    )
                    for r in body.get("references") or ()
                ),
            )
        except (KeyError, TypeError, ValueError) as err:
            raise RegistryError(
                50001, f"unexpected schema in the answer: {err!r}"
            ) from err


@attrs.frozen
class RegisteredSchema:
    """A schema registered under a subject: its global ``schema_id``, its ``guid``
    (newer registries; None otherwise), ``subject`` and ``version`` where known."""

    schema_id: int
    schema: Schema
    subject: str | None = None
    version: int | None = None
    guid: str | None = None

    @classmethod
    def from_json(cls, body: Mapping[str, Any]) -> RegisteredSchema:
        try:
            version = body.get("version")
            return cls(
                int(body["id"]),
                Schema.from_json(body),
                body.get("subject"),
                None if version is None else int(version),
                body.get("guid"),
            )
        except (KeyError, TypeError, ValueError) as err:
            raise RegistryError(50001, f"unexpected answer: {err!r}") from err


@attrs.frozen
class CompatibilityResult:
    """The answer of a compatibility test: ``is_compatible`` and, with ``verbose``,
    the registry's ``messages`` naming each incompatibility."""

    is_compatible: bool
    messages: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return self.is_compatible


class RegistryConnectionError(RegistryError):
    """The registry could not be reached (connection refused, reset or timed out)
    after every retry; ``error_code`` and ``http_status`` are -1."""

    def __init__(self, message: str) -> None:
        super().__init__(-1, message, http_status=-1)


class _Lru(Generic[K, V]):
    """A dict bounded to ``capacity`` entries, dropping the least recently used."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.data: OrderedDict[K, V] = OrderedDict()

    def get(self, key: K) -> V | None:
        value = self.data.get(key)
        if value is not None:
            self.data.move_to_end(key)
        return value

    def put(self, key: K, value: V) -> None:
        self.data[key] = value
        self.data.move_to_end(key)
        while len(self.data) > self.capacity:
            self.data.popitem(last=False)

    def drop(self, predicate: Callable[[K], bool]) -> None:
        for key in [k for k in self.data if predicate(k)]:
            del self.data[key]

    def clear(self) -> None:
        self.data.clear()


@attrs.frozen
class _Retries:
    """When a request is sent again (Confluent's ``max.retries``,
    ``retries.wait.ms``, ``retries.max.wait.ms``): after a 5xx answer or a
    connection error, at most ``max_retries`` times, waiting ``sleep(backoff_s(n))``
    before retry ``n``."""

    max_retries: int
    wait_ms: int
    max_wait_ms: int
    sleep: Callable[[float], None]

    def backoff_s(self, attempt: int) -> float:
        """Seconds before retry ``attempt`` (from 0): a random wait in ``[0,
        min(max_wait_ms, wait_ms * 2**attempt)]`` ms (Confluent's full jitter)."""
        ceiling = min(self.max_wait_ms, self.wait_ms * (1 << min(attempt, 30)))
        return random.uniform(0, ceiling) / 1000.0


class SchemaRegistryClient:
    """A blocking Schema Registry client over one :class:`requests.Session`.

    Args:
        url: the registry's base URL (``http://127.0.0.1:8081``); a comma-separated
            list is tried in order on connection errors.
        basic_auth: ``(user, password)`` for HTTP Basic auth (Confluent's
            ``basic.auth.user.info``).
        ca_file: a CA bundle to verify the server's certificate with
            (``ssl.ca.location``); default: the system's.
        verify: False turns certificate checks off (tests only).
        client_cert: a PEM file holding certificate and key, or ``(cert, key)``
            (``ssl.certificate.location`` / ``ssl.key.location``).
        timeout_s: each request's connect and read timeout, seconds.
        max_retries: how often a request answered 5xx or failing to connect is sent
            again (Confluent's ``max.retries``, default 3).
        retries_wait_ms / retries_max_wait_ms: the backoff: before retry ``n`` (from
            0) a random wait in ``[0, min(retries_max_wait_ms, retries_wait_ms * 2**n)]``
            ms (Confluent's full jitter).
        cache_capacity: entries per cache (least recently used dropped).
        latest_ttl_s: how long a latest version is cached (None: until
            :meth:`clear_latest_caches`, as confluent-kafka's default; 0: never).
        sleep: the wait function (tests pass a recorder).

    Raises (any call):
        RegistryError: the registry's error (``error_code`` e.g.
            ``RegistryErrorCode.SUBJECT_NOT_FOUND``, ``http_status``), or 50001 for an
            answer that is not the JSON expected.
        RegistryConnectionError: no answer after the retries.
    """

    def __init__(
        self,
        url: str,
        *,
        basic_auth: tuple[str, str] | None = None,
        ca_file: str | None = None,
        verify: bool = True,
        client_cert: str | tuple[str, str] | None = None,
        timeout_s: float = 10.0,
        max_retries: int = 3,
        retries_wait_ms: int = 1000,
        retries_max_wait_ms: int = 20000,
        cache_capacity: int = 1000,
        latest_ttl_s: float | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.urls = [u.strip().rstrip("/") for u in url.split(",") if u.strip()]
        if not self.urls or not all(
            u.startswith(("http://", "https://")) for u in self.urls
        ):
            raise ValueError(f"registry url must be http:// or https://, got {url!r}")
        if max_retries < 0 or retries_wait_ms < 0 or retries_max_wait_ms < 0:
            raise ValueError("max_retries and the retry waits must be >= 0")
        self.session = requests.Session()
        self.session.headers.update({"Accept": f"{CONTENT_TYPE}, application/json"})
        if basic_auth is not None:
            self.session.auth = basic_auth
        # passed with each request: a session-level verify loses to REQUESTS_CA_BUNDLE
        self.verify: bool | str = ca_file if ca_file is not None else verify
        if client_cert is not None:
            self.session.cert = client_cert
        self.timeout_s = timeout_s
        self.retries = _Retries(
            max_retries, retries_wait_ms, retries_max_wait_ms, sleep
        )
        self.latest_ttl_s = latest_ttl_s
        self._by_id: _Lru[tuple[int, str | None], Schema] = _Lru(cache_capacity)
        self._by_guid: _Lru[tuple[str, str | None], RegisteredSchema] = _Lru(
            cache_capacity
        )
        self._ids: _Lru[tuple[str, Schema, bool], RegisteredSchema] = _Lru(
            cache_capacity
        )
        self._versions: _Lru[tuple[str, int, str | None], RegisteredSchema] = _Lru(
            cache_capacity
        )
        self._latest: _Lru[tuple[str, str | None], tuple[float, RegisteredSchema]] = (
            _Lru(cache_capacity)
        )

    @classmethod
    def from_config(cls, conf: Mapping[str, Any]) -> SchemaRegistryClient:
        """From confluent-kafka's ``SchemaRegistryClient`` config dict: ``url``,
        ``basic.auth.user.info`` (``user:password``), ``ssl.ca.location``,
        ``ssl.certificate.location``, ``ssl.key.location``, ``timeout`` (s),
        ``max.retries``, ``retries.wait.ms``, ``retries.max.wait.ms``,
        ``cache.capacity``, ``cache.latest.ttl.sec``.

        Raises:
            ValueError: a missing ``url`` or an unknown key (named).
        """
        known = {
            "url",
            "basic.auth.user.info",
            "basic.auth.credentials.source",
            "ssl.ca.location",
            "ssl.certificate.location",
            "ssl.key.location",
            "timeout",
            "max.retries",
            "retries.wait.ms",
            "retries.max.wait.ms",
            "cache.capacity",
            "cache.latest.ttl.sec",
        }
        unknown = sorted(set(conf) - known)
        if unknown:
            raise ValueError(f"unknown schema registry config: {', '.join(unknown)}")
        if "url" not in conf:
            raise ValueError("schema registry config needs 'url'")
        auth = None
        if conf.get("basic.auth.user.info"):
            user, sep, password = str(conf["basic.auth.user.info"]).partition(":")
            if not sep:
                raise ValueError("basic.auth.user.info must be 'user:password'")
            auth = (user, password)
        cert: str | tuple[str, str] | None = conf.get("ssl.certificate.location")
        if cert is not None and conf.get("ssl.key.location"):
            cert = (str(cert), str(conf["ssl.key.location"]))
        ttl = conf.get("cache.latest.ttl.sec")
        return cls(
            str(conf["url"]),
            basic_auth=auth,
            ca_file=conf.get("ssl.ca.location"),
            client_cert=cert,
            timeout_s=float(conf.get("timeout", 10.0)),
            max_retries=int(conf.get("max.retries", 3)),
            retries_wait_ms=int(conf.get("retries.wait.ms", 1000)),
            retries_max_wait_ms=int(conf.get("retries.max.wait.ms", 20000)),
            cache_capacity=int(conf.get("cache.capacity", 1000)),
            latest_ttl_s=None if ttl is None else float(ttl),
        )

    # ------------------------------------------------------------------ HTTP

    def request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, Any] | None = None,
        body: object = None,
    ) -> Any:
        """Send one request (retrying 5xx and connection errors) and return the
        decoded JSON answer. ``path`` is relative to the base URL, already quoted;
        ``params`` the query, its None, False and "" values left out (the registry's
        defaults), True written ``true``.

        Raises:
            RegistryError: a 4xx/5xx answer (its ``error_code``; the HTTP status
                when the body has none), or an answer that is not JSON (50001).
            RegistryConnectionError: no answer after the retries.
        """
        query = {k: _param(v) for k, v in (params or {}).items() if _given(v)}
        headers = {"Content-Type": CONTENT_TYPE} if body is not None else None
        attempt = 0
        while True:
            url = self.urls[attempt % len(self.urls)]
            try:
                response = self.session.request(
                    method,
                    f"{url}/{path}",
                    params=query,
                    json=body,
                    headers=headers,
                    timeout=self.timeout_s,
                    verify=self.verify,
                )
            except (requests.ConnectionError, requests.Timeout) as err:
                if attempt >= self.retries.max_retries:
                    raise RegistryConnectionError(
                        f"{method} {url}/{path}: no answer after {attempt + 1} tries: {err}"
                    ) from err
            else:
                if response.status_code < 500 or attempt >= self.retries.max_retries:
                    return _answer(response)
            self.retries.sleep(self.retries.backoff_s(attempt))
            attempt += 1

    def close(self) -> None:
        """Close the HTTP session."""
        self.session.close()

    def __enter__(self) -> SchemaRegistryClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ schemas

    def register_schema(
        self, subject: str, schema: Schema, normalize: bool = False
    ) -> int:
        """Register ``schema`` under ``subject`` (``POST /subjects/{s}/versions``;
        the existing id when it is already there) and return its schema id.

        Raises:
            RegistryError: 40901 incompatible (HTTP 409), 42201 invalid schema, 42205 in READONLY.
        """
        return self.register_schema_full_response(subject, schema, normalize).schema_id

    def register_schema_full_response(
        self, subject: str, schema: Schema, normalize: bool = False
    ) -> RegisteredSchema:
        """As :meth:`register_schema`, returning the id with the guid (when the
        registry gives one), subject and schema."""
        cached = self._ids.get((subject, schema, normalize))
        if cached is not None:
            return cached
        body = self.request(
            "POST",
            f"subjects/{_q(subject)}/versions",
            params={"normalize": normalize},
            body=schema.to_json(),
        )
        registered = RegisteredSchema(
            _int(body, "id"), schema, subject, _opt_int(body, "version"), _guid(body)
        )
        self._remember(registered, normalize)
        return registered

    def lookup_schema(
        self,
        subject: str,
        schema: Schema,
        normalize: bool = False,
        deleted: bool = False,
    ) -> RegisteredSchema:
        """The version of ``subject`` holding ``schema`` (``POST /subjects/{s}``).

        Raises:
            RegistryError: 40401 subject not found, 40403 schema not found.
        """
        cached = self._ids.get((subject, schema, normalize))
        if cached is not None and cached.version is not None:
            return cached
        body = self.request(
            "POST",
            f"subjects/{_q(subject)}",
            params={"normalize": normalize, "deleted": deleted},
            body=schema.to_json(),
        )
        found = RegisteredSchema.from_json(body)
        registered = RegisteredSchema(
            found.schema_id, schema, subject, found.version, found.guid
        )
        self._remember(registered, normalize)
        return registered

    def _remember(self, registered: RegisteredSchema, normalize: bool) -> None:
        assert registered.subject is not None
        self._ids.put((registered.subject, registered.schema, normalize), registered)
        if not normalize:
            self._by_id.put((registered.schema_id, None), registered.schema)

    def get_schema(
        self, schema_id: int, subject: str | None = None, fmt: str | None = None
    ) -> Schema:
        """The schema with id ``schema_id`` (``GET /schemas/ids/{id}``); ``fmt``
        ``"serialized"`` asks for a Protobuf schema as base64 FileDescriptorProto.

        Raises:
            RegistryError: 40403 schema not found.
        """
        cached = self._by_id.get((schema_id, fmt))
        if cached is not None:
            return cached
        body = self.request(
            "GET",
            f"schemas/ids/{int(schema_id)}",
            params={"subject": subject, "format": fmt},
        )
        schema = Schema.from_json(body)
        self._by_id.put((schema_id, fmt), schema)
        return schema

    def get_schema_by_guid(self, guid: str, fmt: str | None = None) -> RegisteredSchema:
        """The schema with GUID ``guid`` (``GET /schemas/guids/{guid}``, newer
        registries), with its schema id when the answer names it (-1 otherwise).

        Raises:
            RegistryError: 40403 schema not found (or 404 where the registry has no
                GUIDs).
        """
        cached = self._by_guid.get((guid, fmt))
        if cached is not None:
            return cached
        body = self.request("GET", f"schemas/guids/{_q(guid)}", params={"format": fmt})
        registered = RegisteredSchema(
            _opt_int(body, "id") or -1, Schema.from_json(body), guid=guid
        )
        self._by_guid.put((guid, fmt), registered)
        return registered

    def get_schema_types(self) -> list[str]:
        """The schema types the registry supports (``GET /schemas/types``)."""
        return [str(t) for t in self.request("GET", "schemas/types")]

    def get_subjects_by_schema_id(
        self, schema_id: int, deleted: bool = False
    ) -> list[str]:
        """The subjects a schema id is registered under (``GET /schemas/ids/{id}/subjects``)."""
        body = self.request(
            "GET", f"schemas/ids/{int(schema_id)}/subjects", params={"deleted": deleted}
        )
        return [str(s) for s in body]

    def get_schema_versions(
        self, schema_id: int, deleted: bool = False
    ) -> list[tuple[str, int]]:
        """``(subject, version)`` pairs holding a schema id
        (``GET /schemas/ids/{id}/versions``)."""
        body = self.request(
            "GET", f"schemas/ids/{int(schema_id)}/versions", params={"deleted": deleted}
        )
        return [(str(item["subject"]), int(item["version"])) for item in body]

    # ------------------------------------------------------------------ subjects

    def get_subjects(
        self,
        prefix: str | None = None,
        deleted: bool = False,
        deleted_only: bool = False,
    ) -> list[str]:
        """The subjects (``GET /subjects``; ``subjectPrefix``, ``deleted``,
        ``deletedOnly``)."""
        body = self.request(
            "GET",
            "subjects",
            params={
                "subjectPrefix": prefix,
                "deleted": deleted,
                "deletedOnly": deleted_only,
            },
        )
        return [str(s) for s in body]

    def get_versions(self, subject: str, deleted: bool = False) -> list[int]:
        """The versions of a subject (``GET /subjects/{s}/versions``).

        Raises:
            RegistryError: 40401 subject not found.
        """
        body = self.request(
            "GET", f"subjects/{_q(subject)}/versions", params={"deleted": deleted}
        )
        return [int(v) for v in body]

    def get_version(
        self,
        subject: str,
        version: int | str = "latest",
        deleted: bool = False,
        fmt: str | None = None,
    ) -> RegisteredSchema:
        """One version of a subject, or ``"latest"``
        (``GET /subjects/{s}/versions/{v}``).

        Raises:
            RegistryError: 40401 subject, 40402 version not found; 42202 invalid
                version.
        """
        if version == "latest":
            return self.get_latest_version(subject, fmt)
        key = (subject, int(version), fmt)
        cached = self._versions.get(key) if not deleted else None
        if cached is not None:
            return cached
        body = self.request(
            "GET",
            f"subjects/{_q(subject)}/versions/{int(version)}",
            params={"deleted": deleted, "format": fmt},
        )
        registered = RegisteredSchema.from_json(body)
        self._versions.put(key, registered)
        return registered

    def get_latest_version(
        self, subject: str, fmt: str | None = None
    ) -> RegisteredSchema:
        """The latest version of a subject, cached for ``latest_ttl_s``.

        Raises:
            RegistryError: 40401 subject not found.
        """
        now = time.monotonic()
        cached = self._latest.get((subject, fmt))
        ttl = self.latest_ttl_s
        if cached is not None and (ttl is None or now - cached[0] < ttl):
            return cached[1]
        body = self.request(
            "GET", f"subjects/{_q(subject)}/versions/latest", params={"format": fmt}
        )
        registered = RegisteredSchema.from_json(body)
        if ttl is None or ttl > 0:
            self._latest.put((subject, fmt), (now, registered))
        return registered

    def get_referenced_by(
        self, subject: str, version: int | str = "latest"
    ) -> list[int]:
        """The schema ids referring to a version
        (``GET /subjects/{s}/versions/{v}/referencedby``)."""
        body = self.request(
            "GET", f"subjects/{_q(subject)}/versions/{version}/referencedby"
        )
        return [int(i) for i in body]

    def delete_subject(self, subject: str, permanent: bool = False) -> list[int]:
        """Delete a subject (``DELETE /subjects/{s}``: soft, then with
        ``permanent``) and return the versions deleted.

        Raises:
            RegistryError: 40401 not found, 40405 permanent before soft, 42206
                referenced.
        """
        body = self.request(
            "DELETE", f"subjects/{_q(subject)}", params={"permanent": permanent}
        )
        self._forget(subject)
        return [int(v) for v in body]

    def delete_version(
        self, subject: str, version: int | str, permanent: bool = False
    ) -> int:
        """Delete one version (``DELETE /subjects/{s}/versions/{v}``) and return it.

        Raises:
            RegistryError: 40401, 40402, 40407 permanent before soft, 42206.
        """
        body = self.request(
            "DELETE",
            f"subjects/{_q(subject)}/versions/{version}",
            params={"permanent": permanent},
        )
        self._forget(subject)
        return int(body)

    def _forget(self, subject: str) -> None:
        self._ids.drop(lambda k: k[0] == subject)
        self._versions.drop(lambda k: k[0] == subject)
        self._latest.drop(lambda k: k[0] == subject)

    def test_compatibility(
        self,
        subject: str,
        schema: Schema,
        version: int | str | None = "latest",
        verbose: bool = False,
    ) -> CompatibilityResult:
        """Whether ``schema`` is compatible with a version of ``subject``
        (``POST /compatibility/subjects/{s}/versions/{v}``), or with every version
        the subject's level checks (``version=None``: ``.../versions``).

        Raises:
            RegistryError: 40401, 40402, 42201 invalid schema.
        """
        path = f"compatibility/subjects/{_q(subject)}/versions"
        if version is not None:
            path += f"/{version}"
        body = self.request(
            "POST", path, params={"verbose": verbose}, body=schema.to_json()
        )
        if not isinstance(body, dict) or "is_compatible" not in body:
            raise RegistryError(50001, f"unexpected compatibility answer: {body!r}")
        return CompatibilityResult(
            bool(body["is_compatible"]),
            tuple(str(m) for m in body.get("messages") or ()),
        )

    # ------------------------------------------------------------------ config and mode

    def get_config(
        self, subject: str | None = None, default_to_global: bool = False
    ) -> dict[str, Any]:
        """The global or a subject's config (``GET /config[/{s}]``), e.g.
        ``{"compatibilityLevel": "BACKWARD"}``.

        Raises:
            RegistryError: 40408 no subject-level config (without
                ``default_to_global``).
        """
        path = "config" if subject is None else f"config/{_q(subject)}"
        body = self.request("GET", path, params={"defaultToGlobal": default_to_global})
        return dict(body)

    def get_compatibility(self, subject: str | None = None) -> str:
        """The compatibility level (global, or the subject's falling back to it)."""
        body = self.get_config(subject, default_to_global=subject is not None)
        return str(body.get("compatibilityLevel") or body.get("compatibility"))

    def set_config(self, subject: str | None = None, **config: Any) -> dict[str, Any]:
        """Set the global or a subject's config (``PUT /config[/{s}]``), e.g.
        ``set_config("orders-value", compatibility="FULL")`` (the body's keys as the
        registry spells them).

        Raises:
            RegistryError: 42203 invalid compatibility level.
        """
        path = "config" if subject is None else f"config/{_q(subject)}"
        return dict(self.request("PUT", path, body=config))

    def set_compatibility(self, level: str, subject: str | None = None) -> str:
        """Set the compatibility level (``NONE``, ``BACKWARD``, ... ``FULL_TRANSITIVE``)."""
        return str(
            self.set_config(subject, compatibility=level.upper())["compatibility"]
        )

    def delete_config(self, subject: str | None = None) -> dict[str, Any]:
        """Delete the global or a subject's config (``DELETE /config[/{s}]``)."""
        path = "config" if subject is None else f"config/{_q(subject)}"
        return dict(self.request("DELETE", path))

    def get_mode(self, subject: str | None = None) -> str:
        """The global or a subject's mode (``GET /mode[/{s}]``): READWRITE,
        READONLY, READONLY_OVERRIDE or IMPORT."""
        path = "mode" if subject is None else f"mode/{_q(subject)}"
        return str(self.request("GET", path)["mode"])

    def set_mode(
        self, mode: str, subject: str | None = None, force: bool = False
    ) -> str:
        """Set the global or a subject's mode (``PUT /mode[/{s}]``; ``force`` lets
        IMPORT be set over existing schemas).

        Raises:
            RegistryError: 42204 invalid mode, 42205 not permitted.
        """
        path = "mode" if subject is None else f"mode/{_q(subject)}"
        body = self.request("PUT", path, params={"force": force}, body={"mode": mode})
        return str(body["mode"])

    def delete_mode(self, subject: str) -> str:
        """Delete a subject's mode (``DELETE /mode/{s}``) and return what it was."""
        return str(self.request("DELETE", f"mode/{_q(subject)}")["mode"])

    def clear_latest_caches(self) -> None:
        """Forget the cached latest versions."""
        self._latest.clear()

    def clear_caches(self) -> None:
        """Forget everything cached."""
        for cache in (
            self._by_id,
            self._by_guid,
            self._ids,
            self._versions,
            self._latest,
        ):
            cache.clear()

    def __repr__(self) -> str:
        return f"SchemaRegistryClient({','.join(self.urls)!r})"


def _q(part: str) -> str:
    return quote(part, safe="")


def _given(value: Any) -> bool:
    """Whether a query parameter is sent: None, False and "" are the registry's
    defaults (its flags are false unless given, its ``format`` the stored form), so
    they are left out."""
    return value is not None and value is not False and value != ""


def _param(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _int(body: Any, key: str) -> int:
    try:
        return int(body[key])
    except (KeyError, TypeError, ValueError) as err:
        raise RegistryError(50001, f"answer lacks {key!r}: {body!r}"[:300]) from err


def _opt_int(body: Any, key: str) -> int | None:
    value = body.get(key) if isinstance(body, dict) else None
    return None if value is None else int(value)


def _guid(body: Any) -> str | None:
    value = body.get("guid") if isinstance(body, dict) else None
    return None if value is None else str(value)


def _answer(response: requests.Response) -> Any:
    """The JSON of a 2xx answer, or the registry's error raised."""
    try:
        body = response.json()
    except ValueError:
        body = None
    if response.status_code >= 400:
        if isinstance(body, dict) and "error_code" in body:
            try:
                code = int(body["error_code"])
            except (TypeError, ValueError):
                code = response.status_code
            message = str(body.get("message", ""))
        else:
            code = response.status_code
            message = response.text[:300] or response.reason or "no message"
        raise RegistryError(code, message, http_status=response.status_code)
    if body is None and response.content:
        raise RegistryError(
            50001,
            f"answer is not JSON: {response.text[:200]!r}",
            http_status=response.status_code,
        )
    return body
