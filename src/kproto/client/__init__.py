"""A small Kafka client over :mod:`kproto.connection`: :class:`Client` (blocking)
and :class:`AsyncClient` (asyncio), with the same methods.

Example::

    from kproto.client import Client

    client = Client("host1:9092,host2:9092")
    client.produce("orders", [(b"key", b"value"), (None, b"v2")])
    for record in client.iter_records("orders", 0, 0):
        print(record.offset, record.key, record.value, record.headers)
    client.close()

:class:`TransactionalProducer` is the transactional producer (begin, send, send
offsets, commit, abort; transaction version 1 or 2 as the broker finalizes it):
see :mod:`kproto.client.transactions`.

Both are thin shells over the sans-IO operations of :mod:`kproto.client.core`
and :mod:`kproto.client.admin`. :class:`AsyncClient` is imported lazily, so
``from kproto.client import Client`` does not import asyncio.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .aborted import AbortedFilter
from .core import EARLIEST, LATEST
from .idempotence import ProducerSequenceError
from .partitioner import murmur2, partition_for_key
from .results import (
    AbortedTransaction,
    BrokerError,
    ClientError,
    ConfigEntry,
    FetchResult,
    GroupDescription,
    GroupListing,
    ListedOffset,
    MemberDescription,
    PartitionDescription,
    ProducedRecord,
    TopicDescription,
    TopicPartition,
)
from .sync import Client
from .transactional import TransactionalProducer
from .transactions import (
    ConsumerGroupMetadata,
    ProducerFencedError,
    TransactionAbortableError,
    TransactionError,
    TransactionFatalError,
    TransactionStateError,
)

if TYPE_CHECKING:
    from .aio import AsyncClient, AsyncTransactionalProducer

__all__ = [
    "EARLIEST",
    "LATEST",
    "AbortedFilter",
    "AbortedTransaction",
    "AsyncClient",
    "AsyncTransactionalProducer",
    "BrokerError",
    "Client",
    "ClientError",
    "ProducerSequenceError",
    "ConfigEntry",
    "ConsumerGroupMetadata",
    "FetchResult",
    "GroupDescription",
    "GroupListing",
    "MemberDescription",
    "PartitionDescription",
    "TopicDescription",
    "ListedOffset",
    "ProducedRecord",
    "TopicPartition",
    "TransactionAbortableError",
    "TransactionError",
    "TransactionFatalError",
    "TransactionStateError",
    "TransactionalProducer",
    "ProducerFencedError",
    "murmur2",
    "partition_for_key",
]


def __getattr__(name: str) -> Any:
    if name == "AsyncClient":
        from .aio import AsyncClient

        return AsyncClient
    if name == "AsyncTransactionalProducer":
        from .aio import AsyncTransactionalProducer

        return AsyncTransactionalProducer
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
