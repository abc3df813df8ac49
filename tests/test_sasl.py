"""kproto.sasl: the SCRAM arithmetic against RFC 7677's SCRAM-SHA-256 and RFC 5802's
SCRAM-SHA-1 exchanges (byte-exact), client against server for every mechanism, and
every way an exchange must fail."""

from __future__ import annotations

import base64
import json
import pickle

import pytest

from kproto.sasl import (
    OAuthBearerClient,
    OAuthBearerServer,
    PlainClient,
    PlainServer,
    SaslAuthenticationError,
    SaslConfig,
    ScramClient,
    ScramCredential,
    ScramServer,
    Secret,
    client_mechanism,
    scram_credential,
    unsecured_jws,
    validate_unsecured_jws,
)

# RFC 7677 section 3 (SCRAM-SHA-256), user "user", password "pencil"
RFC7677 = {
    "nonce": "rOprNGfwEbeRWgbNEkqO",
    "server_nonce": "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0",
    "salt": "W22ZaJ0SNY7soEsUEjb6gQ==",
    "client_first": b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO",
    "server_first": b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
    b"s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096",
    "client_final": b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
    b"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=",
    "server_final": b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=",
}

# RFC 5802 section 5 (SCRAM-SHA-1), the same user and password
RFC5802 = {
    "nonce": "fyko+d2lbbFgONRv9qkxdawL",
    "server_nonce": "3rfcNHYJY1ZVvWVs7j",
    "salt": "QSXCR+Q6sek8bf92",
    "client_first": b"n,,n=user,r=fyko+d2lbbFgONRv9qkxdawL",
    "server_first": b"r=fyko+d2lbbFgONRv9qkxdawL3rfcNHYJY1ZVvWVs7j,"
    b"s=QSXCR+Q6sek8bf92,i=4096",
    "client_final": b"c=biws,r=fyko+d2lbbFgONRv9qkxdawL3rfcNHYJY1ZVvWVs7j,"
    b"p=v0X8v3Bz2T0CJGbJQyF0X+HI4Ts=",
    "server_final": b"v=rmF9pqV8S7suAoZWja4dJRkFsKQ=",
}


@pytest.mark.parametrize(
    ("vector", "mechanism", "hash_name"),
    [(RFC7677, "SCRAM-SHA-256", None), (RFC5802, "SCRAM-SHA-256", "sha1")],
    ids=["rfc7677-sha256", "rfc5802-sha1"],
)
def test_scram_client_rfc_vectors(
    vector: dict, mechanism: str, hash_name: str | None
) -> None:
    client = ScramClient(
        mechanism, "user", "pencil", nonce=vector["nonce"], hash_name=hash_name
    )
    assert client.initial_response() == vector["client_first"]
    assert client.evaluate(vector["server_first"]) == vector["client_final"]
    assert not client.complete
    assert client.evaluate(vector["server_final"]) is None
    assert client.complete


@pytest.mark.parametrize(
    ("vector", "mechanism", "hash_name"),
    [(RFC7677, "SCRAM-SHA-256", "sha256"), (RFC5802, "SCRAM-SHA-256", "sha1")],
    ids=["rfc7677-sha256", "rfc5802-sha1"],
)
def test_scram_server_rfc_vectors(vector: dict, mechanism: str, hash_name: str) -> None:
    import hashlib

    salt = base64.b64decode(vector["salt"])
    salted = hashlib.pbkdf2_hmac(hash_name, b"pencil", salt, 4096)
    import hmac

    client_key = hmac.new(salted, b"Client Key", hash_name).digest()
    credential = ScramCredential(
        mechanism=mechanism,
        salt=salt,
        iterations=4096,
        stored_key=hashlib.new(hash_name, client_key).digest(),
        server_key=hmac.new(salted, b"Server Key", hash_name).digest(),
    )
    server = ScramServer(
        mechanism,
        {"user": credential}.get,
        nonce=vector["server_nonce"],
        hash_name=hash_name,
    )
    assert server.evaluate(vector["client_first"]) == vector["server_first"]
    assert server.evaluate(vector["client_final"]) == vector["server_final"]
    assert server.complete and server.principal == "user"


def test_scram_credential_matches_rfc7677() -> None:
    """scram_credential with RFC 7677's salt: a server holding it answers the RFC's
    client-final with the RFC's server-final."""
    cred = scram_credential(
        "SCRAM-SHA-256", "pencil", salt=base64.b64decode(RFC7677["salt"])
    )
    server = ScramServer(
        "SCRAM-SHA-256", {"user": cred}.get, nonce=RFC7677["server_nonce"]
    )
    server.evaluate(RFC7677["client_first"])
    assert server.evaluate(RFC7677["client_final"]) == RFC7677["server_final"]


def _run(client, server) -> None:  # type: ignore[no-untyped-def]
    message: bytes | None = client.initial_response()
    while message is not None:
        challenge = server.evaluate(message)
        message = client.evaluate(challenge)
        if message is None and not client.complete and server.complete:
            break


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_scram_client_server(mechanism: str) -> None:
    store = {"alice": scram_credential(mechanism, "s3cret,=x")}
    client = ScramClient(mechanism, "alice", "s3cret,=x")
    server = ScramServer(mechanism, store.get)
    _run(client, server)
    assert client.complete and server.complete and server.principal == "alice"


def test_scram_username_escaping() -> None:
    name = "a=b,c"
    store = {name: scram_credential("SCRAM-SHA-512", "pw")}
    client = ScramClient("SCRAM-SHA-512", name, "pw")
    first = client.initial_response()
    assert b"n=a=3Db=2Cc," in first
    server = ScramServer("SCRAM-SHA-512", store.get)
    _run(client, server)
    assert server.principal == name


@pytest.mark.parametrize("user", ["alice", "mallory"])
def test_scram_wrong_password_or_unknown_user(user: str) -> None:
    store = {"alice": scram_credential("SCRAM-SHA-256", "right")}
    client = ScramClient("SCRAM-SHA-256", user, "wrong")
    server = ScramServer("SCRAM-SHA-256", store.get)
    with pytest.raises(SaslAuthenticationError, match="invalid credentials") as info:
        _run(client, server)
    assert "wrong" not in str(info.value) and "right" not in str(info.value)
    assert not server.complete


def test_scram_tampered_server_signature() -> None:
    client = ScramClient("SCRAM-SHA-256", "user", "pencil", nonce=RFC7677["nonce"])
    client.initial_response()
    client.evaluate(RFC7677["server_first"])
    bad = b"v=" + base64.b64encode(b"\0" * 32)
    with pytest.raises(SaslAuthenticationError, match="signature does not verify"):
        client.evaluate(bad)
    assert not client.complete


def test_scram_server_not_holding_the_credential() -> None:
    """A server with another credential for the user cannot produce a signature the
    client accepts, even when it lets the client through."""
    client = ScramClient("SCRAM-SHA-256", "alice", "pw")
    impostor = scram_credential("SCRAM-SHA-256", "other")
    server = ScramServer("SCRAM-SHA-256", {"alice": impostor}.get)
    first = server.evaluate(client.initial_response())
    client.evaluate(first)
    # the impostor signs with its own server key
    import hashlib
    import hmac

    auth = b"n=alice,r=" + client._nonce.encode() + b"," + first + b",c=biws,r="
    auth += first.split(b",")[0][2:]
    sig = hmac.new(impostor.server_key, auth, hashlib.sha256).digest()
    with pytest.raises(SaslAuthenticationError, match="signature"):
        client.evaluate(b"v=" + base64.b64encode(sig))


@pytest.mark.parametrize(
    ("server_first", "reason"),
    [
        (b"r=someoneelse,s=QSXCR+Q6sek8bf92,i=4096", "nonce"),
        (b"r=NONCEx,s=QSXCR+Q6sek8bf92,i=1000", "iterations"),
        (b"r=NONCEx,s=QSXCR+Q6sek8bf92,i=100000000", "iterations"),
        (b"r=NONCEx,s=!!,i=4096", "base64"),
        (b"e=unknown-user", "server error"),
        (b"garbage", "malformed"),
        (b"r=NONCEx,i=4096", "lacks"),
    ],
)
def test_scram_client_rejects_bad_server_first(
    server_first: bytes, reason: str
) -> None:
    client = ScramClient("SCRAM-SHA-256", "u", "p", nonce="NONCE")
    client.initial_response()
    with pytest.raises(SaslAuthenticationError, match=reason):
        client.evaluate(server_first)


def test_scram_server_rejects_bad_client_messages() -> None:
    store = {"u": scram_credential("SCRAM-SHA-256", "p")}
    with pytest.raises(SaslAuthenticationError, match="GS2"):
        ScramServer("SCRAM-SHA-256", store.get).evaluate(b"p=tls-unique,,n=u,r=x")
    server = ScramServer("SCRAM-SHA-256", store.get)
    server.evaluate(b"n,,n=u,r=abc")
    with pytest.raises(SaslAuthenticationError, match="nonce"):
        server.evaluate(b"c=biws,r=abc,p=AAAA")


def test_scram_credential_is_salted_and_bounded() -> None:
    a = scram_credential("SCRAM-SHA-256", "pw")
    b = scram_credential("SCRAM-SHA-256", "pw")
    assert a.salt != b.salt and a.stored_key != b.stored_key
    assert a.iterations == 4096
    with pytest.raises(ValueError, match="iterations"):
        scram_credential("SCRAM-SHA-256", "pw", iterations=10)
    with pytest.raises(ValueError, match="SCRAM"):
        scram_credential("PLAIN", "pw")
    assert "stored_key" not in repr(a) and "salt=" not in repr(a)


def test_plain_client_server() -> None:
    client = PlainClient("alice", "pw")
    assert client.initial_response() == b"\0alice\0pw"
    server = PlainServer(lambda u, p: u == "alice" and p == Secret("pw"))
    assert server.evaluate(b"\0alice\0pw") == b""
    assert server.principal == "alice"
    with pytest.raises(SaslAuthenticationError, match="invalid username or password"):
        PlainServer(lambda u, p: False).evaluate(b"\0alice\0nope")
    with pytest.raises(SaslAuthenticationError, match="authorization id"):
        PlainServer(lambda u, p: True).evaluate(b"bob\0alice\0pw")
    with pytest.raises(SaslAuthenticationError, match="invalid message"):
        PlainServer(lambda u, p: True).evaluate(b"alice")


def test_oauthbearer_client_server() -> None:
    token = unsecured_jws("alice", now_s=1000.0)
    client = OAuthBearerClient(lambda: token, {"traceId": "123"})
    first = client.initial_response()
    assert first == f"n,,\x01auth=Bearer {token}\x01traceId=123\x01\x01".encode()
    server = OAuthBearerServer(lambda t: validate_unsecured_jws(t, now_s=1001.0))
    assert server.evaluate(first) == b""
    assert server.principal == "alice" and server.expires_at_s == 4600.0
    assert client.evaluate(b"") is None and client.complete


def test_oauthbearer_bad_token() -> None:
    client = OAuthBearerClient(lambda: unsecured_jws("alice", lifetime_s=-1))
    server = OAuthBearerServer()
    challenge = server.evaluate(client.initial_response())
    assert json.loads(challenge) == {"status": "invalid_token"}
    assert client.evaluate(challenge) == b"\x01"
    assert client.server_error == "invalid_token"
    with pytest.raises(SaslAuthenticationError, match="expired"):
        server.evaluate(b"\x01")
    with pytest.raises(ValueError, match="extension"):
        OAuthBearerClient(lambda: "t", {"auth": "x"})


def test_secret_never_shows() -> None:
    secret = Secret("hunter2")
    assert "hunter2" not in repr(secret) + str(secret) + f"{secret}" + f"{secret!r}"
    assert secret.reveal() == "hunter2" and secret == Secret("hunter2")
    with pytest.raises(TypeError):
        pickle.dumps(secret)
    config = SaslConfig(mechanism="SCRAM-SHA-512", username="alice", password="hunter2")
    assert "hunter2" not in repr(config) and "alice" in repr(config)
    assert config.password.reveal() == "hunter2"


def test_sasl_config_validates() -> None:
    with pytest.raises(ValueError, match="unknown SASL mechanism 'GSSAPI'"):
        SaslConfig(mechanism="GSSAPI", username="a")
    with pytest.raises(ValueError, match="needs a username"):
        SaslConfig(mechanism="PLAIN")
    with pytest.raises(ValueError, match="token_provider"):
        SaslConfig(mechanism="OAUTHBEARER")
    config = SaslConfig.from_client_config(
        {"sasl.mechanism": "SCRAM-SHA-256", "sasl.username": "a", "sasl.password": "b"}
    )
    assert isinstance(client_mechanism(config), ScramClient)
