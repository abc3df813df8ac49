"""The fault-injection methods of :class:`kproto.broker.Cluster` (a mixin): errors,
latency, dropped connections, nodes stopped and started, leaders and coordinators
moved, request hooks. The machinery is :mod:`kproto.broker.faults` (applied by each
node's dispatcher) and :mod:`kproto.broker.leadership`; these methods marshal each
change onto the cluster's event loop, so a test thread may call them.

Modelled on librdkafka's mock cluster (``rdkafka_mock.h``) and franz-go kfake's
``ControlKey``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from kproto.broker.cluster_loop import ClusterLoop
from kproto.broker.dispatch import ApiVersionTable
from kproto.broker.faults import (
    PASS,
    FaultInjector,
    FaultSpec,
    HookHandle,
    RequestHook,
)
from kproto.broker.groups import GroupCoordinator
from kproto.broker.handlers.context import RequestContext
from kproto.broker.held_requests import Hold
from kproto.broker.leadership import lead_offline, leader_epoch, move_off, set_leader
from kproto.broker.reassignments import complete_reassignments
from kproto.broker.server import NodeServer
from kproto.broker.state import ClusterState
from kproto.errors import ErrorCode
from kproto.index import ApiKey
from kproto.kafka_releases import release_api_versions

__all__ = ["FaultControls"]

log = logging.getLogger("kproto.broker")
T = TypeVar("T")


class FaultControls(ClusterLoop):
    """What a test can break on a running cluster: a base of
    :class:`kproto.broker.Cluster` (through
    :class:`~kproto.broker.cluster_controls.ClusterControls`), which sets the
    attributes declared here."""

    servers: list[NodeServer]
    state: ClusterState
    groups: GroupCoordinator
    faults: FaultInjector
    api_versions: ApiVersionTable

    def _server(self, node: int) -> NodeServer:
        for server in self.servers:
            if server.node_id == node:
                return server
        raise ValueError(f"no node {node}: the nodes are {self.state.node_ids}")

    def leader(self, topic: str, partition: int = 0) -> int:
        """The node id leading ``topic``/``partition`` (-1: none, its node stopped).

        Raises:
            KeyError: no such partition.
        """

        def get() -> int:
            leader = self.state.leader(topic, partition)
            if leader is None:
                raise KeyError(f"no partition {topic}-{partition}")
            return leader

        return self._on_loop(get)

    def leader_epoch(self, topic: str, partition: int = 0) -> int:
        """The leader epoch of ``topic``/``partition`` (bumped by every move)."""
        return self._on_loop(lambda: leader_epoch(self.state, topic, partition))

    def inject_errors(
        self, api_key: ApiKey, errors: list[FaultSpec], node: int | None = None
    ) -> None:
        """Answer the next requests of ``api_key`` (on ``node``, or on any node)
        with ``errors``, one per request, in order (librdkafka's
        ``rd_kafka_mock_push_request_errors``; with a node,
        ``rd_kafka_mock_broker_push_request_error_rtts``). Each item is an
        :class:`~kproto.errors.ErrorCode` (the request is not executed; the error is
        in every ``error_code`` of the response), ``"disconnect"`` (the connection
        closes unanswered), ``"pass"`` (handled as usual), or ``(any of them,
        rtt_ms)`` to also delay it (ms).
        Requests beyond the queue are served normally; pushing again appends.

        Raises:
            ValueError: an unknown node, a malformed item, or an API whose error
                responses kproto cannot build (use :meth:`on_request`).
        """
        if node is not None:
            self._server(node)
        self._on_loop(lambda: self.faults.push_errors(api_key, errors, node))

    def partition_push_request_errors(
        self,
        topic: str,
        partition: int,
        errors: list[ErrorCode],
        *,
        api_key: ApiKey | None = None,
    ) -> None:
        """Answer ``topic``/``partition`` in each of the next requests naming it
        (of ``api_key`` only, or of any topic-keyed API: Produce, Fetch,
        ListOffsets, OffsetCommit, TxnOffsetCommit, DeleteRecords,
        OffsetForLeaderEpoch) with ``errors``, one per request, in order
        (librdkafka's ``rd_kafka_mock_partition_push_request_errors``). The
        request's other partitions are handled as usual, and the erring one is not
        (a Produce to it stores nothing). Pushing again appends.

        Raises:
            ValueError: an item that is not a Kafka error code, or an ``api_key``
                that names no partitions.
        """
        codes = [ErrorCode(e) for e in errors]
        self._on_loop(
            lambda: self.faults.partition_errors.push(topic, partition, codes, api_key)
        )

    def topic_set_error(self, topic: str, error: ErrorCode) -> None:
        """Answer ``topic`` with ``error`` until it is set to ``ErrorCode.NONE``
        (librdkafka's ``rd_kafka_mock_topic_set_error``): its Metadata entry's
        ``error_code``, and every partition of it in a topic-keyed request (as
        :meth:`partition_push_request_errors`, without using up).

        Raises:
            ValueError: not a Kafka error code.
        """
        code = ErrorCode(error)
        self._on_loop(lambda: self.faults.partition_errors.set_topic_error(topic, code))

    def broker_push_request_error_rtts(
        self, node: int, api_key: ApiKey, errors: list[tuple[ErrorCode, int]]
    ) -> None:
        """Answer the next requests of ``api_key`` on ``node`` with each
        ``(error, rtt_ms)`` in turn: the error (``ErrorCode.NONE``: handled as
        usual) after a delay of ``rtt_ms`` (librdkafka's
        ``rd_kafka_mock_broker_push_request_error_rtts``; :meth:`inject_errors`
        with a node and delays, which also takes ``"disconnect"``).

        Raises:
            ValueError: an unknown node or a malformed pair.
        """
        faults: list[FaultSpec] = [
            (PASS if code == ErrorCode.NONE else code, rtt) for code, rtt in errors
        ]
        self.inject_errors(api_key, faults, node=node)

    def set_latency(self, node: int, ms: int) -> None:
        """Delay every response of ``node`` by ``ms`` (0: none), as librdkafka's
        ``rd_kafka_mock_broker_set_rtt``. Only that node's connections wait.

        Raises:
            ValueError: an unknown node or ``ms`` < 0.
        """
        self._server(node)
        self._on_loop(lambda: self.faults.set_latency(node, ms))

    def on_request(self, api_key: ApiKey, fn: RequestHook) -> HookHandle:
        """Call ``fn(ctx, request)`` on every request of ``api_key``, on the
        cluster's loop thread, before the handler (franz-go kfake's ``ControlKey``).
        ``ctx`` is a :class:`~kproto.broker.handlers.RequestContext` (``node_id``,
        ``header``, ``api_version``, ``client_id``, ``state``); ``fn`` returns the
        response entity, a mapping of its fields (built for the request's version),
        ``"disconnect"``, or ``None`` to let the broker answer. It may be ``async``.
        Returns a handle for :meth:`remove_hook`."""
        return self._on_loop(lambda: self.faults.add_hook(api_key, fn))

    def remove_hook(self, handle: HookHandle) -> bool:
        """Remove a hook added by :meth:`on_request`; False if already removed."""
        return self._on_loop(lambda: self.faults.remove_hook(handle))

    def hold(
        self,
        api_key: ApiKey,
        *,
        node: int | None = None,
        count: int | None = None,
        timeout_ms: int = 10_000,
        match: Callable[[RequestContext, Any], bool] | None = None,
    ) -> Hold:
        """Park the next requests of ``api_key`` (on ``node``, or any node; only
        those ``match(ctx, request)`` accepts; at most ``count``, or every one
        until the hold stops) before they are handled, until the test calls
        :meth:`~kproto.broker.held_requests.Hold.release`,
        :meth:`~kproto.broker.held_requests.Hold.answer` or
        :meth:`~kproto.broker.held_requests.Hold.disconnect` (franz-go kfake's
        ``ControlKey`` + ``SleepControl``, to test orderings). A request parked
        ``timeout_ms`` is answered REQUEST_TIMED_OUT; other clients are not
        stalled; :meth:`clear_faults` releases, cluster shutdown drops, every parked
        request. Hooks (:meth:`on_request`) see a request before a hold; queued
        errors (:meth:`inject_errors`) apply when it is released. Use the hold
        as a context manager to release what it parked at the end::

            with cluster.hold(ApiKey.PRODUCE, count=1) as held:
                ...  # a producer sends
                eventually(lambda: held.requests(), 5)
                held.release()

        Raises:
            ValueError: an unknown node, ``count`` < 1 or ``timeout_ms`` <= 0.
        """
        if node is not None:
            self._server(node)
        hold = Hold(
            api_key,
            self._on_loop,
            node_id=node,
            count=count,
            timeout_ms=timeout_ms,
            match=match,
        )
        return self._on_loop(lambda: self.faults.add_hold(hold))

    def set_api_version(
        self, api_key: ApiKey, min_version: int, max_version: int
    ) -> None:
        """Advertise (in ApiVersions) and serve only versions ``min_version`` to
        ``max_version`` of ``api_key`` on every node, from the next request on
        (librdkafka's ``rd_kafka_mock_set_apiversion``); -1, -1 removes the API.
        A request of a version no longer served closes its connection, as Kafka
        does for a version it does not enable. Undo with :meth:`reset_api_versions`.

        Raises:
            ValueError: an API kproto does not serve, or versions outside what
                kproto generates for it.
        """
        self._on_loop(lambda: self.api_versions.set(api_key, min_version, max_version))

    def set_api_versions(self, ranges: Mapping[int, tuple[int, int]]) -> list[int]:
        """Advertise and serve exactly ``ranges`` (``{api_key: (min_version,
        max_version)}``) on every node, as franz-go kfake's ``MaxVersions`` with a
        release's table (:meth:`emulate_version` takes a release by name).
        APIs kproto serves that ``ranges`` lacks are removed; ranges are cut to
        the versions kproto generates. Returns the api keys of ``ranges`` kproto
        does not serve (not advertised). Undo with :meth:`reset_api_versions`."""
        table = {int(k): (int(lo), int(hi)) for k, (lo, hi) in ranges.items()}
        return self._on_loop(lambda: self.api_versions.replace(table))

    def emulate_version(
        self, release: str, *, client_telemetry: bool = False
    ) -> list[int]:
        """Advertise and serve the API versions Kafka ``release`` did (franz-go
        kfake's ``MaxVersions(kversion.V3_7_0())`` / ``--as-version``): ``"3.7"``
        is 3.7 as a KRaft broker, ``"3.7-zk"`` as a ZooKeeper-mode one (tables in
        :mod:`kproto.kafka_releases`). A request of a newer version closes its
        connection and an ApiVersions request of a newer version gets
        UNSUPPORTED_VERSION with the release's list, as that release answers.
        ``client_telemetry=True`` keeps GetTelemetrySubscriptions / PushTelemetry
        (3.7+, as a broker with a client-telemetry reporter). Ranges are cut to
        what kproto serves (Fetch from v4; Produce v0-v2 stay listed but refused,
        as Kafka 4.0 does) and the features in ApiVersions v3+ stay kproto's;
        returns the api keys of the release kproto does not serve
        (broker-internal ones, delegation tokens, ...), left out. The config
        ``kproto.emulate.version`` does the same at start. Undo with
        :meth:`reset_api_versions`.

        Raises:
            UnknownReleaseError: an unknown release (a ``LookupError``; the
                message lists the known ones).
        """
        table = release_api_versions(release, client_telemetry=client_telemetry)
        ranges = {int(k): versions for k, versions in table.items()}
        return self._on_loop(lambda: self.api_versions.replace(ranges))

    def api_version_range(self, api_key: ApiKey) -> tuple[int, int] | None:
        """The versions of ``api_key`` advertised now (``None``: not served)."""
        return self._on_loop(lambda: self.api_versions.served.get(ApiKey(api_key)))

    def reset_api_versions(self) -> None:
        """Advertise and serve every version kproto serves again."""
        self._on_loop(self.api_versions.reset)

    def clear_faults(self) -> None:
        """Drop queued errors, latencies and hooks, and release every held
        request (nodes and API versions stay as they are)."""

        self._on_loop(self.faults.clear)

    def drop_connections(self, node: int | None = None) -> int:
        """Close every client connection of ``node`` (or of every node) at once;
        requests in flight are not answered. Clients reconnect. Returns how many
        connections were closed.

        Raises:
            ValueError: an unknown node.
        """
        servers = self.servers if node is None else [self._server(node)]
        return self._on_loop(lambda: sum(s.drop_connections() for s in servers))

    def move_leader(self, topic: str, partition: int, node: int) -> int:
        """Make ``node`` lead ``topic``/``partition`` (librdkafka's
        ``rd_kafka_mock_partition_set_leader``); the leader epoch is bumped, so the
        old leader answers NOT_LEADER_OR_FOLLOWER and a stale epoch gets
        FENCED_LEADER_EPOCH. Moving ``__consumer_offsets`` partitions moves the group
        coordinators (``rd_kafka_mock_coordinator_set``). Returns the new epoch.

        Raises:
            KeyError: no such partition. ValueError: an unknown or stopped node.
        """
        server = self._server(node)

        def move() -> int:
            if not server.running:
                raise ValueError(f"node {node} is stopped: it cannot lead")
            epoch = set_leader(self.state, topic, partition, node)
            self.state.save_topics()
            return epoch

        return self._on_loop(move)

    def coordinator(self, group_id: str) -> int:
        """The node coordinating consumer group ``group_id`` (-1: none)."""

        def find() -> int:
            node = self.groups.coordinator_for(group_id)
            return -1 if node is None else node

        return self._on_loop(find)

    def transaction_coordinator(self, transactional_id: str) -> int:
        """The node coordinating ``transactional_id`` (-1: none): the leader of its
        ``__transaction_state`` partition.

        Raises:
            RuntimeError: this broker has no transaction coordinator.
        """
        txn = getattr(self, "txn", None)
        if txn is None:
            raise RuntimeError("this broker has no transaction coordinator")

        def find() -> int:
            node = txn.coordinator_for(transactional_id)
            return -1 if node is None or node < 0 else int(node)

        return self._on_loop(find)

    def move_coordinator(self, group_id: str, node: int) -> int:
        """Make ``node`` coordinate consumer group ``group_id`` by moving the
        leadership of its ``__consumer_offsets`` partition (librdkafka's
        ``rd_kafka_mock_coordinator_set``; the other groups of that partition move
        with it). The old coordinator answers NOT_COORDINATOR; the group's state and
        offsets stay. Returns the partition's new leader epoch.

        Raises:
            ValueError: an unknown or stopped node.
        """

        def partition() -> int:
            self.groups.coordinator_for(group_id)  # creates __consumer_offsets
            return self.groups.partition_for(group_id)

        return self.move_leader("__consumer_offsets", self._on_loop(partition), node)

    def stop_node(self, node: int, *, move_leaders: bool = True) -> None:
        """Take ``node`` down (librdkafka's ``rd_kafka_mock_broker_set_down``): it
        stops listening, its connections close, Metadata stops listing it, and the
        partitions it led move to the live nodes in turn with their leader epochs
        bumped (coordinators follow ``__consumer_offsets``). ``move_leaders=False``
        leaves them offline instead (leader -1, LEADER_NOT_AVAILABLE in Metadata),
        as a topic with one replica in Kafka, until :meth:`start_node`. Partitions
        with no live node to lead them go offline too. From a ``with`` cluster;
        under ``async with`` await :meth:`async_stop_node`.

        Raises:
            ValueError: an unknown node.
        """
        self._call(self.async_stop_node(node, move_leaders=move_leaders))

    async def async_stop_node(self, node: int, *, move_leaders: bool = True) -> None:
        """:meth:`stop_node` on the cluster's own loop."""
        server = self._server(node)
        # as one step on the loop: no request is served between the node going
        # silent and its leaders moving
        server.halt()
        self.state.nodes.pop(node, None)
        live = [s.node_id for s in self.servers if s.running and s.node_id != node]
        moved = move_off(self.state, node, live if move_leaders else [])
        self.state.save_topics()
        await server.stop()
        log.info("node %d stopped; %d partitions moved or offline", node, moved)

    def start_node(self, node: int) -> None:
        """Bring a stopped node back on its port (librdkafka's
        ``rd_kafka_mock_broker_set_up``); it leads every offline partition (epoch
        bumped) and the reassignments waiting for its replicas complete.
        Partitions moved away stay where they are (move them back with
        :meth:`move_leader`). Clients reconnect on their own.

        Raises:
            ValueError: an unknown node. OSError: its port is taken.
        """
        self._call(self.async_start_node(node))

    async def async_start_node(self, node: int) -> None:
        """:meth:`start_node` on the cluster's own loop."""
        server = self._server(node)
        if server.running:
            return
        await server.start()
        lead_offline(self.state, node)
        complete_reassignments(self.state)  # its replicas are in sync again
        self.state.save_topics()
        log.info("node %d started on port %d", node, server.port)
