"""The record types of Kafka's coordinator topics, from the generated classes.

A record of ``__consumer_offsets`` (the group coordinator), ``__transaction_state``
(the transaction coordinator) or ``__share_group_state`` (the share coordinator)
has a key that starts with an int16 record type and a value that starts with an
int16 version (Kafka's ``CoordinatorRecordSerde``). The record type names the key
message, and the value message is the key's name with ``Value`` for ``Key``.

The code generator numbers each ``coordinator-key`` message's version as its
record type (``ConsumerGroupMetadataKey`` is version 3, as Kafka's
``CoordinatorRecordType.CONSUMER_GROUP_METADATA``), so the types here are read from
:mod:`kproto.index`, not listed by hand: a new record type in Kafka's JSON files
appears after ``make build-schema``. One home for ``kproto dump-log``'s decoders
and :func:`kproto.spark.decode_internal_topic`.
"""

from __future__ import annotations

from functools import cache
from typing import Final

__all__ = [
    "COORDINATOR_TOPICS",
    "key_messages",
    "value_message",
]

#: The coordinator topics :func:`key_messages` knows.
COORDINATOR_TOPICS: Final = (
    "__consumer_offsets",
    "__transaction_state",
    "__share_group_state",
)

# Record types of the transaction and share coordinators (their own
# CoordinatorRecordType enums, numbered from 0 again).
_TRANSACTION_KEYS: Final = {0: "TransactionLogKey"}
_SHARE_STATE_KEYS: Final = {0: "ShareSnapshotKey", 1: "ShareUpdateKey"}


@cache
def _group_keys() -> dict[int, str]:
    """Every ``coordinator-key`` message of the generated index with a record
    type, but the transaction and share-state coordinators' own; record type 1 is
    ``OffsetCommitKey`` (a ``data`` message in older schema files)."""
    from kproto.index import _DATA, data_type
    from kproto.meta import entity_info

    others = set(_TRANSACTION_KEYS.values()) | set(_SHARE_STATE_KEYS.values())
    out: dict[int, str] = {1: "OffsetCommitKey"}
    for name, (_, _, lo, _) in sorted(_DATA.items()):
        if not name.endswith("Key") or name in others:
            continue
        info = entity_info(data_type(name, lo))
        if info.message_type == "coordinator-key" and info.api_key is not None:
            out.setdefault(info.api_key, name)
    return dict(sorted(out.items()))


def key_messages(topic: str) -> dict[int, str]:
    """``{record type: key message name}`` of a coordinator topic (a copy), e.g.
    ``key_messages("__consumer_offsets")[3] == "ConsumerGroupMetadataKey"``. The
    key message's generated version equals its record type
    (``data_type(name, record_type)``).

    Raises:
        ValueError: ``topic`` is not one of :data:`COORDINATOR_TOPICS`.
    """
    if topic == "__consumer_offsets":
        return dict(_group_keys())
    if topic == "__transaction_state":
        return dict(_TRANSACTION_KEYS)
    if topic == "__share_group_state":
        return dict(_SHARE_STATE_KEYS)
    raise ValueError(
        f"{topic!r} is not a coordinator topic (known: {', '.join(COORDINATOR_TOPICS)})"
    )


def value_message(key_message: str) -> str:
    """The value message of a key message: ``OffsetCommitKey`` ->
    ``OffsetCommitValue`` (Kafka's ``CoordinatorRecordType`` pairs them so)."""
    return key_message[: -len("Key")] + "Value"
