"""The records the group coordinator writes to ``__consumer_offsets``.

Shapes follow Kafka's ``GroupCoordinatorRecordSerde`` (group-coordinator module): a
record's key is an int16 record type (the key's JSON ``apiKey``: 1 for
``OffsetCommitKey``, 2 for ``GroupMetadataKey``; 0 is the legacy offset-commit key)
followed by the key entity; its value is an int16 value version followed by the value
entity, or null for a tombstone. kproto's generated classes carry the record type as
the key's version (``data_type("OffsetCommitKey", 1)``), so
:func:`kproto.spark.decode_internal_topic` decodes these records unchanged.

Versions written, as Kafka 3.x/4.x writes them: ``OffsetCommitValue`` v3 (v1 when an
expire timestamp is set: OffsetCommit v2-v4 with a retention time) and
``GroupMetadataValue`` v3.
"""

from __future__ import annotations

import io
import struct
from collections.abc import Iterable, Mapping
from typing import Any

import attrs

from kproto.index import data_type
from kproto.internal_topics import key_messages
from kproto.meta import WIRE, build_entity
from kproto.records import RecordBatch
from kproto.serial import DecodeError, entity_reader, entity_writer

from .group import CommittedOffset

__all__ = [
    "GROUP_METADATA_VALUE_VERSION",
    "OFFSETS_TOPIC",
    "OFFSET_COMMIT_VALUE_VERSION",
    "CoordinatorRecord",
    "GroupRecord",
    "ModernRecords",
    "OffsetRecord",
    "Pair",
    "batch_records",
    "decode_record",
    "encode_versioned",
    "group_metadata_record",
    "offset_commit_record",
    "partition_entries",
    "read_versioned",
]

OFFSETS_TOPIC = "__consumer_offsets"
OFFSET_COMMIT_KEY_TYPE = 1
GROUP_METADATA_KEY_TYPE = 2
OFFSET_COMMIT_VALUE_VERSION = 3
GROUP_METADATA_VALUE_VERSION = 3

_INT16 = struct.Struct(">h")
#: One record's (key, value) bytes; value ``None``: a tombstone.
Pair = tuple[bytes, bytes | None]


def encode_versioned(cls: type, version: int, fields: dict[str, Any]) -> bytes:
    """``version`` as an int16, then the entity of ``cls`` holding ``fields``: a
    coordinator record's key or value (Kafka's ``CoordinatorRecordSerde``)."""
    return _write(cls, version, cls(**fields))


def _write(cls: type, version: int, entity: Any) -> bytes:
    """``version`` as an int16, then ``entity`` (of ``cls``)."""
    buf = io.BytesIO()
    buf.write(_INT16.pack(version))
    entity_writer(cls)(buf, entity)
    return buf.getvalue()


def offset_commit_record(
    group_id: str, topic: str, partition: int, value: CommittedOffset | None
) -> Pair:
    """The (key, value) of one committed offset; ``value`` ``None`` is a tombstone.

    The value is ``OffsetCommitValue`` v3, or v1 (no leader epoch) when it has an
    expire timestamp, as Kafka's ``GroupCoordinatorRecordHelpers`` chooses.
    """
    key_cls = data_type("OffsetCommitKey", OFFSET_COMMIT_KEY_TYPE)
    key = encode_versioned(
        key_cls,
        OFFSET_COMMIT_KEY_TYPE,
        {"group": group_id, "topic": topic, "partition": partition},
    )
    if value is None:
        return key, None
    fields = {
        "offset": value.offset,
        "metadata": value.metadata,
        "commit_timestamp": value.commit_timestamp,
    }
    if value.expire_timestamp >= 0:
        version = 1
        fields["expire_timestamp"] = value.expire_timestamp
    else:
        version = OFFSET_COMMIT_VALUE_VERSION
        fields["leader_epoch"] = value.leader_epoch
    return key, encode_versioned(
        data_type("OffsetCommitValue", version), version, fields
    )


def group_metadata_record(group_id: str, value: dict[str, Any] | None) -> Pair:
    """The (key, value) of a group's metadata; ``value`` ``None`` is a tombstone.

    ``value`` holds the ``GroupMetadataValue`` fields, ``members`` as a list of dicts
    of ``GroupMetadataValue``'s ``MemberMetadata`` fields.
    """
    key_cls = data_type("GroupMetadataKey", GROUP_METADATA_KEY_TYPE)
    key = encode_versioned(key_cls, GROUP_METADATA_KEY_TYPE, {"group": group_id})
    if value is None:
        return key, None
    value_cls = data_type("GroupMetadataValue", GROUP_METADATA_VALUE_VERSION)
    entity = attrs.fields_dict(value_cls)["members"].metadata[WIRE].element.entity
    fields = dict(value)
    fields["members"] = tuple(entity(**m) for m in value["members"])
    return key, encode_versioned(value_cls, GROUP_METADATA_VALUE_VERSION, fields)


@attrs.frozen
class OffsetRecord:
    """A decoded offset commit: ``value`` ``None`` for a tombstone."""

    group_id: str
    topic: str
    partition: int
    value: CommittedOffset | None


@attrs.frozen
class GroupRecord:
    """A decoded group metadata record: ``value`` is the ``GroupMetadataValue``
    entity, ``None`` for a tombstone."""

    group_id: str
    value: Any


def read_versioned(name: str, version: int, data: bytes) -> Any:
    """The ``name`` entity at ``version`` after the int16 version prefix of ``data``."""
    stream = io.BytesIO(data)
    stream.seek(2)
    return entity_reader(data_type(name, version))(stream)


def decode_record(key: bytes | None, value: bytes | None) -> OffsetRecord | GroupRecord:
    """Decode one ``__consumer_offsets`` record (any version Kafka writes).

    Raises:
        DecodeError: a missing or short key, an unknown key type or value version,
            or bytes that do not decode as the entity they claim to be.
    """
    if key is None or len(key) < 2:
        raise DecodeError("__consumer_offsets record without a key version")
    (key_type,) = _INT16.unpack_from(key)
    value_version = None if value is None else _value_version(value)
    try:
        if key_type in (0, 1):
            k = read_versioned("OffsetCommitKey", key_type, key)
            if value is None:
                return OffsetRecord(k.group, k.topic, k.partition, None)
            v = read_versioned("OffsetCommitValue", value_version or 0, value)
            committed = CommittedOffset(
                v.offset,
                getattr(v, "leader_epoch", -1),
                v.metadata,
                v.commit_timestamp,
                getattr(v, "expire_timestamp", -1),
            )
            return OffsetRecord(k.group, k.topic, k.partition, committed)
        if key_type == 2:
            k = read_versioned("GroupMetadataKey", 2, key)
            if value is None:
                return GroupRecord(k.group, None)
            return GroupRecord(
                k.group, read_versioned("GroupMetadataValue", value_version or 0, value)
            )
    except LookupError as exc:
        raise DecodeError(f"__consumer_offsets record: {exc}") from exc
    raise DecodeError(f"__consumer_offsets record with unknown key type {key_type}")


def _value_version(value: bytes) -> int:
    if len(value) < 2:
        raise DecodeError("__consumer_offsets value without a version")
    return int(_INT16.unpack_from(value)[0])


def batch_records(batch: RecordBatch) -> Iterable[tuple[bytes | None, bytes | None]]:
    """The (key, value) pairs of a non-control batch (control batches yield none)."""
    if batch.is_control:
        return ()
    return [(r.key, r.value) for r in batch.records]


@attrs.frozen
class CoordinatorRecord:
    """A decoded consumer (KIP-848) or streams (KIP-1071) group record: ``name``
    (``ConsumerGroupMetadata``, ``StreamsGroupTopology``...), its key entity and
    value entity (``None``: a tombstone)."""

    name: str
    key: Any
    value: Any

    @property
    def group_id(self) -> str:
        return str(self.key.group_id)

    @property
    def replay_key(self) -> tuple[str, str, str]:
        """``(name, group_id, member_id or "")``: the last record of each wins."""
        return self.name, self.group_id, str(getattr(self.key, "member_id", ""))


@attrs.frozen
class ModernRecords:
    """The ``__consumer_offsets`` records of one modern group type, as Kafka's
    ``GroupCoordinatorRecordHelpers`` write them: every ``__consumer_offsets``
    record type whose name starts with ``prefix`` (``ConsumerGroup``,
    ``StreamsGroup``; :func:`kproto.internal_topics.key_messages`, from the
    generated index) but the ``ignored`` ones. ``key_types`` maps each key type to
    the record name (``<name>Key`` at that version, ``<name>Value`` v0)."""

    prefix: str
    ignored: frozenset[str] = frozenset()
    key_types: Mapping[int, str] = attrs.field(init=False)

    @key_types.default
    def _key_types(self) -> dict[int, str]:
        return {
            t: name
            for t, key in key_messages(OFFSETS_TOPIC).items()
            if (name := key[: -len("Key")]).startswith(self.prefix)
            and name not in self.ignored
        }

    def record(
        self, name: str, key: dict[str, Any], value: dict[str, Any] | None
    ) -> Pair:
        """The (key, value) of record ``name``; nested structs as dicts, arrays
        as lists (:func:`kproto.meta.build_entity`); ``value`` None: a tombstone."""
        (key_type,) = (t for t, n in self.key_types.items() if n == name)
        key_bytes = _encode_built(f"{name}Key", key_type, key)
        if value is None:
            return key_bytes, None
        return key_bytes, _encode_built(f"{name}Value", 0, value)

    def member_record(
        self, name: str, group_id: str, member_id: str, value: dict[str, Any] | None
    ) -> Pair:
        """The (key, value) of record ``name``, keyed by group and member id."""
        key = {"group_id": group_id, "member_id": member_id}
        return self.record(name, key, value)

    def member_tombstones(self, group_id: str, member_id: str) -> list[Pair]:
        """Tombstones of a member's current assignment, target assignment and
        metadata (Kafka's ``removeMember`` records)."""
        return [
            self.member_record(f"{self.prefix}{name}", group_id, member_id, None)
            for name in (
                "CurrentMemberAssignment",
                "TargetAssignmentMember",
                "MemberMetadata",
            )
        ]

    def decode(self, key: bytes, value: bytes | None) -> CoordinatorRecord | None:
        """Decode one of these records; None for another key type.

        Raises:
            DecodeError: bytes that do not decode as the record they claim to be.
        """
        if len(key) < 2:
            raise DecodeError("__consumer_offsets record without a key version")
        (key_type,) = _INT16.unpack_from(key)
        name = self.key_types.get(key_type)
        if name is None:
            return None
        try:
            k = read_versioned(f"{name}Key", key_type, key)
            if value is None:
                return CoordinatorRecord(name, k, None)
            v = read_versioned(f"{name}Value", _value_version(value), value)
        except LookupError as exc:
            raise DecodeError(f"__consumer_offsets {name} record: {exc}") from exc
        return CoordinatorRecord(name, k, v)


def partition_entries(
    held: Mapping[Any, frozenset[int]], id_field: str
) -> list[dict[str, Any]]:
    """``[{id_field: key, "partitions": [...]}]`` of the non-empty entries of
    ``held`` (topic id or subtopology id -> partitions), in key order: an
    assignment as the consumer and streams records write it."""
    return [
        {id_field: key, "partitions": sorted(parts)}
        for key, parts in sorted(held.items(), key=lambda kv: str(kv[0]))
        if parts
    ]


def _encode_built(name: str, version: int, fields: dict[str, Any]) -> bytes:
    cls = data_type(name, version)
    return _write(cls, version, build_entity(cls, fields))
