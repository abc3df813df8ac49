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

:data:`REFUSALS` names each, with the error code and message clients see.
"""

from __future__ import annotations

import attrs

from kproto.errors import ErrorCode
from kproto.index import ApiKey

__all__ = [
    "Refusal",
    "REFUSALS",
    "TRANSACTIONS",
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

#: Every feature refused, by the API that asks for it.
REFUSALS: dict[ApiKey, Refusal] = {
    ApiKey.FIND_COORDINATOR: TRANSACTIONS,  # key type 1 only
    ApiKey.INIT_PRODUCER_ID: TRANSACTIONS,  # with a transactional_id only
}
