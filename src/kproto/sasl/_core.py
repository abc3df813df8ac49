"""What every SASL mechanism shares: names, errors, :class:`Secret`,
:class:`SaslConfig` and the mechanism protocols (see :mod:`kproto.sasl`)."""

from __future__ import annotations

import hmac
from collections.abc import Callable, Mapping
from typing import Any, Final, Protocol

import attrs

__all__ = [
    "MAX_ITERATIONS",
    "MECHANISMS",
    "MIN_ITERATIONS",
    "SCRAM_MECHANISMS",
    "ClientMechanism",
    "SaslAuthenticationError",
    "SaslConfig",
    "Secret",
    "ServerMechanism",
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
    extensions: Mapping[str, str] = attrs.field(factory=dict, repr=False, hash=False)

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
