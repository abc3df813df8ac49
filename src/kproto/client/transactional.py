"""The blocking :class:`TransactionalProducer`: Java's ``KafkaProducer`` with a
``transactional.id``, over :class:`kproto.client.Client` and the sans-IO
:class:`kproto.client.transactions.TransactionManager` (never imports asyncio)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import ParamSpec, TypeVar

from kproto._closing import Closing

from .driver import TransactionalDriver
from .protocol import WaitingOp
from .sync import Client
from .transactions import (
    ProducerFencedError,
    TransactionFatalError,
)

__all__ = ["TransactionalProducer"]

P = ParamSpec("P")
T = TypeVar("T")


class TransactionalProducer(TransactionalDriver[Client], Closing):
    """A transactional producer (KIP-98; KIP-890 transaction version 2 when the
    broker finalizes it), shaped as Java's ``KafkaProducer``::

        producer = TransactionalProducer("localhost:9092", "orders-tx")
        producer.init_transactions()
        with producer.transaction():          # begin; commit, or abort on error
            producer.send("orders", [(b"k", b"v")])
            producer.send_offsets_to_transaction(
                {TopicPartition("in", 0): 42}, ConsumerGroupMetadata("g")
            )
        producer.close()

    Each method is one blocking call of the state machine in
    :mod:`kproto.client.transactions`; the errors are its
    :class:`~kproto.client.transactions.TransactionError` subclasses
    (:class:`ProducerFencedError`, :class:`TransactionAbortableError`, ...), and
    :class:`kproto.connection.KafkaConnectionError` when a broker is unreachable.

    Args:
        bootstrap_servers: ``"host1:9092,host2:9092"``.
        transactional_id: Java's ``transactional.id``.
        transaction_timeout_ms: Java's ``transaction.timeout.ms`` (ms).
        client_id, timeout_s, ssl_context, sasl, version_caps: as
            :class:`kproto.client.Client`.

    Attributes:
        client: the :class:`~kproto.client.Client` it sends with (idempotent).
        manager: the :class:`~kproto.client.transactions.TransactionManager`
            (``state``, ``transaction_version``, ``producer_id``,
            ``producer_epoch``).
    """

    client_type = Client

    def run(self, op: WaitingOp[T]) -> T:
        """Drive ``op`` on :attr:`client`."""
        return self.client.run(op)

    @contextmanager
    def transaction(self) -> Iterator[TransactionalProducer]:
        """Begin a transaction; commit it when the block ends, abort it when the
        block raises (not after a fatal error, which is raised as it is)."""
        self.begin_transaction()
        try:
            yield self
        except BaseException as err:
            if not isinstance(err, TransactionFatalError | ProducerFencedError):
                self.abort_transaction()
            raise
        self.commit_transaction()

    def close(self) -> None:
        """Close the connections (an open transaction is left to the
        coordinator's timeout, as Java's ``close``)."""
        self.client.close()
