"""The broker's listener security: which protocol a listener speaks, who the users
are, and the SASL exchange each connection must finish before anything else.

* :class:`CredentialStore`: the users (Kafka's JAAS ``user_<name>="<password>"``
  for PLAIN) and their SCRAM credentials, stored salted as Kafka stores them
  (salt, iterations, stored key, server key; never the password), also managed
  with Describe/AlterUserScramCredentials (KIP-554).
* :class:`ListenerSecurity`: one listener's settings (``security.protocol``,
  ``sasl.enabled.mechanisms``, the TLS context, ``super.users``,
  ``connections.max.reauth.ms``), shared by every node of a cluster.
* :class:`ConnectionAuth`: one connection's state, as Kafka's
  ``SaslServerAuthenticator``: on a SASL listener only ApiVersions, SaslHandshake
  and then SaslAuthenticate are accepted until authentication completes; any other
  request closes the connection, and so does a failed authentication (after its
  SaslAuthenticate answer carries SASL_AUTHENTICATION_FAILED and the reason). A
  SaslHandshake after success starts a re-authentication (KIP-368), which may not
  change the principal; with ``connections.max.reauth.ms`` set, a request after
  the session expired closes the connection. SaslHandshake v0 is followed by the
  unframed tokens of pre-KIP-152 clients.

The SASL mechanisms themselves live in :mod:`kproto.sasl`.
"""

from __future__ import annotations

import logging
import ssl
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Final

import attrs

from kproto.broker.acl import CHECKED_APIS, AclStore
from kproto.errors import ErrorCode
from kproto.index import ApiKey, response_type
from kproto.meta import build_entity
from kproto.sasl import (
    MAX_ITERATIONS,
    MIN_ITERATIONS,
    SCRAM_MECHANISMS,
    OAuthBearerServer,
    PlainServer,
    SaslAuthenticationError,
    ScramCredential,
    ScramServer,
    Secret,
    ServerMechanism,
    scram_credential,
)

__all__ = [
    "ANONYMOUS",
    "BROKER_MECHANISMS",
    "SECURITY_PROTOCOLS",
    "ConnectionAuth",
    "CredentialStore",
    "ListenerSecurity",
    "Verdict",
]

log = logging.getLogger("kproto.broker")

#: Kafka's ``security.protocol`` values.
SECURITY_PROTOCOLS: Final = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")

#: The SASL mechanisms the broker serves (OAUTHBEARER with Kafka's unsecured-JWS
#: validator: for tests only).
BROKER_MECHANISMS: Final = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER")

#: The principal of an unauthenticated connection (Kafka's ``KafkaPrincipal.ANONYMOUS``).
ANONYMOUS: Final = "User:ANONYMOUS"

#: The mechanism names of Kafka's ``ScramMechanism`` type ids.
_SCRAM_BY_TYPE: Final = {t: name for name, (_, t) in SCRAM_MECHANISMS.items()}


def _user_principal(name: str) -> str:
    return name if ":" in name else f"User:{name}"


class CredentialStore:
    """Users and their credentials.

    Args:
        users: ``{user: password}``: PLAIN checks the password; every SCRAM
            mechanism in ``scram_mechanisms`` gets a salted credential (4096
            iterations, a random salt).
        scram_mechanisms: the SCRAM mechanisms to make credentials for.
    """

    def __init__(
        self, users: Mapping[str, str], scram_mechanisms: Iterable[str] = ()
    ) -> None:
        self._passwords = {user: Secret(pw) for user, pw in users.items()}
        self._scram: dict[str, dict[str, ScramCredential]] = {
            m: {user: scram_credential(m, pw) for user, pw in self._passwords.items()}
            for m in scram_mechanisms
        }

    def password(self, user: str) -> Secret | None:
        """The password ``user`` was configured with (for client settings)."""
        return self._passwords.get(user)

    def verify_plain(self, user: str, password: Secret) -> bool:
        """Whether ``password`` is ``user``'s (constant-time)."""
        known = self._passwords.get(user)
        return known is not None and known == password

    def scram(self, mechanism: str, user: str) -> ScramCredential | None:
        """``user``'s credential for ``mechanism``, or ``None``."""
        return self._scram.get(mechanism, {}).get(user)

    def describe(self, user: str) -> list[tuple[int, int]]:
        """``[(mechanism type, iterations)]`` of ``user``'s SCRAM credentials."""
        return [
            (SCRAM_MECHANISMS[m][1], creds[user].iterations)
            for m, creds in sorted(self._scram.items())
            if user in creds
        ]

    def scram_users(self) -> list[str]:
        """Every user with a SCRAM credential, sorted."""
        return sorted({u for creds in self._scram.values() for u in creds})

    def upsert(
        self,
        user: str,
        mechanism_type: int,
        iterations: int,
        salt: bytes,
        salted: bytes,
    ) -> tuple[ErrorCode, str | None]:
        """Store a credential from AlterUserScramCredentials (KIP-554): the error
        code and message Kafka's ``ControllerApis`` would answer."""
        mechanism = _SCRAM_BY_TYPE.get(mechanism_type)
        if mechanism is None:
            return ErrorCode.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism"
        if not user:
            return ErrorCode.UNACCEPTABLE_CREDENTIAL, "Username must not be empty"
        if not MIN_ITERATIONS <= iterations <= MAX_ITERATIONS:
            return (
                ErrorCode.UNACCEPTABLE_CREDENTIAL,
                f"Iterations must be {MIN_ITERATIONS}-{MAX_ITERATIONS}",
            )
        if not salt or not salted:
            return ErrorCode.UNACCEPTABLE_CREDENTIAL, "Salt and password are required"
        self._scram.setdefault(mechanism, {})[user] = (
            ScramCredential.from_salted_password(mechanism, salted, salt, iterations)
        )
        return ErrorCode.NONE, None

    def delete(self, user: str, mechanism_type: int) -> tuple[ErrorCode, str | None]:
        """Remove a credential (AlterUserScramCredentials deletion)."""
        mechanism = _SCRAM_BY_TYPE.get(mechanism_type)
        if mechanism is None:
            return ErrorCode.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism"
        if self._scram.get(mechanism, {}).pop(user, None) is None:
            return (
                ErrorCode.RESOURCE_NOT_FOUND,
                "Attempt to delete a user credential that does not exist",
            )
        return ErrorCode.NONE, None


@attrs.define(kw_only=True)
class ListenerSecurity:
    """The security settings of a cluster's listeners (every node has the same).

    Attributes:
        protocol: ``PLAINTEXT``, ``SSL``, ``SASL_PLAINTEXT`` or ``SASL_SSL``.
        mechanisms: the SASL mechanisms enabled (Kafka's
            ``sasl.enabled.mechanisms``), on SASL listeners.
        credentials: the users.
        ssl_context: the server-side TLS context (SSL and SASL_SSL).
        super_users: principals (``User:admin``) every ACL check lets through.
        connections_max_reauth_ms: the session lifetime a SASL connection gets
            (KIP-368; 0: sessions do not expire).
        ca_file: the CA of the certificates the cluster made itself, if it did.
        certificates: the :class:`kproto.broker.tls.TestCertificates` that made
            them (client certificates for mutual TLS), if any.
        acls: the ACLs when they are enforced (``acls_enabled``), else ``None``.
    """

    protocol: str = "PLAINTEXT"
    mechanisms: tuple[str, ...] = ()
    credentials: CredentialStore = attrs.field(factory=lambda: CredentialStore({}))
    ssl_context: ssl.SSLContext | None = None
    super_users: frozenset[str] = frozenset()
    connections_max_reauth_ms: int = 0
    ca_file: Path | None = None
    certificates: Any = None
    acls: AclStore | None = None

    @property
    def uses_sasl(self) -> bool:
        """Whether connections must authenticate with SASL."""
        return self.protocol.startswith("SASL_")

    @property
    def uses_tls(self) -> bool:
        """Whether connections are TLS."""
        return self.protocol.endswith("SSL")

    @classmethod
    def configure(
        cls,
        *,
        protocol: str,
        mechanisms: Iterable[str] | None,
        users: Mapping[str, str] | None,
        super_users: Iterable[str],
        acls_enabled: bool,
        ssl_context: ssl.SSLContext | None,
        ssl_client_auth: str,
        connections_max_reauth_ms: int,
        data_dir: Path,
    ) -> ListenerSecurity:
        """Check a cluster's security arguments and build the settings, making
        the TLS certificates (``<data_dir>/tls/ca.pem``) when SSL is asked for
        without an ``ssl_context``.

        Raises:
            ValueError: an unknown protocol, mechanism or ``ssl_client_auth``; a
                negative ``connections_max_reauth_ms``.
            RuntimeError: certificates are needed and trustme is not installed.
        """
        if protocol not in SECURITY_PROTOCOLS:
            raise ValueError(
                f"security_protocol must be one of {', '.join(SECURITY_PROTOCOLS)}, "
                f"got {protocol!r}"
            )
        if mechanisms is None:
            mechanisms = BROKER_MECHANISMS[:3] if protocol.startswith("SASL_") else ()
        mechanisms = tuple(mechanisms)
        unknown = [m for m in mechanisms if m not in BROKER_MECHANISMS]
        if unknown:
            raise ValueError(
                f"sasl_mechanisms: {', '.join(unknown)} not served; the broker "
                f"serves {', '.join(BROKER_MECHANISMS)} (no GSSAPI: it needs a KDC)"
            )
        if protocol.startswith("SASL_") and not mechanisms:
            raise ValueError(f"security_protocol={protocol} needs sasl_mechanisms")
        if ssl_client_auth not in ("none", "requested", "required"):
            raise ValueError(
                "ssl_client_auth must be none, requested or required, "
                f"got {ssl_client_auth!r}"
            )
        if connections_max_reauth_ms < 0:
            raise ValueError("connections_max_reauth_ms must be >= 0")
        ca_file = certificates = None
        if protocol.endswith("SSL") and ssl_context is None:
            from kproto.broker.tls import TestCertificates

            certificates = TestCertificates(data_dir / "tls")
            ssl_context = certificates.server_context(ssl_client_auth)
            ca_file = certificates.ca_file
        supers = frozenset(_user_principal(u) for u in super_users)
        return cls(
            protocol=protocol,
            mechanisms=mechanisms,
            credentials=CredentialStore(
                users or {}, [m for m in mechanisms if m in SCRAM_MECHANISMS]
            ),
            ssl_context=ssl_context if protocol.endswith("SSL") else None,
            super_users=supers,
            connections_max_reauth_ms=connections_max_reauth_ms,
            ca_file=ca_file,
            certificates=certificates if ca_file is not None else None,
            acls=AclStore(supers) if acls_enabled else None,
        )

    def connection(self, tls_principal: str | None = None) -> ConnectionAuth:
        """The state of a new connection (``tls_principal``: from its verified
        client certificate)."""
        return ConnectionAuth(self, tls_principal)


def _respond(api_key: ApiKey, version: int, **fields: Any) -> Any:
    return build_entity(response_type(api_key, version), fields, drop_absent=True)


def _failure_message(mechanism: str, reason: str) -> str:
    """SaslAuthenticate's error_message: Kafka's words for bad credentials (which
    do not tell an unknown user from a wrong password), else the reason."""
    if reason in ("invalid credentials", "invalid username or password"):
        return (
            "Authentication failed during authentication due to invalid "
            f"credentials with SASL mechanism {mechanism}"
        )
    return f"Authentication failed: {mechanism}: {reason}"


class Verdict:
    """What the server does with a request: :attr:`DISPATCH` it to the handlers,
    answer it with :meth:`ConnectionAuth.handle` (:attr:`SASL`), or :attr:`CLOSE`
    the connection."""

    DISPATCH: Final = "dispatch"
    SASL: Final = "sasl"
    CLOSE: Final = "close"


class ConnectionAuth:
    """One connection's authentication state; see the module docstring.

    Attributes:
        principal: ``User:<name>`` once authenticated (``User:ANONYMOUS`` on
            PLAINTEXT; the certificate's ``User:CN=...`` on SSL with a client
            certificate).
        authenticated: whether requests other than ApiVersions/SASL may pass.
        raw_tokens: after a SaslHandshake v0, the next frames are unframed tokens
            (:meth:`raw_token`).
        reason: why :meth:`admit` said CLOSE, for the log.
    """

    def __init__(self, security: ListenerSecurity, tls_principal: str | None) -> None:
        self.security = security
        self.principal = tls_principal or ANONYMOUS
        self.authenticated = not security.uses_sasl
        self.raw_tokens = False
        self.reason = ""
        self._mechanism: ServerMechanism | None = None
        self._expires_at: float | None = None
        self._reauthenticating = False

    # ------------------------------------------------------------------ admit

    def admit(self, api_key: int) -> str:
        """The :class:`Verdict` for a request of ``api_key``."""
        verdict = self._admit(api_key)
        acls = self.security.acls
        if (
            verdict == Verdict.DISPATCH
            and acls is not None
            and api_key not in CHECKED_APIS
            and self.principal not in acls.super_users
        ):
            self.reason = (
                f"api_key {api_key} from {self.principal}: with ACLs enabled this "
                "broker serves it to super users only (no ACL check for it)"
            )
            return Verdict.CLOSE
        return verdict

    def _admit(self, api_key: int) -> str:
        if not self.security.uses_sasl:
            return Verdict.DISPATCH
        if api_key == ApiKey.SASL_HANDSHAKE and self._mechanism is None:
            return Verdict.SASL
        if api_key == ApiKey.SASL_AUTHENTICATE and self._mechanism is not None:
            return Verdict.SASL
        if not self.authenticated or self._mechanism is not None:
            if api_key == ApiKey.API_VERSIONS and self._mechanism is None:
                return Verdict.DISPATCH
            self.reason = (
                f"api_key {api_key} before SASL authentication completed "
                "(only ApiVersions, SaslHandshake, SaslAuthenticate are allowed)"
            )
            return Verdict.CLOSE
        if self._expires_at is not None and time.monotonic() >= self._expires_at:
            self.reason = "SASL session expired without re-authentication (KIP-368)"
            return Verdict.CLOSE
        return Verdict.DISPATCH

    # ------------------------------------------------------------------ answer

    def handle(self, header: Any, request: Any) -> tuple[Any, bool]:
        """``(response, close_after)`` for a SaslHandshake or SaslAuthenticate
        request that :meth:`admit` routed here."""
        version = header.request_api_version
        if header.request_api_key == ApiKey.SASL_HANDSHAKE:
            return self._handshake(version, request.mechanism)
        return self._authenticate(version, request.auth_bytes)

    def _handshake(self, version: int, mechanism: str) -> tuple[Any, bool]:
        enabled = list(self.security.mechanisms)
        if mechanism not in enabled:
            self.reason = f"SASL mechanism {mechanism!r} is not enabled"
            return (
                _respond(
                    ApiKey.SASL_HANDSHAKE,
                    version,
                    error_code=ErrorCode.UNSUPPORTED_SASL_MECHANISM,
                    mechanisms=enabled,
                ),
                True,
            )
        self._reauthenticating = self.authenticated
        self._mechanism = self._server_mechanism(mechanism)
        self.raw_tokens = version == 0
        return (
            _respond(
                ApiKey.SASL_HANDSHAKE,
                version,
                error_code=ErrorCode.NONE,
                mechanisms=enabled,
            ),
            False,
        )

    def _server_mechanism(self, name: str) -> ServerMechanism:
        store = self.security.credentials
        if name == "PLAIN":
            return PlainServer(store.verify_plain)
        if name == "OAUTHBEARER":
            return OAuthBearerServer()
        return ScramServer(name, lambda user: store.scram(name, user))

    def _step(self, token: bytes) -> bytes:
        """Run one token through the mechanism; on completion, take its principal.

        Raises:
            SaslAuthenticationError: the mechanism failed, or a re-authentication
                changed the principal.
        """
        mechanism = self._mechanism
        assert mechanism is not None
        challenge = mechanism.evaluate(token)
        if mechanism.complete:
            assert mechanism.principal is not None
            principal = _user_principal(mechanism.principal)
            if self._reauthenticating and principal != self.principal:
                raise SaslAuthenticationError(
                    mechanism.mechanism,
                    "cannot change principals during re-authentication",
                )
            self.principal, self.authenticated = principal, True
            self._mechanism = None
            self._expires_at = self._session_end(mechanism)
        return challenge

    def _session_end(self, mechanism: ServerMechanism) -> float | None:
        reauth_ms = self.security.connections_max_reauth_ms
        if reauth_ms <= 0:
            return None
        lifetime_s = reauth_ms / 1000
        if mechanism.expires_at_s is not None:
            lifetime_s = min(lifetime_s, max(0.0, mechanism.expires_at_s - time.time()))
        return time.monotonic() + lifetime_s

    def session_lifetime_ms(self) -> int:
        """The remaining session lifetime (ms; 0: no expiry)."""
        if self._expires_at is None:
            return 0
        return max(1, int((self._expires_at - time.monotonic()) * 1000))

    def _authenticate(self, version: int, token: bytes) -> tuple[Any, bool]:
        name = self._mechanism.mechanism if self._mechanism else "SASL"
        try:
            challenge = self._step(token)
        except SaslAuthenticationError as err:
            self.reason = str(err)
            self._mechanism = None
            return (
                _respond(
                    ApiKey.SASL_AUTHENTICATE,
                    version,
                    error_code=ErrorCode.SASL_AUTHENTICATION_FAILED,
                    error_message=_failure_message(name, err.reason),
                    auth_bytes=b"",
                ),
                True,
            )
        return (
            _respond(
                ApiKey.SASL_AUTHENTICATE,
                version,
                error_code=ErrorCode.NONE,
                auth_bytes=challenge,
                session_lifetime_ms=(
                    self.session_lifetime_ms() if self.authenticated else 0
                ),
            ),
            False,
        )

    def raw_token(self, token: bytes) -> bytes | None:
        """The challenge to write (size-prefixed, unframed) for a pre-KIP-152
        token after SaslHandshake v0; ``None``: close the connection (Kafka sends
        no reason in this mode)."""
        try:
            challenge = self._step(token)
        except SaslAuthenticationError as err:
            self.reason = str(err)
            return None
        if self.authenticated:
            self.raw_tokens = False
        return challenge


async def accept_tls(
    writer: Any, security: ListenerSecurity, timeout_s: float = 10.0
) -> str | None:
    """Run the TLS handshake on a new connection (its ``start_tls``, as
    :meth:`kproto.broker.transport.FrameConnection.start_tls`, so a
    failed handshake is this connection's error, logged with its reason, not the
    event loop's). Returns the principal of the client's certificate, if any.

    Raises:
        ssl.SSLError / OSError / TimeoutError: the handshake failed (the caller
            logs it and closes the connection).
    """
    assert security.ssl_context is not None
    await writer.start_tls(security.ssl_context, ssl_handshake_timeout=timeout_s)
    from kproto.broker.tls import ssl_principal

    return ssl_principal(writer.get_extra_info("peercert"))
