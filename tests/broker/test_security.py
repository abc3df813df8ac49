"""The broker's SSL and SASL listeners against real clients: confluent-kafka with
SASL_SSL and each of PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512 (producer, consumer
group, AdminClient), kafka-python and aiokafka with SASL_PLAINTEXT SCRAM; every
refusal (wrong password, unknown user, request before authentication, untrusted
certificate, host name mismatch) seen on both sides; mutual TLS principals; the
SCRAM credential APIs; the pytest marker."""

from __future__ import annotations

import asyncio
import socket
import ssl
import struct
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kproto.broker import Cluster
from kproto.connection import Connection, KafkaConnectionError
from kproto.index import ApiKey
from kproto.negotiation import client_ssl_context
from kproto.sasl import SaslConfig
from tests.consuming import read_values
from tests.eventually import eventually

confluent_kafka = pytest.importorskip("confluent_kafka")
trustme = pytest.importorskip("trustme")

MECHANISMS = ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]
USERS = {"alice": "alice-secret", "admin": "admin-secret"}


@pytest.fixture(scope="module")
def sasl_ssl() -> Iterator[Cluster]:
    with Cluster(
        security_protocol="SASL_SSL",
        sasl_mechanisms=MECHANISMS,
        users=USERS,
        super_users=["admin"],
    ) as cluster:
        yield cluster


def _errors() -> tuple[list[str], Any]:
    errors: list[str] = []
    return errors, lambda err: errors.append(str(err))


def _consume(consumer: Any, count: int, timeout_s: float = 30.0) -> list[bytes]:
    got: list[bytes] = []

    def enough() -> bool:
        msg = consumer.poll(0.5)
        if msg is not None and not msg.error():
            got.append(msg.value())
        return len(got) >= count

    eventually(enough, timeout_s, message=lambda: f"{len(got)} of {count} messages")
    return got


def _until_error(producer: Any, errors: list[str], text: str) -> None:
    """Poll ``producer`` until its error callback reported ``text`` (10 s)."""

    def reported() -> bool:
        producer.poll(0.2)
        return any(text in e for e in errors)

    eventually(reported, 10, message=lambda: f"no {text!r} in {errors}")


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_confluent_sasl_ssl(sasl_ssl: Cluster, mechanism: str) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    config = sasl_ssl.client_config("alice", mechanism=mechanism)
    assert config["security.protocol"] == "SASL_SSL"
    assert Path(config["ssl.ca.location"]).read_text().startswith("-----BEGIN")
    topic = f"secure-{mechanism.lower()}"
    admin = AdminClient(config)
    futures = admin.create_topics([NewTopic(topic, 2, 1)], operation_timeout=10)
    futures[topic].result(30)
    producer = confluent_kafka.Producer(config)
    for i in range(10):
        producer.produce(topic, b"v%d" % i, key=b"k%d" % i)
    assert producer.flush(30) == 0
    consumer = confluent_kafka.Consumer(
        {**config, "group.id": f"g-{mechanism}", "auto.offset.reset": "earliest"}
    )
    consumer.subscribe([topic])
    got = _consume(consumer, 10)
    consumer.commit(asynchronous=False)
    consumer.close()
    assert sorted(got) == sorted(b"v%d" % i for i in range(10))
    stored = [r.value for p in range(2) for r in sasl_ssl.records(topic, p)]
    assert sorted(stored) == sorted(got)
    assert topic in admin.list_topics(timeout=10).topics


@pytest.mark.parametrize(
    ("user", "password"), [("alice", "wrong"), ("mallory", "alice-secret")]
)
@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_confluent_refused(
    sasl_ssl: Cluster,
    mechanism: str,
    user: str,
    password: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    errors, on_error = _errors()
    config = {
        **sasl_ssl.client_config("alice", mechanism=mechanism),
        "sasl.username": user,
        "sasl.password": password,
        "error_cb": on_error,
    }
    with caplog.at_level("WARNING", logger="kproto.broker"):
        producer = confluent_kafka.Producer(config)
        _until_error(producer, errors, "Authentication failed")
    assert any(
        "SASL authentication error: Authentication failed" in e
        and mechanism in e
        and password not in e
        for e in errors
    ), errors
    assert f"{mechanism} authentication failed" in caplog.text
    assert password not in caplog.text


def test_confluent_untrusted_certificate(
    sasl_ssl: Cluster, caplog: pytest.LogCaptureFixture
) -> None:
    """No ssl.ca.location: librdkafka does not trust the broker's certificate; the
    broker logs the failed handshake."""
    config = sasl_ssl.client_config("alice")
    del config["ssl.ca.location"]
    errors, on_error = _errors()
    with caplog.at_level("WARNING", logger="kproto.broker"):
        producer = confluent_kafka.Producer({**config, "error_cb": on_error})
        _until_error(producer, errors, "certificate verify failed")
        eventually(
            lambda: "TLS handshake from 127.0.0.1 failed" in caplog.text,
            5,
            message=lambda: caplog.text,
        )


@pytest.fixture(scope="module")
def wrong_host(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[Cluster, str]]:
    """A SASL_SSL cluster whose certificate (given as ssl_context) names another
    host; its CA file."""
    ca = trustme.CA()
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("broker.example.invalid").configure_cert(context)
    ca_file = tmp_path_factory.mktemp("ca") / "ca.pem"
    ca.cert_pem.write_to_path(str(ca_file))
    with Cluster(
        security_protocol="SASL_SSL", users=USERS, ssl_context=context
    ) as cluster:
        assert cluster.ca_file is None
        yield cluster, str(ca_file)


def test_hostname_mismatch(
    wrong_host: tuple[Cluster, str], caplog: pytest.LogCaptureFixture
) -> None:
    cluster, ca_file = wrong_host
    errors, on_error = _errors()
    with caplog.at_level("WARNING", logger="kproto.broker"):
        producer = confluent_kafka.Producer(
            {
                **cluster.client_config("alice"),
                "ssl.ca.location": ca_file,
                "error_cb": on_error,
            }
        )
        _until_error(producer, errors, "certificate verify failed")
        port = cluster.servers[0].port
        with pytest.raises(
            KafkaConnectionError, match="address mismatch, certificate is not valid"
        ):
            Connection("127.0.0.1", port, ssl_context=client_ssl_context(ca_file))
        eventually(
            lambda: "TLS handshake from 127.0.0.1 failed" in caplog.text,
            5,
            message=lambda: caplog.text,
        )
    # the same CA without host name verification: the handshake and SASL pass
    context = client_ssl_context(ca_file, check_hostname=False)
    sasl = SaslConfig(mechanism="PLAIN", username="alice", password="alice-secret")
    with Connection("127.0.0.1", port, ssl_context=context, sasl=sasl) as conn:
        assert conn.request(ApiKey.METADATA, topics=[]).brokers


def _frame(api_key: int, version: int, body: bytes) -> bytes:
    header = struct.pack(">hhih", api_key, version, 7, 4) + b"test"
    return struct.pack(">i", len(header) + len(body)) + header + body


def _closed(sock: socket.socket) -> bool:
    sock.settimeout(5)
    try:
        return sock.recv(1) == b""
    except ConnectionResetError:
        return True


def test_request_before_authentication_closes(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with (
        Cluster(security_protocol="SASL_PLAINTEXT", users=USERS) as cluster,
        caplog.at_level("WARNING", logger="kproto.broker"),
    ):
        port = cluster.servers[0].port
        with socket.create_connection(("127.0.0.1", port)) as sock:
            sock.sendall(_frame(ApiKey.METADATA, 1, b"\xff\xff\xff\xff"))
            assert _closed(sock)
        assert "api_key 3 before SASL authentication completed" in caplog.text
        # ApiVersions is answered before authentication; a mechanism not enabled
        # gets UNSUPPORTED_SASL_MECHANISM with the list, then the connection closes
        with socket.create_connection(("127.0.0.1", port)) as sock:
            sock.sendall(_frame(ApiKey.API_VERSIONS, 0, b""))
            size = struct.unpack(">i", sock.recv(4))[0]
            assert size > 8
            sock.recv(size, socket.MSG_WAITALL)
            sock.sendall(_frame(ApiKey.SASL_HANDSHAKE, 1, b"\x00\x06GSSAPI"))
            size = struct.unpack(">i", sock.recv(4))[0]
            body = sock.recv(size, socket.MSG_WAITALL)[4:]
            assert struct.unpack(">h", body[:2])[0] == 33  # UNSUPPORTED_SASL_MECHANISM
            assert b"SCRAM-SHA-512" in body
            assert _closed(sock)
        # a healthy client still gets in
        sasl = SaslConfig(
            mechanism="SCRAM-SHA-256", username="alice", password="alice-secret"
        )
        with Connection("127.0.0.1", port, sasl=sasl) as conn:
            conn.negotiate()
            assert conn.authenticated


def test_unframed_v0_tokens() -> None:
    """SaslHandshake v0 is followed by size-prefixed raw tokens (pre-KIP-152)."""
    with Cluster(security_protocol="SASL_PLAINTEXT", users=USERS) as cluster:
        port = cluster.servers[0].port
        with socket.create_connection(("127.0.0.1", port)) as sock:
            sock.settimeout(5)
            sock.sendall(_frame(ApiKey.SASL_HANDSHAKE, 0, b"\x00\x05PLAIN"))
            size = struct.unpack(">i", sock.recv(4))[0]
            assert sock.recv(size, socket.MSG_WAITALL)[4:6] == b"\x00\x00"
            token = b"\0alice\0alice-secret"
            sock.sendall(struct.pack(">i", len(token)) + token)
            assert sock.recv(4) == b"\x00\x00\x00\x00"  # empty challenge: success
            sock.sendall(_frame(ApiKey.METADATA, 1, b"\xff\xff\xff\xff"))
            size = struct.unpack(">i", sock.recv(4))[0]
            assert size > 8  # answered: authenticated
        with socket.create_connection(("127.0.0.1", port)) as sock:
            sock.sendall(_frame(ApiKey.SASL_HANDSHAKE, 0, b"\x00\x05PLAIN"))
            size = struct.unpack(">i", sock.recv(4))[0]
            sock.recv(size, socket.MSG_WAITALL)
            token = b"\0alice\0wrong"
            sock.sendall(struct.pack(">i", len(token)) + token)
            assert _closed(sock)


def test_plaintext_listener_answers_sasl_with_illegal_state() -> None:
    with Cluster() as cluster:
        port = cluster.servers[0].port
        with socket.create_connection(("127.0.0.1", port)) as sock:
            sock.sendall(_frame(ApiKey.SASL_HANDSHAKE, 1, b"\x00\x05PLAIN"))
            size = struct.unpack(">i", sock.recv(4))[0]
            body = sock.recv(size, socket.MSG_WAITALL)[4:]
            assert struct.unpack(">h", body[:2])[0] == 34  # ILLEGAL_SASL_STATE


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_kafka_python_and_aiokafka_scram(
    mechanism: str, caplog: pytest.LogCaptureFixture
) -> None:
    pytest.importorskip("kafka")
    pytest.importorskip("aiokafka")
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
    from kafka import KafkaConsumer, KafkaProducer

    with Cluster(
        security_protocol="SASL_PLAINTEXT", sasl_mechanisms=[mechanism], users=USERS
    ) as cluster:
        settings = {
            "bootstrap_servers": cluster.bootstrap_servers,
            "security_protocol": "SASL_PLAINTEXT",
            "sasl_mechanism": mechanism,
            "sasl_plain_username": "alice",
            "sasl_plain_password": "alice-secret",
        }
        producer = KafkaProducer(**settings)
        producer.send("kp", b"from-kafka-python").get(30)
        producer.close()
        consumer = KafkaConsumer(
            "kp", group_id="kp-group", auto_offset_reset="earliest", **settings
        )
        got = read_values(consumer, 1)
        consumer.close()
        assert got == [b"from-kafka-python"]

        async def aiokafka_roundtrip() -> bytes:
            producer = AIOKafkaProducer(**settings)
            await producer.start()
            try:
                await producer.send_and_wait("ak", b"from-aiokafka")
            finally:
                await producer.stop()
            consumer = AIOKafkaConsumer(
                "ak", group_id="ak-group", auto_offset_reset="earliest", **settings
            )
            await consumer.start()
            try:
                msg = await asyncio.wait_for(consumer.getone(), 30)
            finally:
                await consumer.stop()
            return bytes(msg.value)

        assert asyncio.run(aiokafka_roundtrip()) == b"from-aiokafka"
        assert [r.value for r in cluster.records("ak")] == [b"from-aiokafka"]

        async def aiokafka_refused() -> str:
            producer = AIOKafkaProducer(**{**settings, "sasl_plain_password": "wrong"})
            try:
                await producer.start()
            except Exception as err:  # aiokafka's KafkaConnectionError
                return f"{err!r} {err.__cause__!r}"
            finally:
                await producer.stop()
            raise AssertionError("a wrong password was let in")

        with caplog.at_level("ERROR", logger="aiokafka"):
            assert "Unable to bootstrap" in asyncio.run(aiokafka_refused())
        assert (
            "SaslAuthenticationFailed: Authentication failed during authentication "
            f"due to invalid credentials with SASL mechanism {mechanism}"
        ) in caplog.text


def test_mutual_tls_principal() -> None:
    with Cluster(security_protocol="SSL", ssl_client_auth="required") as cluster:
        assert cluster.client_config() == {
            "bootstrap.servers": cluster.bootstrap_servers,
            "security.protocol": "SSL",
            "ssl.ca.location": str(cluster.ca_file),
        }
        principals: list[str] = []
        dispatcher = cluster.servers[0].dispatcher
        handle = dispatcher.handle

        async def spy(*args: Any, **kwargs: Any) -> Any:
            principals.append(kwargs["principal"])
            return await handle(*args, **kwargs)

        dispatcher.handle = spy  # type: ignore[method-assign]
        certfile, keyfile = cluster.client_certificate("alice")
        context = client_ssl_context(
            str(cluster.ca_file), certfile=str(certfile), keyfile=str(keyfile)
        )
        port = cluster.servers[0].port
        with Connection("127.0.0.1", port, ssl_context=context) as conn:
            conn.negotiate()
        assert principals == ["User:CN=alice,OU=clients,O=kproto test client"]
        # no client certificate: the handshake fails on both sides
        with pytest.raises(KafkaConnectionError):
            with Connection(
                "127.0.0.1", port, ssl_context=client_ssl_context(str(cluster.ca_file))
            ) as conn:
                conn.negotiate()
        # confluent-kafka with the certificate
        producer = confluent_kafka.Producer(
            {
                **cluster.client_config(),
                "ssl.certificate.location": str(certfile),
                "ssl.key.location": str(keyfile),
            }
        )
        producer.produce("mtls", b"x")
        assert producer.flush(30) == 0
        assert "User:CN=alice,OU=clients,O=kproto test client" in principals


def test_scram_credentials_admin(sasl_ssl: Cluster) -> None:
    """AlterUserScramCredentials through confluent-kafka's AdminClient adds a user
    who can then log in with SCRAM; Describe lists mechanisms and iterations."""
    from confluent_kafka.admin import (
        AdminClient,
        ScramCredentialInfo,
        ScramMechanism,
        UserScramCredentialDeletion,
        UserScramCredentialUpsertion,
    )

    admin = AdminClient(sasl_ssl.client_config("admin", mechanism="SCRAM-SHA-512"))
    upsert = UserScramCredentialUpsertion(
        "bob",
        ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 8192),
        b"bob-secret",
    )
    for future in admin.alter_user_scram_credentials([upsert]).values():
        future.result(30)
    described = admin.describe_user_scram_credentials(["bob", "alice"])
    infos = {
        user: [(i.mechanism, i.iterations) for i in f.result(30).scram_credential_infos]
        for user, f in described.items()
    }
    assert infos["bob"] == [(ScramMechanism.SCRAM_SHA_256, 8192)]
    assert sorted(infos["alice"]) == [
        (ScramMechanism.SCRAM_SHA_256, 4096),
        (ScramMechanism.SCRAM_SHA_512, 4096),
    ]
    config = {
        **sasl_ssl.client_config("alice", mechanism="SCRAM-SHA-256"),
        "sasl.username": "bob",
        "sasl.password": "bob-secret",
    }
    producer = confluent_kafka.Producer(config)
    producer.produce("from-bob", b"hi")
    assert producer.flush(30) == 0
    deletion = UserScramCredentialDeletion("bob", ScramMechanism.SCRAM_SHA_256)
    for future in admin.alter_user_scram_credentials([deletion]).values():
        future.result(30)
    with pytest.raises(confluent_kafka.KafkaException, match="does not exist"):
        admin.describe_user_scram_credentials(["bob"])["bob"].result(30)


def test_reauthentication(caplog: pytest.LogCaptureFixture) -> None:
    """KIP-368: the broker gives a session lifetime and closes a connection that
    outlives it; kproto's Connection re-authenticates before it runs out."""
    with Cluster(
        security_protocol="SASL_PLAINTEXT", users=USERS, connections_max_reauth_ms=600
    ) as cluster:
        port = cluster.servers[0].port
        sasl = SaslConfig(
            mechanism="SCRAM-SHA-256", username="alice", password="alice-secret"
        )
        with Connection("127.0.0.1", port, sasl=sasl) as conn:
            conn.negotiate()
            assert 0 < conn.session_lifetime_ms <= 600
            for _ in range(3):
                time.sleep(0.7)
                assert conn.request(ApiKey.METADATA, topics=[]).brokers
        with (
            Connection("127.0.0.1", port, sasl=sasl) as conn,
            caplog.at_level("WARNING", logger="kproto.broker"),
        ):
            conn.negotiate()
            conn._reauth_at = None  # a client that does not re-authenticate
            time.sleep(0.7)
            with pytest.raises(KafkaConnectionError):
                conn.request(ApiKey.METADATA, topics=[])
        assert "SASL session expired" in caplog.text


@pytest.mark.kafka_cluster(
    security_protocol="SASL_PLAINTEXT",
    sasl_mechanisms=["SCRAM-SHA-512"],
    users={"alice": "pw"},
    configs={"connections.max.reauth.ms": 60000},
)
def test_fixture_starts_a_secured_cluster(kafka_cluster: Cluster) -> None:
    config = kafka_cluster.client_config("alice")
    assert config["sasl.mechanism"] == "SCRAM-SHA-512"
    assert kafka_cluster.security.connections_max_reauth_ms == 60000
    producer = confluent_kafka.Producer(config)
    producer.produce("fx", b"v")
    assert producer.flush(30) == 0


def test_configuration_errors(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="security_protocol must be one of"):
        Cluster(security_protocol="TLS")
    with pytest.raises(ValueError, match="GSSAPI not served"):
        Cluster(security_protocol="SASL_PLAINTEXT", sasl_mechanisms=["GSSAPI"])
    cluster = Cluster(security_protocol="SASL_PLAINTEXT", users=USERS)
    with pytest.raises(ValueError, match="needs user="):
        cluster.client_config()
    with pytest.raises(ValueError, match="unknown user 'eve'"):
        cluster.client_config("eve")


def test_credentials_never_in_repr(sasl_ssl: Cluster) -> None:
    text = repr(sasl_ssl.security) + repr(
        sasl_ssl.security.credentials.scram("SCRAM-SHA-256", "alice")
    )
    assert "alice-secret" not in text


def test_confluent_oauthbearer_unsecured_jws() -> None:
    """librdkafka's unsecured JWT (``sasl.oauthbearer.config=principal=...``) is
    accepted by the broker's OAUTHBEARER (Kafka's default unsecured validator)."""
    with Cluster(security_protocol="SASL_SSL", sasl_mechanisms=["OAUTHBEARER"]) as c:
        producer = confluent_kafka.Producer(
            {
                "bootstrap.servers": c.bootstrap_servers,
                "security.protocol": "SASL_SSL",
                "ssl.ca.location": str(c.ca_file),
                "sasl.mechanism": "OAUTHBEARER",
                "sasl.oauthbearer.config": "principal=alice",
                "enable.sasl.oauthbearer.unsecure.jwt": True,
            }
        )
        producer.produce("oauth", b"token-holder")
        assert producer.flush(30) == 0
        assert [r.value for r in c.records("oauth")] == [b"token-holder"]


def test_cli_broker_sasl_ssl(tmp_path: Path) -> None:
    """``kproto broker --security-protocol SASL_SSL --user ...``: the CA file on
    stderr, SCRAM users; a bad setting is one ``kproto: error:`` line."""
    import signal
    import subprocess
    import sys

    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "kproto",
            "broker",
            "--security-protocol",
            "SASL_SSL",
            "--sasl-mechanism",
            "SCRAM-SHA-512",
            "--user",
            "alice:pa:ss",
            "--data-dir",
            str(tmp_path),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None and proc.stderr is not None
        host, port = proc.stdout.readline().strip().split(":")
        ca_line = proc.stderr.readline().strip()
        assert ca_line == f"ssl.ca.location={tmp_path / 'tls' / 'ca.pem'}"
        sasl = SaslConfig(mechanism="SCRAM-SHA-512", username="alice", password="pa:ss")
        context = client_ssl_context(ca_line.split("=", 1)[1])
        with Connection(host, int(port), ssl_context=context, sasl=sasl) as conn:
            assert conn.request(ApiKey.METADATA, topics=[]).brokers
        proc.send_signal(signal.SIGINT)
        assert proc.wait(30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
    bad = subprocess.run(
        [
            sys.executable,
            "-m",
            "kproto",
            "broker",
            "--security-protocol",
            "SASL_PLAINTEXT",
            "--sasl-mechanism",
            "OAUTHBEARER",
            "--user",
            "nocolon",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert bad.returncode == 2
    assert bad.stderr.strip().splitlines()[-1].startswith("kproto: error:")
    assert "NAME:PASSWORD" in bad.stderr
