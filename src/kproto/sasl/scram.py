"""SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802, RFC 7677): the one home of the SCRAM
arithmetic, client and server sides and the stored credential (see
:mod:`kproto.sasl`)."""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import re
import secrets
from collections.abc import Callable

import attrs

from ._core import (
    MAX_ITERATIONS,
    MIN_ITERATIONS,
    SCRAM_MECHANISMS,
    SaslAuthenticationError,
    Secret,
)

__all__ = ["ScramClient", "ScramCredential", "ScramServer", "scram_credential"]

_GS2_HEADER = "n,,"


def _hmac(key: bytes, msg: bytes, hash_name: str) -> bytes:
    return hmac.new(key, msg, hash_name).digest()


def _xor(a: bytes, b: bytes) -> bytes:
    return bytes(x ^ y for x, y in zip(a, b, strict=True))


def _salted_password(
    password: str, salt: bytes, iterations: int, hash_name: str
) -> bytes:
    return hashlib.pbkdf2_hmac(hash_name, password.encode(), salt, iterations)


@attrs.frozen(kw_only=True)
class ScramCredential:
    """What a server stores for a SCRAM user (Kafka's ``ScramCredential``): never
    the password, only the salt, the iteration count, ``StoredKey = H(ClientKey)``
    and ``ServerKey`` (RFC 5802 section 3). Keys are left out of ``repr``."""

    mechanism: str
    salt: bytes = attrs.field(repr=False)
    iterations: int
    stored_key: bytes = attrs.field(repr=False)
    server_key: bytes = attrs.field(repr=False)

    @classmethod
    def from_salted_password(
        cls, mechanism: str, salted_password: bytes, salt: bytes, iterations: int
    ) -> ScramCredential:
        """From ``SaltedPassword`` (what AlterUserScramCredentials carries)."""
        hash_name = _hash_name(mechanism)
        client_key = _hmac(salted_password, b"Client Key", hash_name)
        return cls(
            mechanism=mechanism,
            salt=salt,
            iterations=iterations,
            stored_key=hashlib.new(hash_name, client_key).digest(),
            server_key=_hmac(salted_password, b"Server Key", hash_name),
        )


def _hash_name(mechanism: str) -> str:
    try:
        return SCRAM_MECHANISMS[mechanism][0]
    except KeyError:
        raise ValueError(f"not a SCRAM mechanism: {mechanism!r}") from None


def scram_credential(
    mechanism: str,
    password: str | Secret,
    *,
    iterations: int = MIN_ITERATIONS,
    salt: bytes | None = None,
) -> ScramCredential:
    """The stored credential for ``password`` (Kafka's ``ScramFormatter
    .generateCredential``): a random 32-byte salt unless given, 4096 iterations
    (Kafka's default and minimum).

    Raises:
        ValueError: not a SCRAM mechanism, or ``iterations`` out of 4096-16384.
    """
    hash_name = _hash_name(mechanism)
    if not MIN_ITERATIONS <= iterations <= MAX_ITERATIONS:
        raise ValueError(
            f"SCRAM iterations must be {MIN_ITERATIONS}-{MAX_ITERATIONS}, "
            f"got {iterations}"
        )
    salt = secrets.token_bytes(32) if salt is None else salt
    salted = _salted_password(Secret(password).reveal(), salt, iterations, hash_name)
    return ScramCredential.from_salted_password(mechanism, salted, salt, iterations)


_ATTR = re.compile(r"^([A-Za-z])=(.*)$", re.S)


def _attributes(mechanism: str, message: bytes, what: str) -> dict[str, str]:
    """``{"r": ..., "s": ...}`` from ``a=value,b=value`` (RFC 5802 section 5)."""
    try:
        text = message.decode()
    except UnicodeDecodeError:
        raise SaslAuthenticationError(mechanism, f"{what}: invalid UTF-8") from None
    out: dict[str, str] = {}
    for part in text.split(","):
        m = _ATTR.match(part)
        if m is None:
            raise SaslAuthenticationError(mechanism, f"{what}: malformed attribute")
        out.setdefault(m.group(1), m.group(2))
    return out


def _escape_user(name: str) -> str:
    return name.replace("=", "=3D").replace(",", "=2C")


def _unescape_user(mechanism: str, name: str) -> str:
    if re.search(r"=(?!2C|3D)", name):
        raise SaslAuthenticationError(mechanism, "invalid username encoding")
    return name.replace("=2C", ",").replace("=3D", "=")


def _b64decode(mechanism: str, value: str, what: str) -> bytes:
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        raise SaslAuthenticationError(mechanism, f"{what}: invalid base64") from None


class ScramClient:
    """SCRAM on the client (RFC 5802, RFC 7677; Kafka's ``ScramSaslClient``).

    Three steps: client-first ``n,,n=<user>,r=<nonce>``; on the server-first
    (``r=<nonce+server nonce>,s=<salt>,i=<iterations>``) the client-final with the
    proof; on the server-final ``v=<signature>``, the server's signature is checked.

    Args:
        mechanism: ``"SCRAM-SHA-256"`` or ``"SCRAM-SHA-512"``.
        nonce: the client nonce (tests give RFC vectors'); default 32 random bytes
            in URL-safe base64.
        hash_name: overrides the hash (``"sha1"`` for RFC 5802's own example).

    Raises (from ``evaluate``):
        SaslAuthenticationError: a malformed message, a nonce that does not extend
            ours, iterations outside 4096-16384, a server error (``e=...``) or a
            server signature that does not verify.
    """

    def __init__(
        self,
        mechanism: str,
        username: str,
        password: Secret | str,
        *,
        nonce: str | None = None,
        hash_name: str | None = None,
        min_iterations: int = MIN_ITERATIONS,
    ) -> None:
        self.mechanism = mechanism
        self._hash = hash_name or _hash_name(mechanism)
        self._username = username
        self._password = Secret(password)
        self._nonce = nonce or secrets.token_urlsafe(32)
        self._min_iterations = min_iterations
        self._first_bare = ""
        self._server_signature = b""
        self._step = 0
        self.complete = False

    def initial_response(self) -> bytes:
        self._first_bare = f"n={_escape_user(self._username)},r={self._nonce}"
        self._step = 1
        return (_GS2_HEADER + self._first_bare).encode()

    def evaluate(self, challenge: bytes) -> bytes | None:
        if self._step == 1:
            self._step = 2
            return self._final(challenge)
        if self._step == 2:
            self._step = 3
            self._verify(challenge)
            return None
        raise SaslAuthenticationError(self.mechanism, "unexpected server message")

    def _final(self, server_first: bytes) -> bytes:
        m = self.mechanism
        attrs_ = _attributes(m, server_first, "server-first message")
        if "e" in attrs_:
            raise SaslAuthenticationError(m, f"server error {attrs_['e']}")
        nonce, salt_b64, iterations_text = (
            attrs_.get("r"),
            attrs_.get("s"),
            attrs_.get("i"),
        )
        if nonce is None or salt_b64 is None or iterations_text is None:
            raise SaslAuthenticationError(m, "server-first message lacks r=, s= or i=")
        if not nonce.startswith(self._nonce) or len(nonce) == len(self._nonce):
            raise SaslAuthenticationError(
                m, "server nonce does not extend the client nonce"
            )
        try:
            iterations = int(iterations_text)
        except ValueError:
            raise SaslAuthenticationError(m, "invalid iteration count") from None
        if not self._min_iterations <= iterations <= MAX_ITERATIONS:
            raise SaslAuthenticationError(
                m,
                f"server asks for {iterations} iterations "
                f"(accepted: {self._min_iterations}-{MAX_ITERATIONS})",
            )
        salt = _b64decode(m, salt_b64, "salt")
        salted = _salted_password(self._password.reveal(), salt, iterations, self._hash)
        final_bare = f"c={base64.b64encode(_GS2_HEADER.encode()).decode()},r={nonce}"
        auth_message = ",".join(
            (self._first_bare, server_first.decode(), final_bare)
        ).encode()
        client_key = _hmac(salted, b"Client Key", self._hash)
        stored_key = hashlib.new(self._hash, client_key).digest()
        proof = _xor(client_key, _hmac(stored_key, auth_message, self._hash))
        server_key = _hmac(salted, b"Server Key", self._hash)
        self._server_signature = _hmac(server_key, auth_message, self._hash)
        return f"{final_bare},p={base64.b64encode(proof).decode()}".encode()

    def _verify(self, server_final: bytes) -> None:
        m = self.mechanism
        attrs_ = _attributes(m, server_final, "server-final message")
        if "e" in attrs_:
            raise SaslAuthenticationError(m, f"server error {attrs_['e']}")
        signature = _b64decode(m, attrs_.get("v", ""), "server signature")
        if not hmac.compare_digest(signature, self._server_signature):
            raise SaslAuthenticationError(
                m,
                "the server's signature does not verify (not the server holding "
                "this user's credential)",
            )
        self.complete = True


class ScramServer:
    """SCRAM on the server (RFC 5802; Kafka's ``ScramSaslServer``).

    Args:
        mechanism: ``"SCRAM-SHA-256"`` or ``"SCRAM-SHA-512"``.
        lookup: ``user -> ScramCredential | None``.
        nonce: the server's nonce part (tests); default 32 random bytes.

    An unknown user and a wrong password fail alike ("invalid credentials"), as
    Kafka's do, so the answer does not tell which users exist.
    """

    def __init__(
        self,
        mechanism: str,
        lookup: Callable[[str], ScramCredential | None],
        *,
        nonce: str | None = None,
        hash_name: str | None = None,
    ) -> None:
        self.mechanism = mechanism
        self._hash = hash_name or _hash_name(mechanism)
        self._lookup = lookup
        self._server_nonce = nonce or secrets.token_urlsafe(32)
        self._step = 0
        self._user = ""
        self._credential: ScramCredential | None = None
        self._first_bare = ""
        self._server_first = ""
        self._nonce = ""
        self.complete = False
        self.principal: str | None = None
        self.expires_at_s: float | None = None

    def evaluate(self, response: bytes) -> bytes:
        if self._step == 0:
            self._step = 1
            return self._first(response)
        if self._step == 1:
            self._step = 2
            return self._final(response)
        raise SaslAuthenticationError(self.mechanism, "unexpected client message")

    def _first(self, client_first: bytes) -> bytes:
        m = self.mechanism
        try:
            text = client_first.decode()
        except UnicodeDecodeError:
            raise SaslAuthenticationError(m, "invalid UTF-8") from None
        gs2 = text.split(",", 2)
        if len(gs2) != 3 or gs2[0] not in ("n", "y") or gs2[1] not in ("",):
            raise SaslAuthenticationError(
                m,
                "client-first message: unsupported GS2 header (channel binding "
                "or authorization id)",
            )
        self._first_bare = gs2[2]
        attrs_ = _attributes(m, self._first_bare.encode(), "client-first message")
        user, client_nonce = attrs_.get("n"), attrs_.get("r")
        if not user or not client_nonce:
            raise SaslAuthenticationError(m, "client-first message lacks n= or r=")
        self._user = _unescape_user(m, user)
        self._credential = self._lookup(self._user)
        if self._credential is None:
            raise SaslAuthenticationError(m, "invalid credentials")
        self._nonce = client_nonce + self._server_nonce
        salt = base64.b64encode(self._credential.salt).decode()
        self._server_first = f"r={self._nonce},s={salt},i={self._credential.iterations}"
        return self._server_first.encode()

    def _final(self, client_final: bytes) -> bytes:
        m = self.mechanism
        credential = self._credential
        assert credential is not None
        attrs_ = _attributes(m, client_final, "client-final message")
        text = client_final.decode()
        if attrs_.get("r") != self._nonce:
            raise SaslAuthenticationError(m, "invalid nonce")
        if attrs_.get("c") != base64.b64encode(_GS2_HEADER.encode()).decode() and (
            attrs_.get("c") != base64.b64encode(b"y,,").decode()
        ):
            raise SaslAuthenticationError(m, "invalid channel binding")
        proof_at = text.rfind(",p=")
        if proof_at < 0:
            raise SaslAuthenticationError(m, "client-final message lacks p=")
        proof = _b64decode(m, text[proof_at + 3 :], "client proof")
        auth_message = ",".join(
            (self._first_bare, self._server_first, text[:proof_at])
        ).encode()
        signature = _hmac(credential.stored_key, auth_message, self._hash)
        if len(proof) != len(signature):
            raise SaslAuthenticationError(m, "invalid credentials")
        client_key = _xor(proof, signature)
        if not hmac.compare_digest(
            hashlib.new(self._hash, client_key).digest(), credential.stored_key
        ):
            raise SaslAuthenticationError(m, "invalid credentials")
        server_signature = _hmac(credential.server_key, auth_message, self._hash)
        self.complete, self.principal = True, self._user
        return f"v={base64.b64encode(server_signature).decode()}".encode()
