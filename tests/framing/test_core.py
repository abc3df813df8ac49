"""The sans-IO frame codec and negotiation core: FrameReader over any slicing,
lossless response decoding, the ApiVersions v0 fallback, the negotiation state
machine and the names in NotNegotiatedError. No network except a local socket
where the blocking shell itself is under test."""

from __future__ import annotations

import socket
import struct
import threading
import tracemalloc

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kproto.connection import Connection
from kproto.errors import ErrorCode, KafkaProtocolError
from kproto.frame_reader import FrameReader
from kproto.framing import (
    ConnectionClosedError,
    FrameError,
    FrameTooLargeError,
    ResponseDecodeError,
    ResponseFrame,
    decode_request,
    decode_response,
    decode_response_frame,
    encode_request,
    encode_response,
)
from kproto.negotiation import (
    ApiVersionsNegotiation,
    NegotiationState,
    NotNegotiatedError,
)
from kproto.schema.api_versions.v0 import ApiVersionsResponse as ApiVersionsV0
from kproto.schema.api_versions.v2 import ApiVersionsResponse as ApiVersionsV2
from kproto.schema.api_versions.v2.response import ApiVersion
from kproto.schema.api_versions.v3 import ApiVersionsResponse as ApiVersionsV3
from kproto.schema.metadata.v12 import MetadataRequest, MetadataResponse
from kproto.schema.response_header.v0 import ResponseHeader as ResponseHeaderV0
from kproto.schema.response_header.v1 import ResponseHeader as ResponseHeaderV1
from tests import strategies
from tests.fresh_interpreter import run_python


def _frame(payload: bytes) -> bytes:
    return struct.pack(">i", len(payload)) + payload


@given(
    payloads=st.lists(st.binary(min_size=4, max_size=40), max_size=6),
    cuts=st.lists(st.integers(min_value=0, max_value=300), max_size=12),
)
def test_frame_reader_any_slicing(payloads: list[bytes], cuts: list[int]) -> None:
    stream = b"".join(_frame(p) for p in payloads)
    bounds = sorted({0, len(stream), *(c for c in cuts if c < len(stream))})
    reader = FrameReader(max_frame_bytes=64)
    got: list[bytes] = []
    for start, end in zip(bounds, bounds[1:], strict=False):
        reader.feed(stream[start:end])
        got += list(reader)
    assert got == payloads
    assert reader.buffered == 0
    reader.eof()  # between frames: fine


def test_frame_reader_requests_decodes_each_request() -> None:
    stream = b"".join(
        encode_request(MetadataRequest(topics=None), correlation_id=i, client_id="c")
        for i in (1, 2)
    )
    reader = FrameReader()
    reader.feed(stream[:-1])
    assert [h.correlation_id for h, _ in reader.requests()] == [1]
    reader.feed(stream[-1:])
    ((header, request),) = reader.requests()
    assert header.correlation_id == 2 and request == MetadataRequest(topics=None)


def test_frame_reader_refuses_large_frame_from_its_prefix() -> None:
    reader = FrameReader(max_frame_bytes=100)
    with pytest.raises(FrameTooLargeError) as info:
        reader.feed(b"\x00\x00\x00")  # nothing to judge yet
        reader.feed(b"\x65")  # 101
    assert (info.value.size, info.value.limit) == (101, 100)
    with pytest.raises(FrameError, match="impossible frame size -1"):
        FrameReader().feed(b"\xff\xff\xff\xff")


def test_frame_reader_buffers_what_arrived_not_what_was_claimed() -> None:
    reader = FrameReader()  # 100 MiB bound
    reader.feed(struct.pack(">i", 50 << 20) + b"x" * 10)
    assert reader.next_frame() is None
    assert reader.buffered == 14
    assert reader.wanted == 64 * 1024  # reads are capped, not sized by the prefix
    with pytest.raises(ConnectionClosedError, match=r"10 of 52428800 bytes"):
        reader.eof()


def _lying_peer() -> tuple[socket.socket, threading.Thread]:
    """A peer that claims a 90 MiB response, sends 1 KiB of it and hangs up."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)

    def serve() -> None:
        peer, _ = server.accept()
        with peer:
            peer.recv(1024)
            peer.sendall(struct.pack(">i", 90 << 20) + b"\x00" * 1024)

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    return server, t


def test_connection_does_not_allocate_the_claimed_size() -> None:
    # the blocking connection fails with ConnectionClosedError having held only
    # what came
    server, t = _lying_peer()
    try:
        conn = Connection("127.0.0.1", server.getsockname()[1], timeout_s=5.0)
        tracemalloc.start()
        try:
            with pytest.raises(ConnectionClosedError, match="1024 of 94371840 bytes"):
                conn.send(MetadataRequest(topics=None))
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert peak < 4 << 20, peak
        assert conn.closed
    finally:
        t.join(5)
        server.close()


def test_async_connection_does_not_allocate_the_claimed_size() -> None:
    import asyncio

    from kproto.aio import AsyncConnection

    async def main() -> int:
        port = server.getsockname()[1]
        async with AsyncConnection("127.0.0.1", port, timeout_s=5.0) as conn:
            tracemalloc.start()
            try:
                with pytest.raises(ConnectionClosedError, match="1024 of 94371840"):
                    await conn.send(MetadataRequest(topics=None))
                return tracemalloc.get_traced_memory()[1]
            finally:
                tracemalloc.stop()

    server, t = _lying_peer()
    try:
        peak = asyncio.run(main())
    finally:
        t.join(5)
        server.close()
    assert peak < 4 << 20, peak


def _metadata_response_frame(trailing: bytes = b"") -> tuple[bytes, object]:
    header, _ = decode_request(
        encode_request(MetadataRequest(topics=None), correlation_id=5, client_id="c")[
            4:
        ]
    )
    response = MetadataResponse(controller_id=1, cluster_id="k")
    return encode_response(header, response)[4:] + trailing, response


def test_decode_response_frame_is_lossless() -> None:
    payload, response = _metadata_response_frame(b"\x07\x08")
    frame = decode_response_frame(MetadataResponse, payload, expected_correlation_id=5)
    assert frame == ResponseFrame(
        ResponseHeaderV1(correlation_id=5), response, b"\x07\x08", False
    )
    # header + body + trailing re-encode to the very same bytes
    again = encode_response(frame.header, frame.response)[4:] + frame.trailing
    assert again == payload
    # the body-only shorthand is unchanged
    assert decode_response(MetadataResponse, payload, expected_correlation_id=5) == (
        response
    )


# What Kafka's SocketServer sends when a client's ApiVersions version is too new:
# ResponseHeader v0 (correlation id 9), then an ApiVersionsResponse *v0* body:
# error_code 35, api_keys [ApiVersions 0-2], and nothing else.
KAFKA_FALLBACK = bytes.fromhex("00000009" "0023" "00000001" "0012" "0000" "0002")

# What librdkafka's mock cluster (2.16) sends for ApiVersions v3 (captured): a v3
# body with error_code 35, an empty compact array, and stray bytes after it.
MOCK_V3_ANSWER = bytes.fromhex("00000001002301001200000002" "00000000")


def test_api_versions_v0_fallback_is_recognised() -> None:
    frame = decode_response_frame(ApiVersionsV3, KAFKA_FALLBACK)
    assert frame.api_versions_fallback
    assert type(frame.response) is ApiVersionsV0
    assert frame.response.error_code == ErrorCode.UNSUPPORTED_VERSION
    assert [
        (k.api_key, k.min_version, k.max_version) for k in frame.response.api_keys
    ] == [(18, 0, 2)]
    assert frame.header == ResponseHeaderV0(correlation_id=9) and frame.trailing == b""


def test_mock_cluster_answer_is_not_a_fallback() -> None:
    frame = decode_response_frame(ApiVersionsV3, MOCK_V3_ANSWER)
    assert not frame.api_versions_fallback
    assert type(frame.response) is ApiVersionsV3
    assert frame.response.error_code == ErrorCode.UNSUPPORTED_VERSION
    assert frame.trailing  # the mock's stray bytes are kept, not lost


def test_garbage_api_versions_body_is_a_decode_error() -> None:
    with pytest.raises(ResponseDecodeError):
        decode_response_frame(ApiVersionsV3, bytes.fromhex("00000001" "0000" "05"))


def _answer(response: object, fallback: bool = False) -> ResponseFrame:
    return ResponseFrame(ResponseHeaderV0(correlation_id=1), response, b"", fallback)


def _ok_v2() -> ApiVersionsV2:
    """A broker offering Metadata v0-12 only."""
    return ApiVersionsV2(
        api_keys=(ApiVersion(api_key=3, min_version=0, max_version=12),)
    )


def test_negotiation_retries_at_the_version_the_fallback_lists() -> None:
    n = ApiVersionsNegotiation()
    assert n.version == 3 and n.request.client_software_name == "kproto"
    n.receive(decode_response_frame(ApiVersionsV3, KAFKA_FALLBACK))
    assert n.version == 2 and not n.reconnect
    assert (
        type(n.request).__name__ == "ApiVersionsRequest" and n.request.__version__ == 2
    )
    n.receive(_answer(_ok_v2()))
    assert n.request is None and n.version == 2
    state = NegotiationState("h", 1)
    assert state._store(n, None) == {3: 12}
    assert state.api_versions_version == 2 and state.version_for(3) == 12


def test_negotiation_falls_back_to_v0() -> None:
    n = ApiVersionsNegotiation()
    n.receive(decode_response_frame(ApiVersionsV3, MOCK_V3_ANSWER))  # lists nothing
    assert n.version == 0
    n = ApiVersionsNegotiation()
    n.fail(ConnectionClosedError("hung up"))
    assert n.version == 0 and n.reconnect
    with pytest.raises(ConnectionClosedError, match="again"):
        n.fail(ConnectionClosedError("again"))  # at v0, errors propagate
    n = ApiVersionsNegotiation()
    n.receive(_answer(ApiVersionsV3(error_code=ErrorCode.UNSUPPORTED_VERSION)))
    with pytest.raises(KafkaProtocolError):
        n.receive(_answer(ApiVersionsV0(error_code=ErrorCode.UNKNOWN_SERVER_ERROR)))


def test_not_negotiated_error_names_the_api() -> None:
    state = NegotiationState("h", 1)
    with pytest.raises(NotNegotiatedError, match=r"DescribeCluster \(api_key 60\)"):
        state.version_for(60)
    n = ApiVersionsNegotiation()
    n.receive(_answer(_ok_v2()))
    state._store(n, None)
    with pytest.raises(NotNegotiatedError) as info:
        state.version_for(60)
    assert str(info.value) == (
        "no common version for DescribeCluster (api_key 60): broker offers nothing"
    )
    assert info.value.api_key == 60
    with pytest.raises(NotNegotiatedError, match="api_key 999: broker"):
        state.version_for(999)


def test_blocking_connection_never_imports_asyncio() -> None:
    code = "import sys, kproto.connection; print('asyncio' in sys.modules)"
    assert run_python(code).stdout.strip() == "False"


def _response_classes() -> list[type]:
    from kproto.index import API_VERSIONS, response_type

    return [
        response_type(k, v) for k, versions in API_VERSIONS.items() for v in versions
    ]


@pytest.mark.parametrize(
    "cls", _response_classes(), ids=lambda c: f"{c.__name__}-v{c.__version__}"
)
@given(data=st.data())
@settings(max_examples=3)
def test_decode_response_frame_loses_nothing(cls: type, data: st.DataObject) -> None:
    response = data.draw(strategies.entities(cls))
    trailing = data.draw(st.binary(max_size=3))
    header = cls.__header_schema__(correlation_id=data.draw(st.integers(0, 2**31 - 1)))
    payload = encode_response(header, response)[4:] + trailing
    frame = decode_response_frame(cls, payload)
    if frame.api_versions_fallback:  # a drawn v3 body that also reads as v0
        return
    assert frame == ResponseFrame(header, response, trailing, False)
    assert encode_response(frame.header, frame.response)[4:] + frame.trailing == payload


class _KafkaLikeBroker:
    """A one-connection broker on 127.0.0.1 that answers ApiVersions as Kafka does
    when it supports ApiVersions v0-2 only: the v0 fallback body for v3, a real
    answer for v0-2."""

    def __init__(self) -> None:
        self.server = socket.socket()
        self.server.bind(("127.0.0.1", 0))
        self.server.listen(1)
        self.port = self.server.getsockname()[1]
        self.versions_asked: list[int] = []
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        peer, _ = self.server.accept()
        reader = FrameReader()
        with peer:
            while data := peer.recv(65536):
                reader.feed(data)
                for payload in reader:
                    header, _ = decode_request(payload)
                    version = header.request_api_version
                    self.versions_asked.append(version)
                    if version > 2:
                        body = KAFKA_FALLBACK[4:]
                        out = struct.pack(">i", header.correlation_id) + body
                        peer.sendall(_frame(out))
                    else:
                        peer.sendall(encode_response(header, _ok_v2()))

    def close(self) -> None:
        self.thread.join(5)
        self.server.close()


def test_connection_negotiates_through_kafkas_v0_fallback() -> None:
    broker = _KafkaLikeBroker()
    try:
        with Connection("127.0.0.1", broker.port, timeout_s=5.0) as conn:
            assert conn.negotiate() == {3: 12}
            assert conn.api_versions_version == 2
    finally:
        broker.close()
    assert broker.versions_asked == [3, 2]


def test_async_connection_negotiates_through_kafkas_v0_fallback() -> None:
    import asyncio

    from kproto.aio import AsyncConnection

    async def main() -> None:
        async with AsyncConnection("127.0.0.1", broker.port, timeout_s=5.0) as conn:
            assert await conn.negotiate() == {3: 12}
            assert conn.api_versions_version == 2

    broker = _KafkaLikeBroker()
    try:
        asyncio.run(main())
    finally:
        broker.close()
    assert broker.versions_asked == [3, 2]
