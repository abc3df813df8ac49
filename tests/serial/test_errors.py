"""Bad input: every DecodeError and EncodeError case, with field path and byte offset."""

from __future__ import annotations

import io
import os
import uuid

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kproto.schema.api_versions.v3 import ApiVersionsRequest
from kproto.schema.metadata.v1 import MetadataRequest as MetadataRequestV1
from kproto.schema.metadata.v12 import MetadataResponse
from kproto.schema.metadata.v12.response import (
    MetadataResponseBroker,
    MetadataResponsePartition,
    MetadataResponseTopic,
)
from kproto.schema.request_header.v2 import RequestHeader
from kproto.serial import (
    DecodeError,
    EncodeError,
    decode,
    encode,
    entity_reader,
    entity_writer,
)

SAMPLE = MetadataResponse(
    throttle_time_ms=5,
    brokers=(MetadataResponseBroker(node_id=1, host="b1", port=9092, rack="r"),),
    cluster_id="cluster",
    controller_id=1,
    topics=(
        MetadataResponseTopic(
            name="t",
            topic_id=uuid.UUID(int=7),
            partitions=(
                MetadataResponsePartition(
                    partition_index=0, replica_nodes=(1, 2), isr_nodes=(1,)
                ),
            ),
        ),
    ),
)
SAMPLE_BYTES = encode(SAMPLE)


def test_errors_are_value_errors() -> None:
    assert issubclass(DecodeError, ValueError)
    assert issubclass(EncodeError, ValueError)


@pytest.mark.parametrize("cut", range(len(SAMPLE_BYTES)))
def test_every_truncation_is_a_decode_error(cut: int) -> None:
    with pytest.raises(DecodeError) as info:
        entity_reader(MetadataResponse)(io.BytesIO(SAMPLE_BYTES[:cut]))
    assert info.value.path.startswith("MetadataResponse")
    assert info.value.offset is not None and 0 <= info.value.offset <= cut


def test_truncation_names_the_field() -> None:
    # throttle_time_ms (4), brokers count (1), node_id (4), host (1 + 2), then port
    port_at = 4 + 1 + 4 + 3
    cut = port_at + 2
    with pytest.raises(
        DecodeError, match=r"MetadataResponse\.brokers\[0\]\.port"
    ) as info:
        decode(MetadataResponse, SAMPLE_BYTES[:cut])
    assert info.value.offset == port_at


def test_negative_length_other_than_null() -> None:
    # MetadataRequest v1: topics is a nullable int32-counted array; -2 is invalid.
    with pytest.raises(DecodeError, match="negative length -2") as info:
        decode(MetadataRequestV1, b"\xff\xff\xff\xfe")
    assert info.value.path == "MetadataRequest.topics" and info.value.offset == 0


def test_null_marker_is_accepted_where_nullable() -> None:
    assert decode(MetadataRequestV1, b"\xff\xff\xff\xff").topics is None


def test_length_beyond_input_allocates_nothing() -> None:
    # A compact string claiming 2**31 bytes in a 10-byte input.
    data = b"\x80\x80\x80\x80\x08" + b"abc"
    with pytest.raises(DecodeError, match="exceeds") as info:
        decode(ApiVersionsRequest, data)
    assert info.value.path == "ApiVersionsRequest.client_software_name"


def test_array_count_beyond_input() -> None:
    # MetadataRequest v1 with a claimed count of 2**31-1 topics.
    with pytest.raises(DecodeError, match="exceeds"):
        decode(MetadataRequestV1, b"\x7f\xff\xff\xff")


def test_invalid_utf8() -> None:
    with pytest.raises(DecodeError, match="invalid UTF-8") as info:
        decode(ApiVersionsRequest, b"\x03\xff\xfe\x01\x00")
    assert info.value.path == "ApiVersionsRequest.client_software_name"
    assert info.value.offset == 1


def test_overlong_varint() -> None:
    with pytest.raises(DecodeError, match="longer than 5 bytes"):
        decode(ApiVersionsRequest, b"\x80\x80\x80\x80\x80\x01")


def test_null_in_non_nullable_compact_string() -> None:
    with pytest.raises(DecodeError, match="null in a non-nullable"):
        decode(ApiVersionsRequest, b"\x00\x01\x00")


def test_tags_out_of_order() -> None:
    data = b"\x02a\x02b" + b"\x02" + b"\x05\x00" + b"\x03\x00"
    with pytest.raises(DecodeError, match="ascending"):
        decode(ApiVersionsRequest, data)


def test_tagged_field_beyond_input() -> None:
    with pytest.raises(DecodeError, match="exceeds"):
        decode(ApiVersionsRequest, b"\x01\x01\x01\x05\x7f\x00")


def test_trailing_bytes_in_decode() -> None:
    with pytest.raises(DecodeError, match="1 bytes left over"):
        decode(ApiVersionsRequest, encode(ApiVersionsRequest()) + b"\x00")


def test_offsets_count_from_the_reader_start() -> None:
    stream = io.BytesIO(b"junk" + SAMPLE_BYTES[:20])
    stream.seek(4)
    with pytest.raises(DecodeError) as info:
        entity_reader(MetadataResponse)(stream)
    assert info.value.offset is not None and info.value.offset <= 20


def test_non_seekable_stream_reads_exactly_one_entity() -> None:
    r, w = os.pipe()
    os.write(w, SAMPLE_BYTES + b"\x01\x02")
    os.close(w)
    with os.fdopen(r, "rb", buffering=0) as stream:
        assert entity_reader(MetadataResponse)(stream) == SAMPLE
        assert stream.read() == b"\x01\x02"


def test_non_seekable_stream_truncated() -> None:
    r, w = os.pipe()
    os.write(w, SAMPLE_BYTES[:30])
    os.close(w)
    with (
        os.fdopen(r, "rb", buffering=0) as stream,
        pytest.raises(DecodeError, match="ended"),
    ):
        entity_reader(MetadataResponse)(stream)


@given(st.binary(max_size=64))
def test_random_bytes_raise_only_decode_error(data: bytes) -> None:
    for cls in (MetadataResponse, ApiVersionsRequest, RequestHeader, MetadataRequestV1):
        try:
            decode(cls, data)
        except DecodeError:
            pass


# --------------------------------------------------------------------------- encoding


@pytest.mark.parametrize(
    ("entity", "path", "reason"),
    [
        (
            MetadataResponse(controller_id=2**31),
            "MetadataResponse.controller_id",
            "does not fit int32",
        ),
        (MetadataResponse(throttle_time_ms="5"), "MetadataResponse.throttle_time_ms", "needs an int"),  # type: ignore[arg-type]
        (
            MetadataResponse(brokers=(MetadataResponseBroker(host=None),)),  # type: ignore[arg-type]
            "MetadataResponse.brokers[0].host",
            "None in a non-nullable",
        ),
        (
            MetadataResponse(topics=(MetadataResponseTopic(topic_id="x"),)),  # type: ignore[arg-type]
            "MetadataResponse.topics[0].topic_id",
            "uuid needs",
        ),
        (
            MetadataResponse(
                topics=(
                    MetadataResponseTopic(
                        partitions=(MetadataResponsePartition(isr_nodes=(1, 2**40)),)
                    ),
                )
            ),
            "MetadataResponse.topics[0].partitions[0].isr_nodes[1]",
            "does not fit int32",
        ),
        (
            MetadataResponse(topics=(MetadataResponseTopic(is_internal=1),)),  # type: ignore[arg-type]
            "MetadataResponse.topics[0].is_internal",
            "bool needs a bool",
        ),
        (MetadataResponse(brokers=None), "MetadataResponse.brokers", "None in a non-nullable"),  # type: ignore[arg-type]
        (MetadataResponse(brokers="ab"), "MetadataResponse.brokers", "needs a tuple"),  # type: ignore[arg-type]
        (ApiVersionsRequest(client_software_name=b"x"), "ApiVersionsRequest.client_software_name", "needs a str"),  # type: ignore[arg-type]
        (ApiVersionsRequest(unknown_tagged_fields=((1, "x"),)), "ApiVersionsRequest.unknown_tagged_fields[0]", "pair"),  # type: ignore[arg-type]
    ],
)
def test_encode_errors_name_the_field(entity: object, path: str, reason: str) -> None:
    with pytest.raises(EncodeError, match=reason) as info:
        entity_writer(type(entity))(io.BytesIO(), entity)
    assert info.value.path == path


def test_writer_rejects_another_class() -> None:
    with pytest.raises(EncodeError, match="expected a MetadataResponse"):
        entity_writer(MetadataResponse)(io.BytesIO(), ApiVersionsRequest())  # type: ignore[arg-type]


def test_failed_write_writes_nothing() -> None:
    buf = io.BytesIO()
    with pytest.raises(EncodeError):
        entity_writer(MetadataResponse)(buf, MetadataResponse(controller_id=2**31))
    assert buf.getvalue() == b""
