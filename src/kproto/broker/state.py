"""The shared state of one in-process cluster: nodes, topics and their lifecycle,
partition logs.

Creating, growing, reconfiguring and deleting topics happens here (Kafka's
controller and ``LogManager``); what is kept on disk and how is
:mod:`kproto.broker.topics_file` (each partition's topic id is also written to
``partition.metadata`` as Kafka writes it); each partition's leader epoch and the
wake-up of waiting fetches are :mod:`kproto.broker.partition_state`.

Every method runs on the cluster's event-loop thread.
"""

from __future__ import annotations

import asyncio
import logging
import shutil
import time
import uuid
from collections.abc import Callable
from contextvars import ContextVar
from pathlib import Path

import attrs

from kproto.broker.broker_config import BrokerConfig
from kproto.broker.client_metrics import ClientMetricsManager
from kproto.broker.dynamic_broker_config import BrokerConfigLayers
from kproto.broker.dynamic_config import DynamicConfigs
from kproto.broker.errors import TopicError
from kproto.broker.file_cache import FileCache
from kproto.broker.group_config import GROUP_CONFIG_DEFAULTS
from kproto.broker.log import PartitionLog
from kproto.broker.partition_state import AppendWaiters, LeaderEpochs, PartitionListener
from kproto.broker.read_replicas import ReadReplicas
from kproto.broker.replica_placement import striped_placement
from kproto.broker.schema_validation import SchemaIdLookup
from kproto.broker.topic_config import TOPIC_CONFIG_DEFAULTS, TopicConfig
from kproto.broker.topic_metadata import TopicMetadata, validate_topic_name
from kproto.broker.topics_file import (
    TOPICS_FILE,
    CorruptStateError,
    read_start_offsets,
    read_topics,
    write_start_offsets,
    write_topics,
)
from kproto.broker.validation_pool import ValidationPool
from kproto.errors import ErrorCode
from kproto.json import kafka_uuid

__all__ = [
    "ClusterState",
    "NodeInfo",
    "TopicMetadata",
    "TopicError",
    "CorruptStateError",
    "TOPIC_CONFIG_DEFAULTS",
    "DEFAULT_MAX_PARTITIONS",
    "TOPIC_CREATION_ALLOWED",
]

#: Who may create topics on the side of the request being served (a predicate on
#: the topic name; None: anyone). The ACL checks set it around a request whose
#: handler creates topics itself (StreamsGroupHeartbeat's internal topics:
#: :mod:`kproto.broker.handlers.authorize.streams`); :meth:`ClusterState.
#: create_topic` refuses a topic it rejects (TOPIC_AUTHORIZATION_FAILED).
TOPIC_CREATION_ALLOWED: ContextVar[Callable[[str], bool] | None] = ContextVar(
    "TOPIC_CREATION_ALLOWED", default=None
)

log = logging.getLogger("kproto.broker")

#: Partitions a cluster holds at most (all topics, internal ones included).
DEFAULT_MAX_PARTITIONS = 200_000


@attrs.frozen
class NodeInfo:
    """One broker node: its id, listener host and port, and rack (``None``)."""

    node_id: int
    host: str
    port: int
    rack: str | None = None


class ClusterState:
    """Nodes, topics and partition logs of the whole in-process cluster.

    Attributes:
        nodes: node_id -> NodeInfo (filled as the node servers start).
        data_dir: the folder holding every partition's log directory.
        cluster_id: a random 22-character id, as Kafka's (base64 UUID).
        controller_id: the node reported as controller (the first).
        config: the broker configuration (Kafka's property names; its
            ``num.partitions``, ``auto.create.topics.enable``, ... are read
            through the properties below).
        topic_defaults: the configuration of a topic without explicit configs
            (the broker's ``log.*`` properties over Kafka's topic defaults).
        files: the bounded cache of open segment files (``kproto.max.open.files``).
        pending_topics: names of topics being created (their logs are opening).
        validation: where produced batches are validated (:class:`ValidationPool`).
    """

    def __init__(
        self,
        data_dir: Path,
        node_ids: list[int],
        *,
        config: BrokerConfig | None = None,
    ) -> None:
        self.data_dir = data_dir
        #: the configuration the cluster was started with (Cluster(config=...))
        self.static_config = config or BrokerConfig()
        self.config = self.static_config
        self.topic_defaults = self.config.topic_defaults()
        #: called with the new configuration after a dynamic change
        #: (:meth:`reconfigure`; Kafka's ``Reconfigurable``)
        self.reconfigurables: list[Callable[[BrokerConfig], None]] = []
        self.files = FileCache(self.config.kproto_max_open_files)
        self.pending_topics: set[str] = set()
        self.pending_partitions = 0
        self.node_ids = list(node_ids)
        self.nodes: dict[int, NodeInfo] = {}
        self.cluster_id = _cluster_id()
        self.controller_id = self.node_ids[0]
        self.topics: dict[str, TopicMetadata] = {}
        self.logs: dict[tuple[str, int], PartitionLog] = {}
        self.next_producer_id = 1000
        #: (topic id, partition) -> leader epoch (absent: 0; see broker.leadership),
        #: stamped into the batches each log appends; on open, at least the
        #: latest epoch the log's batches carry
        self.leader_epochs: LeaderEpochs = {}
        #: group configs, client quotas, finalized features (kproto.broker.dynamic_config)
        self.dynamic = DynamicConfigs(data_dir)
        #: KIP-714 client metrics subscriptions and pushes (kproto.broker.client_metrics)
        self.client_metrics = ClientMetricsManager()
        #: where produced batches are validated (inline or on a thread)
        self.validation = ValidationPool()
        #: the schema registry's answers to broker-side schema validation (set
        #: by the Cluster when it serves a registry; None: no registry)
        self.schema_ids: SchemaIdLookup | None = None
        #: the Fetch and ShareFetch long polls waiting for an append
        self.append_waiters = AppendWaiters()
        #: followers as a test shapes them: pinned read replicas, lagging
        #: watermarks (kproto.broker.read_replicas, KIP-392)
        self.read_replicas = ReadReplicas()
        self._rr = 0

    # ------------------------------------------------- broker configuration

    def layers(self, node_id: int | None = None) -> BrokerConfigLayers:
        """The broker configuration's layers (static, the dynamic cluster-wide
        default, ``node_id``'s dynamic configs; default node: the controller,
        whose configuration the nodes' shared settings follow)."""
        node = self.controller_id if node_id is None else node_id
        stored = self.dynamic.broker_configs
        return BrokerConfigLayers(
            self.static_config, stored.get("", {}), stored.get(str(node), {})
        )

    def reconfigure(self, config: BrokerConfig | None = None) -> None:
        """Put ``config`` (default: the layers' in effect) in effect: every
        topic's configuration over the new defaults, the logs' segment sizes,
        then the :attr:`reconfigurables`.

        Raises:
            TopicError: INVALID_CONFIG, a topic's configs conflict with the new
                defaults (nothing changed).
        """
        config = self.layers().effective() if config is None else config
        defaults = config.topic_defaults()
        parsed = {
            name: TopicConfig.from_properties(info.configs, defaults)
            for name, info in self.topics.items()
        }
        self.config, self.topic_defaults = config, defaults
        for name, topic_config in parsed.items():
            info = self.topics[name]
            info.topic_config = topic_config
            for p in range(info.partitions):
                plog = self.logs.get((name, p))
                if plog is not None:
                    plog.segment_bytes = topic_config.segment_size
        for apply in self.reconfigurables:
            apply(config)

    def topic_config(self, configs: dict[str, str]) -> TopicConfig:
        """The configuration in effect of a topic with explicit ``configs``, parsed
        and validated (:meth:`TopicConfig.from_properties` over
        :attr:`topic_defaults`).

        Raises:
            TopicError: INVALID_CONFIG naming the first config refused.
        """
        return TopicConfig.from_properties(configs, self.topic_defaults)

    # ------------------------------------------------------------ interface

    def now_ms(self) -> int:
        """Wall clock in ms (the one place; patch in tests)."""
        return time.time_ns() // 1_000_000

    def leader(self, topic: str, partition: int) -> int | None:
        """The node id leading ``topic``/``partition``, or None if unknown."""
        info = self.topics.get(topic)
        if info is None or not 0 <= partition < info.partitions:
            return None
        return info.leaders[partition]

    def group_config(self, group_id: str, name: str, default: str | None = None) -> str:
        """The group config ``name`` in effect for ``group_id``: set by
        IncrementalAlterConfigs on a GROUP resource, else ``default`` (a
        coordinator's own setting), else Kafka's default
        (:mod:`kproto.broker.group_config`).

        Raises:
            KeyError: ``name`` is not a group config.
        """
        explicit = self.dynamic.group_configs.get(group_id, {})
        fallback = GROUP_CONFIG_DEFAULTS[name] if default is None else default
        return explicit.get(name, fallback)

    def partition_log(self, topic: str, partition: int) -> PartitionLog | None:
        """The log of ``topic``/``partition``, or None if there is no such partition."""
        return self.logs.get((topic, partition))

    def topic_partitions(self, topic: str) -> int | None:
        """The partition count of ``topic``, or None if it does not exist."""
        info = self.topics.get(topic)
        return None if info is None else info.partitions

    def ensure_internal_topic(
        self, name: str, partitions: int, internal: bool = True
    ) -> None:
        """Create the compacted topic ``name`` of a coordinator (e.g.
        ``__consumer_offsets``) unless it exists; ``internal=False`` for a tenant
        whose topic Kafka does not mark internal (the Schema Registry's
        ``_schemas``)."""
        if name not in self.topics:
            self.create_topic(
                name,
                partitions,
                configs={"cleanup.policy": "compact"},
                internal=internal,
            )

    # --------------------------------------------------------------- topics

    def partition_count(self) -> int:
        """Partitions the cluster holds, those being created included."""
        return len(self.logs) + self.pending_partitions

    def plan_topic(
        self,
        name: str,
        partitions: int | None = None,
        *,
        configs: dict[str, str] | None = None,
        internal: bool = False,
        also_planned: int = 0,
        replication_factor: int = 1,
        assignment: list[list[int]] | None = None,
    ) -> TopicMetadata:
        """Validate a new topic completely, changing nothing; return the topic it
        would be: ``replication_factor`` replicas per partition placed by
        :meth:`place_replicas`, or the manual ``assignment`` (one checked replica
        list per partition; ``partitions`` is then its length), each partition led
        by its first live replica. ``also_planned``: partitions of the same request
        planned before this topic (for the cluster bound).

        Raises:
            TopicError: bad name (INVALID_TOPIC_EXCEPTION), exists or is being
                created (TOPIC_ALREADY_EXISTS), partitions < 1 (INVALID_PARTITIONS),
                a config Kafka refuses (INVALID_CONFIG, naming it), the cluster's
                ``max_partitions`` exceeded (POLICY_VIOLATION), more replicas than
                live nodes (INVALID_REPLICATION_FACTOR).
        """
        if assignment is not None:
            partitions = len(assignment)
        validate_topic_name(name)
        if name in self.topics or name in self.pending_topics:
            raise TopicError(
                ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{name}' already exists."
            )
        count = (
            self.config.num_partitions
            if partitions is None or partitions == -1
            else partitions
        )
        if count < 1:
            raise TopicError(
                ErrorCode.INVALID_PARTITIONS,
                f"number of partitions must be at least 1, got {count}",
            )
        self.check_partition_room(count + also_planned)
        configs = dict(configs or {})
        topic_config = self.topic_config(configs)
        if assignment is None:
            replicas = self.place_replicas(self._rr, count, replication_factor)
        else:
            replicas = [list(r) for r in assignment]
        live = self.live_node_ids()
        return TopicMetadata(
            name,
            uuid.uuid4(),
            [next((n for n in r if n in live), r[0]) for r in replicas],
            configs,
            internal or name.startswith("__"),
            topic_config,
            replicas,
        )

    def live_node_ids(self) -> list[int]:
        """The listening nodes (Kafka's unfenced brokers); all nodes before any
        started."""
        return [n for n in self.node_ids if n in self.nodes] or self.node_ids

    def place_replicas(
        self,
        start: int,
        count: int,
        replication_factor: int,
        existing: list[list[int]] | None = None,
    ) -> list[list[int]]:
        """Replica lists of ``count`` new partitions on the live nodes, spread
        across their racks first, then across nodes, as Kafka's
        ``StripedReplicaPlacer`` (:func:`kproto.broker.replica_placement.
        striped_placement`): ``start`` rotates where a new topic begins;
        ``existing``, the replica lists of the topic's partitions, continues
        after them (CreatePartitions).

        Raises:
            TopicError: INVALID_REPLICATION_FACTOR, ``replication_factor`` above
                the live nodes (Kafka's message).
        """
        racks = {
            n: (info.rack if (info := self.nodes.get(n)) is not None else None)
            for n in self.live_node_ids()
        }
        return striped_placement(
            racks, count, replication_factor, start=start, existing=existing or ()
        )

    def check_partition_room(self, more: int) -> None:
        """Raise TopicError(POLICY_VIOLATION) unless ``more`` partitions fit under
        ``kproto.max.partitions``."""
        have = self.partition_count()
        limit = self.config.kproto_max_partitions
        if have + more > limit:
            raise TopicError(
                ErrorCode.POLICY_VIOLATION,
                f"the cluster holds {have} partitions; {more} more would exceed its "
                f"limit of {limit} (Cluster(max_partitions=...))",
            )

    def begin_topic(self, info: TopicMetadata) -> None:
        """Reserve ``info.name`` while its logs are opened (see :meth:`open_partition`)."""
        self.pending_topics.add(info.name)
        self.pending_partitions += info.partitions
        self._rr = (self._rr + 1) % len(self.node_ids)

    def open_partition(self, info: TopicMetadata, partition: int) -> None:
        """Create the log directory of one partition of a topic being created.

        Raises:
            OSError: the directory or its files cannot be created.
        """
        self._open_log(info, partition)

    async def open_partitions(
        self, partitions: list[tuple[TopicMetadata, int]]
    ) -> dict[str, OSError]:
        """Create the logs of ``partitions`` (``(topic, partition)`` of topics being
        created, reserved by :meth:`begin_topic`) with their file I/O (directories,
        empty segments, ``partition.metadata``: milliseconds each on a slow disk)
        on a worker thread, so the event loop serves other clients meanwhile, as
        Kafka's controller creates topics off its request threads; then register
        them here. A topic whose log cannot be created gets no further partitions
        made; returns the error per such topic name (the logs made before are
        registered, for :meth:`abort_topic`). Cancelled, it waits for the thread
        before re-raising, so the caller's :meth:`abort_topic` removes everything
        the thread made."""
        job = asyncio.ensure_future(asyncio.to_thread(self._make_logs, partitions))
        try:
            made, errors = await asyncio.shield(job)
        except asyncio.CancelledError:
            await asyncio.wait([job])
            raise
        for info, partition, plog in made:
            self._register_log(info, partition, plog)
        return errors

    def _make_logs(
        self, partitions: list[tuple[TopicMetadata, int]]
    ) -> tuple[list[tuple[TopicMetadata, int, PartitionLog]], dict[str, OSError]]:
        """The file I/O of :meth:`open_partitions` (on a worker thread: it touches
        no shared state); the logs made, and the error that stopped each topic."""
        made: list[tuple[TopicMetadata, int, PartitionLog]] = []
        errors: dict[str, OSError] = {}
        for info, partition in partitions:
            if info.name in errors:
                continue
            try:
                made.append((info, partition, self.make_log(info, partition)))
            except OSError as err:
                errors[info.name] = err
        return made, errors

    def commit_topic(self, info: TopicMetadata) -> None:
        """Publish a topic whose every partition log is open."""
        self.pending_topics.discard(info.name)
        self.pending_partitions -= info.partitions
        self.topics[info.name] = info

    def abort_topic(self, info: TopicMetadata) -> None:
        """Remove whatever a failed creation left: open logs and directories."""
        self.pending_topics.discard(info.name)
        self.pending_partitions -= info.partitions
        for p in range(info.partitions):
            self._drop_partition(info.name, p)

    def create_topic(
        self,
        name: str,
        partitions: int | None = None,
        *,
        configs: dict[str, str] | None = None,
        internal: bool = False,
        validate_only: bool = False,
        save: bool = True,
        replication_factor: int = 1,
    ) -> TopicMetadata:
        """Create a topic at once (internal topics, auto-creation, test set-up):
        :meth:`plan_topic`, then every partition log, all or nothing; saved to
        ``kproto-topics.json`` unless ``save`` is False (the caller saves once).
        CreateTopics goes through :func:`kproto.broker.topic_admin.create_topics`
        instead, which yields between bounded steps.

        Raises:
            TopicError: as :meth:`plan_topic`; KAFKA_STORAGE_ERROR when a log
                cannot be created (nothing of the topic is left behind);
                TOPIC_AUTHORIZATION_FAILED when :data:`TOPIC_CREATION_ALLOWED`
                refuses the name.
        """
        may_create = TOPIC_CREATION_ALLOWED.get()
        if may_create is not None and not may_create(name):
            raise TopicError(
                ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                f"Unauthorized to CREATE on topic {name}.",
            )
        info = self.plan_topic(
            name,
            partitions,
            configs=configs,
            internal=internal,
            replication_factor=replication_factor,
        )
        if validate_only:
            return info
        self.begin_topic(info)
        try:
            for p in range(info.partitions):
                self.open_partition(info, p)
        except OSError as err:
            self.abort_topic(info)
            raise TopicError(
                ErrorCode.KAFKA_STORAGE_ERROR,
                f"could not create the logs of topic {name!r}: {err}",
            ) from err
        self.commit_topic(info)
        if save:
            self.save_topics()
        return info

    def _open_log(
        self, info: TopicMetadata, partition: int, log_start_offset: int = 0
    ) -> PartitionLog:
        plog = self.make_log(info, partition, log_start_offset)
        self._register_log(info, partition, plog)
        return plog

    def make_log(
        self, info: TopicMetadata, partition: int, log_start_offset: int = 0
    ) -> PartitionLog:
        """Open (creating) one partition's log and its ``partition.metadata``;
        registers nothing (:meth:`_register_log` does, on the loop), so it may run
        on a worker thread for a partition nobody else touches yet.

        Raises:
            OSError: the directory or a file cannot be created or read.
        """
        directory = self.data_dir / f"{info.name}-{partition}"
        key = (info.topic_id, partition)
        plog = PartitionLog.open(
            info.name,
            partition,
            directory,
            segment_bytes=info.topic_config.segment_size,
            log_start_offset=log_start_offset,
            files=self.files,
            listener=PartitionListener(self.leader_epochs, key, self.append_waiters),
        )
        meta = directory / "partition.metadata"
        if not meta.exists():
            meta.write_text(f"version: 0\ntopic_id: {kafka_uuid(info.topic_id)}\n")
        return plog

    def _register_log(
        self, info: TopicMetadata, partition: int, plog: PartitionLog
    ) -> None:
        key = (info.topic_id, partition)
        # the epochs live on in the stored batches: a restart resumes at the latest
        if plog.latest_epoch > self.leader_epochs.get(key, 0):
            self.leader_epochs[key] = plog.latest_epoch
        self.logs[(info.name, partition)] = plog
        self.next_producer_id = max(
            self.next_producer_id, plog.producer_state.max_producer_id + 1
        )

    def check_new_partitions(self, name: str, count: int) -> TopicMetadata:
        """Validate growing ``name`` to ``count`` partitions; change nothing.

        Raises:
            TopicError: unknown topic (UNKNOWN_TOPIC_OR_PARTITION), count not above
                the current one (INVALID_PARTITIONS), the cluster's
                ``max_partitions`` exceeded (POLICY_VIOLATION).
        """
        info = self.topics.get(name)
        if info is None:
            raise TopicError(
                ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"unknown topic {name!r}"
            )
        if count <= info.partitions:
            raise TopicError(
                ErrorCode.INVALID_PARTITIONS,
                f"topic {name!r} has {info.partitions} partitions; {count} does not increase it",
            )
        self.check_partition_room(count - info.partitions)
        return info

    async def add_partition(self, info: TopicMetadata, replicas: list[int]) -> None:
        """Open one more partition of ``info`` on ``replicas`` (led by the first
        live one; :meth:`place_replicas` places them), its file I/O on a worker
        thread (see :meth:`open_partitions`).

        Raises:
            OSError: the log cannot be created (the partition is not added).
        """
        p = info.partitions
        job = asyncio.ensure_future(asyncio.to_thread(self.make_log, info, p))
        try:
            plog = await asyncio.shield(job)
        except asyncio.CancelledError:
            await asyncio.wait([job])
            self._drop_partition(info.name, p)
            raise
        except OSError:
            self._drop_partition(info.name, p)
            raise
        self._register_log(info, p, plog)
        live = self.live_node_ids()
        if len(info.replicas) < p:  # a topic saved before replicas were kept
            info.replicas = [info.replicas_of(q) for q in range(p)]
        info.replicas.append(list(replicas))
        info.leaders.append(next((n for n in replicas if n in live), replicas[0]))

    def remove_partitions_from(self, info: TopicMetadata, count: int) -> None:
        """Undo :meth:`add_partition` down to ``count`` partitions."""
        while info.partitions > count:
            self._drop_partition(info.name, info.partitions - 1)
            info.leaders.pop()
        del info.replicas[count:]

    def _drop_partition(self, topic: str, partition: int) -> None:
        """Close and remove one partition's log and directory."""
        plog = self.logs.pop((topic, partition), None)
        if plog is not None:
            plog.close()
        shutil.rmtree(self.data_dir / f"{topic}-{partition}", ignore_errors=True)

    def delete_topic(self, name: str, *, save: bool = True) -> TopicMetadata:
        """Delete ``name`` and its log directories; ``save=False`` leaves the
        metadata file to the caller (one save per request).

        Raises:
            TopicError: UNKNOWN_TOPIC_OR_PARTITION.
        """
        info = self.topics.pop(name, None)
        if info is None:
            raise TopicError(
                ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"unknown topic {name!r}"
            )
        for p in range(info.partitions):
            plog = self.logs.pop((name, p), None)
            if plog is not None:
                plog.close()
                shutil.rmtree(plog.directory, ignore_errors=True)
        if save:
            self.save_topics()
        return info

    def set_configs(
        self, name: str, configs: dict[str, str | None], *, replace: bool
    ) -> None:
        """Set (``None``: delete) topic configs; ``replace`` drops the others
        (AlterConfigs) instead of merging (IncrementalAlterConfigs).

        Raises:
            TopicError: UNKNOWN_TOPIC_OR_PARTITION, INVALID_CONFIG (bad value).
        """
        info = self.topics.get(name)
        if info is None:
            raise TopicError(
                ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"unknown topic {name!r}"
            )
        new = {} if replace else dict(info.configs)
        for key, value in configs.items():
            if value is None:
                new.pop(key, None)
            else:
                new[key] = value
        info.topic_config = self.topic_config(new)
        info.configs = new
        segment_bytes = info.topic_config.segment_size
        for p in range(info.partitions):
            self.logs[(name, p)].segment_bytes = segment_bytes
        self.save_topics()

    # ----------------------------------------------------------- produce/fetch

    def notify_appended(self) -> None:
        """Wake every Fetch long poll waiting for data."""
        self.append_waiters.notify()

    def appended_event(self) -> asyncio.Event:
        """An event set on the next append (for Fetch ``max_wait_ms``)."""
        return self.append_waiters.event()

    # ------------------------------------------------------------ persistence

    def load(self) -> None:
        """Recover topics and logs from ``data_dir`` (after a restart).

        Raises:
            CorruptStateError: ``kproto-topics.json`` is not a JSON object with a
                ``topics`` list.
            OSError: the directory or a file in it cannot be created or read.
        """
        self.data_dir.mkdir(parents=True, exist_ok=True)
        try:
            self.dynamic.load()
            config = self.layers().effective()
        except ValueError as exc:  # BrokerConfigError too
            cause = exc.__cause__ or exc
            raise CorruptStateError(self.dynamic.path, f"{cause}") from exc
        self.config, self.topic_defaults = config, config.topic_defaults()
        self.client_metrics.load(self.dynamic.client_metrics)
        saved = read_topics(self.data_dir)
        if saved is None:
            return
        starts = read_start_offsets(self.data_dir)
        nodes = self.node_ids
        for info in saved.topics:
            try:
                info.topic_config = self.topic_config(info.configs)
            except TopicError as exc:
                raise CorruptStateError(
                    self.data_dir / TOPICS_FILE, f"topic {info.name}: {exc}"
                ) from exc
            info.leaders = [
                n if n in nodes else nodes[p % len(nodes)]
                for p, n in enumerate(info.leaders)
            ]
            # replicas on nodes this cluster no longer has are dropped
            info.replicas = [
                [n for n in replicas if n in nodes] for replicas in info.replicas
            ]
            self.topics[info.name] = info
            for p in range(info.partitions):
                self._open_log(info, p, starts.get((info.name, p), 0))
        self.cluster_id = saved.cluster_id or self.cluster_id
        self.next_producer_id = max(self.next_producer_id, saved.next_producer_id)
        log.info("recovered %d topics from %s", len(self.topics), self.data_dir)

    def save_topics(self) -> None:
        """Write ``kproto-topics.json`` (:func:`kproto.broker.topics_file.write_topics`)."""
        write_topics(
            self.data_dir, self.cluster_id, self.next_producer_id, self.topics.values()
        )

    def save_checkpoint(self) -> None:
        """Write the log start offsets in Kafka's checkpoint format."""
        write_start_offsets(
            self.data_dir,
            {tp: plog.log_start_offset for tp, plog in self.logs.items()},
        )

    def close(self) -> None:
        """Persist metadata and close every log file."""
        self.save_topics()
        self.save_checkpoint()
        for plog in self.logs.values():
            plog.close()
        self.files.close_all()


def _cluster_id() -> str:
    return kafka_uuid(uuid.uuid4())
