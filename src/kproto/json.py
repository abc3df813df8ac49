"""Generated entities to and from JSON-compatible values, driven by the Wire metadata.

:func:`to_json` turns an entity into a ``dict`` that ``json.dumps`` accepts;
:func:`from_json` is its inverse. The mapping, per Kafka type:

============================  ==============================================
Kafka type                    JSON value
============================  ==============================================
bool, int8..int64, uint16/32  number / boolean
float64                       number
string                        string (or null when nullable)
bytes, records                base64 string (standard alphabet), or null
uuid                          canonical string ``"8-4-4-4-12"``
struct                        object keyed by attribute names, or null
``[]T``                       array, or null
unknown tagged fields         ``[[tag, base64], ...]``
============================  ==============================================

Keys are the Python attribute names (``throttle_time_ms``). Every field is written;
:func:`from_json` fills missing keys with the Kafka default.

Credentials are not written: the fields in :data:`SENSITIVE_FIELDS` (SASL tokens,
which carry a PLAIN password; SCRAM salts and salted passwords) come out as
``"<redacted>"`` unless ``redact=False`` is passed, as Kafka's request logging
leaves them out.

Example::

    >>> from kproto.schema.api_versions.v3 import ApiVersionsRequest
    >>> to_json(ApiVersionsRequest(client_software_name="k", client_software_version="1"))
    {'client_software_name': 'k', 'client_software_version': '1', 'unknown_tagged_fields': []}
"""

from __future__ import annotations

import base64
import binascii
import uuid
from typing import Any, TypeVar

from kproto.meta import Wire, entity_info, wire_fields

__all__ = [
    "REDACTED",
    "SENSITIVE_FIELDS",
    "to_json",
    "to_kafka_json",
    "from_json",
    "JsonValueError",
    "kafka_uuid",
]

#: ``(class name, field name)`` of every field that holds a credential.
SENSITIVE_FIELDS: frozenset[tuple[str, str]] = frozenset(
    {
        ("SaslAuthenticateRequest", "auth_bytes"),
        ("SaslAuthenticateResponse", "auth_bytes"),
        ("ScramCredentialUpsertion", "salt"),
        ("ScramCredentialUpsertion", "salted_password"),
    }
)

#: What a sensitive field's value becomes in JSON.
REDACTED = "<redacted>"

E = TypeVar("E")

_INT_TYPES = frozenset({"int8", "int16", "uint16", "int32", "uint32", "int64"})


class JsonValueError(ValueError):
    """A JSON value does not fit its field; ``path`` names the field
    (``MetadataRequest.topics[0].name``)."""

    def __init__(self, path: str, reason: str) -> None:
        self.path = path
        self.reason = reason
        super().__init__(f"{path}: {reason}")


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _value_to_json(w: Wire, value: Any, redact: bool, kafka: bool) -> Any:
    """A field's value as JSON: kproto's form (:func:`to_json`), or with ``kafka``
    Kafka's (:func:`to_kafka_json`: Kafka's uuids; unknown tags never reach it)."""
    if value is None:
        return None
    if w.kind == "struct":
        return (to_kafka_json if kafka else to_json)(value, redact=redact)
    if w.kind == "array":
        assert w.element is not None
        element = w.element
        return [_value_to_json(element, v, redact, kafka) for v in value]
    if w.kind == "unknown_tags":
        return [[tag, _b64(raw)] for tag, raw in value]
    if w.type in ("bytes", "records"):
        return _b64(bytes(value))
    if w.type == "uuid":
        return kafka_uuid(value) if kafka else str(value)
    return value


def _sensitive(entity: Any, name: str) -> bool:
    return (type(entity).__name__, name) in SENSITIVE_FIELDS


def to_json(entity: Any, *, redact: bool = True) -> dict[str, Any]:
    """A generated entity as a dict of JSON-compatible values (see the module table).
    With ``redact`` (the default), credential fields (:data:`SENSITIVE_FIELDS`)
    are written as :data:`REDACTED`.

    Raises:
        TypeError: ``entity`` is not a generated kproto entity.
    """
    entity_info(entity)
    return {
        f.name: (
            REDACTED
            if redact and _sensitive(entity, f.name)
            else _value_to_json(w, getattr(entity, f.name), redact, kafka=False)
        )
        for f, w in wire_fields(type(entity))
    }


def kafka_uuid(value: uuid.UUID) -> str:
    """Kafka's ``Uuid.toString()``: the 16 bytes in URL-safe base64, no padding
    (``"xfugYJTERGetNxY2KH_JFA"``)."""
    return base64.urlsafe_b64encode(value.bytes).decode("ascii").rstrip("=")


def to_kafka_json(entity: Any, *, redact: bool = True) -> dict[str, Any]:
    """An entity as Kafka's generated ``<Message>JsonConverter.write`` shapes it.

    That is the JSON ``kafka-dump-log.sh`` decoders and ``kafka-console-consumer.sh``
    formatters print: keys are the Kafka field names with a lower-case first letter
    (``protocolType``), in schema order; tagged fields equal to their default and
    unknown tagged fields are left out; bytes are standard base64, uuids Kafka's
    URL-safe base64 (:func:`kafka_uuid`), int64 plain numbers; credential fields
    :data:`REDACTED` unless ``redact`` is false. Source: Kafka's
    ``generator/.../JsonConverterGenerator.java``.

    Raises:
        TypeError: ``entity`` is not a generated kproto entity.
    """
    entity_info(entity)
    out: dict[str, Any] = {}
    for f, w in wire_fields(type(entity)):
        if w.kind == "unknown_tags":
            continue
        value = getattr(entity, f.name)
        if w.tag is not None and value == w.default:
            continue
        name = w.name[:1].lower() + w.name[1:] if w.name else f.name
        out[name] = (
            REDACTED
            if redact and _sensitive(entity, f.name)
            else _value_to_json(w, value, redact, kafka=True)
        )
    return out


def _unb64(value: Any, path: str) -> bytes:
    if not isinstance(value, str):
        raise JsonValueError(
            path, f"expected a base64 string, got {type(value).__name__}"
        )
    if value == REDACTED:
        raise JsonValueError(
            path, "a redacted credential cannot be read back (write with redact=False)"
        )
    try:
        return base64.b64decode(value.encode("ascii"), validate=True)
    except (binascii.Error, UnicodeEncodeError) as err:
        raise JsonValueError(path, f"invalid base64: {err}") from None


def _value_from_json(w: Wire, value: Any, path: str) -> Any:
    if value is None:
        if w.kind == "unknown_tags":
            return ()
        if not w.nullable:
            raise JsonValueError(path, "null in a non-nullable field")
        return None
    if w.kind == "struct":
        assert w.entity is not None
        if not isinstance(value, dict):
            raise JsonValueError(
                path, f"expected an object, got {type(value).__name__}"
            )
        return from_json(w.entity, value, path=path)
    if w.kind == "array":
        assert w.element is not None
        if not isinstance(value, list | tuple):
            raise JsonValueError(path, f"expected an array, got {type(value).__name__}")
        element = w.element
        return tuple(
            _value_from_json(element, v, f"{path}[{i}]") for i, v in enumerate(value)
        )
    if w.kind == "unknown_tags":
        if not isinstance(value, list | tuple):
            raise JsonValueError(path, "expected [[tag, base64], ...]")
        out = []
        for i, pair in enumerate(value):
            if not (
                isinstance(pair, list | tuple)
                and len(pair) == 2
                and isinstance(pair[0], int)
            ):
                raise JsonValueError(f"{path}[{i}]", "expected [tag, base64]")
            out.append((pair[0], _unb64(pair[1], f"{path}[{i}]")))
        return tuple(out)
    t = w.type
    if t in ("bytes", "records"):
        return _unb64(value, path)
    if t == "uuid":
        try:
            return uuid.UUID(str(value))
        except ValueError:
            raise JsonValueError(path, f"invalid uuid {value!r}") from None
    if t == "bool":
        if not isinstance(value, bool):
            raise JsonValueError(
                path, f"expected a boolean, got {type(value).__name__}"
            )
        return value
    if t in _INT_TYPES:
        if isinstance(value, bool) or not isinstance(value, int):
            raise JsonValueError(
                path, f"expected an integer, got {type(value).__name__}"
            )
        return value
    if t == "float64":
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise JsonValueError(path, f"expected a number, got {type(value).__name__}")
        try:
            return float(value)
        except OverflowError:
            raise JsonValueError(
                path, f"integer of {len(str(value))} digits is too large for a float64"
            ) from None
    if t == "string":
        if not isinstance(value, str):
            raise JsonValueError(path, f"expected a string, got {type(value).__name__}")
        return value
    return value  # pragma: no cover - every Kafka primitive is handled above


def from_json(cls: type[E], data: dict[str, Any], *, path: str = "") -> E:
    """Build an entity of ``cls`` from :func:`to_json` output (or hand-written JSON).

    Missing keys take the field's Kafka default. Values are type-checked against
    the Wire metadata (ranges are checked later, by the encoder).

    Raises:
        JsonValueError: an unknown key, a value of the wrong JSON type, null in a
            non-nullable field, invalid base64 or uuid, an integer too large for a
            float64 field; ``path`` names the field.
        TypeError: ``cls`` is not a generated kproto entity.
    """
    entity_info(cls)
    where = path or cls.__name__
    if not isinstance(data, dict):
        raise JsonValueError(where, f"expected an object, got {type(data).__name__}")
    fields = {f.name: w for f, w in wire_fields(cls)}
    unknown = set(data) - set(fields)
    if unknown:
        raise JsonValueError(
            where,
            f"unknown field(s) {', '.join(sorted(unknown))}; fields: {', '.join(fields)}",
        )
    values = {
        name: _value_from_json(fields[name], value, f"{where}.{name}")
        for name, value in data.items()
    }
    return cls(**values)
