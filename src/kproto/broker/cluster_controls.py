"""The shaping and maintenance controls of :class:`kproto.broker.Cluster` (a
mixin beside :class:`~kproto.broker.cluster_faults.FaultControls`): racks per
node, followers pinned as read replicas and lagging (KIP-392), coordinators
pinned to a node, retention applied on demand, KIP-714
telemetry settings, and the request log with timestamps. Each method marshals its
change onto the cluster's event loop, so a test thread may call it.

Named after librdkafka's mock cluster (``rd_kafka_mock_broker_set_rack``,
``rd_kafka_mock_partition_set_follower``,
``rd_kafka_mock_partition_set_follower_wmarks``,
``rd_kafka_mock_coordinator_set``, ``rd_kafka_mock_telemetry_set_*``,
``rd_kafka_mock_get_requests``) and franz-go kfake (``ApplyRetention``).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Final, TypeVar

import attrs

from kproto.broker.cluster_faults import FaultControls
from kproto.broker.introspect import RequestLog, RequestRecord
from kproto.broker.leadership import move_off, set_leader
from kproto.broker.server import NodeServer
from kproto.broker.share import ShareCoordinator
from kproto.broker.topic_metadata import TopicMetadata
from kproto.broker.txn import TRANSACTION_STATE_TOPIC, TransactionCoordinator

__all__ = ["ClusterControls", "TELEMETRY_SUBSCRIPTION"]

T = TypeVar("T")

#: The name of the CLIENT_METRICS subscription the telemetry controls install.
TELEMETRY_SUBSCRIPTION: Final = "kproto-test-controls"


class ClusterControls(FaultControls):
    """What a test can shape on a running cluster: a base of
    :class:`kproto.broker.Cluster`, which sets the attributes declared here and in
    :class:`~kproto.broker.cluster_faults.FaultControls`."""

    txn: TransactionCoordinator
    share: ShareCoordinator
    #: builds a node's server: ``(node_id, port)``
    _node_server: Callable[[int, int], NodeServer]
    requests: RequestLog

    # ------------------------------------------------------------------ nodes

    def set_rack(self, node: int | None, rack: str | None) -> None:
        """Report ``rack`` for ``node`` (``None``: every node) in Metadata and
        DescribeCluster (librdkafka's ``rd_kafka_mock_broker_set_rack``; Kafka's
        ``broker.rack``); ``None`` clears it. Kept across :meth:`stop_node` /
        :meth:`start_node`.

        Raises:
            ValueError: an unknown node.
        """
        servers = self.servers if node is None else [self._server(node)]

        def apply() -> None:
            for server in servers:
                server.rack = rack
                info = self.state.nodes.get(server.node_id)
                if info is not None:
                    self.state.nodes[server.node_id] = attrs.evolve(info, rack=rack)

        self._on_loop(apply)

    def add_node(self, node_id: int | None = None, *, rack: str | None = None) -> int:
        """Start a new node (``node_id``, default one past the highest) on a free
        port of 127.0.0.1; Metadata lists it from now on and topics created later
        may have partitions on it (librdkafka's ``rd_kafka_mock_broker_add``; a
        Kafka broker joining the cluster). It leads nothing until partitions are
        moved to it (:meth:`move_leader`). Returns its node id. From a ``with``
        cluster (under ``async with``, see :meth:`async_add_node`).

        Raises:
            ValueError: ``node_id`` is taken or negative.
        """
        return self._call(self.async_add_node(node_id, rack=rack))

    async def async_add_node(
        self, node_id: int | None = None, *, rack: str | None = None
    ) -> int:
        """:meth:`add_node` on the cluster's own loop."""
        ids = self.state.node_ids
        new = max(ids) + 1 if node_id is None else node_id
        if new < 0 or new in ids:
            raise ValueError(f"node id {new} is taken or negative: nodes are {ids}")
        server = self._node_server(new, 0)
        server.rack = rack
        await server.start()
        ids.append(new)
        self.servers.append(server)
        return new

    def decommission_node(self, node: int) -> None:
        """Drain ``node`` as Kafka's controlled shutdown does (librdkafka's
        ``rd_kafka_mock_broker_decommission``): the partitions it leads move to the
        other nodes (leader epochs bumped) and Metadata stops listing it, while it
        keeps serving the connections it has (their requests for partitions it no
        longer leads get NOT_LEADER_OR_FOLLOWER). New topics avoid it. Bring it back
        with :meth:`start_node` after :meth:`stop_node`, or drop it with
        :meth:`remove_node`.

        Raises:
            ValueError: an unknown node, or the last listed one.
        """
        self._server(node)

        def drain() -> None:
            live = [
                s.node_id
                for s in self.servers
                if s.running and s.node_id != node and s.node_id in self.state.nodes
            ]
            if not live:
                raise ValueError(f"node {node} is the last listed node")
            self.state.nodes.pop(node, None)
            move_off(self.state, node, live)
            self.state.save_topics()

        self._on_loop(drain)

    def remove_node(self, node: int) -> None:
        """Stop ``node`` and remove it from the cluster for good (librdkafka's
        ``rd_kafka_mock_broker_remove``): as :meth:`stop_node` (its leaders move to
        the other nodes), and then its id is no longer a node of the cluster.

        Raises:
            ValueError: an unknown node, or the last one.
        """
        if len(self.servers) == 1:
            raise ValueError(f"node {node} is the cluster's last node")
        server = self._server(node)

        async def remove() -> None:
            await self.async_stop_node(node, move_leaders=True)
            self.servers.remove(server)
            self.state.node_ids.remove(node)

        self._call(remove())

    def shuffle_partition_leaders(self, seed: int | None = None) -> int:
        """Elect a leader for every partition at once, chosen at random among the
        listed nodes (``seed``: the same choice every run), each leader epoch
        bumped, as after a cluster-wide leader election (franz-go kfake's
        ``ShufflePartitionLeaders``); coordinators move with their internal
        topics' partitions. Returns how many partitions changed leader.
        """
        chooser = random.Random(seed)

        def shuffle() -> int:
            live = sorted(
                s.node_id
                for s in self.servers
                if s.running and s.node_id in self.state.nodes
            )
            moved = 0
            for name in sorted(self.state.topics):
                info = self.state.topics[name]
                for partition in range(info.partitions):
                    node = chooser.choice(live)
                    if info.leaders[partition] != node:
                        moved += 1
                    set_leader(self.state, name, partition, node)
            self.state.save_topics()
            return moved

        return self._on_loop(shuffle)

    # -------------------------------------------------------------- followers

    def partition_set_follower(
        self, topic: str, partition: int, node: int | None
    ) -> None:
        """Have the leader of ``topic``/``partition`` send every consumer's Fetch
        v11+ to ``node`` as its ``preferred_read_replica`` (KIP-392), whatever
        ``replica.selector.class`` and the consumer's ``client.rack``
        (librdkafka's ``rd_kafka_mock_partition_set_follower``); ``None`` gives
        the choice back to the selector. ``node`` serves those fetches as a
        follower (:mod:`kproto.broker.read_replicas`). An id that is no node of
        the cluster is answered all the same, to test a client given a replica
        it does not know. While ``node`` leads the partition it is not answered.
        A client that ignores ``preferred_read_replica`` (kproto's own client)
        then reads nothing from the leader; Fetch v10 and older (aiokafka) are
        never redirected.

        Raises:
            KeyError: no such partition.
            ValueError: ``node`` is a node of the cluster but no replica of the
                partition (it could not serve the fetch; Kafka's leader never
                names one).
        """

        def apply() -> None:
            info = self._partition_info(topic, partition)
            key = (info.topic_id, partition)
            pinned = self.state.read_replicas.pinned
            if node is None:
                pinned.pop(key, None)
                return
            replicas = info.replicas_of(partition)
            if node in self.state.node_ids and node not in replicas:
                raise ValueError(
                    f"node {node} is no replica of {topic}-{partition} "
                    f"(replicas: {replicas})"
                )
            pinned[key] = node

        self._on_loop(apply)

    def partition_set_follower_wmarks(
        self, topic: str, partition: int, lo: int, hi: int
    ) -> None:
        """Make the followers of ``topic``/``partition`` hold only the offsets
        from ``lo`` (their log start offset) to ``hi`` (their high watermark),
        each -1 for the leader's (librdkafka's
        ``rd_kafka_mock_partition_set_follower_wmarks``): a consumer reading from
        a follower sees that high watermark and fewer records, and
        OFFSET_OUT_OF_RANGE outside [lo, hi]; the rack-aware selector sends no
        consumer to a follower that lacks its fetch offset. Clamped to the
        leader's offsets (a follower never holds more); kept until set back to
        ``-1, -1``.

        Raises:
            KeyError: no such partition.
            ValueError: ``lo`` or ``hi`` below -1, or ``lo`` above ``hi``.
        """
        if lo < -1 or hi < -1 or (hi >= 0 and lo > hi):
            raise ValueError(
                f"follower watermarks must be -1 or 0 <= lo <= hi, got {lo}, {hi}"
            )

        def apply() -> None:
            info = self._partition_info(topic, partition)
            marks = self.state.read_replicas.watermarks
            if lo == hi == -1:
                marks.pop((info.topic_id, partition), None)
            else:
                marks[(info.topic_id, partition)] = (lo, hi)

        self._on_loop(apply)

    def _partition_info(self, topic: str, partition: int) -> TopicMetadata:
        info = self.state.topics.get(topic)
        if info is None or not 0 <= partition < info.partitions:
            raise KeyError(f"no partition {topic}-{partition}")
        return info

    # ----------------------------------------------------------- coordinators

    def coordinator_set(self, key_type: str, key: str, node: int) -> int:
        """Make ``node`` coordinate group or transactional id ``key``
        (librdkafka's ``rd_kafka_mock_coordinator_set``; ``key_type`` is
        ``"group"`` or ``"transaction"``) by moving the leadership of the key's
        ``__consumer_offsets`` or ``__transaction_state`` partition, as Kafka
        moves a coordinator (the other keys of that partition move with it; the
        old coordinator answers NOT_COORDINATOR; state and offsets stay). Returns
        the partition's new leader epoch.

        Raises:
            ValueError: an unknown ``key_type``, or an unknown or stopped node.
        """
        if key_type == "group":
            return self.move_coordinator(key, node)
        if key_type != "transaction":
            raise ValueError(f"key_type is 'group' or 'transaction', got {key_type!r}")

        def partition() -> int:
            self.txn.coordinator_for(key)  # creates __transaction_state
            return self.txn.partition_for(key)

        return self.move_leader(TRANSACTION_STATE_TOPIC, self._on_loop(partition), node)

    # ----------------------------------------------------------------- groups

    def set_group_initial_rebalance_delay_ms(self, ms: int) -> None:
        """How long a classic group's first rebalance waits for more members
        (ms; Kafka's ``group.initial.rebalance.delay.ms``, set at start with that
        property), from the next rebalance on.

        Raises:
            ValueError: ``ms`` < 0.
        """
        if ms < 0:
            raise ValueError(f"the initial rebalance delay must be >= 0 ms, got {ms}")

        def apply() -> None:
            self.groups.membership.initial_rebalance_delay_ms = ms

        self._on_loop(apply)

    def set_consumer_group_target_assignment(
        self,
        group_id: str,
        target: Mapping[str, Mapping[str, Iterable[int]]] | None,
    ) -> None:
        """Make ``target`` (``{member_id: {topic: partitions}}``; a member not
        named gets nothing) the target assignment of KIP-848 consumer group
        ``group_id`` instead of the server assignor's (librdkafka's
        ``rd_kafka_mock_cgrp_consumer_target_assignment``); ``None`` gives it back
        to the assignor. The next heartbeat of any member bumps the group epoch,
        and each member reconciles towards its target as Kafka's would
        (partitions another member still owns wait for their revocation)."""
        parsed = {
            member: {topic: [int(p) for p in parts] for topic, parts in topics.items()}
            for member, topics in (target or {}).items()
        }

        def apply() -> None:
            self.groups.consumer.set_target_assignment(
                group_id, None if target is None else parsed
            )

        self._on_loop(apply)

    def set_share_group_target_assignment(
        self,
        group_id: str,
        target: Mapping[str, Mapping[str, Iterable[int]]] | None,
    ) -> None:
        """Make ``target`` (``{member_id: {topic: partitions}}``; a member not
        named gets nothing) the target assignment of share group ``group_id``
        (KIP-932) instead of the simple assignor's: the group epoch is bumped now
        and each member gets its partitions at its next ShareGroupHeartbeat;
        ``None`` gives the group back to the assignor."""
        parsed = {
            member: {
                topic: sorted({int(p) for p in parts}) for topic, parts in t.items()
            }
            for member, t in (target or {}).items()
        }

        def apply() -> None:
            self.share.membership.set_target_assignment(
                group_id, None if target is None else parsed
            )

        self._on_loop(apply)

    # ------------------------------------------------------------ maintenance

    def apply_retention(self, topic: str | None = None) -> int:
        """Apply ``retention.ms`` and ``retention.bytes`` now to every partition of
        ``topic`` (``None``: of every topic with ``cleanup.policy`` delete), as
        Kafka's ``LogManager`` retention check does on its schedule (franz-go
        kfake's ``ApplyRetention``): whole segments past the limits are deleted and
        the log start offset rises (the active segment stays). Returns how many
        records' offsets fell below the log start offset.

        Raises:
            KeyError: ``topic`` does not exist.
        """

        def apply() -> int:
            if topic is not None and topic not in self.state.topics:
                raise KeyError(f"no topic {topic!r}")
            replicas = self.servers[0].dispatcher.replicas
            dropped = 0
            for (name, _), plog in list(self.state.logs.items()):
                if topic is not None and name != topic:
                    continue
                info = self.state.topics.get(name)
                if info is None:
                    continue
                before = plog.log_start_offset
                replicas.apply_retention(info, plog)
                dropped += plog.log_start_offset - before
            return dropped

        return self._on_loop(apply)

    # -------------------------------------------------------------- telemetry

    def telemetry_set_requested_metrics(self, metrics: Sequence[str] | None) -> None:
        """Ask every client for the metrics named by these prefixes (librdkafka's
        ``rd_kafka_mock_telemetry_set_requested_metrics``; ``[""]``: all metrics;
        ``None``: none, the subscription is removed) by installing a KIP-714
        ``CLIENT_METRICS`` subscription named :data:`TELEMETRY_SUBSCRIPTION`, as
        ``kafka-client-metrics.sh --alter --metrics`` does; clients see it at their
        next GetTelemetrySubscriptions. The push interval stays as set by
        :meth:`telemetry_set_push_interval` (Kafka's default 300000 ms).

        Raises:
            kproto.broker.TopicError: INVALID_CONFIG, as Kafka would answer.
        """
        self._set_telemetry(
            metrics=None if metrics is None else ",".join(m or "*" for m in metrics)
        )

    def telemetry_set_push_interval(self, push_interval_ms: int) -> None:
        """Have clients push their metrics every ``push_interval_ms`` (librdkafka's
        ``rd_kafka_mock_telemetry_set_push_interval``; the subscription's
        ``interval.ms``, 100..3600000).

        Raises:
            kproto.broker.TopicError: INVALID_CONFIG, an interval out of range.
        """
        self._set_telemetry(interval_ms=str(push_interval_ms))

    def _set_telemetry(self, **change: str | None) -> None:
        manager = self.state.client_metrics

        def apply() -> None:
            current = manager.subscriptions.get(TELEMETRY_SUBSCRIPTION)
            configs: dict[str, str] = {}
            if current is not None:
                configs["metrics"] = ",".join(sorted(current.metrics))
                configs["interval.ms"] = str(current.interval_ms)
            if "metrics" in change:
                metrics = change["metrics"]
                if metrics is None:
                    manager.set_subscription(TELEMETRY_SUBSCRIPTION, {})
                    return
                configs["metrics"] = metrics
            if "interval_ms" in change:
                configs["interval.ms"] = str(change["interval_ms"])
            configs.setdefault("metrics", "")
            manager.set_subscription(TELEMETRY_SUBSCRIPTION, configs)

        self._on_loop(apply)

    # ------------------------------------------------------------ request log

    def request_log(
        self, *, api_key: int | None = None, node_id: int | None = None
    ) -> list[RequestRecord]:
        """The requests answered, oldest first, each with its node, api key and
        version, client id, decoded request and response, and ``time_ms`` (when it
        was decoded, ms since the epoch); optionally of one API or node
        (librdkafka's ``rd_kafka_mock_get_requests``; :attr:`requests` is the log
        itself, bounded by ``kproto.request.log.size``)."""
        return self._on_loop(
            lambda: self.requests.filter(api_key=api_key, node_id=node_id)
        )

    def clear_request_log(self) -> None:
        """Forget the requests logged so far (``rd_kafka_mock_clear_requests``)."""
        self._on_loop(self.requests.clear)
