"""SASL mechanisms without I/O: the client side of PLAIN, SCRAM-SHA-256/512 and
OAUTHBEARER, and the server side the broker verifies them with.

This is the one home of the SCRAM arithmetic (RFC 5802, RFC 7677): a client proves
it knows the password, the server proves it holds the stored credential, and
neither sends the password. Mechanisms are state machines over bytes; carrying
the bytes (SaslHandshake + SaslAuthenticate, KIP-152) is
:class:`kproto.negotiation.SaslExchange`'s job and, on the broker,
:mod:`kproto.broker.security`'s.

Client mechanisms (:func:`client_mechanism`) follow Kafka's ``PlainSaslClient``
(the JDK's), ``ScramSaslClient`` and ``OAuthBearerSaslClient``:

* ``initial_response()`` gives the first message;
* ``evaluate(challenge)`` takes each server message and returns the next client
  message, or ``None`` when there is nothing more to send;
* ``complete`` is true once the exchange succeeded on the client's side (for SCRAM:
  after the server's signature was verified).

Server mechanisms (:class:`PlainServer`, :class:`ScramServer`,
:class:`OAuthBearerServer`) follow ``PlainSaslServer``, ``ScramSaslServer`` and
``OAuthBearerSaslServer`` with Kafka's unsecured-JWS validator: ``evaluate(response)``
returns the challenge to send; ``complete`` and ``principal`` tell the outcome.

Every failure is a :class:`SaslAuthenticationError` whose message names the
mechanism and never a password, a proof or a token. Passwords are held in
:class:`Secret`, whose ``repr``/``str`` are masked.

Passwords are used as UTF-8 without SASLprep, as Kafka's ``ScramFormatter`` does.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import re
import secrets
import time
from collections.abc import Callable, Mapping
from typing import Any, Final, Protocol

import attrs

__all__ = [
    "MECHANISMS",
    "SCRAM_MECHANISMS",
    "ClientMechanism",
    "OAuthBearerClient",
    "OAuthBearerServer",
    "PlainClient",
    "PlainServer",
    "SaslAuthenticationError",
    "SaslConfig",
    "ScramClient",
    "ScramCredential",
    "ScramServer",
    "Secret",
    "ServerMechanism",
    "client_mechanism",
    "scram_credential",
    "unsecured_jws",
]

#: SCRAM mechanism name -> (hashlib name, Kafka's ``ScramMechanism`` type id used by
#: Describe/AlterUserScramCredentials).
SCRAM_MECHANISMS: Final[Mapping[str, tuple[str, int]]] = {
    "SCRAM-SHA-256": ("sha256", 1),
    "SCRAM-SHA-512": ("sha512", 2),
}

#: Every mechanism kproto speaks.
MECHANISMS: Final = frozenset({"PLAIN", "OAUTHBEARER", *SCRAM_MECHANISMS})

#: The fewest and most PBKDF2 iterations accepted (Kafka's ``ScramMechanism``
#: ``minIterations``; the upper bound keeps a hostile server from costing minutes).
MIN_ITERATIONS: Final = 4096
MAX_ITERATIONS: Final = 16384

_GS2_HEADER: Final = "n,,"


class SaslAuthenticationError(Exception):
    """SASL authentication failed: bad credentials, an unknown user, a server whose
    SCRAM signature does not verify, or a malformed message. The message names the
    mechanism and the reason, never a secret.

    Attributes:
        mechanism: the SASL mechanism (``"SCRAM-SHA-256"``).
    """

    def __init__(self, mechanism: str, reason: str) -> None:
        self.mechanism = mechanism
        self.reason = reason
        super().__init__(f"{mechanism} authentication failed: {reason}")


class Secret:
    """A password or token that never shows itself by accident: ``repr``, ``str``
    and f-strings give ``Secret('********')``; :meth:`reveal` gives the value.
    Compared in constant time."""

    __slots__ = ("_value",)

    def __init__(self, value: str | Secret) -> None:
        if isinstance(value, Secret):
            value = value.reveal()
        if not isinstance(value, str):
            raise TypeError(f"a secret must be a str, got {type(value).__name__}")
        self._value = value

    def reveal(self) -> str:
        """The secret itself."""
        return self._value

    def __repr__(self) -> str:
        return "Secret('********')"

    __str__ = __repr__

    def __format__(self, spec: str) -> str:
        return repr(self)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Secret):
            return NotImplemented
        return hmac.compare_digest(self._value.encode(), other._value.encode())

    def __hash__(self) -> int:
        return hash(self._value)

    def __bool__(self) -> bool:
        return bool(self._value)

    def __reduce__(self) -> Any:
        raise TypeError("a Secret is not pickled")


def _check_mechanism(_: Any, __: Any, value: str) -> None:
    if value not in MECHANISMS:
        raise ValueError(
            f"unknown SASL mechanism {value!r}; kproto speaks "
            f"{', '.join(sorted(MECHANISMS))}"
        )


@attrs.frozen(kw_only=True)
class SaslConfig:
    """What a client authenticates with (Kafka's ``sasl.mechanism``,
    ``sasl.jaas.config``). ``password`` and ``token_provider`` are left out of
    ``repr``; the password is a :class:`Secret`.

    Attributes:
        mechanism: ``"PLAIN"``, ``"SCRAM-SHA-256"``, ``"SCRAM-SHA-512"`` or
            ``"OAUTHBEARER"``.
        username: the user (PLAIN and SCRAM).
        password: the password (PLAIN and SCRAM), a ``str`` or :class:`Secret`.
        token_provider: OAUTHBEARER only: ``() -> str``, called at every
            (re-)authentication, returning the compact JWS token.
        extensions: OAUTHBEARER SASL extensions (RFC 7628 section 3.1 key/value
            pairs; Kafka's ``SaslExtensions``).

    Raises:
        ValueError: an unknown mechanism, or the mechanism's credentials missing.
    """

    mechanism: str = attrs.field(validator=_check_mechanism)
    username: str = ""
    password: Secret = attrs.field(default=Secret(""), converter=Secret, repr=False)
    token_provider: Callable[[], str] | None = attrs.field(
        default=None, repr=False, eq=False
    )
    extensions: Mapping[str, str] = attrs.field(factory=dict, repr=False)

    def __attrs_post_init__(self) -> None:
        if self.mechanism == "OAUTHBEARER":
            if self.token_provider is None:
                raise ValueError("SASL OAUTHBEARER needs a token_provider")
        elif not self.username:
            raise ValueError(f"SASL {self.mechanism} needs a username")

    @classmethod
    def from_client_config(cls, config: Mapping[str, str]) -> SaslConfig:
        """From librdkafka-style settings (``sasl.mechanism``, ``sasl.username``,
        ``sasl.password``), as :meth:`kproto.broker.Cluster.client_config` gives."""
        return cls(
            mechanism=config.get("sasl.mechanism", "PLAIN"),
            username=config.get("sasl.username", ""),
            password=config.get("sasl.password", ""),
        )


class ClientMechanism(Protocol):
    """The client side of one SASL exchange (see the module docstring)."""

    mechanism: str
    complete: bool

    def initial_response(self) -> bytes: ...

    def evaluate(self, challenge: bytes) -> bytes | None: ...


class ServerMechanism(Protocol):
    """The server side of one SASL exchange (see the module docstring)."""

    mechanism: str
    complete: bool
    principal: str | None
    #: seconds since the epoch the credential stops being valid (OAUTHBEARER), or None
    expires_at_s: float | None

    def evaluate(self, response: bytes) -> bytes: ...


def client_mechanism(config: SaslConfig) -> ClientMechanism:
    """A fresh client state machine for ``config`` (one per authentication)."""
    if config.mechanism == "PLAIN":
        return PlainClient(config.username, config.password)
    if config.mechanism == "OAUTHBEARER":
        assert config.token_provider is not None
        return OAuthBearerClient(config.token_provider, config.extensions)
    return ScramClient(config.mechanism, config.username, config.password)


# ----------------------------------------------------------------------- PLAIN


class PlainClient:
    """PLAIN (RFC 4616): one message ``authzid NUL user NUL password``, no
    authorization id (as Kafka's clients)."""

    mechanism = "PLAIN"

    def __init__(self, username: str, password: Secret | str) -> None:
        self._username = username
        self._password = Secret(password)
        self.complete = False

    def initial_response(self) -> bytes:
        self.complete = True
        return (
            b"\0" + self._username.encode() + b"\0" + self._password.reveal().encode()
        )

    def evaluate(self, challenge: bytes) -> bytes | None:
        if challenge:
            raise SaslAuthenticationError("PLAIN", "unexpected challenge from server")
        return None


class PlainServer:
    """PLAIN on the server (Kafka's ``PlainSaslServer``): ``verify(user, password)``
    decides; an authorization id other than the user is refused."""

    mechanism = "PLAIN"

    def __init__(self, verify: Callable[[str, Secret], bool]) -> None:
        self._verify = verify
        self.complete = False
        self.principal: str | None = None
        self.expires_at_s: float | None = None

    def evaluate(self, response: bytes) -> bytes:
        parts = response.split(b"\0")
        if len(parts) != 3:
            raise SaslAuthenticationError(
                "PLAIN", "invalid message: expected authzid NUL user NUL password"
            )
        try:
            authzid, user, password = (p.decode() for p in parts)
        except UnicodeDecodeError:
            raise SaslAuthenticationError("PLAIN", "invalid UTF-8") from None
        if not user:
            raise SaslAuthenticationError("PLAIN", "username not specified")
        if authzid and authzid != user:
            raise SaslAuthenticationError(
                "PLAIN", "authorization id must be the username"
            )
        if not self._verify(user, Secret(password)):
            raise SaslAuthenticationError("PLAIN", "invalid username or password")
        self.complete, self.principal = True, user
        return b""


# ----------------------------------------------------------------------- SCRAM


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


# ----------------------------------------------------------------- OAUTHBEARER


def _kv_ok(key: str, value: str) -> bool:
    return bool(re.fullmatch(r"[A-Za-z]+", key)) and bool(
        re.fullmatch(r"[\x21-\x7E \t\r\n]*", value)
    )


class OAuthBearerClient:
    """OAUTHBEARER (RFC 7628; Kafka's ``OAuthBearerSaslClient``): the client's
    first message is ``n,,<kvsep>auth=Bearer <token><kvsep>[key=value<kvsep>]*<kvsep>``
    with ``kvsep`` = 0x01. A server error arrives as a JSON challenge, answered
    with a lone 0x01 (RFC 7628 section 3.2.3); the broker then fails the exchange.

    Raises:
        ValueError: an extension key/value RFC 7628 forbids (or ``auth``).
    """

    mechanism = "OAUTHBEARER"

    def __init__(
        self, token_provider: Callable[[], str], extensions: Mapping[str, str] = {}
    ) -> None:
        for key, value in extensions.items():
            if key == "auth" or not _kv_ok(key, value):
                raise ValueError(f"invalid OAUTHBEARER extension {key!r}")
        self._token_provider = token_provider
        self._extensions = dict(extensions)
        self.complete = False
        #: the server's error (its JSON status), after a failed exchange
        self.server_error: str | None = None

    def initial_response(self) -> bytes:
        token = self._token_provider()
        ext = "".join(f"{k}={v}\x01" for k, v in sorted(self._extensions.items()))
        return f"n,,\x01auth=Bearer {token}\x01{ext}\x01".encode()

    def evaluate(self, challenge: bytes) -> bytes | None:
        if not challenge:
            self.complete = True
            return None
        try:
            self.server_error = json.loads(challenge).get("status", "unknown")
        except (ValueError, AttributeError):
            self.server_error = "malformed error"
        return b"\x01"


def unsecured_jws(
    principal: str, *, lifetime_s: float = 3600.0, now_s: float | None = None
) -> str:
    """An unsecured JWS (``alg: none``) naming ``principal`` in ``sub``, as Kafka's
    ``OAuthBearerUnsecuredLoginCallbackHandler`` and librdkafka's default
    OAUTHBEARER token make: for tests against brokers with the unsecured
    validator (kproto's broker, Kafka's default)."""
    now = time.time() if now_s is None else now_s

    def part(obj: dict[str, Any]) -> str:
        raw = json.dumps(obj, separators=(",", ":")).encode()
        return base64.urlsafe_b64encode(raw).decode().rstrip("=")

    claims = {"sub": principal, "iat": now, "exp": now + lifetime_s}
    return f"{part({'alg': 'none'})}.{part(claims)}."


def _unb64url(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def validate_unsecured_jws(token: str, now_s: float | None = None) -> tuple[str, float]:
    """``(principal, expiry in s since the epoch)`` of an unsecured JWS (Kafka's
    ``OAuthBearerUnsecuredValidatorCallbackHandler``: ``alg`` none, a ``sub``
    (principal) and an ``exp`` in the future).

    Raises:
        SaslAuthenticationError: anything else.
    """
    m = "OAUTHBEARER"
    parts = token.split(".")
    if len(parts) != 3 or parts[2]:
        raise SaslAuthenticationError(m, "invalid_token: not an unsecured JWS")
    try:
        header = json.loads(_unb64url(parts[0]))
        claims = json.loads(_unb64url(parts[1]))
    except (ValueError, binascii.Error):
        raise SaslAuthenticationError(m, "invalid_token: undecodable JWS") from None
    if not isinstance(header, dict) or header.get("alg") != "none":
        raise SaslAuthenticationError(m, "invalid_token: alg must be none")
    if not isinstance(claims, dict):
        raise SaslAuthenticationError(m, "invalid_token: claims are not an object")
    sub, exp = claims.get("sub"), claims.get("exp")
    if not isinstance(sub, str) or not sub:
        raise SaslAuthenticationError(m, "invalid_token: no sub claim")
    if not isinstance(exp, int | float) or isinstance(exp, bool):
        raise SaslAuthenticationError(m, "invalid_token: no exp claim")
    if exp <= (time.time() if now_s is None else now_s):
        raise SaslAuthenticationError(m, "invalid_token: expired")
    return sub, float(exp)


class OAuthBearerServer:
    """OAUTHBEARER on the server (Kafka's ``OAuthBearerSaslServer``):
    ``validate(token) -> (principal, expiry s)`` decides (default:
    :func:`validate_unsecured_jws`). A bad token gets RFC 7628's JSON error
    challenge; the client's 0x01 reply then fails the exchange."""

    mechanism = "OAUTHBEARER"

    def __init__(
        self,
        validate: Callable[[str], tuple[str, float]] = validate_unsecured_jws,
    ) -> None:
        self._validate = validate
        self._error: str | None = None
        self.complete = False
        self.principal: str | None = None
        self.expires_at_s: float | None = None

    def evaluate(self, response: bytes) -> bytes:
        m = self.mechanism
        if self._error is not None:
            raise SaslAuthenticationError(m, self._error)
        try:
            text = response.decode()
        except UnicodeDecodeError:
            raise SaslAuthenticationError(m, "invalid UTF-8") from None
        head, sep, rest = text.partition("\x01")
        if (
            not sep
            or not head.startswith(("n,", "y,"))
            or not rest.endswith("\x01\x01")
        ):
            raise SaslAuthenticationError(m, "invalid client first message")
        fields = dict(kv.split("=", 1) for kv in rest[:-2].split("\x01") if "=" in kv)
        auth = fields.get("auth", "")
        if not auth.lower().startswith("bearer "):
            raise SaslAuthenticationError(m, "invalid client first message: no auth")
        try:
            self.principal, self.expires_at_s = self._validate(auth[7:].strip())
        except SaslAuthenticationError as err:
            self._error = err.reason
            return json.dumps({"status": "invalid_token"}).encode()
        self.complete = True
        return b""
