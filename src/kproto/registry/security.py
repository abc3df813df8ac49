"""HTTP Basic authentication of registry requests against the cluster's users.

When the cluster's listeners use SASL, every registry request needs an
``Authorization: Basic ...`` header with one of ``Cluster(users=...)``'s user and
password (checked in constant time, as the broker checks SASL/PLAIN); otherwise a
401 with Confluent's body and a ``WWW-Authenticate`` challenge. Credentials are
never logged: a failure names the reason, not the header.
"""

from __future__ import annotations

import base64
import binascii

from kproto.broker.security import ListenerSecurity
from kproto.registry.errors import RegistryError, RegistryErrorCode
from kproto.sasl import Secret

__all__ = ["REALM", "BasicAuth"]

#: The realm of the 401 challenge (Confluent's default ``authentication.realm``
#: names a JAAS section; this is a plain label).
REALM = "SchemaRegistry"


class BasicAuth:
    """Checks ``Authorization`` headers against ``security``'s users.

    Args:
        security: the cluster's listener security; authentication is required
            when it uses SASL.
    """

    def __init__(self, security: ListenerSecurity) -> None:
        self.security = security

    @property
    def required(self) -> bool:
        """Whether requests must authenticate."""
        return self.security.uses_sasl

    def authenticate(self, header: str | None) -> str | None:
        """The user a request's ``Authorization`` header proves (``None`` when
        authentication is not required).

        Raises:
            RegistryError: 401, a missing, malformed or wrong credential.
        """
        if not self.required:
            return None
        if header is None:
            raise _unauthorized("Unauthorized: no Authorization header")
        scheme, _, token = header.partition(" ")
        if scheme.lower() != "basic":
            raise _unauthorized("Unauthorized: only Basic authentication is accepted")
        try:
            decoded = base64.b64decode(token.strip(), validate=True).decode()
        except (binascii.Error, UnicodeDecodeError):
            raise _unauthorized("Unauthorized: malformed Basic credentials") from None
        user, sep, password = decoded.partition(":")
        if not sep or not self.security.credentials.verify_plain(
            user, Secret(password)
        ):
            raise _unauthorized("Unauthorized")
        return user


def _unauthorized(message: str) -> RegistryError:
    return RegistryError(RegistryErrorCode.UNAUTHORIZED, message)
