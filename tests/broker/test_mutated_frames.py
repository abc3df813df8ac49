"""Mutated request frames never reach a handler they can crash: every frame is
answered or its connection closed, the broker logs no traceback, and a good
client is still served.

The frames are requests of every API and version kproto generates, whether
ApiVersions advertises it or not (sample entities with odd values in every
field, the same with nulls, and a produce/fetch pair on a real topic), three in
four with 1-3 bytes changed anywhere after the size prefix (so the api_key,
api_version and correlation id change too). The set is seeded and
bounded: ``KPROTO_MUTATED_FRAMES`` frames (default 3,000; 50,000 is the issue's
run) from ``KPROTO_MUTATED_SEED`` (default 23), e.g.::

    KPROTO_MUTATED_FRAMES=50000 PYTHONPATH=src python -m pytest -q -n 0 \\
        tests/broker/test_mutated_frames.py
"""

from __future__ import annotations

import asyncio
import logging
import os
import random
from collections.abc import Iterator

import pytest

from kproto.broker import Cluster
from kproto.broker.dispatch import SERVED_APIS
from kproto.framing import decode_response, encode_request
from kproto.index import ApiKey, api_versions, request_type
from kproto.meta import build_entity
from kproto.records import encode_batch
from kproto.schema.api_versions.v3 import ApiVersionsRequest, ApiVersionsResponse
from tests.strategies import sample_entity

FRAMES = int(os.environ.get("KPROTO_MUTATED_FRAMES", "3000"))
SEED = int(os.environ.get("KPROTO_MUTATED_SEED", "23"))
#: connections sending at once (each waits for its answer before the next frame)
CONNECTIONS = 8
#: how long a frame may go unanswered (a Fetch or JoinGroup may wait longer: the
#: connection is then dropped and another opened)
ANSWER_S = 0.2
TOPIC = "fuzzed"


def seed_frames() -> list[bytes]:
    """Two frames (a sample entity, and one with nulls) per API and version kproto
    generates, served and advertised or not, plus a produce and a fetch of the
    real topic."""
    frames = []
    for api_key in ApiKey:
        for version in api_versions(api_key):
            cls = request_type(api_key, version)
            for request in (sample_entity(cls, 1), sample_entity(cls, 2, null=True)):
                frames.append(encode_request(request, correlation_id=7, client_id="f"))
    batch = encode_batch([(b"k", b"v"), (None, b"w")])
    for version in (3, 9, SERVED_APIS[ApiKey.PRODUCE][1]):
        produce = build_entity(
            request_type(ApiKey.PRODUCE, version),
            {
                "acks": -1,
                "timeout_ms": 1000,
                "topic_data": [
                    {"name": TOPIC, "partition_data": [{"index": 0, "records": batch}]}
                ],
            },
            drop_absent=True,
        )
        frames.append(encode_request(produce, correlation_id=8, client_id="f"))
    for version in (4, 12):
        fetch = build_entity(
            request_type(ApiKey.FETCH, version),
            {
                "replica_id": -1,
                "max_wait_ms": 0,
                "max_bytes": 1 << 20,
                "topics": [
                    {
                        "topic": TOPIC,
                        "partitions": [
                            {
                                "partition": 0,
                                "fetch_offset": 0,
                                "partition_max_bytes": 4096,
                            }
                        ],
                    }
                ],
            },
            drop_absent=True,
        )
        frames.append(encode_request(fetch, correlation_id=9, client_id="f"))
    return frames


def mutate(rnd: random.Random, frame: bytes) -> bytes:
    """One frame in four as it is (odd values in every field), the others with
    1-3 random bytes changed after the size prefix."""
    if rnd.randrange(4) == 0:
        return frame
    out = bytearray(frame)
    for _ in range(rnd.randrange(1, 4)):
        out[rnd.randrange(4, len(out))] = rnd.randrange(256)
    return bytes(out)


async def send_all(host: str, port: int, frames: list[bytes]) -> tuple[int, int]:
    """Send ``frames`` over :data:`CONNECTIONS` connections; how many were
    answered and how many closed their connection."""
    queue: asyncio.Queue[bytes] = asyncio.Queue()
    for f in frames:
        queue.put_nowait(f)
    answered = closed = 0

    async def worker() -> None:
        nonlocal answered, closed
        reader, writer = await asyncio.open_connection(host, port)
        while not queue.empty():
            frame = queue.get_nowait()
            writer.write(frame)
            try:
                await writer.drain()
                got = await asyncio.wait_for(reader.read(1 << 16), ANSWER_S)
            except (ConnectionError, TimeoutError):
                got = b""
            if got:
                answered += 1
                # the rest of a large answer: drop the connection rather than read it
                size = int.from_bytes(got[:4], "big") if len(got) >= 4 else -1
                if size + 4 == len(got):
                    continue
            else:
                closed += 1
            writer.close()
            reader, writer = await asyncio.open_connection(host, port)
        writer.close()

    await asyncio.gather(*(worker() for _ in range(CONNECTIONS)))
    return answered, closed


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    with Cluster(nodes=1, socket_request_max_bytes=1 << 20) as c:
        c.create_topic(TOPIC, partitions=1)
        yield c


def test_mutated_frames_log_no_traceback(
    cluster: Cluster, caplog: pytest.LogCaptureFixture
) -> None:
    rnd = random.Random(SEED)
    seeds = seed_frames()
    frames = [mutate(rnd, rnd.choice(seeds)) for _ in range(FRAMES)]
    host, port = cluster.bootstrap_servers.split(",")[0].split(":")
    with caplog.at_level(logging.INFO):
        answered, closed = asyncio.run(send_all(host, int(port), frames))
    tracebacks = [r for r in caplog.records if r.exc_info or r.levelno >= logging.ERROR]
    assert not tracebacks, (
        "\n\n".join(caplog.handler.format(r) for r in tracebacks[:5])
        + f"\n\n{len(tracebacks)} error records in {FRAMES} frames"
    )
    assert answered + closed == FRAMES
    assert answered > FRAMES // 10 and closed > FRAMES // 10  # both paths ran
    # a good client is still served
    assert asyncio.run(_api_versions(host, int(port))).error_code == 0


async def _api_versions(host: str, port: int) -> ApiVersionsResponse:
    reader, writer = await asyncio.open_connection(host, port)
    writer.write(encode_request(ApiVersionsRequest(), correlation_id=5, client_id="g"))
    size = int.from_bytes(await reader.readexactly(4), "big")
    payload = await reader.readexactly(size)
    writer.close()
    response: ApiVersionsResponse = decode_response(
        ApiVersionsResponse, payload, expected_correlation_id=5
    )
    return response
