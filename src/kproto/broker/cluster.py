"""``Cluster``: N broker nodes in one process, for tests and local development."""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import shutil
import ssl
import tempfile
import threading
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from kproto._closing import Closing
from kproto.broker.broker_config import (
    ARGUMENTS,
    BROKER_CONFIGS,
    BrokerConfig,
    BrokerConfigError,
    parse_api_versions,
)
from kproto.broker.cleaner_manager import CleanerStats, LogCleaner
from kproto.broker.client_metrics import PushedMetrics
from kproto.broker.cluster_controls import ClusterControls
from kproto.broker.connection_limits import ConnectionQuotas
from kproto.broker.dispatch import ApiVersionTable, Dispatcher
from kproto.broker.faults import FaultInjector
from kproto.broker.groups import GroupCoordinator
from kproto.broker.introspect import RequestLog
from kproto.broker.quotas import ClientQuotas, QuotaDefaults, QuotaEntity
from kproto.broker.reassignments import complete_reassignments
from kproto.broker.security import ListenerSecurity
from kproto.broker.server import NodeServer
from kproto.broker.share import ShareConfig, ShareCoordinator
from kproto.broker.state import ClusterState, TopicMetadata
from kproto.broker.txn import TransactionCoordinator
from kproto.kafka_releases import release_api_versions
from kproto.records import Record, decode_batches

if TYPE_CHECKING:
    from kproto.registry.server import RegistryServer

__all__ = ["Cluster"]

_INT_MAX = 2**31 - 1


def _unlimited(limit: int) -> int | None:
    """A connection limit, ``None`` for Kafka's "unlimited" (``Int.MaxValue``)."""
    return None if limit >= _INT_MAX else limit


log = logging.getLogger("kproto.broker")
T = TypeVar("T")


class Cluster(ClusterControls, Closing):
    """An in-process Kafka cluster: ``nodes`` brokers, each an asyncio server on
    127.0.0.1, sharing one data directory laid out as Kafka's
    (``<data_dir>/<topic>-<partition>/<base offset>.log``).

    Synchronous use runs the event loop in a background thread::

        with Cluster(nodes=3) as cluster:
            producer = confluent_kafka.Producer({"bootstrap.servers": cluster.bootstrap_servers})

    and asyncio use runs it on the caller's loop: ``async with Cluster() as cluster:``.

    Args:
        nodes: the number of broker nodes (node ids ``node.id`` .. ``node.id +
            nodes - 1``; ``node.id`` is 1 by default, as librdkafka's mock numbers
            them; Kafka's quickstart runs one node with id 0).
        data_dir: where logs live; kept after close. ``None``: a temporary
            directory removed on close.
        config: Kafka broker properties (``{"num.partitions": 4, "node.id": 0}``;
            values as strings or Python values): every property of
            :data:`kproto.broker.broker_config.BROKER_CONFIGS`, validated with
            Kafka's types and ranges into :attr:`config`. The keyword arguments
            below are the older spelling of some of them (each maps onto one
            property, :data:`~kproto.broker.broker_config.ARGUMENTS`; ``None``:
            not given); a setting given both ways is refused.
        auto_create_topics: Metadata requests (with ``allow_auto_topic_creation``)
            create unknown topics (Kafka's ``auto.create.topics.enable``); Produce
            to an unknown topic gets UNKNOWN_TOPIC_OR_PARTITION, as from Kafka.
        num_partitions: partitions of auto-created topics (``num.partitions``).
        port: the first node's port (0: any free port); node i gets ``port + i``.
        offsets_partitions: partitions of ``__consumer_offsets`` (default 5; Kafka's
            ``offsets.topic.num.partitions`` is 50).
        transaction_partitions: partitions of ``__transaction_state`` (default 5;
            Kafka's ``transaction.state.log.num.partitions`` is 50).
        transaction_abort_interval_ms: how often open transactions are checked
            against their ``transaction.timeout.ms`` (ms; default 1000, Kafka's
            ``transaction.abort.timed.out.transaction.cleanup.interval.ms`` is
            10000).
        transaction_version: finalize the ``transaction.version`` feature at this
            level when the cluster starts (None: leave what the data directory
            holds, 0 for a new one; the broker config ``transaction.version``).
            2 turns on transaction version 2 (KIP-890 part 2: implicit partition
            adds, an epoch bump per EndTxn v5); UpdateFeatures changes it later.
        segment_bytes: default segment size in bytes before a log rolls (16 MiB;
            Kafka's ``log.segment.bytes`` is 1 GiB); topic config ``segment.bytes``
            overrides it.
        socket_request_max_bytes: request frames above this many bytes close the
            connection (Kafka's ``socket.request.max.bytes``, default 104857600 =
            100 MiB).
        connections_max_idle_ms: close a connection that sends nothing, or stalls
            in the middle of a frame, for this long (ms; Kafka's
            ``connections.max.idle.ms``, 10 minutes).
        request_log_size: how many requests :attr:`requests` keeps (0: none).
            Each entry holds the decoded request and response entities, record
            bytes included, so memory grows with this bound.
        log_requests: log every request at INFO on the ``kproto.broker`` logger.
        security_protocol: the listeners' ``security.protocol``: ``PLAINTEXT``,
            ``SSL``, ``SASL_PLAINTEXT`` or ``SASL_SSL`` (see the README's Security
            section and :mod:`kproto.broker.security`).
        sasl_mechanisms: ``sasl.enabled.mechanisms`` of SASL listeners (default
            PLAIN, SCRAM-SHA-256, SCRAM-SHA-512; OAUTHBEARER takes unsecured JWS
            tokens, as Kafka's default validator).
        users: ``{user: password}``; SCRAM credentials are stored salted.
        super_users: users (or ``User:`` principals) Kafka's ``super.users`` names.
        acls_enabled: enforce ACLs (CreateAcls/DescribeAcls/DeleteAcls; see
            :mod:`kproto.broker.handlers.authorize`); super users pass every check.
        ssl_context: the listeners' server-side TLS context; ``None`` on SSL and
            SASL_SSL makes a CA and a certificate for 127.0.0.1/localhost (needs
            ``kproto[broker-tls]``), the CA written to ``<data_dir>/tls/ca.pem``.
        ssl_client_auth: Kafka's ``ssl.client.auth`` (``none``, ``requested``,
            ``required``) for the certificates made here; a client certificate's
            subject becomes the principal (``User:CN=...``).
        connections_max_reauth_ms: SASL session lifetime (ms; KIP-368,
            ``connections.max.reauth.ms``; 0: sessions never expire).
        max_partitions: partitions the cluster may hold in all (internal topics
            included); CreateTopics/CreatePartitions beyond it are answered
            POLICY_VIOLATION. One request may create at most 10,000 (Kafka's
            ``QuorumController.MAX_RECORDS_PER_USER_OP``).
        max_open_files: segment files kept open at once (a least-recently-used
            cache; idle partitions hold no file descriptor).
        consumer_session_timeout_ms: KIP-848 consumer group session timeout (ms;
            Kafka's ``group.consumer.session.timeout.ms``, 45 s).
        consumer_heartbeat_interval_ms: the ``heartbeat_interval_ms`` given to
            KIP-848 members (Kafka's ``group.consumer.heartbeat.interval.ms``, 5 s).
        consumer_assignors: KIP-848 server assignors, the first the default
            (Kafka's ``group.consumer.assignors``, ``uniform,range``).
        consumer_migration_policy: Kafka's ``group.consumer.migration.policy``:
            ``bidirectional`` (default, as Kafka 4), ``upgrade``, ``downgrade`` or
            ``disabled`` (mixed classic/consumer groups and their conversions).
        streams_session_timeout_ms, streams_heartbeat_interval_ms: the same for
            KIP-1071 streams groups (``group.streams.session.timeout.ms``, 45 s;
            ``group.streams.heartbeat.interval.ms``, 5 s).
        max_connections: connections each node keeps open at once (Kafka's
            ``max.connections``; ``None``: unlimited); more are closed at accept.
        max_connections_per_ip: the same per client address (Kafka's
            ``max.connections.per.ip``; ``None``: unlimited).
        queued_max_requests: requests in flight per node across its connections
            (Kafka's ``queued.max.requests``, 500).
        default_quotas: client quotas for clients no AlterClientQuotas entity
            covers (:class:`~kproto.broker.quotas.QuotaDefaults`; default none);
            :attr:`client_quotas` holds the entity quotas (see
            :mod:`kproto.broker.quotas`).
        log_cleaner_backoff_ms: pause between the log cleaner's passes over
            the compacted topics (ms; Kafka's ``log.cleaner.backoff.ms``, 15000).
        share_configs: share-group (KIP-932) settings by Kafka property name, e.g.
            ``{"group.share.record.lock.duration.ms": 500}``
            (:class:`kproto.broker.share.ShareConfig`).
        schema_registry: also serve Confluent Schema Registry's REST API on
            127.0.0.1 (:mod:`kproto.registry`; needs ``kproto[registry]``), its
            schemas stored in the ``_schemas`` topic; see
            :attr:`schema_registry_url` and :meth:`schema_registry_config`.
        schema_registry_port: the registry's port (0: any free port).

    Raises:
        ValueError: ``nodes`` < 1, a security argument out of place, or an
            unknown or invalid share-group setting.
        kproto.broker.broker_config.BrokerConfigError: (a ValueError) an unknown
            broker property, a value Kafka refuses, a setting given twice.
        RuntimeError: TLS certificates are needed and trustme is not installed.
    """

    def __init__(
        self,
        nodes: int = 1,
        data_dir: str | Path | None = None,
        auto_create_topics: bool | None = None,
        num_partitions: int | None = None,
        *,
        config: Mapping[str, object] | None = None,
        port: int = 0,
        offsets_partitions: int | None = None,
        transaction_partitions: int | None = None,
        transaction_abort_interval_ms: int | None = None,
        transaction_version: int | None = None,
        segment_bytes: int | None = None,
        socket_request_max_bytes: int | None = None,
        connections_max_idle_ms: int | None = None,
        request_log_size: int | None = None,
        log_requests: bool | None = None,
        security_protocol: str | None = None,
        sasl_mechanisms: list[str] | None = None,
        users: dict[str, str] | None = None,
        super_users: list[str] | None = None,
        acls_enabled: bool | None = None,
        ssl_context: ssl.SSLContext | None = None,
        ssl_client_auth: str | None = None,
        connections_max_reauth_ms: int | None = None,
        max_partitions: int | None = None,
        max_open_files: int | None = None,
        consumer_session_timeout_ms: int | None = None,
        consumer_heartbeat_interval_ms: int | None = None,
        consumer_assignors: tuple[str, ...] | None = None,
        consumer_migration_policy: str | None = None,
        streams_session_timeout_ms: int | None = None,
        streams_heartbeat_interval_ms: int | None = None,
        max_connections: int | None = None,
        max_connections_per_ip: int | None = None,
        queued_max_requests: int | None = None,
        default_quotas: QuotaDefaults | None = None,
        log_cleaner_backoff_ms: int | None = None,
        share_configs: Mapping[str, str | int] | None = None,
        schema_registry: bool = False,
        schema_registry_port: int = 0,
    ) -> None:
        if nodes < 1:
            raise ValueError(f"a cluster needs at least one node, got nodes={nodes}")
        if transaction_version is not None and transaction_version not in (0, 1, 2):
            raise ValueError(
                f"transaction_version must be 0, 1 or 2, got {transaction_version}"
            )
        self._transaction_version = transaction_version
        # the older keyword arguments, each mapped onto its property (ARGUMENTS)
        given = locals()
        arguments = {argument: given[argument] for argument in ARGUMENTS}
        # share_configs: checked by the share coordinator's own rules first; its
        # broker properties then join the configuration (share.auto.offset.reset,
        # a group config, stays the share coordinator's)
        shared = dict(share_configs or {})
        ShareConfig.from_properties(shared)
        properties = dict(config or {})
        for name in [n for n in shared if n in BROKER_CONFIGS]:
            if name in properties:
                raise BrokerConfigError(
                    name, shared[name], "set both in config and in share_configs="
                )
            properties[name] = shared.pop(name)
        cfg = BrokerConfig.from_arguments(properties, arguments)
        last_id = cfg.node_id + nodes - 1
        if last_id > 2**31 - 1:
            raise BrokerConfigError(
                "node.id",
                cfg.node_id,
                f"the last of {nodes} nodes would be {last_id}, above 2147483647",
            )
        if cfg.kproto_racks and len(cfg.kproto_racks) != nodes:
            raise BrokerConfigError(
                "kproto.racks",
                ",".join(cfg.kproto_racks),
                f"one rack per node: {nodes} nodes",
            )
        share_config = ShareConfig.from_properties({**cfg.share_properties, **shared})
        if cfg.log_dirs:
            if data_dir is not None:
                raise BrokerConfigError(
                    "log.dirs",
                    ",".join(cfg.log_dirs),
                    "set both in config and as data_dir=; give it once",
                )
            data_dir = cfg.log_dirs[0]
        # kproto.emulate.version, then kproto.api.versions, checked before
        # anything is created
        api_versions = ApiVersionTable()
        if cfg.kproto_emulate_version:
            release = release_api_versions(cfg.kproto_emulate_version)
            api_versions.replace({int(k): v for k, v in release.items()})
        for entry in cfg.kproto_api_versions:
            api_versions.set(*parse_api_versions(entry))
        self._temp = data_dir is None
        self.data_dir = (
            Path(tempfile.mkdtemp(prefix="kproto-broker-"))
            if data_dir is None
            else Path(data_dir)
        )
        explicit_mechanisms = "sasl.enabled.mechanisms" in cfg.explicit
        try:
            #: The listeners' security settings (protocol, users, TLS).
            self.security = ListenerSecurity.configure(
                protocol=cfg.security_inter_broker_protocol,
                mechanisms=cfg.sasl_enabled_mechanisms if explicit_mechanisms else None,
                users=users,
                super_users=cfg.super_user_list,
                acls_enabled=cfg.acls_enabled,
                ssl_context=ssl_context,
                ssl_client_auth=cfg.ssl_client_auth,
                connections_max_reauth_ms=cfg.connections_max_reauth_ms,
                data_dir=self.data_dir,
            )
        except BaseException:
            if self._temp:
                shutil.rmtree(self.data_dir, ignore_errors=True)
            raise
        request_log_size = cfg.kproto_request_log_size
        self.requests = RequestLog(request_log_size)
        self.state = ClusterState(
            self.data_dir,
            list(range(cfg.node_id, cfg.node_id + nodes)),
            config=cfg,
        )
        #: The group coordinator (consumer groups and committed offsets).
        self.groups = GroupCoordinator(
            self.state,
            offsets_partitions=cfg.offsets_topic_num_partitions,
            initial_rebalance_delay_ms=cfg.group_initial_rebalance_delay_ms,
            min_session_timeout_ms=cfg.group_min_session_timeout_ms,
            max_session_timeout_ms=cfg.group_max_session_timeout_ms,
            consumer_session_timeout_ms=cfg.group_consumer_session_timeout_ms,
            consumer_heartbeat_interval_ms=cfg.group_consumer_heartbeat_interval_ms,
            consumer_assignors=cfg.group_consumer_assignors,
            consumer_migration_policy=cfg.group_consumer_migration_policy.lower(),
            streams_session_timeout_ms=cfg.group_streams_session_timeout_ms,
            streams_heartbeat_interval_ms=cfg.group_streams_heartbeat_interval_ms,
        )
        #: The transaction coordinator (transactional ids, markers).
        self.txn = TransactionCoordinator(
            self.state,
            self.groups,
            partitions=cfg.transaction_state_log_num_partitions,
            abort_interval_ms=(
                cfg.transaction_abort_timed_out_transaction_cleanup_interval_ms
            ),
        )
        #: The faults injected (see :meth:`inject_errors` and the other fault methods).
        self.faults = FaultInjector()
        #: The API versions advertised and served (see :meth:`set_api_version`).
        self.api_versions = api_versions
        #: The log cleaner (compaction of ``cleanup.policy=compact`` topics).
        self.cleaner = LogCleaner(self.state, backoff_ms=cfg.log_cleaner_backoff_ms)
        #: The share-group coordinator (KIP-932).
        self.share = ShareCoordinator(self.state, share_config)

        def node_server(node_id: int, node_port: int) -> NodeServer:
            return NodeServer(
                Dispatcher(
                    self.state,
                    self.groups,
                    node_id,
                    txn=self.txn,
                    request_log=self.requests if request_log_size > 0 else None,
                    log_requests=cfg.kproto_log_requests,
                    faults=self.faults,
                    security=self.security,
                    share=self.share,
                    api_versions=self.api_versions,
                ),
                port=node_port,
                socket_request_max_bytes=cfg.socket_request_max_bytes,
                connections_max_idle_ms=cfg.connections_max_idle_ms,
                connection_quotas=ConnectionQuotas(
                    _unlimited(cfg.max_connections),
                    _unlimited(cfg.max_connections_per_ip),
                ),
                quotas=ClientQuotas(lambda: self.state.dynamic.quotas, default_quotas),
                queued_max_requests=cfg.queued_max_requests,
            )

        #: builds the server of a node added at run time (:meth:`add_node`)
        self._node_server = node_server
        self.servers = [
            node_server(node_id, port + i if port else 0)
            for i, node_id in enumerate(self.state.node_ids)
        ]
        for server, rack in zip(self.servers, cfg.kproto_racks, strict=False):
            server.rack = rack or None  # none given: no rack (empty list)
        #: The schema registry (``schema_registry=True``), else ``None``.
        self.schema_registry: RegistryServer | None = None
        if schema_registry:
            self.schema_registry = _registry_server(
                self.state, self.security, schema_registry_port
            )
            # broker-side schema validation reads the registry's state directly
            self.state.schema_ids = self.schema_registry.registry
        self.state.reconfigurables.append(self._reconfigure)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._started = False

    def _reconfigure(self, config: BrokerConfig) -> None:
        """Put the dynamically updatable settings the nodes hold in effect: each
        node's connection limits (its own per-broker configs over the cluster's)
        and the log cleaner's backoff."""
        self.cleaner.backoff_ms = config.log_cleaner_backoff_ms
        for server in self.servers:
            own = self.state.layers(server.node_id).effective()
            server.connection_quotas.max_connections = _unlimited(own.max_connections)
            server.connection_quotas.max_connections_per_ip = _unlimited(
                own.max_connections_per_ip
            )

    # --------------------------------------------------------------- lifecycle

    def _finalize_transaction_version(self, level: int) -> None:
        """Finalize ``transaction.version`` at ``level`` (as UpdateFeatures)."""
        store = self.state.dynamic
        if store.features.get("transaction.version", 0) != level:
            store.features["transaction.version"] = level
            store.features_epoch += 1
            store.save()

    async def start(self) -> None:
        """Recover the data directory, start every node and the group and transaction
        coordinators.

        On failure (a port in use, a data directory that does not load) what did
        start is stopped and nothing is saved: the data directory stays as it was.

        Raises:
            OSError: a node cannot listen, or the data directory cannot be read.
            kproto.broker.state.CorruptStateError: a state file does not parse.
        """
        self._loop = asyncio.get_running_loop()
        try:
            self.state.load()
            self._reconfigure(self.state.config)  # dynamic configs saved before
            if self._transaction_version is not None:
                self._finalize_transaction_version(self._transaction_version)
            if self.schema_registry is not None:  # its replay before any client
                await self.schema_registry.start()
            for server in self.servers:
                await server.start()
            if complete_reassignments(self.state):  # their replicas are back
                self.state.save_topics()
            await self.groups.start()
            await self.txn.start()
            self.cleaner.start()
            await self.share.start()
            self._seed_topics()
        except BaseException:
            if self.schema_registry is not None:
                await self.schema_registry.stop()
            await self.txn.stop()
            await self.cleaner.stop()
            for server in self.servers:
                await server.stop()
            for plog in self.state.logs.values():
                plog.close()
            if self._temp:
                shutil.rmtree(self.data_dir, ignore_errors=True)
            raise
        self._started = True
        log.info(
            "kproto broker cluster up: %s (data in %s)",
            self.bootstrap_servers,
            self.data_dir,
        )

    def _seed_topics(self) -> None:
        """Create the ``kproto.seed.topics`` that do not exist yet."""
        for entry in self.state.config.kproto_seed_topics:
            name, _, count = entry.partition(":")
            name = name.strip()
            if name not in self.state.topics:
                self.state.create_topic(name, int(count) if count else None)

    async def stop(self) -> None:
        """Stop the nodes (cancelling every connection task), persist metadata,
        close the logs; remove the data directory if it was temporary."""
        if not self._started:
            return
        self._started = False
        self.faults.end_holds("disconnect")  # nothing parked outlives the cluster
        if self.schema_registry is not None:
            await self.schema_registry.stop()
        await self.cleaner.stop()
        for server in self.servers:
            await server.stop()
        await self.txn.stop()
        await self.groups.stop()
        await self.share.stop()
        self.state.close()
        if self._temp:
            shutil.rmtree(self.data_dir, ignore_errors=True)

    async def __aenter__(self) -> Cluster:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    def __enter__(self) -> Cluster:
        loop = asyncio.new_event_loop()
        ready: concurrent.futures.Future[None] = concurrent.futures.Future()

        def run() -> None:
            asyncio.set_event_loop(loop)
            try:
                loop.run_until_complete(self.start())
            except BaseException as exc:  # e.g. the port is taken: start() undid itself
                loop.close()
                ready.set_exception(exc)
                return
            ready.set_result(None)
            loop.run_forever()
            # as asyncio.run: cancel what is left, then close
            left = asyncio.all_tasks(loop)
            for task in left:
                task.cancel()
            loop.run_until_complete(asyncio.gather(*left, return_exceptions=True))
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.close()

        self._thread = threading.Thread(target=run, name="kproto-broker", daemon=True)
        self._thread.start()
        try:
            ready.result()
        except BaseException:
            self._thread.join()
            self._thread = None
            raise
        return self

    def close(self) -> None:
        """Stop a cluster started with ``with`` (idempotent)."""
        if self._thread is None or self._loop is None:
            return
        asyncio.run_coroutine_threadsafe(self.stop(), self._loop).result()
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join()
        self._thread = None

    # --------------------------------------------------------------- looking in

    @property
    def config(self) -> BrokerConfig:
        """The broker configuration in effect (Kafka's property names as
        attributes, :class:`~kproto.broker.broker_config.BrokerConfig`): what the
        cluster was made with, under the dynamic configs AlterConfigs set on
        BROKER resources."""
        return self.state.config

    @property
    def client_quotas(self) -> dict[QuotaEntity, dict[str, float]]:
        """Client quotas by entity (``{(("user", "alice"),): {"producer_byte_rate":
        1e6}}``, sorted :data:`kproto.broker.quotas.QuotaEntity` keys): what
        AlterClientQuotas stores (``state.dynamic.quotas``), read on every lookup;
        change it on the cluster's loop or before start."""
        return self.state.dynamic.quotas

    def client_metrics(
        self,
        *,
        client_id: str | None = None,
        client_instance_id: uuid.UUID | None = None,
    ) -> list[PushedMetrics]:
        """The client metrics (KIP-714) clients pushed, oldest first: every accepted
        PushTelemetry payload, decompressed (:class:`PushedMetrics`; ``.metrics`` is
        the OpenTelemetry ``MetricsData``), optionally of one client id or client
        instance. Clients push only what a ``CLIENT_METRICS`` subscription asks for
        (set with IncrementalAlterConfigs, as ``kafka-client-metrics.sh`` does); the
        newest :data:`kproto.broker.client_metrics.MAX_PUSHES` are kept."""
        return self._on_loop(
            lambda: self.state.client_metrics.pushes(
                client_id=client_id, client_instance_id=client_instance_id
            )
        )

    @property
    def bootstrap_servers(self) -> str:
        """``"127.0.0.1:port,..."``: every node's listener."""
        return ",".join(f"{s.host}:{s.port}" for s in self.servers)

    @property
    def ca_file(self) -> Path | None:
        """The CA certificate (PEM) clients trust, when the cluster made its own
        TLS certificates; else ``None``."""
        return self.security.ca_file

    def client_config(
        self, user: str | None = None, *, mechanism: str | None = None
    ) -> dict[str, str]:
        """librdkafka-style client settings for this cluster, which confluent-kafka
        takes as they are: ``bootstrap.servers``, ``security.protocol``, and as
        the listeners need them ``sasl.mechanism`` (``mechanism``, default the
        first enabled), ``sasl.username``, ``sasl.password`` (``user``'s) and
        ``ssl.ca.location``. The password is in the dict: do not log it.

        Raises:
            ValueError: a SASL cluster without ``user``, or an unknown user or
                mechanism.
        """
        security = self.security
        config = {
            "bootstrap.servers": self.bootstrap_servers,
            "security.protocol": security.protocol,
        }
        if security.uses_sasl:
            if user is None:
                raise ValueError(f"a {security.protocol} cluster needs user=")
            password = security.credentials.password(user)
            if password is None:
                raise ValueError(f"unknown user {user!r}: not in Cluster(users=...)")
            mechanism = mechanism or security.mechanisms[0]
            if mechanism not in security.mechanisms:
                raise ValueError(
                    f"mechanism {mechanism!r} is not enabled "
                    f"({', '.join(security.mechanisms)})"
                )
            config["sasl.mechanism"] = mechanism
            config["sasl.username"] = user
            config["sasl.password"] = password.reveal()
        if security.ca_file is not None:
            config["ssl.ca.location"] = str(security.ca_file)
        return config

    @property
    def schema_registry_url(self) -> str:
        """``"http://127.0.0.1:PORT"`` (``https`` when the listeners use TLS) of
        the schema registry.

        Raises:
            RuntimeError: the cluster was made without ``schema_registry=True``.
        """
        if self.schema_registry is None:
            raise RuntimeError(
                "no schema registry: make the Cluster with schema_registry=True"
            )
        return self.schema_registry.url

    def schema_registry_config(self, user: str | None = None) -> dict[str, str]:
        """Settings for confluent-kafka's ``SchemaRegistryClient``: ``url``, and as
        the cluster needs them ``basic.auth.user.info`` (``user:password``, for
        SASL clusters) and ``ssl.ca.location`` (the cluster's own CA). The password
        is in the dict: do not log it.

        Raises:
            RuntimeError: no schema registry.
            ValueError: a SASL cluster without ``user``, or an unknown user.
        """
        config = {"url": self.schema_registry_url}
        security = self.security
        if security.uses_sasl:
            if user is None:
                raise ValueError(
                    f"a {security.protocol} cluster's registry needs user="
                )
            password = security.credentials.password(user)
            if password is None:
                raise ValueError(f"unknown user {user!r}: not in Cluster(users=...)")
            config["basic.auth.user.info"] = f"{user}:{password.reveal()}"
        if security.ca_file is not None:
            config["ssl.ca.location"] = str(security.ca_file)
        return config

    def client_certificate(self, common_name: str) -> tuple[Path, Path]:
        """``(certfile, keyfile)`` of a client certificate for mutual TLS, signed
        by the cluster's own CA (principal ``User:CN=<common_name>,OU=clients,O=kproto
        test client``).

        Raises:
            RuntimeError: the cluster did not make its own certificates.
        """
        if self.security.certificates is None:
            raise RuntimeError("the cluster made no certificates (ssl_context given?)")
        result: tuple[Path, Path] = self.security.certificates.client_certificate(
            common_name
        )
        return result

    def create_topic(
        self,
        name: str,
        partitions: int | None = None,
        configs: dict[str, str] | None = None,
        replication_factor: int = 1,
    ) -> TopicMetadata:
        """Create a topic without a client (test set-up); ``partitions`` defaults
        to the cluster's ``num_partitions``; ``replication_factor`` replicas per
        partition, placed as CreateTopics places them.

        Raises:
            kproto.broker.TopicError: as CreateTopics would answer.
        """
        return self._on_loop(
            lambda: self.state.create_topic(
                name,
                partitions,
                configs=configs,
                replication_factor=replication_factor,
            )
        )

    def alter_topic_configs(
        self, name: str, configs: Mapping[str, str | None]
    ) -> TopicMetadata:
        """Set (``None``: delete) configs of topic ``name`` without a client, as
        IncrementalAlterConfigs SET and DELETE would (validated the same way).

        Raises:
            kproto.broker.TopicError: UNKNOWN_TOPIC_OR_PARTITION, INVALID_CONFIG.
        """

        def alter() -> TopicMetadata:
            self.state.set_configs(name, dict(configs), replace=False)
            return self.state.topics[name]

        return self._on_loop(alter)

    def records(self, topic: str, partition: int = 0) -> list[Record]:
        """Every stored record of ``topic``/``partition`` from the log start offset
        on, decoded from the segment files.

        Raises:
            KeyError: no such partition.
        """

        def snapshot() -> tuple[list[bytes], int]:
            plog = self.state.partition_log(topic, partition)
            if plog is None:
                raise KeyError(f"no partition {topic}-{partition}")
            return [
                s.read(0, s.size) for s in plog.segments if s.size
            ], plog.log_start_offset

        segments, start = self._on_loop(snapshot)
        return [
            record
            for data in segments
            for batch in decode_batches(data)
            for record in batch.records
            if record.offset >= start
        ]

    def compact(self, topic: str | None = None, *, force: bool = False) -> CleanerStats:
        """Run one log-cleaner pass now over the compacted topics (``topic``
        only, if given), honouring their compaction configs (``force``: clean
        whatever ``min.cleanable.dirty.ratio`` says); wait for it to finish.
        Callable from any thread but the cluster's loop (there: :meth:`async_compact`).

        Raises:
            KeyError: ``topic`` does not exist.
        """
        return self._call(self.cleaner.clean_once(topic, force=force))

    async def async_compact(
        self, topic: str | None = None, *, force: bool = False
    ) -> CleanerStats:
        """:meth:`compact` on the cluster's own loop."""
        return await self.cleaner.clean_once(topic, force=force)


def _registry_server(
    state: ClusterState, security: ListenerSecurity, port: int
) -> RegistryServer:
    """The cluster's schema registry (imported here: aiohttp is an extra)."""
    try:
        from kproto.registry.server import RegistryServer
    except ImportError as exc:
        raise RuntimeError(
            f"schema_registry=True needs the registry extra (pip install "
            f"'kproto[registry]'): {exc}"
        ) from exc
    return RegistryServer(state, security, port=port)
