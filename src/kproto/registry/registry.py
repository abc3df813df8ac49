"""The registry's operations: register, look up, delete, configs and modes.

:class:`SchemaRegistry` follows Confluent's ``KafkaSchemaRegistry``: each change is
checked against the current :class:`~kproto.registry.store.RegistryState`, written
to ``_schemas`` as Confluent's records (:mod:`kproto.registry.records`) and applied
to the state only once the log holds it, so nothing is acknowledged that was not
stored. Changes run one at a time (an ``asyncio.Lock``); reads never wait for them.
Errors are :class:`~kproto.registry.errors.RegistryError` with Confluent's codes
and messages.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Mapping, Sequence
from typing import Final

from kproto.registry.errors import RegistryError, RegistryErrorCode
from kproto.registry.records import (
    MODES,
    ConfigKey,
    ConfigValue,
    DeleteSubjectKey,
    DeleteSubjectValue,
    ModeKey,
    ModeValue,
    RegistryKey,
    RegistryValue,
    SchemaKey,
    SchemaValue,
    encode_key,
    encode_value,
)
from kproto.registry.schemas import (
    CompatibilityLevel,
    InvalidSchemaError,
    ParsedSchema,
    SchemaReference,
    SchemaType,
    check_compatibility,
    parse_schema,
)
from kproto.registry.schemas_topic import SchemasTopic, StoreError
from kproto.registry.store import RegistryState, StoredSchema, SubjectVersion

__all__ = ["DEFAULT_COMPATIBILITY", "SchemaRegistry"]

log = logging.getLogger("kproto.registry")

#: Confluent's ``schema.compatibility.level`` default.
DEFAULT_COMPATIBILITY: Final = CompatibilityLevel.BACKWARD
_READ_ONLY: Final = ("READONLY", "READONLY_OVERRIDE")
_MAX_VERSION: Final = 2**31 - 1
_PARSED_CACHE_SIZE: Final = 1024
# Confluent's QualifiedSubject names for the global and empty contexts' configs
_RESERVED_SUBJECTS: Final = ("__GLOBAL", "__EMPTY")


def _not_found(code: RegistryErrorCode, message: str) -> RegistryError:
    return RegistryError(code, message)


def subject_not_found(subject: str) -> RegistryError:
    """40401 as Confluent words it."""
    return _not_found(
        RegistryErrorCode.SUBJECT_NOT_FOUND, f"Subject '{subject}' not found."
    )


def version_not_found(version: int | str) -> RegistryError:
    """40402 as Confluent words it."""
    return _not_found(
        RegistryErrorCode.VERSION_NOT_FOUND, f"Version {version} not found."
    )


def parse_version(text: str) -> int | None:
    """A version path segment: ``None`` for ``latest`` (or -1), else 1..2^31-1.

    Raises:
        RegistryError: 42202, anything else.
    """
    if text == "latest":
        return None
    try:
        version = int(text)
    except ValueError:
        version = 0
    if version == -1:
        return None
    if not 1 <= version <= _MAX_VERSION:
        raise RegistryError(
            RegistryErrorCode.INVALID_VERSION,
            f"The specified version '{text}' is not a valid version id. Allowed "
            'values are between [1, 2^31-1] and the string "latest"',
        )
    return version


def _compatibility(level: object) -> CompatibilityLevel:
    try:
        if not isinstance(level, str):
            raise ValueError(level)
        return CompatibilityLevel(level.upper())
    except ValueError:
        raise RegistryError(
            RegistryErrorCode.INVALID_COMPATIBILITY_LEVEL,
            "Invalid compatibility level. Valid values are none, backward, forward, "
            "full, backward_transitive, forward_transitive, and full_transitive",
        ) from None


def _mode(mode: object) -> str:
    text = mode.upper() if isinstance(mode, str) else ""
    if text not in MODES:
        raise RegistryError(
            RegistryErrorCode.INVALID_MODE,
            f"Invalid mode. Valid values are {', '.join(MODES)}.",
        )
    return text


class SchemaRegistry:
    """One registry over one ``_schemas`` topic.

    Args:
        topic: the log the registry's records go to (:class:`SchemasTopic`).
    """

    def __init__(self, topic: SchemasTopic) -> None:
        self.topic = topic
        self.state = RegistryState()
        self._lock = asyncio.Lock()
        self._parsed: dict[int, ParsedSchema] = {}

    def load(self) -> int:
        """Create the topic if missing and rebuild the state from it; return how
        many records were skipped.

        Raises:
            StoreError: the log cannot be read.
        """
        self.topic.ensure()
        self.state = RegistryState()
        self._parsed.clear()
        return self.state.replay(self.topic.replay())

    async def _write(
        self, records: Sequence[tuple[RegistryKey, RegistryValue | None]]
    ) -> None:
        """Store ``records``, then apply them (the lock is held by the caller)."""
        try:
            await self.topic.append(
                [
                    (encode_key(k), None if v is None else encode_value(v))
                    for k, v in records
                ]
            )
        except StoreError as exc:
            raise RegistryError(RegistryErrorCode.STORE_ERROR, str(exc)) from exc
        for key, value in records:
            self.state.apply(key, value)

    # ------------------------------------------------------------------ reading

    def mode(self, subject: str | None) -> str:
        """The mode in force for ``subject`` (its own, else the global one)."""
        modes = self.state.modes
        if subject is not None and subject in modes:
            return modes[subject]
        return modes.get(None, "READWRITE")

    def compatibility(self, subject: str | None) -> CompatibilityLevel:
        """The compatibility level in force for ``subject``."""
        configs = self.state.configs
        if subject is not None and subject in configs:
            return CompatibilityLevel(configs[subject])
        return CompatibilityLevel(configs.get(None, DEFAULT_COMPATIBILITY))

    def live_versions(
        self, subject: str, *, deleted: bool = False
    ) -> list[SubjectVersion]:
        """The subject's versions (with ``deleted``, soft-deleted ones too).

        Raises:
            RegistryError: 40401, none.
        """
        versions = self.state.versions(subject, deleted=deleted)
        if not versions:
            raise subject_not_found(subject)
        return versions

    def get_version(
        self, subject: str, version: int | None, *, deleted: bool = False
    ) -> SubjectVersion:
        """``subject``'s ``version`` (``None``: the latest).

        Raises:
            RegistryError: 40401 no such subject, 40402 no such version.
        """
        versions = self.live_versions(subject, deleted=deleted)
        if version is None:
            return versions[-1]
        entry = self.state.subjects[subject].get(version)
        if entry is None or (entry.deleted and not deleted):
            raise version_not_found(version)
        return entry

    def schema(self, schema_id: int) -> StoredSchema:
        """The schema with ``schema_id``.

        Raises:
            RegistryError: 40403.
        """
        stored = self.state.schemas.get(schema_id)
        if stored is None:
            raise RegistryError(
                RegistryErrorCode.SCHEMA_NOT_FOUND, f"Schema {schema_id} not found"
            )
        return stored

    def resolve(self, references: Sequence[SchemaReference]) -> dict[str, str]:
        """Reference name -> schema text for ``references`` and theirs, transitively.

        Raises:
            RegistryError: 42201, a reference to a missing subject or version.
        """
        resolved: dict[str, str] = {}
        todo = list(references)
        while todo:
            ref = todo.pop()
            if ref.name in resolved:
                continue
            entry = self.state.subjects.get(ref.subject, {}).get(ref.version)
            if entry is None:
                raise RegistryError(
                    RegistryErrorCode.INVALID_SCHEMA,
                    f"Invalid schema: reference {ref.name!r} names subject "
                    f"{ref.subject!r} version {ref.version}, which does not exist",
                )
            stored = self.state.schemas[entry.schema_id]
            resolved[ref.name] = stored.schema
            todo.extend(stored.references)
        return resolved

    async def parse(
        self,
        schema_type: str,
        text: str,
        references: Sequence[SchemaReference],
        *,
        normalize: bool = False,
    ) -> ParsedSchema:
        """Parse a schema (its references resolved on the loop): PROTOBUF in a
        worker thread (protoc takes milliseconds; the Kafka listeners share this
        loop), the others inline.

        Raises:
            RegistryError: 42201, an invalid schema or a missing reference.
        """
        resolved = self.resolve(references)

        def parse() -> ParsedSchema:
            try:
                parsed = parse_schema(schema_type, text, references, resolved)
                return parsed.normalize() if normalize else parsed
            except InvalidSchemaError as exc:
                raise RegistryError(
                    RegistryErrorCode.INVALID_SCHEMA, f"Invalid schema: {exc}"
                ) from None

        if schema_type == SchemaType.PROTOBUF:
            return await asyncio.to_thread(parse)
        return parse()

    async def parsed(self, schema_id: int) -> ParsedSchema:
        """The stored schema ``schema_id``, parsed (a bounded cache).

        Raises:
            RegistryError: 40403; 42201 when the stored text does not parse (a
                record written by another registry).
        """
        cached = self._parsed.get(schema_id)
        if cached is None:
            stored = self.schema(schema_id)
            cached = await self.parse(
                stored.schema_type, stored.schema, stored.references
            )
            if len(self._parsed) >= _PARSED_CACHE_SIZE:
                self._parsed.pop(next(iter(self._parsed)))
            self._parsed[schema_id] = cached
        return cached

    # -- what the broker's schema validation asks (kproto.broker.schema_validation)

    def subjects_of_id(self, schema_id: int) -> frozenset[str]:
        """The subjects with a live (not soft-deleted) version of ``schema_id``
        (empty: an unknown id)."""
        return frozenset(
            e.subject for e in self.state.version_uses(schema_id) if not e.deleted
        )

    async def record_names_of_id(self, schema_id: int) -> tuple[str, ...]:
        """The fully qualified record names of schema ``schema_id``
        (:meth:`ParsedSchema.record_names`; empty for an unknown id or a stored
        text that does not parse)."""
        try:
            parsed = await self.parsed(schema_id)
        except RegistryError:
            return ()
        return parsed.record_names()

    def schema_id_of_guid(self, guid: uuid.UUID) -> int | None:
        """The id of the schema with ``guid``, if any."""
        return self.state.by_guid(str(guid))

    async def lookup(
        self, subject: str, parsed: ParsedSchema, *, normalize: bool, deleted: bool
    ) -> SubjectVersion:
        """The version of ``subject`` holding ``parsed`` (Confluent's POST
        ``/subjects/{subject}``), the latest if several; with ``normalize``,
        ``parsed`` is normalized and so are the stored schemas it is compared with.

        Raises:
            RegistryError: 40401 no such subject, 40403 no such schema in it.
        """
        versions = self.live_versions(subject, deleted=deleted)
        wanted = StoredSchema(
            parsed.schema_type.value, parsed.canonical, parsed.references
        )
        for entry in reversed(versions):
            stored = self.state.schemas[entry.schema_id]
            if stored == wanted:
                return entry
            if normalize and stored.schema_type == wanted.schema_type:
                other = (await self.parsed(entry.schema_id)).normalize()
                if (other.canonical, other.references) == (
                    wanted.schema,
                    wanted.references,
                ):
                    return entry
        raise RegistryError(RegistryErrorCode.SCHEMA_NOT_FOUND, "Schema not found")

    async def check(
        self,
        subject: str,
        parsed: ParsedSchema,
        against: Sequence[SubjectVersion] | None = None,
    ) -> list[str]:
        """Confluent-style messages of ``parsed``'s incompatibilities with the
        subject's live versions under its compatibility level: the latest, or
        all of them for the ``*_TRANSITIVE`` levels (``against``: those versions
        instead); empty when compatible. A version of another schema type is an
        incompatibility.

        Raises:
            RegistryError: 42201, a stored schema that does not parse.
        """
        level = self.compatibility(subject)
        if level is CompatibilityLevel.NONE:
            return []
        if against is None:
            live = self.state.versions(subject)
            against = live if level.name.endswith("TRANSITIVE") else live[-1:]
        previous = []
        for entry in against:
            stored_type = self.state.schemas[entry.schema_id].schema_type
            if stored_type != parsed.schema_type.value:
                return [
                    f"Incompatible schema type: version {entry.version} is "
                    f"{stored_type}, the new schema {parsed.schema_type.value}"
                ]
            previous.append(await self.parsed(entry.schema_id))
        return check_compatibility(parsed, previous, level) if previous else []

    # ------------------------------------------------------------------ writing

    def _check_writable(self, subject: str) -> None:
        if self.mode(subject) in _READ_ONLY:
            raise RegistryError(
                RegistryErrorCode.OPERATION_NOT_PERMITTED,
                f"Subject {subject} is in read-only mode",
            )

    async def register(
        self,
        subject: str,
        parsed: ParsedSchema,
        *,
        schema_id: int | None = None,
        version: int | None = None,
    ) -> int:
        """Register ``parsed`` under ``subject``; return its schema id (the
        existing one when the subject has it already). ``schema_id`` and
        ``version`` are the caller's choice in IMPORT mode.

        Raises:
            RegistryError: 42208 an empty or reserved subject name, or one with
                control characters; 42205 read-only, or an id outside IMPORT
                mode; 40901 incompatible; 42207 the id holds another schema;
                50001 not stored.
        """
        if not subject or subject in _RESERVED_SUBJECTS or not subject.isprintable():
            raise RegistryError(
                RegistryErrorCode.INVALID_SUBJECT,
                f"Invalid subject {subject!r}: empty, reserved or with control characters",
            )
        async with self._lock:
            self._check_writable(subject)
            importing = self.mode(subject) == "IMPORT"
            if (schema_id is not None or version is not None) and not importing:
                raise RegistryError(
                    RegistryErrorCode.OPERATION_NOT_PERMITTED,
                    f"Subject {subject} is not in import mode: a schema id or version "
                    "cannot be given",
                )
            stored = StoredSchema(
                parsed.schema_type.value, parsed.canonical, parsed.references
            )
            live = self.state.versions(subject)
            for entry in reversed(live):
                if self.state.schemas[entry.schema_id] == stored:
                    if schema_id is not None and schema_id != entry.schema_id:
                        raise RegistryError(
                            RegistryErrorCode.ID_DOES_NOT_MATCH,
                            f"Schema already registered with id {entry.schema_id} "
                            f"instead of input id {schema_id}",
                        )
                    return entry.schema_id
            if importing:
                if schema_id is not None:
                    known = self.state.schemas.get(schema_id)
                    if known is not None and known != stored:
                        raise RegistryError(
                            RegistryErrorCode.ID_DOES_NOT_MATCH,
                            f"Overwrite new schema with id {schema_id} is not "
                            "permitted.",
                        )
            else:
                messages = await self.check(subject, parsed)
                if messages:
                    raise RegistryError(
                        RegistryErrorCode.INCOMPATIBLE_SCHEMA,
                        "Schema being registered is incompatible with an earlier "
                        f'schema for subject "{subject}", details: '
                        + "; ".join(messages),
                    )
            if schema_id is None:
                schema_id = self.state.ids.get(stored, self.state.max_id + 1)
            every = self.state.versions(subject, deleted=True)
            if version is None:
                version = every[-1].version + 1 if every else 1
            elif version in self.state.subjects.get(subject, {}):
                raise RegistryError(
                    RegistryErrorCode.OPERATION_NOT_PERMITTED,
                    f"Subject {subject} already has version {version}",
                )
            value = SchemaValue(
                subject,
                version,
                schema_id,
                parsed.canonical,
                parsed.schema_type.value,
                parsed.references,
            )
            await self._write([(SchemaKey(subject, version), value)])
            return schema_id

    def _check_unreferenced(self, subject: str, version: int) -> None:
        if self.state.referenced_by(subject, version):
            raise RegistryError(
                RegistryErrorCode.REFERENCE_EXISTS,
                "One or more references exist to the schema "
                f"{{magic=1,keytype=SCHEMA,subject={subject},version={version}}}.",
            )

    async def delete_subject(self, subject: str, *, permanent: bool) -> list[int]:
        """Delete ``subject`` (soft, or ``permanent`` once soft-deleted); return the
        versions deleted.

        Raises:
            RegistryError: 40401, 40404 already soft-deleted, 40405 not
                soft-deleted before a permanent delete, 42205 read-only, 42206 a
                version is referenced.
        """
        async with self._lock:
            self._check_writable(subject)
            every = self.live_versions(subject, deleted=True)
            live = [e for e in every if not e.deleted]
            if not permanent and not live:
                raise RegistryError(
                    RegistryErrorCode.SUBJECT_SOFT_DELETED,
                    f"Subject '{subject}' was soft deleted.Set permanent=true to "
                    "delete permanently",
                )
            if permanent and live:
                raise RegistryError(
                    RegistryErrorCode.SUBJECT_NOT_SOFT_DELETED,
                    f"Subject '{subject}' was not deleted first before being "
                    "permanently deleted",
                )
            for entry in every:
                self._check_unreferenced(subject, entry.version)
            if not permanent:
                await self._write(
                    [
                        (
                            DeleteSubjectKey(subject),
                            DeleteSubjectValue(subject, every[-1].version),
                        )
                    ]
                )
                return [e.version for e in live]
            records: list[tuple[RegistryKey, RegistryValue | None]] = [
                (SchemaKey(subject, e.version), None) for e in every
            ]
            records.append((DeleteSubjectKey(subject), None))
            if subject in self.state.configs:
                records.append((ConfigKey(subject), None))
            if subject in self.state.modes:
                records.append((ModeKey(subject), None))
            await self._write(records)
            return [e.version for e in every]

    async def delete_version(
        self, subject: str, version: int | None, *, permanent: bool
    ) -> int:
        """Delete one version (``None``: the latest); return its number.

        Raises:
            RegistryError: 40401, 40402, 40406 already soft-deleted, 40407 not
                soft-deleted before a permanent delete, 42205, 42206.
        """
        async with self._lock:
            self._check_writable(subject)
            entry = self.get_version(
                subject, version, deleted=permanent or version is not None
            )
            if not permanent and entry.deleted:
                raise RegistryError(
                    RegistryErrorCode.SCHEMA_VERSION_SOFT_DELETED,
                    f"Subject '{subject}' Version {entry.version} was soft deleted."
                    "Set permanent=true to delete permanently",
                )
            if permanent and not entry.deleted:
                raise RegistryError(
                    RegistryErrorCode.SCHEMA_VERSION_NOT_SOFT_DELETED,
                    f"Subject '{subject}' Version {entry.version} was not deleted "
                    "first before being permanently deleted",
                )
            self._check_unreferenced(subject, entry.version)
            key = SchemaKey(subject, entry.version)
            if permanent:
                await self._write([(key, None)])
            else:
                stored = self.state.schemas[entry.schema_id]
                value = SchemaValue(
                    subject,
                    entry.version,
                    entry.schema_id,
                    stored.schema,
                    stored.schema_type,
                    stored.references,
                    deleted=True,
                )
                await self._write([(key, value)])
            return entry.version

    async def set_config(
        self, subject: str | None, level: object
    ) -> CompatibilityLevel:
        """Set the compatibility level of ``subject`` (``None``: global).

        Raises:
            RegistryError: 42203 an unknown level; 50001.
        """
        checked = _compatibility(level)
        async with self._lock:
            await self._write(
                [(ConfigKey(subject), ConfigValue(subject, checked.value))]
            )
        return checked

    async def delete_config(self, subject: str | None) -> CompatibilityLevel:
        """Remove ``subject``'s level (``None``: the global one, back to the
        default); return the level it had.

        Raises:
            RegistryError: 40408 a subject without its own level.
        """
        async with self._lock:
            if subject not in self.state.configs:
                if subject is not None:
                    raise RegistryError(
                        RegistryErrorCode.SUBJECT_LEVEL_COMPATIBILITY_NOT_CONFIGURED,
                        f"Subject '{subject}' does not have subject-level "
                        "compatibility configured",
                    )
                return DEFAULT_COMPATIBILITY
            previous = CompatibilityLevel(self.state.configs[subject])
            await self._write([(ConfigKey(subject), None)])
            return previous

    async def set_mode(self, subject: str | None, mode: object, *, force: bool) -> str:
        """Set the mode of ``subject`` (``None``: global). IMPORT needs an empty
        subject (globally: no subjects) unless ``force``.

        Raises:
            RegistryError: 42204 an unknown mode; 42205 IMPORT over schemas.
        """
        checked = _mode(mode)
        async with self._lock:
            if checked == "IMPORT" and not force:
                occupied = (
                    bool(self.state.subjects)
                    if subject is None
                    else bool(self.state.subjects.get(subject))
                )
                if occupied:
                    raise RegistryError(
                        RegistryErrorCode.OPERATION_NOT_PERMITTED,
                        "Cannot import since found existing subjects",
                    )
            await self._write([(ModeKey(subject), ModeValue(subject, checked))])
        return checked

    async def delete_mode(self, subject: str) -> str:
        """Remove ``subject``'s own mode; return it.

        Raises:
            RegistryError: 40409 none set.
        """
        async with self._lock:
            if subject not in self.state.modes:
                raise RegistryError(
                    RegistryErrorCode.SUBJECT_LEVEL_MODE_NOT_CONFIGURED,
                    f"Subject '{subject}' does not have subject-level mode configured",
                )
            previous = self.state.modes[subject]
            await self._write([(ModeKey(subject), None)])
            return previous

    def schema_types(self) -> list[str]:
        """The schema types served."""
        return [
            t.value for t in (SchemaType.JSON, SchemaType.PROTOBUF, SchemaType.AVRO)
        ]

    def subjects_of(self, schema_id: int, *, deleted: bool) -> Mapping[str, list[int]]:
        """subject -> versions having ``schema_id`` (soft-deleted with ``deleted``).

        Raises:
            RegistryError: 40403.
        """
        self.schema(schema_id)
        out: dict[str, list[int]] = {}
        for entry in self.state.version_uses(schema_id):
            if deleted or not entry.deleted:
                out.setdefault(entry.subject, []).append(entry.version)
        return out
