"""kproto.proxy against a scripted upstream broker on 127.0.0.1 (no Kafka peer):
every address-bearing response shape is rewritten (Metadata, FindCoordinator v3 and
v4, DescribeCluster, the KIP-951 node_endpoints of Produce and Fetch), trailing
bytes survive, everything else is forwarded byte for byte, and bad frames close
only their own connection."""

from __future__ import annotations

import asyncio
import struct
from collections.abc import Awaitable, Callable
from typing import Any

import attrs
import pytest

from kproto.aio import read_frame, write_frame
from kproto.frame_reader import FrameReader
from kproto.framing import (
    decode_request,
    decode_response_frame,
    encode_request,
    encode_response,
    peek_request_header,
)
from kproto.index import request_type, response_type
from kproto.proxy import Proxy

B1, B2 = ("b1.example", 9092), ("b2.example", 9093)


def _response(api_key: int, version: int, **fields: Any) -> Any:
    cls = response_type(api_key, version)
    known = attrs.fields_dict(cls)
    return cls(**{k: v for k, v in fields.items() if k in known})


def _nested(api_key: int, version: int, name: str, **fields: Any) -> Any:
    module = __import__(response_type(api_key, version).__module__, fromlist=[name])
    return getattr(module, name)(**fields)


def _answer(api_key: int, version: int) -> Any:
    """The scripted upstream's answer to each request."""
    if api_key == 3:  # Metadata
        brokers = tuple(
            _nested(3, version, "MetadataResponseBroker", node_id=n, host=h, port=p)
            for n, (h, p) in ((1, B1), (2, B2))
        )
        return _response(3, version, brokers=brokers, cluster_id="c")
    if api_key == 10 and version < 4:  # FindCoordinator, one coordinator
        return _response(10, version, node_id=2, host=B2[0], port=B2[1])
    if api_key == 10:
        coordinators = (
            _nested(
                10, version, "Coordinator", key="g", node_id=1, host=B1[0], port=B1[1]
            ),
            # an error answer names no address: left alone
            _nested(
                10,
                version,
                "Coordinator",
                key="h",
                node_id=-1,
                host="",
                port=-1,
                error_code=15,
            ),
        )
        return _response(10, version, coordinators=coordinators)
    if api_key == 60:  # DescribeCluster
        brokers = (
            _nested(
                60,
                version,
                "DescribeClusterBroker",
                broker_id=2,
                host=B2[0],
                port=B2[1],
            ),
        )
        return _response(60, version, brokers=brokers, cluster_id="c")
    if (api_key, version) in ((0, 9), (1, 15)):  # before KIP-951
        return _response(api_key, version)
    if api_key in (0, 1):  # Produce v10+ / Fetch v16+: KIP-951 node_endpoints
        endpoint = _nested(
            api_key, version, "NodeEndpoint", node_id=1, host=B1[0], port=B1[1]
        )
        return _response(api_key, version, node_endpoints=(endpoint,))
    return _response(api_key, version)


async def _with_proxy(
    test: Callable[[Proxy, list[bytes], tuple[str, int]], Awaitable[None]], **kw: Any
) -> None:
    sent_by_upstream: list[bytes] = []

    async def broker(
        reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        frames = FrameReader()
        while data := await reader.read(65536):
            frames.feed(data)
            for payload in frames:
                head = peek_request_header(payload)
                if head.api_key == 999:  # unknown to kproto: an opaque answer
                    out = struct.pack(">i", head.correlation_id) + b"opaque"
                    frame = struct.pack(">i", len(out)) + out
                else:
                    header, _ = decode_request(payload)
                    frame = encode_response(
                        header, _answer(head.api_key, head.api_version)
                    )
                    if head.api_key == 3:
                        frame = struct.pack(">i", len(frame) - 3) + frame[4:] + b"\x7f"
                sent_by_upstream.append(frame[4:])
                writer.write(frame)
        writer.close()

    server = await asyncio.start_server(broker, "127.0.0.1", 0)
    upstream = ("127.0.0.1", server.sockets[0].getsockname()[1])
    try:
        async with Proxy([upstream], **kw) as proxy:
            await test(proxy, sent_by_upstream, proxy.listeners[upstream])
    finally:
        server.close()
        await server.wait_closed()


async def _exchange(
    address: tuple[str, int], request: Any, correlation_id: int
) -> bytes:
    reader, writer = await asyncio.open_connection(*address)
    try:
        await write_frame(
            writer,
            encode_request(request, correlation_id=correlation_id, client_id="t"),
        )
        return await read_frame(reader)
    finally:
        writer.close()


CASES = [
    (3, 12),
    (3, 1),
    (10, 3),
    (10, 4),
    (10, 6),
    (60, 1),
    (0, 10),
    (0, 12),
    (1, 16),
    (1, 17),
]


@pytest.mark.parametrize("decode_all", [False, True])
def test_addresses_rewritten_and_nothing_else(decode_all: bool) -> None:
    async def test(
        proxy: Proxy, upstream_sent: list[bytes], listen: tuple[str, int]
    ) -> None:
        for i, (api_key, version) in enumerate(CASES):
            # acks=-1: Kafka never answers acks=0 (the Produce default), so the
            # proxy does not track those
            extra = {"acks": -1} if api_key == 0 else {}
            request = request_type(api_key, version)(**extra)
            got = await _exchange(listen, request, 100 + i)
            original = upstream_sent[-1]
            cls = response_type(api_key, version)
            before = decode_response_frame(
                cls, original, expected_correlation_id=100 + i
            )
            after = decode_response_frame(cls, got, expected_correlation_id=100 + i)
            assert (
                after.trailing == before.trailing == (b"\x7f" if api_key == 3 else b"")
            )
            b1, b2 = proxy.listeners[B1], proxy.listeners[B2]
            assert b1 != b2 and b1[0] == b2[0] == "127.0.0.1"
            r = after.response
            if api_key == 3 or api_key == 60:
                expect = [b2] if api_key == 60 else [b1, b2]
                assert [(b.host, b.port) for b in r.brokers] == expect
                assert getattr(r, "cluster_id", "c") == "c"
            elif api_key == 10 and version < 4:
                assert (r.node_id, r.host, r.port) == (2, *b2)
            elif api_key == 10:
                ok, failed = r.coordinators
                assert (ok.key, ok.node_id, ok.host, ok.port) == ("g", 1, *b1)
                assert failed == before.response.coordinators[1]
            else:
                (endpoint,) = r.node_endpoints
                assert (endpoint.node_id, endpoint.host, endpoint.port) == (1, *b1)
            assert got != original
        # no address, nothing changed: byte-identical, decoded or not
        for api_key, version in ((18, 3), (0, 9), (1, 15), (19, 7)):
            extra = {"acks": -1} if api_key == 0 else {}
            got = await _exchange(listen, request_type(api_key, version)(**extra), 7)
            assert got == upstream_sent[-1]
        # an API kproto does not know: forwarded both ways untouched
        got = await _exchange(listen, request_type(18, 0)(), 8)  # warm-up
        reader, writer = await asyncio.open_connection(*listen)
        raw = struct.pack(">hhi", 999, 0, 9) + b"\x00\x00"
        await write_frame(writer, struct.pack(">i", len(raw)) + raw)
        assert (
            await read_frame(reader) == upstream_sent[-1] == b"\x00\x00\x00\x09opaque"
        )
        writer.close()

    asyncio.run(asyncio.wait_for(_with_proxy(test, decode_all=decode_all), 30))


def test_bad_frames_close_only_their_connection() -> None:
    async def test(
        proxy: Proxy, upstream_sent: list[bytes], listen: tuple[str, int]
    ) -> None:
        good_reader, good_writer = await asyncio.open_connection(*listen)
        short = encode_request(
            request_type(3, 12)(topics=None), correlation_id=1, client_id="x"
        )[4:-1]
        bad_frames = [
            b"\xff\xff\xff\xff",  # negative size
            struct.pack(">i", 200) + b"x" * 200,  # over max_frame_bytes
            struct.pack(">i", 6) + b"\x00\x03\x00\x0c\x00\x00",  # shorter than a header
            # a whole frame holding a Metadata v12 request cut short: decode_all
            # refuses it
            struct.pack(">i", len(short)) + short,
        ]
        for frame in bad_frames:
            reader, writer = await asyncio.open_connection(*listen)
            writer.write(frame)
            assert (
                await asyncio.wait_for(reader.read(), 10) == b""
            )  # closed by the proxy
            writer.close()
        await write_frame(
            good_writer,
            encode_request(request_type(18, 3)(), correlation_id=5, client_id="ok"),
        )
        assert await read_frame(good_reader) == upstream_sent[-1]
        good_writer.close()

    asyncio.run(
        asyncio.wait_for(_with_proxy(test, decode_all=True, max_frame_bytes=100), 30)
    )


def test_hook_returning_another_version_closes_that_connection() -> None:
    def downgrade(header: Any, request: Any) -> Any:
        if header.client_id == "bad":
            return request_type(18, 0)()  # the client would misread the answer
        return None

    async def test(
        proxy: Proxy, upstream_sent: list[bytes], listen: tuple[str, int]
    ) -> None:
        reader, writer = await asyncio.open_connection(*listen)
        request = request_type(18, 3)()
        await write_frame(
            writer, encode_request(request, correlation_id=1, client_id="bad")
        )
        assert await asyncio.wait_for(reader.read(), 10) == b""
        writer.close()
        assert upstream_sent == []  # nothing reached the broker
        reader, writer = await asyncio.open_connection(*listen)
        await write_frame(
            writer, encode_request(request, correlation_id=2, client_id="good")
        )
        assert await read_frame(reader) == upstream_sent[-1]
        writer.close()

    asyncio.run(asyncio.wait_for(_with_proxy(test, request_hooks={18: downgrade}), 30))
