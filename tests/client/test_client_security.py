"""kproto's own Connection, AsyncConnection, Client, AsyncClient and Proxy against
the broker's SASL_SSL listener with each mechanism; the refusals kproto's side
reports (wrong password, unknown user, a tampered SCRAM server signature, an
untrusted certificate, a mechanism the broker does not enable); and credentials
kept out of reprs, exceptions and JSON."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import pytest

from kproto.aio import AsyncConnection
from kproto.broker import Cluster
from kproto.broker.security import ConnectionAuth
from kproto.client import AsyncClient, Client
from kproto.connection import Connection, KafkaConnectionError
from kproto.index import ApiKey
from kproto.json import to_json
from kproto.negotiation import client_ssl_context
from kproto.proxy import Proxy
from kproto.sasl import SaslAuthenticationError, SaslConfig, ScramServer, unsecured_jws

pytest.importorskip("trustme")

MECHANISMS = ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER"]
PASSWORD = "alice-pw-7f3a"


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    with Cluster(
        security_protocol="SASL_SSL",
        sasl_mechanisms=MECHANISMS,
        users={"alice": PASSWORD},
    ) as c:
        yield c


def sasl_for(
    mechanism: str, password: str = PASSWORD, user: str = "alice"
) -> SaslConfig:
    if mechanism == "OAUTHBEARER":
        return SaslConfig(
            mechanism=mechanism, token_provider=lambda: unsecured_jws(user)
        )
    return SaslConfig(mechanism=mechanism, username=user, password=password)


def tls(cluster: Cluster) -> Any:
    return client_ssl_context(str(cluster.ca_file))


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_connection(cluster: Cluster, mechanism: str) -> None:
    port = cluster.servers[0].port
    with Connection(
        "127.0.0.1", port, ssl_context=tls(cluster), sasl=sasl_for(mechanism)
    ) as conn:
        assert not conn.authenticated
        # a request sent first runs ApiVersions and SASL itself
        md = conn.request(ApiKey.METADATA, topics=[])
        assert conn.authenticated and [b.port for b in md.brokers] == [port]


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_async_connection(cluster: Cluster, mechanism: str) -> None:
    async def run() -> bool:
        async with AsyncConnection(
            "127.0.0.1",
            cluster.servers[0].port,
            ssl_context=tls(cluster),
            sasl=sasl_for(mechanism),
        ) as conn:
            await conn.negotiate()
            md = await conn.request(ApiKey.METADATA, topics=[])
            return conn.authenticated and bool(md.brokers)

    assert asyncio.run(run())


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_client_and_async_client(cluster: Cluster, mechanism: str) -> None:
    topic = f"c-{mechanism.lower()}"
    with Client(
        cluster.bootstrap_servers, ssl_context=tls(cluster), sasl=sasl_for(mechanism)
    ) as client:
        client.produce(topic, [(b"k", b"sync")])
        assert [r.value for r in client.iter_records(topic, 0, 0)] == [b"sync"]

    async def run() -> list[bytes]:
        async with AsyncClient(
            cluster.bootstrap_servers,
            ssl_context=tls(cluster),
            sasl=sasl_for(mechanism),
        ) as client:
            await client.produce(topic, [(b"k", b"async")])
            return [r.value async for r in client.iter_records(topic, 0, 0)]

    assert asyncio.run(run()) == [b"sync", b"async"]


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_proxy_upstream(cluster: Cluster, mechanism: str) -> None:
    """The proxy authenticates upstream (TLS + SASL); its clients speak plaintext."""

    async def run() -> list[bytes]:
        async with Proxy(
            cluster.bootstrap_servers,
            upstream_ssl_context=tls(cluster),
            upstream_sasl=sasl_for(mechanism),
        ) as proxy:
            async with AsyncClient(proxy.bootstrap_servers) as client:
                topic = f"p-{mechanism.lower()}"
                await client.produce(topic, [(None, b"via proxy")])
                return [r.value async for r in client.iter_records(topic, 0, 0)]

    assert asyncio.run(run()) == [b"via proxy"]


def test_proxy_upstream_refused(
    cluster: Cluster, caplog: pytest.LogCaptureFixture
) -> None:
    async def run() -> None:
        async with Proxy(
            cluster.bootstrap_servers,
            upstream_ssl_context=tls(cluster),
            upstream_sasl=sasl_for("SCRAM-SHA-256", password="nope"),
        ) as proxy:
            async with AsyncClient(proxy.bootstrap_servers, timeout_s=5) as client:
                with pytest.raises(KafkaConnectionError):
                    await client.list_groups()

    with caplog.at_level("WARNING", logger="kproto.proxy"):
        asyncio.run(run())
    assert "SCRAM-SHA-256 authentication failed" in caplog.text
    assert "nope" not in caplog.text


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
@pytest.mark.parametrize(
    ("user", "password"), [("alice", "wrong-pw"), ("eve", PASSWORD)]
)
def test_refused(cluster: Cluster, mechanism: str, user: str, password: str) -> None:
    port = cluster.servers[0].port
    conn = Connection(
        "127.0.0.1",
        port,
        ssl_context=tls(cluster),
        sasl=sasl_for(mechanism, password, user),
    )
    with pytest.raises(SaslAuthenticationError) as info:
        conn.negotiate()
    message = str(info.value)
    assert message.startswith(
        f"{mechanism} authentication failed: Authentication failed"
    )
    assert "invalid credentials" in message and password not in message
    assert conn.closed
    with pytest.raises(SaslAuthenticationError):
        Client(
            cluster.bootstrap_servers,
            ssl_context=tls(cluster),
            sasl=sasl_for(mechanism, password, user),
        ).list_groups()


def test_mechanism_not_enabled() -> None:
    with Cluster(
        security_protocol="SASL_PLAINTEXT", sasl_mechanisms=["PLAIN"], users={"a": "b"}
    ) as c:
        conn = Connection(
            "127.0.0.1", c.servers[0].port, sasl=sasl_for("SCRAM-SHA-512", "b", "a")
        )
        with pytest.raises(
            SaslAuthenticationError, match=r"does not enable it \(enabled: PLAIN\)"
        ):
            conn.negotiate()


def test_plaintext_broker_has_no_sasl() -> None:
    with Cluster() as c:
        conn = Connection("127.0.0.1", c.servers[0].port, sasl=sasl_for("PLAIN"))
        with pytest.raises(SaslAuthenticationError, match="ILLEGAL_SASL_STATE"):
            conn.negotiate()


def test_tampered_server_signature(
    cluster: Cluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A broker whose SCRAM server-final carries a wrong signature (as one without
    the user's stored credential would) is refused by kproto's client."""
    real = ConnectionAuth._server_mechanism

    def tampered(self: ConnectionAuth, name: str) -> Any:
        mechanism = real(self, name)
        if isinstance(mechanism, ScramServer):
            final = mechanism._final

            def forged(response: bytes) -> bytes:
                signature = final(response)
                return signature[:-6] + (
                    b"AAAA==" if signature[-6:] != b"AAAA==" else b"BBBB=="
                )

            mechanism._final = forged  # type: ignore[method-assign]
        return mechanism

    monkeypatch.setattr(ConnectionAuth, "_server_mechanism", tampered)
    conn = Connection(
        "127.0.0.1",
        cluster.servers[0].port,
        ssl_context=tls(cluster),
        sasl=sasl_for("SCRAM-SHA-512"),
    )
    with pytest.raises(SaslAuthenticationError, match="signature does not verify"):
        conn.negotiate()
    assert conn.closed


def test_untrusted_certificate(cluster: Cluster) -> None:
    """The system's CAs do not include the cluster's own: the handshake fails and
    says why."""
    with pytest.raises(KafkaConnectionError, match="certificate does not verify"):
        Connection(
            "127.0.0.1",
            cluster.servers[0].port,
            ssl_context=client_ssl_context(),
            sasl=sasl_for("PLAIN"),
        )


def test_credentials_stay_hidden(cluster: Cluster) -> None:
    sasl = sasl_for("PLAIN")
    client = Client(cluster.bootstrap_servers, ssl_context=tls(cluster), sasl=sasl)
    assert PASSWORD not in repr(sasl) + repr(client.sasl) + str(sasl.password)
    # SaslAuthenticate in JSON: the auth bytes (a PLAIN password) are redacted
    from kproto.schema.sasl_authenticate.v2 import SaslAuthenticateRequest

    request = SaslAuthenticateRequest(auth_bytes=b"\0alice\0" + PASSWORD.encode())
    rendered = json.dumps(to_json(request))
    assert "redacted" in rendered
    import base64

    assert base64.b64encode(request.auth_bytes).decode() not in rendered
    assert PASSWORD not in rendered
    client.close()


def test_concurrent_first_requests_authenticate_once(cluster: Cluster) -> None:
    """Tasks that send at once on a fresh AsyncConnection share one SASL exchange
    (two interleaved exchanges would make the broker close the connection)."""

    async def run() -> int:
        async with AsyncConnection(
            "127.0.0.1",
            cluster.servers[0].port,
            ssl_context=tls(cluster),
            sasl=sasl_for("SCRAM-SHA-256"),
        ) as conn:
            from kproto.schema.metadata.v12 import MetadataRequest

            answers = await asyncio.gather(
                *(conn.send(MetadataRequest(topics=())) for _ in range(5))
            )
            return sum(1 for a in answers if a.brokers)

    assert asyncio.run(run()) == 5


def test_proxy_upstream_tls_only_and_request_log_redaction() -> None:
    """A Proxy reaching an SSL cluster (no SASL) over TLS; a SASL token sent to a
    listener without SASL is answered ILLEGAL_SASL_STATE and kept out of the
    cluster's request log."""
    with Cluster(security_protocol="SSL") as ssl_cluster:

        async def run() -> list[bytes]:
            async with Proxy(
                ssl_cluster.bootstrap_servers, upstream_ssl_context=tls(ssl_cluster)
            ) as proxy:
                async with AsyncClient(proxy.bootstrap_servers) as client:
                    await client.produce("tls-only", [(None, b"over tls")])
                    return [
                        r.value async for r in client.iter_records("tls-only", 0, 0)
                    ]

        assert asyncio.run(run()) == [b"over tls"]
        from kproto.schema.sasl_authenticate.v2 import SaslAuthenticateRequest

        with Connection(
            "127.0.0.1", ssl_cluster.servers[0].port, ssl_context=tls(ssl_cluster)
        ) as conn:
            token = b"\0alice\0" + PASSWORD.encode()
            answer = conn.send(SaslAuthenticateRequest(auth_bytes=token))
            assert answer.error_code == 34  # ILLEGAL_SASL_STATE
        (logged,) = ssl_cluster.requests.filter(api_key=ApiKey.SASL_AUTHENTICATE)
        assert logged.request.auth_bytes == b""
