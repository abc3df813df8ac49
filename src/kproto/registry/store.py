"""The registry's state, rebuilt from the ``_schemas`` records.

:class:`RegistryState` holds what Confluent's ``InMemoryCache`` and
``LookupCache`` hold: subjects and their versions, schemas by id (one id per
distinct (type, text, references): the same schema in two subjects shares its id),
configs and modes, and who references what. It changes only through
:meth:`RegistryState.apply`, called for each record on replay at start and for
each record the registry has just stored, so a restarted registry is the one
that stopped (Confluent's ``KafkaStoreMessageHandler``).
"""

from __future__ import annotations

import hashlib
import logging
import sys
import uuid
from collections.abc import Iterable

import attrs

from kproto.registry.records import (
    ClearSubjectKey,
    ConfigKey,
    ConfigValue,
    DeleteSubjectKey,
    DeleteSubjectValue,
    ModeKey,
    ModeValue,
    NoopKey,
    RecordError,
    RegistryKey,
    RegistryValue,
    SchemaKey,
    SchemaValue,
    decode_key,
    decode_value,
)
from kproto.registry.schemas import SchemaReference

__all__ = ["RegistryState", "StoredSchema", "SubjectVersion"]

log = logging.getLogger("kproto.registry")


@attrs.frozen
class StoredSchema:
    """A schema as stored: its type, text and references (what makes an id)."""

    schema_type: str
    schema: str
    references: tuple[SchemaReference, ...] = ()

    @property
    def guid(self) -> str:
        """The schema's GUID (a UUID string): the MD5 of its type, text and
        references, so that one schema has one GUID in every registry and after
        every restart (the form of Confluent's ``guid``, KIP-less; its derivation
        is ours)."""
        digest = hashlib.md5(usedforsecurity=False)
        digest.update(self.schema_type.encode())
        digest.update(b"\0")
        digest.update(self.schema.encode())
        for ref in self.references:
            digest.update(f"\0{ref.name}\0{ref.subject}\0{ref.version}".encode())
        return str(uuid.UUID(bytes=digest.digest()))


@attrs.define(slots=True)
class SubjectVersion:
    """One version of a subject."""

    subject: str
    version: int
    schema_id: int
    deleted: bool = False


class RegistryState:
    """Subjects, versions, schemas, configs and modes (see the module docstring).

    Attributes:
        schemas: schema id -> :class:`StoredSchema`, for ids some version (live
            or soft-deleted) has.
        ids: :class:`StoredSchema` -> its id.
        subjects: subject -> {version -> :class:`SubjectVersion`}, versions in
            increasing order.
        configs: subject (``None``: global) -> compatibility level.
        modes: subject (``None``: global) -> mode.
        max_id: the largest id ever seen (new ids are above it, never reused).
    """

    def __init__(self) -> None:
        self.schemas: dict[int, StoredSchema] = {}
        self.ids: dict[StoredSchema, int] = {}
        self.subjects: dict[str, dict[int, SubjectVersion]] = {}
        self.configs: dict[str | None, str] = {}
        self.modes: dict[str | None, str] = {}
        self.max_id = 0
        # schema id -> the versions that have it
        self._uses: dict[int, tuple[SubjectVersion, ...]] = {}
        # (subject, version) referenced -> ids of the schemas referencing it
        self._referrers: dict[tuple[str, int], set[int]] = {}
        # GUID -> schema id, built on the first GUID lookup, dropped on a change
        self._guids: dict[str, int] | None = None

    # ------------------------------------------------------------------ replay

    def replay(self, records: Iterable[tuple[bytes | None, bytes | None]]) -> int:
        """Apply stored records in offset order; return how many were skipped
        (undecodable or unknown keys, logged once each at WARNING)."""
        skipped = 0
        for key_bytes, value_bytes in records:
            try:
                key = decode_key(key_bytes or b"")
                if key is None:
                    skipped += 1
                    continue
                value = None if value_bytes is None else decode_value(key, value_bytes)
            except RecordError as exc:
                log.warning("_schemas: skipping a record: %s", exc)
                skipped += 1
                continue
            self.apply(key, value)
        return skipped

    def apply(self, key: RegistryKey, value: RegistryValue | None) -> None:
        """Apply one record (``value`` ``None``: a tombstone)."""
        self._guids = None
        if isinstance(key, SchemaKey):
            if isinstance(value, SchemaValue):
                self._put_version(value)
            else:
                self._drop_version(key.subject, key.version)
        elif isinstance(key, ConfigKey):
            if isinstance(value, ConfigValue):
                self.configs[key.subject] = value.compatibility_level
            else:
                self.configs.pop(key.subject, None)
        elif isinstance(key, ModeKey):
            if isinstance(value, ModeValue):
                self.modes[key.subject] = value.mode
            else:
                self.modes.pop(key.subject, None)
        elif isinstance(key, DeleteSubjectKey):
            if isinstance(value, DeleteSubjectValue):
                for entry in self.subjects.get(key.subject, {}).values():
                    if entry.version <= value.version:
                        entry.deleted = True
        elif isinstance(key, ClearSubjectKey):
            if value is not None:
                for version in list(self.subjects.get(key.subject, {})):
                    self._drop_version(key.subject, version)
        elif not isinstance(key, NoopKey):  # pragma: no cover - exhaustive
            raise TypeError(f"unknown key {key!r}")

    def _put_version(self, value: SchemaValue) -> None:
        subject = sys.intern(value.subject)  # one string per subject, not per version
        stored = StoredSchema(value.schema_type, value.schema, value.references)
        versions = self.subjects.setdefault(subject, {})
        entry = versions.get(value.version)
        if entry is not None and entry.schema_id != value.id:
            self._unuse(entry)
            entry = None
        if self.schemas.get(value.id) is None:
            self.schemas[value.id] = stored
            for ref in stored.references:
                self._referrers.setdefault((ref.subject, ref.version), set()).add(
                    value.id
                )
        self.ids.setdefault(stored, value.id)
        self.max_id = max(self.max_id, value.id)
        if entry is not None:
            entry.deleted = value.deleted
            return
        last = next(reversed(versions), 0)
        entry = SubjectVersion(subject, value.version, value.id, value.deleted)
        versions[value.version] = entry
        if value.version < last:  # an import out of order: keep versions sorted
            self.subjects[subject] = dict(sorted(versions.items()))
        self._uses[value.id] = (*self._uses.get(value.id, ()), entry)

    def _drop_version(self, subject: str, version: int) -> None:
        versions = self.subjects.get(subject)
        if versions is None:
            return
        entry = versions.pop(version, None)
        if not versions:
            del self.subjects[subject]
        if entry is not None:
            self._unuse(entry)

    def _unuse(self, entry: SubjectVersion) -> None:
        """``entry`` no longer holds its schema id; an id no version holds is
        forgotten (its number is not reused: :attr:`max_id` stays)."""
        schema_id = entry.schema_id
        uses = tuple(e for e in self._uses.get(schema_id, ()) if e is not entry)
        if uses:
            self._uses[schema_id] = uses
            return
        self._uses.pop(schema_id, None)
        stored = self.schemas.pop(schema_id, None)
        if stored is None:
            return
        if self.ids.get(stored) == schema_id:
            del self.ids[stored]
        for ref in stored.references:
            referrers = self._referrers.get((ref.subject, ref.version))
            if referrers is not None:
                referrers.discard(schema_id)
                if not referrers:
                    del self._referrers[(ref.subject, ref.version)]

    # ------------------------------------------------------------------ queries

    def versions(self, subject: str, *, deleted: bool = False) -> list[SubjectVersion]:
        """The subject's versions, oldest first (soft-deleted ones with ``deleted``)."""
        entries = self.subjects.get(subject, {}).values()
        return [e for e in entries if deleted or not e.deleted]

    def version_uses(self, schema_id: int) -> list[SubjectVersion]:
        """Every (live or soft-deleted) version with ``schema_id``, by subject and
        version."""
        uses = self._uses.get(schema_id, ())
        return sorted(uses, key=lambda e: (e.subject, e.version))

    def by_guid(self, guid: str) -> int | None:
        """The id of the schema with ``guid``, if any (an index built on the first
        call after a change)."""
        if self._guids is None:
            self._guids = {stored.guid: i for i, stored in self.schemas.items()}
        return self._guids.get(guid)

    def referenced_by(self, subject: str, version: int) -> list[int]:
        """Ids of schemas with a live version that reference ``subject``/``version``
        (Confluent's ``/referencedby``), increasing."""
        out = []
        for schema_id in sorted(self._referrers.get((subject, version), ())):
            if any(not e.deleted for e in self.version_uses(schema_id)):
                out.append(schema_id)
        return out
