"""SASL mechanisms without I/O: the client side of PLAIN, SCRAM-SHA-256/512 and
OAUTHBEARER, and the server side the broker verifies them with.

This package is the one home of the SCRAM arithmetic (:mod:`.scram`; RFC 5802,
RFC 7677): a client proves it knows the password, the server proves it holds the stored credential, and
neither sends the password. Mechanisms are state machines over bytes; carrying
the bytes (SaslHandshake + SaslAuthenticate, KIP-152) is
:class:`kproto.negotiation.SaslExchange`'s job and, on the broker,
:mod:`kproto.broker.security`'s.

Client mechanisms (:func:`client_mechanism`) follow Kafka's ``PlainSaslClient``
(the JDK's), ``ScramSaslClient`` and ``OAuthBearerSaslClient``:

Modules: :mod:`._core` (names, :class:`Secret`, :class:`SaslConfig`),
:mod:`.plain`, :mod:`.scram`, :mod:`.oauthbearer`.

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

from . import _core
from ._core import *  # noqa: F403 (the names of _core.__all__)
from ._core import ClientMechanism, SaslConfig
from .oauthbearer import (
    OAuthBearerClient,
    OAuthBearerServer,
    unsecured_jws,
    validate_unsecured_jws,
)
from .plain import PlainClient, PlainServer
from .scram import ScramClient, ScramCredential, ScramServer, scram_credential

__all__ = [
    "OAuthBearerClient",
    "OAuthBearerServer",
    "PlainClient",
    "PlainServer",
    "ScramClient",
    "ScramCredential",
    "ScramServer",
    "client_mechanism",
    "scram_credential",
    "unsecured_jws",
    "validate_unsecured_jws",
]
__all__ += _core.__all__


def client_mechanism(config: SaslConfig) -> ClientMechanism:
    """A fresh client state machine for ``config`` (one per authentication)."""
    if config.mechanism == "PLAIN":
        return PlainClient(config.username, config.password)
    if config.mechanism == "OAUTHBEARER":
        assert config.token_provider is not None
        return OAuthBearerClient(config.token_provider, config.extensions)
    return ScramClient(config.mechanism, config.username, config.password)
