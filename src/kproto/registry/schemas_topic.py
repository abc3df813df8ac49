"""The registry's only access to the Kafka log: the ``_schemas`` topic.

Confluent's ``KafkaStore`` writes every change as one record to a single-partition
compacted topic and reads the topic from the start to rebuild its state. Here the
topic is a tenant of the broker's internal-topic writer,
:class:`kproto.broker.coordinator_runtime.CoordinatorRuntime` (after Kafka's
``CoordinatorRuntime`` / ``PartitionWriter``), as the group, share and transaction
coordinators' topics are: :meth:`SchemasTopic.ensure` creates the topic (one
partition, ``cleanup.policy=compact``, not marked internal: Kafka's Metadata shows
``_schemas`` as an ordinary topic), :meth:`SchemasTopic.replay` yields every stored
record in offset order and :meth:`SchemasTopic.append` stores records and returns
their first offset once they are in the log.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Final

from kproto.broker.coordinator_runtime import CoordinatorRuntime, CoordinatorWriteError
from kproto.broker.state import ClusterState
from kproto.serial import DecodeError

__all__ = ["SCHEMAS_TOPIC", "SchemasTopic", "StoreError"]

#: Confluent's ``kafkastore.topic`` default.
SCHEMAS_TOPIC: Final = "_schemas"


class StoreError(OSError):
    """The ``_schemas`` log could not store or read records (the registry answers
    50001)."""


class SchemasTopic:
    """The ``_schemas`` topic of one cluster (partition 0, ``cleanup.policy=compact``).

    Args:
        state: the cluster's state (its topics and partition logs).
        topic: the topic's name (Confluent's ``kafkastore.topic``).
    """

    def __init__(self, state: ClusterState, topic: str = SCHEMAS_TOPIC) -> None:
        self.topic = topic
        self.state = state
        self.runtime = CoordinatorRuntime(state, topic, 1, internal=False)

    def ensure(self) -> None:
        """Create the topic (1 partition, compacted) unless it exists.

        Raises:
            kproto.broker.TopicError: the topic cannot be created.
        """
        self.runtime.ensure_topic()

    def replay(self) -> Iterator[tuple[bytes | None, bytes | None]]:
        """Every stored ``(key, value)`` in offset order (a tombstone's value is
        ``None``; transaction markers are skipped).

        Raises:
            StoreError: a stored batch is corrupt.
        """
        try:
            yield from self.runtime.records(0)
        except DecodeError as exc:
            raise StoreError(f"{self.topic}-0 cannot be read: {exc}") from exc

    async def append(self, records: Sequence[tuple[bytes, bytes | None]]) -> int:
        """Store ``records`` (key, value or ``None`` for a tombstone) as one batch;
        return the first record's offset once the log holds them.

        A topic deleted under the running registry is not created again (the
        runtime would, as Kafka creates a coordinator topic on first use): the
        schemas it held would be gone, so the write is refused.

        Raises:
            StoreError: the topic is gone, or the log refused or failed the write
                (nothing was stored).
        """
        if self.state.topic_partitions(self.topic) is None:
            raise StoreError(f"the {self.topic} topic does not exist")
        try:
            return self.runtime.append(0, list(records))
        except CoordinatorWriteError as exc:
            raise StoreError(
                f"the {self.topic} topic refused the write: {exc}"
            ) from exc
