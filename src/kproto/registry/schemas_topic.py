"""The registry's only access to the Kafka log: the ``_schemas`` topic.

Confluent's ``KafkaStore`` writes every change as one record to a single-partition
compacted topic and reads the topic from the start to rebuild its state. This module
is that seam and nothing more: :meth:`SchemasTopic.ensure` creates the topic,
:meth:`SchemasTopic.replay` yields every stored record in offset order and
:meth:`SchemasTopic.append` stores records and returns their first offset once they
are in the log. It runs over the broker's partition log today; the broker's
internal-topic writer (after Kafka's ``CoordinatorRuntime``) can take its place
with the same three calls.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator, Sequence
from typing import Final

from kproto.broker.errors import LogAppendError
from kproto.broker.log import PartitionLog
from kproto.broker.state import ClusterState
from kproto.records import encode_batch
from kproto.serial import DecodeError

__all__ = ["SCHEMAS_TOPIC", "SchemasTopic", "StoreError"]

log = logging.getLogger("kproto.registry")

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
        self.state = state
        self.topic = topic

    def ensure(self) -> None:
        """Create the topic (1 partition, compacted) unless it exists.

        Raises:
            kproto.broker.TopicError: the topic cannot be created.
        """
        if self.state.topic_partitions(self.topic) is None:
            self.state.create_topic(
                self.topic, 1, configs={"cleanup.policy": "compact"}
            )

    def _log(self) -> PartitionLog:
        plog = self.state.partition_log(self.topic, 0)
        if plog is None:
            raise StoreError(f"the {self.topic} topic has no partition 0")
        return plog

    def replay(self) -> Iterator[tuple[bytes | None, bytes | None]]:
        """Every stored ``(key, value)`` from the log start on, in offset order
        (a tombstone's value is ``None``; control batches are skipped).

        Raises:
            StoreError: the partition is missing or a stored batch is corrupt.
        """
        plog = self._log()
        start = plog.log_start_offset
        try:
            for batch in plog.batches(start):
                if batch.is_control:
                    continue
                for record in batch.records:
                    if record.offset >= start:
                        yield record.key, record.value
        except DecodeError as exc:
            raise StoreError(f"{self.topic}-0 cannot be read: {exc}") from exc

    async def append(self, records: Sequence[tuple[bytes, bytes | None]]) -> int:
        """Store ``records`` (key, value or ``None`` for a tombstone) as one batch;
        return the first record's offset once the log holds them.

        Raises:
            StoreError: the log refused or failed the write.
        """
        plog = self._log()
        now = int(time.time() * 1000)
        try:
            return await plog.append(
                encode_batch([(k, v, (), now) for k, v in records])
            )
        except (OSError, LogAppendError) as exc:
            log.error("appending to %s-0 failed: %s", self.topic, exc)
            raise StoreError(
                f"the {self.topic} topic refused the write: {exc}"
            ) from exc
