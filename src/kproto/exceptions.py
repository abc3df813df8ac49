"""The errors raised by kproto's readers and writers (entities and record batches).

The bottom layer of the package: it imports nothing from kproto, so every layer
(:mod:`kproto.serial`, :mod:`kproto.records`, framing, connections, Spark) can raise
and catch these without importing another. :mod:`kproto.serial` re-exports both (the
public names ``kproto.serial.DecodeError`` and ``kproto.serial.EncodeError``); Kafka's
own error codes are :class:`kproto.errors.ErrorCode`.
"""

from __future__ import annotations

__all__ = ["DecodeError", "EncodeError"]


class DecodeError(ValueError):
    """Bytes that do not decode as the expected Kafka structure.

    Attributes:
        path: where the problem is, as a dotted field path
            (``"MetadataResponse.topics[3].name"``) or a record-batch location
            (``"batch@4096.records[2].key"``); may be empty.
        offset: the byte offset in the input at which the bad value starts, or
            ``None`` where it is not known.
        reason: what was wrong, without the location.
    """

    def __init__(
        self, reason: str, *, path: str = "", offset: int | None = None
    ) -> None:
        self.reason = reason
        self.path = path
        self.offset = offset
        where = []
        if path:
            where.append(path)
        if offset is not None:
            where.append(f"byte offset {offset}")
        super().__init__(f"{reason} (at {', '.join(where)})" if where else reason)


class EncodeError(ValueError):
    """A value that cannot be written as its Kafka field type.

    Attributes:
        path: the dotted field path of the offending value
            (``"ProduceRequest.topic_data[0].name"``).
        reason: what was wrong, without the location.
    """

    def __init__(self, reason: str, *, path: str = "") -> None:
        self.reason = reason
        self.path = path
        super().__init__(f"{reason} (at {path})" if path else reason)
