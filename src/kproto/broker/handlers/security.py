"""SaslHandshake and SaslAuthenticate where no SASL exchange is due, and the SCRAM
credential APIs (KIP-554).

On a SASL listener the exchange itself is answered before dispatch
(:mod:`kproto.broker.security`); a SaslHandshake or SaslAuthenticate that reaches
these handlers came on a listener without SASL, or after authentication completed,
and gets ILLEGAL_SASL_STATE as from Kafka's ``KafkaApis``.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from kproto.broker.handlers.context import RequestContext, respond
from kproto.errors import ErrorCode

__all__ = [
    "alter_user_scram_credentials",
    "describe_user_scram_credentials",
    "sasl_authenticate",
    "sasl_handshake",
]


async def sasl_handshake(ctx: RequestContext, request: Any) -> Any:
    """ILLEGAL_SASL_STATE: this listener has no SASL (Kafka: "Unexpected
    SaslHandshake request")."""
    return respond(ctx, error_code=ErrorCode.ILLEGAL_SASL_STATE, mechanisms=[])


async def sasl_authenticate(ctx: RequestContext, request: Any) -> Any:
    """ILLEGAL_SASL_STATE: no exchange is in progress."""
    return respond(
        ctx,
        error_code=ErrorCode.ILLEGAL_SASL_STATE,
        error_message="SaslAuthenticate request received after successful "
        "authentication or on a listener without SASL",
        auth_bytes=b"",
    )


async def describe_user_scram_credentials(ctx: RequestContext, request: Any) -> Any:
    """The mechanisms and iteration counts of the named users' SCRAM credentials
    (every user with one for a null or empty list); RESOURCE_NOT_FOUND for a user
    without, DUPLICATE_RESOURCE for a user named twice (Kafka's
    ``DescribeUserScramCredentials``, KIP-554). Never the salts or keys."""
    store = ctx.security.credentials
    named = [u.name for u in request.users] if request.users else None
    counts = Counter(named or ())
    results = []
    for user in store.scram_users() if named is None else list(dict.fromkeys(named)):
        infos = store.describe(user)
        if counts[user] > 1:
            code, message = (
                ErrorCode.DUPLICATE_RESOURCE,
                f"Cannot describe SCRAM credentials for the same user twice in a single request: {user}",
            )
        elif not infos:
            code, message = (
                ErrorCode.RESOURCE_NOT_FOUND,
                f"Attempt to describe a user credential that does not exist: {user}",
            )
        else:
            code, message = ErrorCode.NONE, None
        results.append(
            {
                "user": user,
                "error_code": code,
                "error_message": message,
                "credential_infos": (
                    [{"mechanism": m, "iterations": i} for m, i in infos]
                    if code == ErrorCode.NONE
                    else []
                ),
            }
        )
    return respond(ctx, throttle_time_ms=0, error_code=ErrorCode.NONE, results=results)


async def alter_user_scram_credentials(ctx: RequestContext, request: Any) -> Any:
    """Upsert and delete SCRAM credentials (the client sends the salted password,
    never the password; KIP-554). A user named twice for the same mechanism gets
    DUPLICATE_RESOURCE and nothing of it is changed."""
    store = ctx.security.credentials
    seen = Counter(
        [(d.name, d.mechanism) for d in request.deletions]
        + [(u.name, u.mechanism) for u in request.upsertions]
    )
    errors: dict[str, tuple[ErrorCode, str | None]] = {}
    for (user, _), n in seen.items():
        if n > 1:
            errors[user] = (
                ErrorCode.DUPLICATE_RESOURCE,
                "A user credential cannot be altered twice in the same request",
            )
    for d in request.deletions:
        if d.name not in errors:
            code, message = store.delete(d.name, d.mechanism)
            if code:
                errors[d.name] = (code, message)
    for u in request.upsertions:
        if u.name not in errors:
            code, message = store.upsert(
                u.name, u.mechanism, u.iterations, u.salt, u.salted_password
            )
            if code:
                errors[u.name] = (code, message)
    users = dict.fromkeys(
        [d.name for d in request.deletions] + [u.name for u in request.upsertions]
    )
    return respond(
        ctx,
        throttle_time_ms=0,
        results=[
            {
                "user": user,
                "error_code": errors.get(user, (ErrorCode.NONE, None))[0],
                "error_message": errors.get(user, (ErrorCode.NONE, None))[1],
            }
            for user in users
        ],
    )
