"""Bad input never stops a node or other connections, and leaks no tasks."""

from __future__ import annotations

import io
import socket
import struct
from collections.abc import Iterator

import pytest

from kproto.broker import Cluster
from kproto.broker.dispatch import ROUTES, SERVED_APIS
from kproto.broker.handlers.refusals import unsupported_version
from kproto.framing import decode_response, encode_request
from kproto.index import ApiKey, api_versions, request_type
from kproto.schema.api_versions.v0 import ApiVersionsResponse
from kproto.schema.api_versions.v3 import ApiVersionsRequest
from kproto.schema.api_versions.v3 import ApiVersionsResponse as ApiVersionsResponseV3
from kproto.schema.metadata.v12 import MetadataRequest
from kproto.serial import entity_reader
from tests.eventually import eventually
from tests.strategies import sample_entity


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    with Cluster(nodes=1, socket_request_max_bytes=1 << 16) as c:
        yield c


def connect(cluster: Cluster) -> socket.socket:
    host, port = cluster.bootstrap_servers.split(",")[0].split(":")
    s = socket.create_connection((host, int(port)), timeout=10)
    return s


def read_frame(s: socket.socket) -> bytes:
    head = recv_exactly(s, 4)
    return recv_exactly(s, struct.unpack(">i", head)[0])


def recv_exactly(s: socket.socket, n: int) -> bytes:
    buf = b""
    while len(buf) < n:
        chunk = s.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("closed")
        buf += chunk
    return buf


def closed_by_broker(s: socket.socket) -> bool:
    try:
        return s.recv(1) == b""
    except ConnectionResetError:
        return True


def frame(
    api_key: int, api_version: int, correlation_id: int, body: bytes = b""
) -> bytes:
    payload = struct.pack(">hhih", api_key, api_version, correlation_id, -1) + body
    return struct.pack(">i", len(payload)) + payload


def still_serves(cluster: Cluster) -> None:
    with connect(cluster) as s:
        s.sendall(encode_request(ApiVersionsRequest(), correlation_id=5, client_id="t"))
        response = decode_response(
            ApiVersionsResponseV3, read_frame(s), expected_correlation_id=5
        )
        assert response.error_code == 0
        assert {k.api_key for k in response.api_keys} >= {0, 1, 3, 18}


def no_connection_tasks(cluster: Cluster) -> bool:
    """Whether every connection task ends within 5 s (AssertionError if not)."""
    return eventually(
        lambda: cluster._on_loop(
            lambda: sum(len(s.connections) for s in cluster.servers)
        )
        == 0,
        5,
        message="connection tasks left",
    )


def test_unsupported_api_versions_version_gets_the_v0_body(cluster: Cluster) -> None:
    with connect(cluster) as s:
        s.sendall(frame(18, 99, 42))
        payload = read_frame(s)
        assert struct.unpack_from(">i", payload)[0] == 42
        body = entity_reader(ApiVersionsResponse)(io.BytesIO(payload[4:]))
        assert body.error_code == 35  # UNSUPPORTED_VERSION
        versions = {k.api_key: (k.min_version, k.max_version) for k in body.api_keys}
        top = api_versions(18).stop - 1  # every ApiVersions version kproto generates
        assert versions[18] == (0, top)
        # the connection stays usable, as with Kafka
        s.sendall(
            encode_request(ApiVersionsRequest(), correlation_id=43, client_id="t")
        )
        assert decode_response(
            ApiVersionsResponseV3, read_frame(s), expected_correlation_id=43
        )


@pytest.mark.parametrize(
    "data",
    [
        pytest.param(frame(9999, 0, 1), id="unknown-api-key"),
        pytest.param(frame(3, 99, 1), id="unknown-version"),
        pytest.param(frame(41, 1, 1, b"\xff\xff\xff\xff"), id="api-not-served"),
        pytest.param(frame(3, 12, 1, b"\x05"), id="truncated-body"),
        pytest.param(struct.pack(">i", 1 << 20) + b"x" * 16, id="over-size-limit"),
        pytest.param(struct.pack(">i", -1), id="negative-size"),
        pytest.param(struct.pack(">i", 3) + b"abc", id="shorter-than-a-header"),
    ],
)
def test_bad_frames_close_only_that_connection(cluster: Cluster, data: bytes) -> None:
    with connect(cluster) as other, connect(cluster) as s:
        s.sendall(data)
        assert closed_by_broker(s)
        other.sendall(
            encode_request(MetadataRequest(topics=()), correlation_id=1, client_id="o")
        )
        assert read_frame(other)[:4] == b"\x00\x00\x00\x01"
    still_serves(cluster)
    assert no_connection_tasks(cluster)


def test_disconnect_mid_frame(cluster: Cluster) -> None:
    s = connect(cluster)
    s.sendall(struct.pack(">i", 100) + b"\x00\x03")
    s.close()
    s = connect(cluster)
    s.sendall(b"\x00\x00")  # mid size prefix
    s.close()
    still_serves(cluster)
    assert no_connection_tasks(cluster)


def test_api_not_served_is_logged_and_closes(
    cluster: Cluster, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level("WARNING", logger="kproto.broker"), connect(cluster) as s:
        s.sendall(
            frame(41, 1, 9, b"\xff\xff\xff\xff")
        )  # DescribeDelegationToken v1 (owners null): decodes, not served
        assert closed_by_broker(s)
    assert "api_key 41 v1 is not served" in caplog.text
    still_serves(cluster)


def test_a_stalled_frame_is_closed_after_the_idle_time() -> None:
    with Cluster(connections_max_idle_ms=100) as idle, connect(idle) as s:
        s.sendall(struct.pack(">i", 100) + b"\x00\x03")  # then nothing more
        assert closed_by_broker(s)  # the socket timeout (10 s) bounds the wait
        assert no_connection_tasks(idle)


def test_a_version_not_advertised_closes_before_any_handler(
    cluster: Cluster, caplog: pytest.LogCaptureFixture
) -> None:
    """Fetch v3 decodes (kproto generates it) but ApiVersions lists Fetch from v4:
    the connection is closed with one warning, as Kafka's SocketServer does for a
    version its ApiVersionManager does not enable, and no handler runs."""
    low, high = SERVED_APIS[ApiKey.FETCH]
    assert low == 4
    request = sample_entity(request_type(ApiKey.FETCH, 3), 1)
    with caplog.at_level("WARNING", logger="kproto.broker"), connect(cluster) as s:
        s.sendall(encode_request(request, correlation_id=3, client_id="old"))
        assert closed_by_broker(s)
    assert f"api_key 1 v3 is not served (FETCH v4-v{high} are)" in caplog.text
    assert not [r for r in caplog.records if r.exc_info or r.levelno >= 40]
    assert ROUTES.get((ApiKey.FETCH, 3)) is None
    assert ROUTES.get((ApiKey.FETCH, high + 1)) is None
    assert ROUTES[ApiKey.PRODUCE, 2] is unsupported_version
    still_serves(cluster)
