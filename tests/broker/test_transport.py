"""The broker connection's socket side (kproto.broker.transport.FrameConnection):
frames cut from any slicing, the size-prefix bound, read-ahead flow control, the
idle timeout, EOF, and responses held back behind pipelined requests. Driven
through the BufferedProtocol calls a transport makes, with a recording transport;
the last test pipelines real requests over a socket."""

from __future__ import annotations

import asyncio
import socket
import struct
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import pytest

from kproto.broker import Cluster
from kproto.broker.transport import MIN_READ_BYTES, READ_AHEAD_BYTES, FrameConnection
from kproto.framing import ConnectionClosedError, FrameError, FrameTooLargeError

T = TypeVar("T")


class FakeTransport:
    def __init__(self) -> None:
        self.writes: list[bytes] = []
        self.reading = True
        self.pauses = 0
        self.closed = False

    def pause_reading(self) -> None:
        self.reading = False
        self.pauses += 1

    def resume_reading(self) -> None:
        self.reading = True

    def write(self, data: bytes) -> None:
        self.writes.append(bytes(data))

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return ("127.0.0.1", 1) if name == "peername" else default

    def close(self) -> None:
        self.closed = True


def run(body: Callable[[FrameConnection, FakeTransport], Awaitable[T]]) -> T:
    async def main() -> T:
        conn = FrameConnection(lambda c: None, max_frame_bytes=1 << 20)
        transport = FakeTransport()
        conn.connection_made(transport)
        return await asyncio.wait_for(body(conn, transport), 10)

    return asyncio.run(main())


def receive(conn: FrameConnection, data: bytes, chunk: int | None = None) -> None:
    """What a transport does: ``recv_into`` the protocol's buffer, in pieces of at
    most ``chunk`` bytes (default: whatever the buffer offers)."""
    while data:
        buf = conn.get_buffer(-1)
        assert len(buf) >= 1
        n = min(len(buf), len(data), chunk or len(data))
        buf[:n] = data[:n]
        del buf  # a transport drops the view before the next call
        conn.buffer_updated(n)
        data = data[n:]


def framed(payload: bytes) -> bytes:
    return struct.pack(">i", len(payload)) + payload


@pytest.mark.parametrize("chunk", [1, 3, 7, 4096, None])
def test_frames_are_cut_from_any_slicing(chunk: int | None) -> None:
    payloads = [b"abcd", bytes(range(256)) * 300, b"x" * 5, b"\x00" * 70_000]

    async def body(conn: FrameConnection, _: FakeTransport) -> list[bytes]:
        receive(conn, b"".join(framed(p) for p in payloads), chunk)
        return [await conn.read_frame(5) for _ in payloads]

    assert run(body) == payloads


def test_a_frame_is_returned_once_complete_and_a_waiter_is_woken() -> None:
    async def body(conn: FrameConnection, _: FakeTransport) -> bytes:
        data = framed(b"hello world")
        receive(conn, data[:6])
        reading = asyncio.ensure_future(conn.read_frame(5))
        await asyncio.sleep(0)
        assert not reading.done()
        receive(conn, data[6:])
        return await reading

    assert run(body) == b"hello world"


@pytest.mark.parametrize(
    "prefix, error",
    [
        (struct.pack(">i", (1 << 20) + 1), FrameTooLargeError),
        (b"\x00\x00\x00\x02", FrameError),
    ],
)
def test_a_bad_size_prefix_stops_reading_before_any_allocation(
    prefix: bytes, error: type[Exception]
) -> None:
    async def body(conn: FrameConnection, transport: FakeTransport) -> None:
        receive(conn, framed(b"first"))
        assert await conn.read_frame(5) == b"first"
        receive(conn, prefix)
        assert not transport.reading  # nothing more is read
        assert len(conn.get_buffer(-1)) <= MIN_READ_BYTES  # nor allocated
        with pytest.raises(error):
            await conn.read_frame(5)

    run(body)


def test_a_bad_size_prefix_behind_good_frames_fails_after_them() -> None:
    async def body(conn: FrameConnection, _: FakeTransport) -> None:
        receive(conn, framed(b"first") + framed(b"second") + b"\xff\xff\xff\xff")
        assert await conn.read_frame(5) == b"first"
        assert await conn.read_frame(5) == b"second"
        with pytest.raises(FrameError, match="impossible frame size -1"):
            await conn.read_frame(5)

    run(body)


def test_the_buffer_grows_with_what_arrived_not_with_what_is_claimed() -> None:
    async def body(conn: FrameConnection, _: FakeTransport) -> None:
        receive(conn, struct.pack(">i", 1 << 20) + b"x" * 10)
        # a 1 MiB frame claimed, 14 bytes arrived: the buffer offers no more than
        # the smallest read
        assert len(conn.get_buffer(-1)) <= MIN_READ_BYTES

    run(body)


def test_reading_pauses_behind_a_complete_frame_and_resumes_when_taken() -> None:
    async def body(conn: FrameConnection, transport: FakeTransport) -> None:
        small = framed(b"s" * 100)
        receive(conn, small * 10)
        assert transport.reading  # read-ahead below the bound
        receive(conn, framed(b"b" * READ_AHEAD_BYTES))
        assert not transport.reading
        for _ in range(10):
            await conn.read_frame(5)
        assert transport.reading  # only the big one left: read on
        assert len(await conn.read_frame(5)) == READ_AHEAD_BYTES

    run(body)


def test_idle_timeout_counts_from_the_start_of_the_wait() -> None:
    async def body(conn: FrameConnection, _: FakeTransport) -> float:
        loop = asyncio.get_running_loop()
        started = loop.time()
        data = framed(b"x" * 100)
        receive(conn, data[:2])
        reading = asyncio.ensure_future(conn.read_frame(0.3))
        for i in range(2, 7):  # a byte now and then does not keep a frame alive
            await asyncio.sleep(0.1)
            if not reading.done():
                receive(conn, data[i : i + 1])
        with pytest.raises(TimeoutError):
            await reading
        return loop.time() - started

    assert 0.25 <= run(body) < 2


def test_a_frame_taken_in_time_leaves_no_timeout_behind() -> None:
    async def body(conn: FrameConnection, _: FakeTransport) -> bytes:
        receive(conn, framed(b"one!"))
        assert await conn.read_frame(0.1) == b"one!"
        reading = asyncio.ensure_future(conn.read_frame(0.2))
        await asyncio.sleep(0.15)
        receive(conn, framed(b"two!"))
        assert await reading == b"two!"
        reading = asyncio.ensure_future(conn.read_frame(0.2))
        await asyncio.sleep(0.15)  # the first timer fired meanwhile: re-armed
        assert not reading.done()
        receive(conn, framed(b"three!"))
        return await reading

    assert run(body) == b"three!"


def test_eof_mid_frame_names_what_arrived() -> None:
    async def body(conn: FrameConnection, _: FakeTransport) -> None:
        receive(conn, framed(b"whole") + struct.pack(">i", 10) + b"abc")
        assert conn.eof_received() is True  # kept open for the answer
        assert await conn.read_frame(5) == b"whole"
        with pytest.raises(ConnectionClosedError, match=r"3 of 10 bytes"):
            await conn.read_frame(5)

    run(body)


def test_connection_lost_wakes_a_reader_and_fails_writes() -> None:
    async def body(conn: FrameConnection, _: FakeTransport) -> None:
        reading = asyncio.ensure_future(conn.read_frame(5))
        await asyncio.sleep(0)
        conn.connection_lost(None)
        with pytest.raises(ConnectionClosedError):
            await reading
        with pytest.raises(ConnectionResetError):
            conn.write(b"late")
        await conn.wait_closed()

    run(body)


def test_responses_go_to_the_transport_at_once() -> None:
    async def body(conn: FrameConnection, transport: FakeTransport) -> None:
        receive(conn, framed(b"req1") + framed(b"req2"))
        await conn.read_frame(5)
        conn.write(b"answer 1")  # not held back for the buffered req2
        assert transport.writes == [b"answer 1"]
        conn.pause_writing()
        draining = asyncio.ensure_future(conn.drain())
        await asyncio.sleep(0)
        assert not draining.done()
        conn.resume_writing()
        await draining

    run(body)


def test_a_pipelining_client_gets_every_answer_in_order() -> None:
    from kproto.framing import decode_response, encode_request
    from kproto.schema.api_versions.v3 import ApiVersionsRequest, ApiVersionsResponse

    with Cluster(nodes=1) as cluster:
        host, port = cluster.bootstrap_servers.split(":")
        with socket.create_connection((host, int(port)), timeout=10) as s:
            request = ApiVersionsRequest(
                client_software_name="t", client_software_version="1"
            )
            s.sendall(
                b"".join(
                    encode_request(request, correlation_id=i, client_id="pipe")
                    for i in range(50)
                )
            )
            stream = s.makefile("rb")
            for i in range(50):
                size = struct.unpack(">i", stream.read(4))[0]
                decode_response(
                    ApiVersionsResponse, stream.read(size), expected_correlation_id=i
                )
