"""One KIP-1071 streams group: topology, members, epochs, task assignments.

Pure state, no I/O and no timers: :class:`~kproto.broker.groups.streams_coordinator.StreamsGroups`
drives it. Follows Kafka's group-coordinator ``streams`` package: ``StreamsGroup``,
``StreamsGroupMember``, ``StreamsTopology``, ``TasksTuple``, ``MemberState``,
``CurrentAssignmentBuilder`` and ``InternalTopicManager.configureTopics``:

- a *task* is a subtopology id and a partition; a subtopology has as many tasks as
  its widest source (or repartition source) topic has partitions;
- the topology is *configured* (:func:`configure_topology`) once every source topic
  exists; until then the group is NOT_READY and its members get no tasks;
- members converge towards their target tasks as KIP-848 consumers do
  (:func:`.modern.reconcile`, with what else the two share in :mod:`.modern`): a
  task is given to its new owner only once no other member holds it, and a member
  that must give tasks up stays at its epoch in UNREVOKED_TASKS until its heartbeat
  no longer reports them.
"""

from __future__ import annotations

import enum
import heapq
from collections.abc import Mapping
from typing import Any

import attrs

from .modern import ModernGroup, ModernGroupMember

__all__ = [
    "ConfiguredTopology",
    "StreamsGroup",
    "StreamsGroupMember",
    "StreamsGroupState",
    "StreamsMemberState",
    "Subtopology",
    "TaskSet",
    "InternalTopic",
    "configure_topology",
    "sticky_assign",
]

#: Tasks: subtopology id -> partitions (Kafka's ``TasksTuple`` for one task kind).
TaskSet = dict[str, frozenset[int]]


class StreamsMemberState(enum.IntEnum):
    """Kafka's ``streams.MemberState``."""

    STABLE = 1
    UNREVOKED_TASKS = 2
    UNRELEASED_TASKS = 3
    UNKNOWN = 127


class StreamsGroupState(enum.Enum):
    """Kafka's ``StreamsGroup.StreamsGroupState`` (names as ListGroups shows)."""

    EMPTY = "Empty"
    NOT_READY = "NotReady"
    ASSIGNING = "Assigning"
    RECONCILING = "Reconciling"
    STABLE = "Stable"
    DEAD = "Dead"


@attrs.frozen
class InternalTopic:
    """An internal topic of a subtopology (the ``TopicInfo`` struct): ``partitions``
    0 when not enforced, ``replication_factor`` 0 for the broker's default."""

    name: str
    partitions: int = 0
    replication_factor: int = 0
    configs: tuple[tuple[str, str], ...] = ()

    @classmethod
    def from_entity(cls, entity: Any) -> InternalTopic:
        """The ``TopicInfo`` of a heartbeat's topology or of a
        ``StreamsGroupTopologyValue`` (the same fields)."""
        configs = tuple((c.key, c.value) for c in entity.topic_configs)
        return cls(entity.name, entity.partitions, entity.replication_factor, configs)

    def as_fields(self, partitions: int | None = None) -> dict[str, Any]:
        """The ``TopicInfo`` struct's fields (``partitions`` instead of the declared
        count when given)."""
        return {
            "name": self.name,
            "partitions": self.partitions if partitions is None else partitions,
            "replication_factor": self.replication_factor,
            "topic_configs": [{"key": k, "value": v} for k, v in self.configs],
        }


@attrs.frozen
class Subtopology:
    """One subtopology as the member declared it (``Topology.Subtopologies``);
    source topic regexes are not supported (see the README)."""

    subtopology_id: str
    source_topics: tuple[str, ...] = ()
    repartition_sink_topics: tuple[str, ...] = ()
    state_changelog_topics: tuple[InternalTopic, ...] = ()
    repartition_source_topics: tuple[InternalTopic, ...] = ()

    @classmethod
    def from_entity(cls, entity: Any) -> Subtopology:
        """The subtopology of a heartbeat's topology or of a
        ``StreamsGroupTopologyValue`` (its source topic regex is not read)."""
        return cls(
            entity.subtopology_id,
            tuple(entity.source_topics),
            tuple(entity.repartition_sink_topics),
            tuple(InternalTopic.from_entity(t) for t in entity.state_changelog_topics),
            tuple(
                InternalTopic.from_entity(t) for t in entity.repartition_source_topics
            ),
        )

    def as_fields(
        self, sizes: Mapping[InternalTopic, int] | None = None
    ) -> dict[str, Any]:
        """The ``Subtopology`` struct's fields; ``sizes`` gives the partition count
        each internal topic was configured with (the declared one otherwise)."""
        sized = sizes or {}

        def infos(topics: tuple[InternalTopic, ...]) -> list[dict[str, Any]]:
            return [t.as_fields(sized.get(t)) for t in topics]

        return {
            "subtopology_id": self.subtopology_id,
            "source_topics": list(self.source_topics),
            "repartition_sink_topics": list(self.repartition_sink_topics),
            "state_changelog_topics": infos(self.state_changelog_topics),
            "repartition_source_topics": infos(self.repartition_source_topics),
        }


@attrs.frozen
class ConfiguredTopology:
    """The outcome of :func:`configure_topology`: ``tasks`` per subtopology (None
    when not ready), the internal topics to create as ``(InternalTopic, partitions)``
    and the missing source topics."""

    tasks: dict[str, int] | None
    missing_source_topics: tuple[str, ...] = ()
    internal_topics: tuple[tuple[InternalTopic, int], ...] = ()


def configure_topology(
    subtopologies: tuple[Subtopology, ...], partitions_of: Mapping[str, int]
) -> ConfiguredTopology:
    """Number the tasks of each subtopology and size its internal topics (Kafka's
    ``InternalTopicManager.configureTopics``): a repartition topic without a
    partition count takes that of the subtopology writing to it; a changelog topic
    has one partition per task. ``partitions_of`` maps existing topics to their
    partition counts."""
    internal = {t.name for s in subtopologies for t in s.repartition_source_topics} | {
        t.name for s in subtopologies for t in s.state_changelog_topics
    }
    missing = sorted(
        {t for s in subtopologies for t in s.source_topics if t not in partitions_of}
        - internal
    )
    if missing:
        return ConfiguredTopology(None, tuple(missing))
    repartition: dict[str, int] = {}
    for s in subtopologies:
        for info in s.repartition_source_topics:
            if info.partitions > 0:
                repartition[info.name] = info.partitions
    tasks: dict[str, int] = {}
    for _ in range(len(subtopologies) + 1):  # a fixpoint over repartition chains
        before = (dict(tasks), len(repartition))
        for s in subtopologies:
            counts = [partitions_of[t] for t in s.source_topics]
            counts += [
                repartition[t.name]
                for t in s.repartition_source_topics
                if t.name in repartition
            ]
            if counts:
                tasks[s.subtopology_id] = max(counts)
                for sink in s.repartition_sink_topics:
                    repartition.setdefault(sink, tasks[s.subtopology_id])
        if (tasks, len(repartition)) == before:
            break
    for s in subtopologies:
        tasks.setdefault(s.subtopology_id, 0)
    created: list[tuple[InternalTopic, int]] = []
    for s in subtopologies:
        for info in s.repartition_source_topics:
            created.append((info, repartition.get(info.name, tasks[s.subtopology_id])))
        for info in s.state_changelog_topics:
            created.append((info, tasks[s.subtopology_id]))
    return ConfiguredTopology(tasks, (), tuple(created))


@attrs.define(eq=False)
class StreamsGroupMember(ModernGroupMember[str]):
    """One member (Kafka's ``StreamsGroupMember``): the common fields of
    :class:`.modern.ModernGroupMember` (``assigned``: its active tasks by
    subtopology) and what a Kafka Streams client declares."""

    STABLE_STATE = StreamsMemberState.STABLE
    UNREVOKED_STATE = StreamsMemberState.UNREVOKED_TASKS
    UNRELEASED_STATE = StreamsMemberState.UNRELEASED_TASKS

    topology_epoch: int = 0
    process_id: str = ""
    user_endpoint: tuple[str, int] | None = None
    client_tags: tuple[tuple[str, str], ...] = ()

    @property
    def active(self) -> TaskSet:
        """The active tasks (Kafka's ``assignedTasks().activeTasks()``); standby and
        warm-up tasks are not assigned here."""
        return self.assigned


@attrs.define(eq=False)
class StreamsGroup(ModernGroup[StreamsGroupMember, str]):
    """A streams group (Kafka's ``StreamsGroup``): the state of
    :class:`.modern.ModernGroup` (``target`` the target active tasks,
    ``partition_epochs`` keyed by task ``(subtopology, partition)``) and its
    topology.

    ``topology`` is the declared one (None until the first member joins),
    ``configured`` its :func:`configure_topology` result at the group epoch,
    ``metadata`` the source topics' partition counts and ``loaded_hash`` the
    metadata hash of a group recovered from its records.
    """

    STATES = StreamsGroupState

    topology_epoch: int = 0
    topology: tuple[Subtopology, ...] | None = None
    configured: ConfiguredTopology | None = None
    metadata: dict[str, int] = attrs.field(factory=dict)
    topology_description: dict[str, Any] | None = None
    loaded_hash: int | None = None

    @property
    def state(self) -> StreamsGroupState:
        """Kafka's ``StreamsGroup.maybeUpdateGroupState``: NOT_READY while a
        member waits for the topology to be configured."""
        state = self._state(StreamsGroupState)
        if state in (StreamsGroupState.DEAD, StreamsGroupState.EMPTY):
            return state
        if self.configured is None or self.configured.tasks is None:
            return StreamsGroupState.NOT_READY
        return state

    def source_topics(self) -> set[str]:
        """Every source topic of the topology (internal repartition ones included)."""
        out: set[str] = set()
        for s in self.topology or ():
            out.update(s.source_topics)
            out.update(t.name for t in s.repartition_source_topics)
        return out


def sticky_assign(
    members: Mapping[str, TaskSet], tasks: Mapping[str, int]
) -> dict[str, TaskSet]:
    """Active tasks per member, balanced and sticky (the active-task part of Kafka's
    ``StickyTaskAssignor``): with ``T`` tasks and ``M`` members every member gets
    ``T // M`` or one more; each keeps the tasks it had up to that share (the
    extra one to the first members by id that had more), and the rest go to the
    least-loaded member, ties broken by member id. ``members`` maps member ids to
    their current target; ``tasks`` maps subtopology ids to their task counts.
    O((T + M) log M)."""
    if not members:
        return {}
    every = [(sub, p) for sub in sorted(tasks) for p in range(tasks[sub])]
    floor, extra = divmod(len(every), len(members))
    owned: dict[str, list[tuple[str, int]]] = {m: [] for m in sorted(members)}
    taken: set[tuple[str, int]] = set()
    previous: dict[str, list[tuple[str, int]]] = {
        m: [
            (sub, p)
            for sub, parts in sorted(members[m].items())
            for p in sorted(parts)
            if p < tasks.get(sub, 0)
        ]
        for m in owned
    }
    for share in (floor, floor + 1):
        for member_id, held in owned.items():
            for task in previous[member_id]:
                if len(held) >= share or (share > floor and extra == 0):
                    break
                if task not in taken:
                    held.append(task)
                    taken.add(task)
                    if share > floor:
                        extra -= 1
    heap = [(len(held), member_id) for member_id, held in owned.items()]
    heapq.heapify(heap)
    for task in every:
        if task in taken:
            continue
        load, member_id = heapq.heappop(heap)
        owned[member_id].append(task)
        heapq.heappush(heap, (load + 1, member_id))
    out: dict[str, TaskSet] = {}
    for member_id, held in owned.items():
        grouped: dict[str, set[int]] = {}
        for sub, p in held:
            grouped.setdefault(sub, set()).add(p)
        out[member_id] = {sub: frozenset(ps) for sub, ps in grouped.items()}
    return out
