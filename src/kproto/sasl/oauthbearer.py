"""OAUTHBEARER (RFC 7628): the client's first message from a token callable, and
the server side with Kafka's unsecured-JWS validator (see :mod:`kproto.sasl`)."""

from __future__ import annotations

import base64
import binascii
import json
import re
import time
from collections.abc import Callable, Mapping
from typing import Any

from ._core import SaslAuthenticationError

__all__ = [
    "OAuthBearerClient",
    "OAuthBearerServer",
    "unsecured_jws",
    "validate_unsecured_jws",
]


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
