"""The records of the ``_schemas`` topic, in Confluent Schema Registry's shapes.

Every record's key and value are JSON (Confluent's ``SchemaRegistryKey`` and
``SchemaRegistryValue`` subclasses in ``io.confluent.kafka.schemaregistry.storage``,
written by Jackson with ``Include.NON_EMPTY``):

=============== ================================================= ==========================
keytype         key                                               value
=============== ================================================= ==========================
SCHEMA          ``{"keytype","subject","version","magic":1}``     ``{"subject","version",
                                                                  "id","schemaType",
                                                                  "references","schema",
                                                                  "deleted"}``
CONFIG          ``{"keytype","subject","magic":0}``               ``{"subject",
                                                                  "compatibilityLevel"}``
MODE            ``{"keytype","subject","magic":0}``               ``{"subject","mode"}``
DELETE_SUBJECT  ``{"keytype","subject","magic":0}``               ``{"subject","version"}``
CLEAR_SUBJECT   ``{"keytype","subject","magic":0}``               ``{"subject"}``
NOOP            ``{"keytype","magic":0}``                         none
=============== ================================================= ==========================

The global CONFIG and MODE keys have no ``subject`` (Jackson leaves the null out;
Karapace writes ``"subject":null``, which reads the same). A tombstone (value
``None``) deletes a key: a permanently deleted version, a deleted subject config
or mode. :func:`encode_key` writes the fields in Confluent's order, compact, so
that one key always has the same bytes and compaction keeps its latest record.
"""

from __future__ import annotations

import json
from enum import StrEnum
from typing import Any, Final

import attrs

from kproto.registry.schemas import CompatibilityLevel, SchemaReference

__all__ = [
    "ClearSubjectKey",
    "ClearSubjectValue",
    "ConfigKey",
    "ConfigValue",
    "DeleteSubjectKey",
    "DeleteSubjectValue",
    "KeyType",
    "MODES",
    "ModeKey",
    "ModeValue",
    "NoopKey",
    "RecordError",
    "RegistryKey",
    "RegistryValue",
    "SchemaKey",
    "SchemaValue",
    "decode_key",
    "decode_value",
    "encode_key",
    "encode_value",
]


#: Confluent's modes.
MODES: Final = ("READWRITE", "READONLY", "READONLY_OVERRIDE", "IMPORT")


class RecordError(ValueError):
    """A ``_schemas`` key or value that is not Confluent's shape (the message says
    what is wrong)."""


class KeyType(StrEnum):
    """Confluent's ``SchemaRegistryKeyType``."""

    SCHEMA = "SCHEMA"
    CONFIG = "CONFIG"
    MODE = "MODE"
    NOOP = "NOOP"
    DELETE_SUBJECT = "DELETE_SUBJECT"
    CLEAR_SUBJECT = "CLEAR_SUBJECT"


@attrs.frozen
class SchemaKey:
    """One version of a subject (``magic`` 1)."""

    subject: str
    version: int


@attrs.frozen
class ConfigKey:
    """A subject's compatibility config, or the global one (``subject`` None)."""

    subject: str | None


@attrs.frozen
class ModeKey:
    """A subject's mode, or the global one (``subject`` None)."""

    subject: str | None


@attrs.frozen
class DeleteSubjectKey:
    """A soft delete of a subject's versions up to a version."""

    subject: str


@attrs.frozen
class ClearSubjectKey:
    """Clears a subject's versions from the lookup state."""

    subject: str


@attrs.frozen
class NoopKey:
    """Written by Confluent to learn the topic's end offset; ignored on replay."""


RegistryKey = (
    SchemaKey | ConfigKey | ModeKey | DeleteSubjectKey | ClearSubjectKey | NoopKey
)


@attrs.frozen
class SchemaValue:
    """A version of a subject: its schema id, type, text and references."""

    subject: str
    version: int
    id: int
    schema: str
    schema_type: str = "AVRO"
    references: tuple[SchemaReference, ...] = ()
    deleted: bool = False


@attrs.frozen
class ConfigValue:
    """``compatibilityLevel`` (Confluent's names: BACKWARD, FULL_TRANSITIVE...)."""

    subject: str | None
    compatibility_level: str


@attrs.frozen
class ModeValue:
    """``mode``: READWRITE, READONLY, READONLY_OVERRIDE or IMPORT."""

    subject: str | None
    mode: str


@attrs.frozen
class DeleteSubjectValue:
    """The subject's versions up to ``version`` are (soft) deleted."""

    subject: str
    version: int


@attrs.frozen
class ClearSubjectValue:
    """The subject whose versions are cleared."""

    subject: str


RegistryValue = (
    SchemaValue | ConfigValue | ModeValue | DeleteSubjectValue | ClearSubjectValue
)


def _dumps(value: dict[str, Any]) -> bytes:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()


def encode_key(key: RegistryKey) -> bytes:
    """The key's bytes: compact JSON, fields in Confluent's order (the same key
    always encodes to the same bytes)."""
    if isinstance(key, SchemaKey):
        fields: dict[str, Any] = {
            "keytype": KeyType.SCHEMA.value,
            "subject": key.subject,
            "version": key.version,
            "magic": 1,
        }
        return _dumps(fields)
    if isinstance(key, NoopKey):
        return _dumps({"keytype": KeyType.NOOP.value, "magic": 0})
    keytype = {
        ConfigKey: KeyType.CONFIG,
        ModeKey: KeyType.MODE,
        DeleteSubjectKey: KeyType.DELETE_SUBJECT,
        ClearSubjectKey: KeyType.CLEAR_SUBJECT,
    }[type(key)]
    fields = {"keytype": keytype.value}
    if key.subject is not None:
        fields["subject"] = key.subject
    fields["magic"] = 0
    return _dumps(fields)


def encode_value(value: RegistryValue) -> bytes:
    """The value's bytes: compact JSON in Confluent's field names."""
    fields: dict[str, Any] = {}
    if value.subject is not None:
        fields["subject"] = value.subject
    if isinstance(value, SchemaValue):
        fields["version"] = value.version
        fields["id"] = value.id
        fields["schemaType"] = value.schema_type
        if value.references:
            fields["references"] = [
                {"name": r.name, "subject": r.subject, "version": r.version}
                for r in value.references
            ]
        fields["schema"] = value.schema
        fields["deleted"] = value.deleted
    elif isinstance(value, ConfigValue):
        fields["compatibilityLevel"] = value.compatibility_level
    elif isinstance(value, ModeValue):
        fields["mode"] = value.mode
    elif isinstance(value, DeleteSubjectValue):
        fields["version"] = value.version
    return _dumps(fields)


def _object(data: bytes, what: str) -> dict[str, Any]:
    try:
        value = json.loads(data)
    except (ValueError, RecursionError) as exc:
        raise RecordError(f"{what} is not JSON: {exc}") from None
    if not isinstance(value, dict):
        raise RecordError(f"{what} is not a JSON object: {data[:80]!r}")
    return value


def _field(obj: dict[str, Any], name: str, kind: type, what: str) -> Any:
    value = obj.get(name)
    if not isinstance(value, kind) or isinstance(value, bool) is not (kind is bool):
        raise RecordError(f"{what}: field {name!r} is not a {kind.__name__}: {value!r}")
    return value


def _subject(obj: dict[str, Any], what: str) -> str | None:
    subject = obj.get("subject")
    if subject is not None and not isinstance(subject, str):
        raise RecordError(f"{what}: field 'subject' is not a string: {subject!r}")
    return subject


def decode_key(data: bytes) -> RegistryKey | None:
    """The key of a ``_schemas`` record; ``None`` for a keytype this registry does
    not keep (Confluent's CONTEXT and newer ones), which replay skips.

    Raises:
        RecordError: not JSON, not an object, or a field of the wrong type.
    """
    obj = _object(data, "key")
    keytype = obj.get("keytype")
    if keytype == "SCHEMA":
        return SchemaKey(
            _field(obj, "subject", str, "SCHEMA key"),
            _field(obj, "version", int, "SCHEMA key"),
        )
    if keytype == "NOOP":
        return NoopKey()
    if keytype == "CONFIG":
        return ConfigKey(_subject(obj, "CONFIG key"))
    if keytype == "MODE":
        return ModeKey(_subject(obj, "MODE key"))
    if keytype == "DELETE_SUBJECT":
        return DeleteSubjectKey(_field(obj, "subject", str, "DELETE_SUBJECT key"))
    if keytype == "CLEAR_SUBJECT":
        return ClearSubjectKey(_field(obj, "subject", str, "CLEAR_SUBJECT key"))
    if not isinstance(keytype, str):
        raise RecordError(f"key has no keytype: {data[:80]!r}")
    return None


def _references(obj: dict[str, Any], what: str) -> tuple[SchemaReference, ...]:
    refs = obj.get("references")
    if refs is None:
        return ()
    if not isinstance(refs, list):
        raise RecordError(f"{what}: 'references' is not a list")
    out = []
    for ref in refs:
        if not isinstance(ref, dict):
            raise RecordError(f"{what}: a reference is not an object: {ref!r}")
        out.append(
            SchemaReference(
                _field(ref, "name", str, f"{what} reference"),
                _field(ref, "subject", str, f"{what} reference"),
                _field(ref, "version", int, f"{what} reference"),
            )
        )
    return tuple(out)


def decode_value(key: RegistryKey, data: bytes) -> RegistryValue | None:
    """The value of a record with ``key`` (``None`` for a NOOP key). The subject
    of CONFIG and MODE values is the key's (older Confluent values have none).

    Raises:
        RecordError: not JSON, or a field missing or of the wrong type.
    """
    if isinstance(key, NoopKey):
        return None
    obj = _object(data, f"{type(key).__name__} value")
    if isinstance(key, SchemaKey):
        what = f"SCHEMA value of {key.subject!r} version {key.version}"
        schema_type = obj.get("schemaType") or "AVRO"
        if not isinstance(schema_type, str):
            raise RecordError(f"{what}: 'schemaType' is not a string")
        return SchemaValue(
            subject=_field(obj, "subject", str, what),
            version=_field(obj, "version", int, what),
            id=_field(obj, "id", int, what),
            schema=_field(obj, "schema", str, what),
            schema_type=schema_type,
            references=_references(obj, what),
            deleted=obj.get("deleted") is True,
        )
    if isinstance(key, ConfigKey):
        level = _field(obj, "compatibilityLevel", str, "CONFIG value").upper()
        if level not in CompatibilityLevel.__members__:
            raise RecordError(f"CONFIG value: unknown compatibilityLevel {level!r}")
        return ConfigValue(key.subject, level)
    if isinstance(key, ModeKey):
        mode = _field(obj, "mode", str, "MODE value").upper()
        if mode not in MODES:
            raise RecordError(f"MODE value: unknown mode {mode!r}")
        return ModeValue(key.subject, mode)
    if isinstance(key, DeleteSubjectKey):
        return DeleteSubjectValue(
            key.subject, _field(obj, "version", int, "DELETE_SUBJECT value")
        )
    return ClearSubjectValue(key.subject)
