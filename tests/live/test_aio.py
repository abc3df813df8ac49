"""AsyncConnection and the asyncio frame helpers, against the mock cluster and a
scripted fake broker on 127.0.0.1."""

from __future__ import annotations

import asyncio
import struct
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from kproto.aio import AsyncConnection, read_frame, write_frame
from kproto.connection import (
    ConnectionClosedError,
    CorrelationIdMismatchError,
    FrameTooLargeError,
    RequestTimeoutError,
)
from kproto.framing import encode_request
from kproto.index import ApiKey
from kproto.records import Compression, decode_batches, encode_batch
from kproto.schema.api_versions.v0 import ApiVersionsRequest
from tests.live.mock_cluster import MockCluster


def run(coro: Awaitable[Any]) -> Any:
    async def bounded() -> Any:
        return await asyncio.wait_for(coro, 20)

    return asyncio.run(bounded())


@pytest.mark.live
def test_async_negotiate_metadata_concurrent(cluster: MockCluster) -> None:
    host, port = cluster.brokers[1]

    async def main() -> None:
        async with AsyncConnection(host, port, timeout_s=10) as conn:
            versions = await conn.negotiate()
            assert conn.api_versions_version == 0
            assert versions[ApiKey.METADATA] == 13
            results = await asyncio.gather(
                *(
                    conn.request(ApiKey.METADATA, topics=[{"name": f"aio-{i}"}])
                    for i in range(8)
                )
            )
            assert [r.topics[0].name for r in results] == [f"aio-{i}" for i in range(8)]
        assert conn.closed

    run(main())


@pytest.mark.live
def test_async_produce_fetch(cluster: MockCluster) -> None:
    async def main() -> None:
        conn0 = await AsyncConnection.open(*cluster.brokers[1], timeout_s=10)
        md = await conn0.request(
            ApiKey.METADATA, topics=[{"name": "aio-pf"}], allow_auto_topic_creation=True
        )
        await conn0.close()
        topic = md.topics[0]
        leader = next(p.leader_id for p in topic.partitions if p.partition_index == 0)
        async with await AsyncConnection.open(
            *cluster.brokers[leader], timeout_s=10
        ) as conn:
            await conn.negotiate()
            batch = encode_batch(
                [(b"k%d" % i, b"v%d" % i, [("h", b"1")], 1_000 + i) for i in range(4)],
                compression=Compression.SNAPPY,
            )
            res = await conn.request(
                ApiKey.PRODUCE,
                acks=-1,
                timeout_ms=5000,
                topic_data=[
                    {
                        "name": "aio-pf",
                        "partition_data": [{"index": 0, "records": batch}],
                    }
                ],
            )
            part = res.responses[0].partition_responses[0]
            assert part.error_code == 0 and part.base_offset == 0
            fetched = await conn.request(
                ApiKey.FETCH,
                max_wait_ms=100,
                min_bytes=1,
                max_bytes=1 << 20,
                topics=[
                    {
                        "topic_id": topic.topic_id,
                        "partitions": [
                            {
                                "partition": 0,
                                "fetch_offset": 0,
                                "partition_max_bytes": 1 << 20,
                            }
                        ],
                    }
                ],
            )
            data = fetched.responses[0].partitions[0]
            assert data.error_code == 0 and data.high_watermark == 4
            (b,) = decode_batches(data.records)
            assert [(r.key, r.value, r.timestamp) for r in b.records] == [
                (b"k%d" % i, b"v%d" % i, 1_000 + i) for i in range(4)
            ]

    run(main())


Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


async def _serve(handler: Handler) -> tuple[asyncio.Server, int]:
    server = await asyncio.start_server(handler, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    return server, port


def test_fake_broker_errors() -> None:
    """Correlation mismatch, oversized frame, silence and EOF from a scripted peer."""

    async def wrong_id(
        reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        payload = await read_frame(reader)
        corr = struct.unpack_from(">i", payload, 4)[0]
        # ApiVersions v0 response: header v0, error 0, empty array
        await write_frame(writer, struct.pack(">iihi", 10, corr + 1, 0, 0))
        await asyncio.sleep(1)

    async def huge(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_frame(reader)
        writer.write(struct.pack(">i", 1 << 30))
        await writer.drain()
        await asyncio.sleep(1)

    async def silent(
        reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        await asyncio.sleep(3)

    async def hangup(
        reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        await read_frame(reader)
        writer.write(b"\x00\x00")
        writer.close()

    async def main() -> None:
        for handler, exc in (
            (wrong_id, CorrelationIdMismatchError),
            (huge, FrameTooLargeError),
            (silent, RequestTimeoutError),
            (hangup, ConnectionClosedError),
        ):
            server, port = await _serve(handler)
            async with server:
                conn = await AsyncConnection.open("127.0.0.1", port, timeout_s=0.5)
                with pytest.raises(exc):
                    await conn.send(ApiVersionsRequest())
                assert conn.closed
                with pytest.raises(ConnectionClosedError):
                    await conn.send(ApiVersionsRequest())
                await conn.close()
                server.close()

    run(main())


def test_frame_helpers_roundtrip() -> None:
    async def echo(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        payload = await read_frame(reader)
        await write_frame(writer, struct.pack(">i", len(payload)) + payload)
        writer.close()

    async def main() -> None:
        server, port = await _serve(echo)
        async with server:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            frame = encode_request(
                ApiVersionsRequest(), correlation_id=9, client_id="c"
            )
            await write_frame(writer, frame)
            assert await read_frame(reader) == frame[4:]
            with pytest.raises(ConnectionClosedError):
                await read_frame(reader)
            writer.close()
            server.close()

    run(main())
