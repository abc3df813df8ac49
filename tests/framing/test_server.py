"""The server side of framing: decode_request and encode_response (byte-exact)."""

from __future__ import annotations

import pytest

from kproto.framing import (
    RequestDecodeError,
    UnsupportedRequestError,
    decode_request,
    decode_response,
    encode_request,
    encode_response,
    peek_request_header,
)
from kproto.schema.api_versions.v3 import ApiVersionsRequest, ApiVersionsResponse
from kproto.schema.metadata.v1 import MetadataRequest as MetadataRequestV1
from kproto.schema.metadata.v12 import MetadataRequest, MetadataResponse
from kproto.schema.request_header.v2 import RequestHeader
from kproto.serial import EncodeError


def test_decode_request_roundtrips_encode_request() -> None:
    frame = encode_request(
        MetadataRequest(topics=None), correlation_id=9, client_id="c"
    )
    header, request = decode_request(frame[4:])
    assert header == RequestHeader(
        request_api_key=3, request_api_version=12, correlation_id=9, client_id="c"
    )
    assert request == MetadataRequest(topics=None)


def test_encode_response_golden_api_versions_uses_header_v0() -> None:
    # ApiVersionsResponse v3 is flexible but always has ResponseHeader v0 (no tag
    # section): size 12, correlation id 3, error_code 0, api_keys [] (compact: 1),
    # throttle_time_ms 0, no tagged fields.
    frame = encode_request(ApiVersionsRequest(), correlation_id=3, client_id="c")
    header, _ = decode_request(frame[4:])
    assert encode_response(header, ApiVersionsResponse()).hex() == (
        "0000000c" "00000003" "0000" "01" "00000000" "00"
    )


def test_encode_response_then_decode_response() -> None:
    header, _ = decode_request(
        encode_request(MetadataRequest(topics=None), correlation_id=41, client_id=None)[
            4:
        ]
    )
    response = MetadataResponse(controller_id=2)
    frame = encode_response(header, response)
    # flexible: ResponseHeader v1 = correlation id + empty tag section
    assert frame[4:9].hex() == "0000002900"
    assert (
        decode_response(MetadataResponse, frame[4:], expected_correlation_id=41)
        == response
    )


def test_unsupported_version_keeps_header_head() -> None:
    with pytest.raises(UnsupportedRequestError) as info:
        decode_request(bytes.fromhex("0003006300000007"))
    assert (info.value.api_key, info.value.api_version, info.value.correlation_id) == (
        3,
        99,
        7,
    )


def test_short_truncated_and_leftover_frames() -> None:
    with pytest.raises(RequestDecodeError, match="shorter than the 8-byte"):
        peek_request_header(b"\x00\x03")
    frame = encode_request(
        MetadataRequestV1(topics=None), correlation_id=1, client_id="x"
    )[4:]
    with pytest.raises(RequestDecodeError) as info:
        decode_request(frame[:-1])
    assert info.value.correlation_id == 1 and info.value.cause is not None
    with pytest.raises(RequestDecodeError, match="1 bytes left over"):
        decode_request(frame + b"\x00")


def test_decode_request_frame_keeps_trailing_bytes_losslessly() -> None:
    from kproto.framing import decode_request_frame
    from kproto.serial import encode

    frame = encode_request(
        MetadataRequest(topics=None), correlation_id=5, client_id="c"
    )
    payload = (
        frame[4:] + b"\x01\x00\x00"
    )  # what librdkafka 2.16 appends to Metadata v13
    header, request, trailing = decode_request_frame(payload)
    assert (request, trailing) == (MetadataRequest(topics=None), b"\x01\x00\x00")
    assert encode(header) + encode(request) + trailing == payload
    with pytest.raises(RequestDecodeError, match="3 bytes left over"):
        decode_request(payload)


@pytest.mark.parametrize("response", [ApiVersionsResponse(), MetadataResponse()])
def test_encode_response_from_a_request_header_equals_the_response_header_path(
    response: object,
) -> None:
    # a request header's correlation id is packed behind the size prefix directly
    # (v0: nothing after it, v1: the empty tag section); a ResponseHeader entity
    # given as it is goes through the encoder: the bytes are the same
    header_cls = type(response).__header_schema__  # type: ignore[attr-defined]
    for correlation_id in (0, 7, -1, 2**31 - 1, -(2**31)):
        request_header = RequestHeader(
            request_api_key=3,
            request_api_version=12,
            correlation_id=correlation_id,
            client_id="c",
        )
        assert encode_response(request_header, response) == encode_response(
            header_cls(correlation_id=correlation_id), response
        )


def test_encode_response_correlation_id_out_of_int32_is_an_encode_error() -> None:
    class Header:
        correlation_id = 2**31

    with pytest.raises(EncodeError):
        encode_response(Header(), MetadataResponse())
