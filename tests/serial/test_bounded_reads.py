"""Readers over streams other than BytesIO read what the fields need, never the rest.

The streams here are counting stand-ins for a file (seekable) and a socket or pipe (not
seekable) that serve a short prefix followed by a large virtual tail of zero bytes, so
a 50 MB input costs no memory and every byte the reader asks for is counted.
"""

from __future__ import annotations

import io
from typing import IO, TypeVar, cast

import pytest

from kproto.schema.metadata.v0 import MetadataRequest as MetadataRequestV0
from kproto.schema.metadata.v12 import MetadataResponse
from kproto.schema.metadata.v12.response import (
    MetadataResponsePartition,
    MetadataResponseTopic,
)
from kproto.schema.sasl_authenticate.v0 import SaslAuthenticateRequest
from kproto.serial import DecodeError, encode, entity_reader

T = TypeVar("T")

LARGE = 50_000_000
#: The read-ahead of a seekable reader (kproto.serial._SEEKABLE_CHUNK).
READ_AHEAD = 64 * 1024


class CountingStream(io.RawIOBase):
    """``prefix`` then ``size - len(prefix)`` zero bytes; counts what is read."""

    def __init__(self, prefix: bytes, size: int, *, seekable: bool) -> None:
        self.prefix = prefix
        self.size = size
        self.pos = 0
        self.bytes_read = 0
        self.requests: list[int] = []
        self._seekable = seekable

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return self._seekable

    def tell(self) -> int:
        if not self._seekable:
            raise io.UnsupportedOperation("tell")
        return self.pos

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        if not self._seekable:
            raise io.UnsupportedOperation("seek")
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self.pos, io.SEEK_END: self.size}[whence]
        self.pos = base + offset
        return self.pos

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        self.requests.append(len(buffer))
        n = max(0, min(len(buffer), self.size - self.pos))
        head = self.prefix[self.pos : self.pos + n]
        buffer[: len(head)] = head
        buffer[len(head) : n] = bytes(n - len(head))
        self.pos += n
        self.bytes_read += n
        return n

    def read_entity(self, cls: type[T]) -> T:
        """One ``cls`` entity read from here by ``entity_reader``."""
        return entity_reader(cls)(cast(IO[bytes], self))


@pytest.mark.parametrize(
    "prefix, reason",
    [
        (b"\x7f\xff\xff\xff", "exceeds"),  # 2**31 - 1 topics
        (b"\xff\xff\xff\xfe", "negative length"),
    ],
)
def test_seekable_malformed_prefix_reads_at_most_the_read_ahead(
    prefix: bytes, reason: str
) -> None:
    """Before the fix, all 50,000,004 bytes were read (the chunk doubled to EOF)."""
    stream = CountingStream(prefix, LARGE + 4, seekable=True)
    with pytest.raises(DecodeError, match=reason) as info:
        stream.read_entity(MetadataRequestV0)
    assert info.value.path == "MetadataRequest.topics" and info.value.offset == 0
    assert stream.bytes_read <= READ_AHEAD + 4
    assert stream.pos == 0  # left where it started


@pytest.mark.parametrize(
    "prefix, reason",
    [
        (b"\x7f\xff\xff\xff", "ended"),
        (b"\xff\xff\xff\xfe", "negative length"),
    ],
)
def test_non_seekable_malformed_prefix_reads_only_what_fields_need(
    prefix: bytes, reason: str
) -> None:
    """A SaslAuthenticate v0 body is one int32-length bytes field: a count of
    2**31 - 1 backed by nothing is read in chunks that start at 4 KiB."""
    stream = CountingStream(prefix, 4, seekable=False)
    with pytest.raises(DecodeError, match=reason):
        stream.read_entity(SaslAuthenticateRequest)
    assert max(stream.requests) <= 4096  # was 1 MiB (262,144x the input)
    assert stream.bytes_read == 4


def test_non_seekable_lying_length_costs_about_what_arrived() -> None:
    """The length claims 2 GiB, 100,000 bytes follow: each read asks for at most
    what has arrived so far (at least 4 KiB), so no buffer outgrows the input."""
    stream = CountingStream(b"\x7f\xff\xff\xff", 100_004, seekable=False)
    with pytest.raises(DecodeError, match="ended after 100000"):
        stream.read_entity(SaslAuthenticateRequest)
    arrived = 0
    for asked in stream.requests:
        assert asked <= max(4096, arrived)
        arrived += min(asked, 100_004 - arrived)
    assert max(stream.requests) <= 100_000  # never the claimed 2 GiB, nor 1 MiB


def test_non_seekable_reads_exactly_the_entity_in_front_of_a_large_stream() -> None:
    body = encode(SaslAuthenticateRequest(auth_bytes=b"x" * 10))
    stream = CountingStream(body, LARGE, seekable=False)
    assert stream.read_entity(SaslAuthenticateRequest).auth_bytes == b"x" * 10
    assert stream.bytes_read == len(body) == 14


def _large_response(topics: int) -> MetadataResponse:
    return MetadataResponse(
        topics=tuple(
            MetadataResponseTopic(
                name=f"topic-{t:05d}",
                partitions=tuple(
                    MetadataResponsePartition(
                        partition_index=p, replica_nodes=(1, 2, 3), isr_nodes=(1, 2)
                    )
                    for p in range(4)
                ),
            )
            for t in range(topics)
        )
    )


def test_seekable_entity_longer_than_the_read_ahead() -> None:
    """The chunk doubles only after the decoder used all of it, so an entity past the
    first chunk costs at most twice its size in reads, and the stream is left just
    past it."""
    entity = _large_response(1500)
    body = encode(entity)
    assert len(body) > 2 * READ_AHEAD
    stream = CountingStream(body + b"\x01\x02", LARGE, seekable=True)
    assert stream.read_entity(MetadataResponse) == entity
    assert stream.pos == len(body)
    assert stream.bytes_read <= 2 * len(body)


def test_seekable_long_field_is_read_to_its_declared_length() -> None:
    """A 200,000-byte field past the first chunk: the read-ahead grows to exactly the
    end its length claims (which the stream holds), not by doubling to EOF."""
    body = encode(SaslAuthenticateRequest(auth_bytes=b"k" * 200_000))
    stream = CountingStream(body, LARGE, seekable=True)
    assert stream.read_entity(SaslAuthenticateRequest).auth_bytes == b"k" * 200_000
    assert stream.pos == len(body) == 200_004
    assert stream.bytes_read == len(body)


def test_seekable_truncated_entity_past_the_read_ahead() -> None:
    body = encode(_large_response(1500))
    stream = CountingStream(body[: 3 * READ_AHEAD], 3 * READ_AHEAD, seekable=True)
    with pytest.raises(DecodeError, match="only") as info:
        stream.read_entity(MetadataResponse)
    assert info.value.path.startswith("MetadataResponse.topics[")
    assert info.value.offset is not None and info.value.offset < 3 * READ_AHEAD
    assert stream.pos == 0
    assert stream.bytes_read <= 4 * READ_AHEAD
