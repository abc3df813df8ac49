"""Features this broker does not serve, refused the way a Kafka broker refuses them
when they are switched off, so that clients fail fast with a non-retriable error
instead of retrying forever.

* Transactions (KIP-98): FindCoordinator for a transactional id (key type 1) and
  InitProducerId with a ``transactional_id`` are answered
  TRANSACTIONAL_ID_AUTHORIZATION_FAILED, with an error message saying why. Kafka has
  no switch that turns transactions off; this is its answer to a client that may not
  use the transactional id (``KafkaApis`` FindCoordinator/InitProducerId
  authorization), and librdkafka, kafka-python and aiokafka all treat it as fatal.
  COORDINATOR_NOT_AVAILABLE, Kafka's answer while the transaction log is not yet
  available, is retriable: ``init_transactions()`` retried it until its timeout.
* Share groups (KIP-932): ShareGroupHeartbeat is advertised and answered
  UNSUPPORTED_VERSION, as Kafka does with ``share.version`` 0
  (``ShareGroupHeartbeatRequestTest``).

:data:`REFUSALS` names each, with the error code and message clients see.
"""

from __future__ import annotations

from typing import Any

import attrs

from kproto.broker.handlers.context import RequestContext, respond
from kproto.errors import ErrorCode
from kproto.index import ApiKey

__all__ = [
    "Refusal",
    "REFUSALS",
    "TRANSACTIONS",
    "SHARE_GROUPS",
    "share_group_heartbeat",
]


@attrs.frozen
class Refusal:
    """How the broker refuses one feature it lacks.

    Attributes:
        feature: what the client asked for, in Kafka's words (with the KIP).
        error_code: the error every request of the feature is answered.
        message: the ``error_message`` sent where the response has one.
    """

    feature: str
    error_code: ErrorCode
    message: str


TRANSACTIONS = Refusal(
    "transactions (KIP-98)",
    ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
    "kproto broker: transactions are not supported (no transaction coordinator);"
    " use an idempotent producer without transactional.id",
)
SHARE_GROUPS = Refusal(
    "share groups (KIP-932)",
    ErrorCode.UNSUPPORTED_VERSION,
    "kproto broker: share groups (KIP-932) are not supported",
)

#: Every feature refused, by the API that asks for it.
REFUSALS: dict[ApiKey, Refusal] = {
    ApiKey.FIND_COORDINATOR: TRANSACTIONS,  # key type 1 only
    ApiKey.INIT_PRODUCER_ID: TRANSACTIONS,  # with a transactional_id only
    ApiKey.SHARE_GROUP_HEARTBEAT: SHARE_GROUPS,
}


def _refuse_heartbeat(ctx: RequestContext, refusal: Refusal) -> Any:
    return respond(
        ctx,
        throttle_time_ms=0,
        error_code=refusal.error_code,
        error_message=refusal.message,
        member_id=None,
        member_epoch=-1,
        heartbeat_interval_ms=0,
        assignment=None,
    )


async def share_group_heartbeat(ctx: RequestContext, request: Any) -> Any:
    """ShareGroupHeartbeat (ShareGroupHeartbeatRequest.json v0-v1): refused, see
    :data:`SHARE_GROUPS`."""
    return _refuse_heartbeat(ctx, SHARE_GROUPS)
