"""Every group of the cluster by id, and where their records are written.

:class:`GroupStore` is what the parts of the group coordinator share (Kafka's
``GroupMetadataManager`` holds one map of groups of every type and writes through the
``CoordinatorRuntime``): the classic groups, the modern group types registered with
it (consumer and streams groups: a group id belongs to one type at a time), the
``__consumer_offsets`` writer, the timers and the cluster's topics. It imports none of
the parts that use it.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import TYPE_CHECKING, Protocol

from kproto.broker.coordinator_runtime import CoordinatorRuntime

from .group import ClassicGroup
from .records import OFFSETS_TOPIC, Pair
from .timers import Scheduler

if TYPE_CHECKING:
    from kproto.broker.topic_metadata import TopicMetadata

__all__ = ["GroupStore", "GroupsHost", "GroupKind", "OFFSETS_TOPIC"]


class GroupsHost(Protocol):
    """What the group coordinator reads of the cluster
    (:class:`kproto.broker.state.ClusterState`)."""

    @property
    def topics(self) -> Mapping[str, TopicMetadata]: ...

    def topic_partitions(self, topic: str) -> int | None: ...

    def now_ms(self) -> int: ...

    def create_topic(
        self,
        name: str,
        partitions: int | None = None,
        *,
        configs: dict[str, str] | None = None,
    ) -> object:
        """Create a topic (a streams group's internal topics)."""
        ...


class GroupKind(Protocol):
    """A modern group type registered with the store (consumer, streams)."""

    @property
    def groups(self) -> Collection[str]: ...


class GroupStore:
    """The groups of one cluster and their writer.

    Attributes:
        state: the cluster (topics, partition counts, clock, group configs).
        runtime: the ``__consumer_offsets`` writer
            (:class:`kproto.broker.coordinator_runtime.CoordinatorRuntime`).
        scheduler: the timers (asyncio's, or a test's manual clock).
        classic: group id -> classic group.
    """

    def __init__(
        self, state: GroupsHost, runtime: CoordinatorRuntime, scheduler: Scheduler
    ) -> None:
        self.state = state
        self.runtime = runtime
        self.scheduler = scheduler
        self.classic: dict[str, ClassicGroup] = {}
        self._kinds: list[GroupKind] = []

    def now_ms(self) -> int:
        """The cluster's wall clock (ms)."""
        return int(self.state.now_ms())

    def register(self, kind: GroupKind) -> None:
        """Add a modern group type (its ``groups`` are looked up by id)."""
        self._kinds.append(kind)

    def taken_by_other(self, group_id: str, kind: object) -> bool:
        """Whether ``group_id`` is a group of a modern type other than ``kind``."""
        return any(group_id in k.groups for k in self._kinds if k is not kind)

    def append(
        self,
        group_id: str,
        pairs: list[Pair],
        producer: tuple[int, int] | None = None,
    ) -> None:
        """Append ``pairs`` as one batch to ``group_id``'s ``__consumer_offsets``
        partition (transactional for ``producer`` = ``(producer_id, epoch)``).

        Raises:
            kproto.broker.coordinator_runtime.CoordinatorWriteError: nothing was
                stored; its ``error_code`` is the coordinator's answer.
        """
        runtime = self.runtime
        runtime.append(runtime.partition_for(group_id), pairs, producer)

    def group_config(self, group_id: str, name: str, default: int) -> int:
        """The group config ``name`` of ``group_id`` (IncrementalAlterConfigs on a
        GROUP resource), else ``default``."""
        lookup = getattr(self.state, "group_config", None)
        if lookup is None:
            return default
        return int(lookup(group_id, name, str(default)))
