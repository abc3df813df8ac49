"""Compatibility levels applied to the three formats, after Confluent's
``CompatibilityChecker`` and ``SchemaValidatorBuilder``.

BACKWARD checks that the new schema reads data written with the latest previous one,
FORWARD that the latest reads data written with the new one, FULL both; the
``*_TRANSITIVE`` levels check against every previous version, newest first, and stop at
the first incompatible one. Messages are Confluent's (see :func:`check_compatibility`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from kproto.registry.schemas._types import CompatibilityLevel, ParsedSchema, SchemaType
from kproto.registry.schemas.avro_compatibility import avro_compatibility_errors
from kproto.registry.schemas.json_schema_compatibility import json_compatibility_errors
from kproto.registry.schemas.protobuf_compatibility import (
    protobuf_compatibility_errors,
)

__all__ = ["check_compatibility", "reader_errors"]

_CHECKERS: dict[
    SchemaType, Callable[[ParsedSchema, ParsedSchema, str, str], list[str]]
] = {
    SchemaType.AVRO: avro_compatibility_errors,
    SchemaType.JSON: json_compatibility_errors,
    SchemaType.PROTOBUF: protobuf_compatibility_errors,
}


def reader_errors(
    reader: ParsedSchema, writer: ParsedSchema, reader_role: str, writer_role: str
) -> list[str]:
    """Why ``reader`` cannot read what ``writer`` wrote (empty when it can)."""
    if reader.schema_type != writer.schema_type:
        return ["Incompatible because of different schema type"]
    return _CHECKERS[reader.schema_type](reader, writer, reader_role, writer_role)


def _level(level: CompatibilityLevel | str) -> CompatibilityLevel:
    try:
        return CompatibilityLevel(str(level).upper())
    except ValueError:
        raise ValueError(f"Invalid compatibility level: {level!r}") from None


_MAX_SCHEMA_SIZE_FOR_LOGGING = 10 * 1024


def _old_schema(old: ParsedSchema, version: int | None) -> list[str]:
    """What Confluent's ``SchemaValidatorBuilder`` appends after a strategy's messages."""
    out = [] if version is None else [f"{{oldSchemaVersion: {version}}}"]
    text = old.canonical
    if len(text) <= _MAX_SCHEMA_SIZE_FOR_LOGGING:
        out.append(f"{{oldSchema: '{text}'}}")
    else:
        out.append(
            f"{{oldSchema: <truncated to {_MAX_SCHEMA_SIZE_FOR_LOGGING} characters> "
            f"'{text[:_MAX_SCHEMA_SIZE_FOR_LOGGING]}'}}"
        )
    return out


def check_compatibility(
    new: ParsedSchema,
    previous: Sequence[ParsedSchema],
    level: CompatibilityLevel | str,
    *,
    versions: Sequence[int] | None = None,
) -> list[str]:
    """Confluent's messages saying why ``new`` is not compatible with ``previous``
    under ``level``; empty when it is.

    ``previous`` are the versions to check against, oldest first; the non-transitive
    levels use only the last one, the transitive ones every one, newest first, up to the
    first incompatible. ``versions`` (same length as ``previous``), when given, adds
    ``{oldSchemaVersion: N}``. The messages are those of Confluent's
    ``SchemaValidatorBuilder``: for FULL the FORWARD ones first, then the BACKWARD ones
    followed by ``{oldSchemaVersion: N}`` and ``{oldSchema: '...'}`` (FORWARD and
    BACKWARD alone are followed by them too); the registry's
    ``{validateFields: 'false', compatibility: 'LEVEL'}`` ends the list. Raises
    ``ValueError`` for an unknown level.
    """
    chosen = _level(level)
    if chosen is CompatibilityLevel.NONE or not previous:
        return []
    indexed = list(enumerate(previous))
    candidates = list(reversed(indexed)) if chosen.transitive else indexed[-1:]
    for index, old in candidates:
        version = (
            versions[index] if versions is not None and index < len(versions) else None
        )
        errors: list[str] = []
        if chosen.forward:
            forward = reader_errors(old, new, "old", "new")
            errors += forward
            if forward and not chosen.backward:
                errors += _old_schema(old, version)
        if chosen.backward:
            backward = reader_errors(new, old, "new", "old")
            errors += backward
            if backward:
                errors += _old_schema(old, version)
        if errors:
            errors.append(
                f"{{validateFields: 'false', compatibility: '{chosen.value}'}}"
            )
            return errors
    return []
