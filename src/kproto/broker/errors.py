"""The broker's one error type: a refusal carrying the Kafka error code to answer with
(Kafka's ``ApiError``: an ``Errors`` code and a message).

Not :class:`kproto.client.BrokerError`, which is an error code a client *received*
in a response. Handlers turn an :class:`ApiError` into the ``error_code`` /
``error_message`` of the response entry it concerns (Kafka's ``ApiException``
subclasses, each mapped to one ``Errors`` code). The subclasses only say which layer refused: the cluster state
(:class:`TopicError`), a partition log (:class:`LogAppendError`) or a producer's
idempotence state (:class:`ProducerStateError`; not the client's
:class:`kproto.client.ProducerSequenceError`, raised when one is received).
"""

from __future__ import annotations

from kproto.errors import ErrorCode

__all__ = ["ApiError", "TopicError", "LogAppendError", "ProducerStateError"]


class ApiError(Exception):
    """A request (or one entry of it) was refused.

    Args:
        error_code: the Kafka error code to answer with.
        message: what was wrong, for ``error_message`` and logs.
    """

    def __init__(self, error_code: ErrorCode, message: str) -> None:
        self.error_code = ErrorCode(error_code)
        self.message = message
        super().__init__(message)


class TopicError(ApiError):
    """A topic operation was refused (TOPIC_ALREADY_EXISTS, INVALID_TOPIC_EXCEPTION,
    INVALID_PARTITIONS, UNKNOWN_TOPIC_OR_PARTITION, INVALID_REPLICATION_FACTOR,
    INVALID_CONFIG)."""


class LogAppendError(ApiError):
    """A partition log refused an append or a DeleteRecords (CORRUPT_MESSAGE,
    MESSAGE_TOO_LARGE, INVALID_RECORD, OFFSET_OUT_OF_RANGE, and the producer
    errors of :class:`ProducerStateError`)."""


class ProducerStateError(LogAppendError):
    """An idempotent batch's producer epoch or sequence was refused
    (OUT_OF_ORDER_SEQUENCE_NUMBER, INVALID_PRODUCER_EPOCH), as Kafka's
    ``ProducerAppendInfo.checkSequence``."""
