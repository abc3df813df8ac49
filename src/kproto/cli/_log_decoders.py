"""The record decoders of ``kafka-dump-log.sh``, for ``kproto dump-log``.

Kafka's ``DumpLogSegments`` has four parsers for internal topics; each turns a
record into the ``key: ...`` and ``payload: ...`` texts it prints:

* ``--offsets-decoder`` (``__consumer_offsets``, ``OffsetsMessageParser``),
  ``--transaction-log-decoder`` (``__transaction_state``,
  ``TransactionLogMessageParser``) and ``--share-group-state-decoder``
  (``__share_group_state``, ``ShareGroupStateMessageParser``): coordinator
  records, an int16 record type then the key, an int16 version then the value.
  The key prints as ``{"type":"<record type>","data":{...}}``, the value as
  ``{"version":"<version>","data":{...}}`` or ``<DELETE>`` for a tombstone. For a
  ``GroupMetadataValue`` of protocol type ``consumer`` each member's
  ``subscription`` and ``assignment`` bytes are decoded too (as
  ``ConsumerProtocolSubscription``/``ConsumerProtocolAssignment``; kept as base64
  when they do not decode).
* ``--cluster-metadata-decoder`` (``__cluster_metadata``,
  ``ClusterMetadataLogMessageParser``): no key; the value is framed as Kafka's
  ``MetadataRecordSerde`` writes it (unsigned varints: frame version 1, record
  type, record version; then the record) and prints as
  ``{"type":"TOPIC_RECORD","version":0,"data":{...}}``.

The ``data`` objects are Kafka's generated JSON converters' output
(:func:`kproto.json.to_kafka_json`). A record that does not decode prints Kafka's
``Error at offset N, skipping. <why>`` (or ``Unknown record type T at offset N,
skipping.``) in place of the key, so one bad record never stops the dump.
"""

from __future__ import annotations

import io
import json
import re
import struct
from collections.abc import Callable
from typing import Any, Final

from kproto.index import UnknownMessageError, data_type, metadata_record_type
from kproto.internal_topics import key_messages, value_message
from kproto.json import to_kafka_json
from kproto.meta import entity_info
from kproto.records import ControlRecordType, Record
from kproto.serial import DecodeError, entity_reader

__all__ = [
    "DECODERS",
    "DECODER_FOR_TOPIC",
    "Decoded",
    "control_record_text",
    "decode_record",
    "decoded_json",
]

#: A record's printed key and payload (``None``: not printed).
Decoded = tuple[str | None, str | None]

_INT16: Final = struct.Struct(">h")

#: Decoder name (the kafka-dump-log.sh flag without ``--``/``-decoder``) -> the
#: internal topic it is auto-chosen for.
DECODER_FOR_TOPIC: Final = {
    "__consumer_offsets": "offsets",
    "__transaction_state": "transaction-log",
    "__cluster_metadata": "cluster-metadata",
    "__share_group_state": "share-group-state",
}
DECODERS: Final = tuple(DECODER_FOR_TOPIC.values())


def _compact(value: Any) -> str:
    """Jackson's ``JsonNode.toString()``: no spaces, non-ASCII kept."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _read_all(cls: type, data: bytes, start: int) -> Any:
    """Decode ``data[start:]`` as one ``cls``; trailing bytes are an error."""
    stream = io.BytesIO(data)
    stream.seek(start)
    entity = entity_reader(cls)(stream)
    left = len(data) - stream.tell()
    if left:
        raise DecodeError(f"{left} bytes left over after {cls.__name__}")
    return entity


def _version_prefixed(name: str, data: bytes) -> Any:
    """``MessageUtil.toVersionPrefixedBytes`` read back: int16 version, message."""
    if len(data) < 2:
        raise DecodeError(f"{name}: {len(data)} bytes, no int16 version")
    (version,) = _INT16.unpack_from(data)
    return version, _read_all(data_type(name, version), data, 2)


def _embedded(data: Any, name: str) -> Any:
    """A consumer-protocol blob decoded to Kafka JSON, else the base64 kept."""
    if not isinstance(data, bytes | bytearray | memoryview):
        return None
    try:
        _, entity = _version_prefixed(name, bytes(data))
    except (DecodeError, LookupError, ValueError, EOFError):
        return None
    return to_kafka_json(entity)


def _group_metadata_json(entity: Any) -> dict[str, Any]:
    """``OffsetsMessageParser.prepareGroupMetadataValue``: consumer members'
    subscription and assignment decoded in place."""
    out = to_kafka_json(entity)
    if out.get("protocolType") != "consumer":
        return out
    for member, source in zip(out.get("members") or [], entity.members, strict=False):
        for field, name in (
            ("subscription", "ConsumerProtocolSubscription"),
            ("assignment", "ConsumerProtocolAssignment"),
        ):
            decoded = _embedded(getattr(source, field, None), name)
            if decoded is not None and field in member:
                member[field] = decoded
    return out


class _CoordinatorParser:
    """Kafka's ``CoordinatorRecordMessageParser`` over one coordinator's records."""

    def __init__(self, keys: Callable[[], dict[int, str]]) -> None:
        self._keys_source = keys
        self._keys: dict[int, str] | None = None

    def keys(self) -> dict[int, str]:
        if self._keys is None:
            self._keys = self._keys_source()
        return self._keys

    def __call__(self, record: Record) -> Decoded:
        if record.key is None:
            return (
                f"Failed to decode message at offset {record.offset} using the "
                "specified decoder (message had a missing key)",
                None,
            )
        key = bytes(record.key)
        try:
            if len(key) < 2:
                raise DecodeError(f"key of {len(key)} bytes has no int16 record type")
            (record_type,) = _INT16.unpack_from(key)
            name = self.keys().get(record_type)
            if name is None:
                return (
                    f"Unknown record type {record_type} at offset {record.offset}, "
                    "skipping.",
                    None,
                )
            # A key's schema version is its record type (OffsetCommitKey: 1).
            key_entity = _read_all(data_type(name, record_type), key, 2)
            key_text = _compact(
                {"type": str(record_type), "data": to_kafka_json(key_entity)}
            )
            if record.value is None:
                return key_text, "<DELETE>"
            value_name = value_message(name)
            version, value = _version_prefixed(value_name, bytes(record.value))
            data = (
                _group_metadata_json(value)
                if value_name == "GroupMetadataValue"
                else to_kafka_json(value)
            )
            return key_text, _compact({"version": str(version), "data": data})
        except (DecodeError, LookupError, ValueError, EOFError) as exc:
            return f"Error at offset {record.offset}, skipping. {exc}", None


def _uvarint(data: bytes, pos: int, what: str) -> tuple[int, int]:
    """An unsigned varint of at most 5 bytes at ``pos``: ``(value, next pos)``."""
    value = shift = 0
    for i in range(5):
        if pos + i >= len(data):
            raise DecodeError(f"{what}: the value ends inside a varint")
        byte = data[pos + i]
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, pos + i + 1
        shift += 7
    raise DecodeError(f"{what}: a varint longer than 5 bytes")


def _upper_snake(name: str) -> str:
    """``MetadataRecordType`` constant names: ``TopicRecord`` -> ``TOPIC_RECORD``."""
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).upper()


def _cluster_metadata(record: Record) -> Decoded:
    """``ClusterMetadataLogMessageParser``: the value only, Kafka's framing."""
    try:
        if record.value is None:
            raise DecodeError("a metadata record without a value")
        data = bytes(record.value)
        frame, pos = _uvarint(data, 0, "frame version")
        if frame != 1:
            raise DecodeError(
                f"Could not deserialize metadata record due to unknown frame "
                f"version {frame}(must be 1)"
            )
        record_type, pos = _uvarint(data, pos, "record type")
        version, pos = _uvarint(data, pos, "record version")
        cls = metadata_record_type(record_type, version)
        entity = _read_all(cls, data, pos)
        text = _compact(
            {
                "type": _upper_snake(entity_info(cls).message),
                "version": version,
                "data": to_kafka_json(entity),
            }
        )
    except (DecodeError, UnknownMessageError, LookupError, ValueError, EOFError) as exc:
        text = f"Error at {record.offset}, skipping. {exc}"
    return None, text


_PARSERS: Final[dict[str, Callable[[Record], Decoded]]] = {
    "offsets": _CoordinatorParser(lambda: key_messages("__consumer_offsets")),
    "transaction-log": _CoordinatorParser(lambda: key_messages("__transaction_state")),
    "share-group-state": _CoordinatorParser(
        lambda: key_messages("__share_group_state")
    ),
    "cluster-metadata": _cluster_metadata,
}


def decode_record(decoder: str, record: Record) -> Decoded:
    """``(key text, payload text)`` of ``record`` as ``decoder`` prints them
    (one of :data:`DECODERS`); ``None`` parts are not printed."""
    return _PARSERS[decoder](record)


def decoded_json(decoder: str, record: Record) -> dict[str, Any]:
    """``{"key": ..., "value": ...}`` for ``dump-log --json``: what ``decoder``
    prints, JSON texts as objects, other texts (``<DELETE>``, ``Error at ...``) as
    strings, a part not printed as null."""

    def parse(text: str | None) -> Any:
        if text is None or not text.startswith("{"):
            return text
        return json.loads(text)

    key, value = decode_record(decoder, record)
    return {"key": parse(key), "value": parse(value)}


#: Control record type -> (label, message) as ``DumpLogSegments.printControlRecord``.
_CONTROL_MESSAGES: Final[dict[int, tuple[str, str]]] = {
    ControlRecordType.LEADER_CHANGE: (" LeaderChange: ", "LeaderChangeMessage"),
    ControlRecordType.SNAPSHOT_HEADER: (" SnapshotHeader ", "SnapshotHeaderRecord"),
    ControlRecordType.SNAPSHOT_FOOTER: (" SnapshotFooter ", "SnapshotFooterRecord"),
    ControlRecordType.KRAFT_VERSION: (" KRaftVersion ", "KRaftVersionRecord"),
    ControlRecordType.KRAFT_VOTERS: (" KRaftVoters ", "VotersRecord"),
}


def control_record_text(ctype: int, value: bytes | None) -> str | None:
    """The JSON Kafka prints for a KRaft control record (``LeaderChange: {...}``),
    or ``None`` when ``ctype`` is not one or its value does not decode."""
    found = _CONTROL_MESSAGES.get(int(ctype))
    if found is None or value is None:
        return None
    label, name = found
    try:
        _, entity = _version_prefixed(name, bytes(value))
    except (DecodeError, LookupError, ValueError, EOFError):
        return None
    return label + _compact(to_kafka_json(entity))
