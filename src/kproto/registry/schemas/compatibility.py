"""Compatibility levels applied to the three formats, after Confluent's
``CompatibilityChecker`` and ``SchemaValidatorBuilder``.

BACKWARD checks that the new schema reads data written with the latest previous one,
FORWARD that the latest reads data written with the new one, FULL both; the
``*_TRANSITIVE`` levels check against every previous version, newest first, and stop at
the first incompatible one. Messages are Confluent's: the format's differences, then
``{oldSchemaVersion: N}`` (when versions are given), ``{oldSchema: '...'}`` and
``{compatibility: 'LEVEL'}``.
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


def check_compatibility(
    new: ParsedSchema,
    previous: Sequence[ParsedSchema],
    level: CompatibilityLevel | str,
    *,
    versions: Sequence[int] | None = None,
) -> list[str]:
    """Confluent-style messages saying why ``new`` is not compatible with ``previous``
    under ``level``; empty when it is.

    ``previous`` are the versions to check against, oldest first; the non-transitive
    levels use only the last one. ``versions`` (same length as ``previous``), when given,
    adds ``{oldSchemaVersion: N}`` to the messages. Raises ``ValueError`` for an unknown
    level.
    """
    chosen = _level(level)
    if chosen is CompatibilityLevel.NONE or not previous:
        return []
    indexed = list(enumerate(previous))
    candidates = list(reversed(indexed)) if chosen.transitive else indexed[-1:]
    for index, old in candidates:
        errors: list[str] = []
        if chosen.backward:
            errors += reader_errors(new, old, "new", "old")
        if chosen.forward:
            errors += reader_errors(old, new, "old", "new")
        if errors:
            if versions is not None and index < len(versions):
                errors.append(f"{{oldSchemaVersion: {versions[index]}}}")
            errors.append(f"{{oldSchema: '{old.canonical}'}}")
            errors.append(f"{{compatibility: '{chosen.value}'}}")
            return errors
    return []
