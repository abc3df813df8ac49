"""PLAIN (RFC 4616): the client and server sides (see :mod:`kproto.sasl`)."""

from __future__ import annotations

from collections.abc import Callable

from ._core import SaslAuthenticationError, Secret

__all__ = ["PlainClient", "PlainServer"]


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
