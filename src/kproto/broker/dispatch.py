"""Dispatch of decoded requests to the handler of their api_key.

:class:`Dispatcher` is the layer between a node's connections
(:mod:`kproto.broker.server`, which cuts and decodes frames and encodes responses)
and the handlers (:data:`kproto.broker.handlers.HANDLERS`): it builds the
:class:`~kproto.broker.handlers.context.RequestContext` of each request, calls the
handler and records the exchange in the cluster's request log (Kafka's
``KafkaApis.handle`` with ``RequestChannel``'s request logging). Faults a test set
(:mod:`kproto.broker.faults`) apply here, in this order: request hooks, then the
queued error or disconnect (instead of the handler), then the node's latency.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any, Final

import attrs

from kproto.broker.connection_limits import off_turn
from kproto.broker.faults import FaultInjector
from kproto.broker.fetch_session import FetchSessionCache
from kproto.broker.groups import GroupCoordinator
from kproto.broker.handlers import HANDLERS
from kproto.broker.handlers.authorize import guarded
from kproto.broker.handlers.cluster_info import (
    MIN_VERSIONS,
    TV2_MAX_VERSIONS,
    served_api_ranges,
)
from kproto.broker.handlers.context import Handler, RequestContext, build, respond
from kproto.broker.handlers.refusals import unsupported_version
from kproto.broker.introspect import RequestLog, RequestRecord
from kproto.broker.replica_manager import ReplicaManager
from kproto.broker.security import ANONYMOUS, ListenerSecurity
from kproto.broker.share import ShareCoordinator
from kproto.broker.state import ClusterState
from kproto.broker.txn import TransactionCoordinator
from kproto.index import ApiKey, api_versions, request_type, response_type
from kproto.serial import entity_reader, entity_writer

__all__ = [
    "ApiVersionTable",
    "Dispatcher",
    "HANDLERS",
    "ROUTES",
    "TV2_ROUTES",
    "SERVED_APIS",
    "WARM_APIS",
    "CLIENT_VERSIONS",
    "Handler",
    "RequestContext",
    "build",
    "respond",
    "warm_codecs",
]

log = logging.getLogger("kproto.broker")

#: ``{api_key: (min_version, max_version)}`` of every API served (ApiVersions).
SERVED_APIS: Final[Mapping[ApiKey, tuple[int, int]]] = served_api_ranges(HANDLERS)


def _routes() -> dict[tuple[int, int], Handler]:
    routes: dict[tuple[int, int], Handler] = {}
    for api_key, (low, high) in SERVED_APIS.items():
        served = max(low, MIN_VERSIONS.get(api_key, low))
        for version in range(low, high + 1):
            routes[api_key, version] = (
                HANDLERS[api_key] if version >= served else unsupported_version
            )
    return routes


#: The handler of each ``(api_key, api_version)`` ApiVersions advertises
#: (:data:`SERVED_APIS`), built once: the API's handler for a version it serves,
#: :func:`~kproto.broker.handlers.refusals.unsupported_version` for one advertised
#: below that (Produce v0-v2). A request of any other version never reaches a
#: handler: its connection is closed, as Kafka's ``SocketServer`` closes one whose
#: api version its ``ApiVersionManager`` does not enable (ApiVersions excepted,
#: answered by the server with the v0 body, KIP-511).
ROUTES: Final[Mapping[tuple[int, int], Handler]] = _routes()

#: The versions served only while the cluster finalizes ``transaction.version`` 2
#: (EndTxn v5, KIP-890 part 2): routed by :meth:`Dispatcher.route` then, refused
#: (the connection closed) otherwise, as ApiVersions advertises them.
TV2_ROUTES: Final[Mapping[tuple[int, int], Handler]] = {
    (api_key, version): HANDLERS[api_key]
    for api_key, high in TV2_MAX_VERSIONS.items()
    for version in range(SERVED_APIS[api_key][1] + 1, high + 1)
}


class ApiVersionTable:
    """The API versions one cluster advertises and serves, which a test may narrow
    or remove at run time (librdkafka's ``rd_kafka_mock_set_apiversion``): what
    ApiVersions answers (:attr:`served`) and the handler of each version
    (:attr:`routes`) change together, so a version no longer advertised is refused
    as one never served (the connection is closed, as Kafka's ``SocketServer``
    does). Starts as :data:`SERVED_APIS` / :data:`ROUTES`; a lookup per request
    stays one dict ``get``.
    """

    def __init__(self) -> None:
        #: ``{api_key: (min_version, max_version)}`` advertised now.
        self.served: Mapping[ApiKey, tuple[int, int]] = SERVED_APIS
        #: The handler of each ``(api_key, api_version)`` served now.
        self.routes: Mapping[tuple[int, int], Handler] = ROUTES

    def set(self, api_key: ApiKey, min_version: int, max_version: int) -> None:
        """Advertise and serve ``api_key`` at ``min_version``..``max_version`` only
        (both -1: not at all, the API disappears from ApiVersions).

        Raises:
            ValueError: an API kproto does not serve, or a range outside the
                versions kproto generates for it or with min > max.
        """
        api_key = ApiKey(api_key)
        if api_key not in SERVED_APIS:
            raise ValueError(f"{api_key.name} is not served by kproto's broker")
        served = dict(self.served)
        if (min_version, max_version) == (-1, -1):
            served.pop(api_key, None)
        else:
            known = api_versions(api_key)
            if not known.start <= min_version <= max_version < known.stop:
                raise ValueError(
                    f"{api_key.name} versions {min_version}..{max_version} are not "
                    f"within v{known.start}-v{known.stop - 1} (or -1, -1 to remove it)"
                )
            served[api_key] = (min_version, max_version)
        self._install(served)

    def replace(self, ranges: Mapping[int, tuple[int, int]]) -> list[int]:
        """Advertise and serve exactly ``ranges`` (``{api_key: (min, max)}``, e.g.
        what one Kafka release's ApiVersions listed): an API kproto serves but
        ``ranges`` lacks is removed, each range is cut to the versions kproto
        serves (:data:`SERVED_APIS`: Fetch from v4, as Kafka 4.0). Returns the api
        keys of ``ranges`` kproto does not serve (left out: a broker-internal API,
        or one kproto lacks)."""
        served: dict[ApiKey, tuple[int, int]] = {}
        unserved = []
        for key, (low, high) in sorted(ranges.items()):
            try:
                api_key = ApiKey(key)
            except ValueError:
                unserved.append(key)
                continue
            if api_key not in SERVED_APIS:
                unserved.append(key)
                continue
            served_low, served_high = SERVED_APIS[api_key]
            low, high = max(low, served_low), min(high, served_high)
            if low <= high:
                served[api_key] = (low, high)
        self._install(served)
        return unserved

    def reset(self) -> None:
        """Back to every version kproto serves."""
        self.served = SERVED_APIS
        self.routes = ROUTES

    def _install(self, served: dict[ApiKey, tuple[int, int]]) -> None:
        routes: dict[tuple[int, int], Handler] = {}
        for api_key, (low, high) in served.items():
            for version in range(low, high + 1):
                handler = ROUTES.get((api_key, version))
                if handler is not None:
                    routes[api_key, version] = handler
        self.served = dict(sorted(served.items()))
        self.routes = routes


#: The APIs of a client's steady traffic, whose codecs :func:`warm_codecs` builds
#: for every served version.
WARM_APIS: Final = (ApiKey.PRODUCE, ApiKey.FETCH)

#: The other APIs of the bundled clients' produce, consume and group paths, and the
#: versions they send (librdkafka 2.x as observed against this broker; since the
#: broker offers KIP-714, librdkafka asks GetTelemetrySubscriptions on every
#: connection); the Java clients, kafka-python and aiokafka send the newest served,
#: also built.
CLIENT_VERSIONS: Final[Mapping[ApiKey, tuple[int, ...]]] = {
    ApiKey.API_VERSIONS: (3,),
    ApiKey.METADATA: (12,),
    ApiKey.LIST_OFFSETS: (7,),
    ApiKey.FIND_COORDINATOR: (2,),
    ApiKey.OFFSET_COMMIT: (9,),
    ApiKey.OFFSET_FETCH: (9,),
    ApiKey.JOIN_GROUP: (5,),
    ApiKey.SYNC_GROUP: (3,),
    ApiKey.HEARTBEAT: (3,),
    ApiKey.LEAVE_GROUP: (1,),
    ApiKey.INIT_PRODUCER_ID: (4,),
    ApiKey.GET_TELEMETRY_SUBSCRIPTIONS: (0,),
    ApiKey.PUSH_TELEMETRY: (0,),
}


def warm_codecs(
    api_keys: tuple[ApiKey, ...] = WARM_APIS,
    versions: Mapping[ApiKey, tuple[int, ...]] = CLIENT_VERSIONS,
) -> int:
    """Import the request and response classes and build their decoders and
    encoders now: every served version of ``api_keys``, and of each API in
    ``versions`` the versions listed and the newest served (versions not served
    are skipped); return how many (api_key, version) pairs were built.

    A schema module is imported and its codecs generated on the first request of
    its version (5-20 ms of CPU each; a client's first Fetch v16 spent more than
    reading 200k messages back); ``kproto broker`` calls this before it listens
    (about 0.4 s, once per process), as a broker loads its code at start."""
    pairs: list[tuple[ApiKey, int]] = []
    for api_key in api_keys:
        low, high = SERVED_APIS[api_key]
        pairs.extend((api_key, v) for v in range(low, high + 1))
    for api_key, listed in versions.items():
        served = SERVED_APIS.get(api_key)
        if served is None or api_key in api_keys:
            continue
        low, high = served
        pairs.extend((api_key, v) for v in sorted({*listed, high}) if low <= v <= high)
    for api_key, version in pairs:
        request: Any = request_type(api_key, version)
        response: Any = response_type(api_key, version)
        entity_reader(request.__header_schema__)
        entity_reader(request)
        entity_writer(response.__header_schema__)
        entity_writer(response)
    return len(pairs)


@attrs.define(eq=False, slots=False)
class Dispatcher:
    """Runs the requests one node receives through :data:`HANDLERS`.

    Args:
        state: the cluster's shared state.
        groups: the cluster's group coordinator.
        txn: the cluster's transaction coordinator.
        node_id: the node whose requests these are.
        request_log: where each request and its response are recorded (``None``: not).
        log_requests: log every request at INFO on the ``kproto.broker`` logger.
        faults: the cluster's injected faults (``None``: none).
        security: the listener's security settings (users, for the SCRAM
            credential APIs).
        share: the cluster's share-group coordinator (``None``: share groups refused).
        api_versions: the cluster's advertised versions (default: every version
            served, unchangeable).
    """

    state: ClusterState
    groups: GroupCoordinator
    node_id: int
    txn: TransactionCoordinator = attrs.field(kw_only=True)
    request_log: RequestLog | None = attrs.field(default=None, kw_only=True)
    log_requests: bool = attrs.field(default=False, kw_only=True)
    faults: FaultInjector | None = attrs.field(default=None, kw_only=True)
    security: ListenerSecurity = attrs.field(factory=ListenerSecurity, kw_only=True)
    share: ShareCoordinator | None = attrs.field(default=None, kw_only=True)
    api_versions: ApiVersionTable = attrs.field(factory=ApiVersionTable, kw_only=True)
    #: this node's incremental fetch sessions (KIP-227)
    fetch_sessions: FetchSessionCache = attrs.field(
        init=False, factory=FetchSessionCache
    )
    #: the partitions this node leads; a batch validated off the event loop
    #: gives up the request's turn meanwhile
    replicas: ReplicaManager = attrs.field(init=False)

    @replicas.default
    def _replicas(self) -> ReplicaManager:
        return ReplicaManager(
            self.state,
            self.node_id,
            verify_transaction=self.txn.in_transaction,
            wait=off_turn,
        )

    def handler_for(self, api_key: int, api_version: int) -> Handler | None:
        """The handler of a request by the versions this cluster serves now
        (:attr:`ApiVersionTable.routes`: one lookup, the whole cost of refusing
        versions on the hot path; on a miss, :data:`TV2_ROUTES` at transaction
        version 2); ``None``: the connection is to be closed."""
        handler = self.api_versions.routes.get((api_key, api_version))
        if handler is None and self.txn.transaction_version >= 2:
            return TV2_ROUTES.get((api_key, api_version))
        return handler

    async def _call(self, handler: Handler, ctx: RequestContext, request: Any) -> Any:
        """Run ``handler``, behind the ACL check when the listener has ACLs."""
        if self.security.acls is None:
            return await handler(ctx, request)
        return await guarded(ctx, handler, request)

    async def handle(
        self,
        handler: Handler,
        header: Any,
        request: Any,
        client_host: str,
        principal: str = ANONYMOUS,
    ) -> Any:
        """The response entity to ``request`` (``None``: Kafka sends none) by
        ``handler`` (its :meth:`route`), for a connection authenticated as
        ``principal``.

        Raises:
            InjectedDisconnect: a fault says to close the connection unanswered.
        """
        api_key = header.request_api_key
        client_id = getattr(header, "client_id", None)
        ctx = RequestContext(
            state=self.state,
            groups=self.groups,
            txn=self.txn,
            served_apis=self.api_versions.served,
            node_id=self.node_id,
            header=header,
            api_version=header.request_api_version,
            client_id=client_id,
            client_host=client_host,
            fetch_sessions=self.fetch_sessions,
            principal=principal,
            security=self.security,
            share=self.share,
            replicas=self.replicas,
        )
        request_log = self.request_log
        time_ms = 0 if request_log is None else self.state.now_ms()
        faults = self.faults
        if faults is None or faults.idle:
            response = await (
                handler(ctx, request)
                if self.security.acls is None
                else guarded(ctx, handler, request)
            )
        else:
            response = await faults.apply(
                ctx, request, lambda r: self._call(handler, ctx, r)
            )
        if self.log_requests:
            log.info(
                "node %d: %s v%d from %s (correlation id %d)",
                self.node_id,
                type(request).__name__,
                ctx.api_version,
                client_id,
                header.correlation_id,
            )
        if request_log is not None:
            if api_key == ApiKey.SASL_AUTHENTICATE:  # a PLAIN token holds a password
                request = attrs.evolve(request, auth_bytes=b"")
            request_log.append(
                RequestRecord(
                    self.node_id,
                    client_id,
                    api_key,
                    ctx.api_version,
                    header.correlation_id,
                    request,
                    response,
                    time_ms,
                )
            )
        return response
