"""The blocking :class:`TransactionalProducer`: Java's ``KafkaProducer`` with a
``transactional.id``, over :class:`kproto.client.Client` and the sans-IO
:class:`kproto.client.transactions.TransactionManager` (never imports asyncio)."""

from __future__ import annotations

import ssl
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING

from kproto._closing import Closing
from kproto.records import Compression, RecordInput
from kproto.sasl import SaslConfig

from .results import ProducedRecord, TopicPartition
from .sync import Client
from .transactions import (
    ConsumerGroupMetadata,
    ProducerFencedError,
    TransactionFatalError,
    TransactionManager,
)

if TYPE_CHECKING:
    from kproto.serde import Serializer

__all__ = ["TransactionalProducer"]


class TransactionalProducer(Closing):
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

    def __init__(
        self,
        bootstrap_servers: str,
        transactional_id: str,
        *,
        transaction_timeout_ms: int = 60_000,
        client_id: str = "kproto",
        timeout_s: float = 30.0,
        ssl_context: ssl.SSLContext | None = None,
        sasl: SaslConfig | None = None,
        version_caps: Mapping[int, int] | None = None,
    ) -> None:
        self.client = Client(
            bootstrap_servers,
            client_id=client_id,
            timeout_s=timeout_s,
            ssl_context=ssl_context,
            sasl=sasl,
            version_caps=version_caps,
            enable_idempotence=True,
        )
        self.manager = TransactionManager(
            self.client.core,
            transactional_id,
            transaction_timeout_ms=transaction_timeout_ms,
        )

    def init_transactions(self) -> None:
        """See :meth:`TransactionManager.init_transactions`."""
        self.client.run(self.manager.init_transactions())

    def begin_transaction(self) -> None:
        """See :meth:`TransactionManager.begin_transaction`."""
        self.manager.begin_transaction()

    def send(
        self,
        topic: str,
        records: Sequence[RecordInput],
        *,
        partition: int | None = None,
        compression: Compression = Compression.NONE,
        timeout_ms: int = 30_000,
        key_serializer: Serializer | None = None,
        value_serializer: Serializer | None = None,
    ) -> list[ProducedRecord]:
        """Produce ``records`` inside the open transaction (``acks=-1``); the
        arguments and result as :meth:`kproto.client.Client.produce`. A
        read_committed consumer sees them once the transaction commits.

        Raises:
            TransactionStateError: no transaction is open.
            TransactionAbortableError: the send failed: abort the transaction.
            ProducerFencedError: fenced.
        """
        return self.client.produce(
            topic,
            records,
            partition=partition,
            acks=-1,
            compression=compression,
            timeout_ms=timeout_ms,
            key_serializer=key_serializer,
            value_serializer=value_serializer,
        )

    def send_offsets_to_transaction(
        self,
        offsets: Mapping[TopicPartition, int],
        group_metadata: ConsumerGroupMetadata,
    ) -> None:
        """See :meth:`TransactionManager.send_offsets_to_transaction`."""
        self.client.run(
            self.manager.send_offsets_to_transaction(offsets, group_metadata)
        )

    def commit_transaction(self) -> None:
        """See :meth:`TransactionManager.commit_transaction`."""
        self.client.run(self.manager.commit_transaction())

    def abort_transaction(self) -> None:
        """See :meth:`TransactionManager.abort_transaction`."""
        self.client.run(self.manager.abort_transaction())

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

    def __repr__(self) -> str:
        m = self.manager
        return (
            f"<TransactionalProducer {m.transactional_id!r} {m.state.value} "
            f"TV{m.transaction_version} producer {m.producer_id}/{m.producer_epoch}>"
        )
