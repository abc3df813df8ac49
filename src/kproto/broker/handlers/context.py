"""What every handler is given and how it answers: :class:`RequestContext`,
:data:`Handler`, :func:`respond`, :func:`respond_with`.

A handler is ``async def handler(ctx: RequestContext, request) -> response | None``:
it receives the decoded request entity and returns the response entity of the
request's version (``kproto.index.response_type(api_key, ctx.api_version)``), or
``None`` when Kafka sends no response (Produce with ``acks=0``).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import attrs

from kproto.broker.fetch_session import FetchSessionCache
from kproto.broker.groups import GroupCoordinator
from kproto.broker.replica_manager import ReplicaManager
from kproto.broker.security import ANONYMOUS, ListenerSecurity
from kproto.broker.share import ShareCoordinator
from kproto.broker.state import ClusterState
from kproto.broker.txn import TransactionCoordinator
from kproto.index import ApiKey, response_type
from kproto.meta import build_entity

__all__ = [
    "RequestContext",
    "Handler",
    "build",
    "client_host_string",
    "request_fields",
    "respond",
    "respond_with",
]


def client_host_string(address: str) -> str:
    """A peer address as Kafka reports a group member's host: Java's
    ``InetAddress.toString()`` of an unresolved address, ``/127.0.0.1``, IPv6 in
    Java's uncompressed form (``/0:0:0:0:0:0:0:1``). Anything not an IP address
    (a Unix socket path) gets the slash alone."""
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError:
        return "/" + address
    if ip.version == 4:
        return f"/{ip}"
    groups = ip.exploded.split(":")
    scope = address[len(address.split("%", 1)[0]) :]
    return "/" + ":".join(f"{int(g, 16):x}" for g in groups) + scope


@attrs.define
class RequestContext:
    """What a handler knows about the request besides its body.

    Attributes:
        state: the shared state of the whole in-process cluster.
        groups: the group coordinator of the cluster.
        txn: the transaction coordinator of the cluster.
        served_apis: ``{api_key: (min_version, max_version)}`` of every API the
            broker serves (what ApiVersions answers; Kafka's ``ApiVersionManager``).
        node_id: the node (broker id) that received the request.
        header: the decoded ``RequestHeader`` entity (v0, v1 or v2).
        api_version: the request's api_version.
        client_id: the header's client_id (``None`` for header v0 or a null id).
        client_host: the peer's address (``127.0.0.1``), as ACLs match hosts;
            :attr:`member_host` is how group APIs report it.
        principal: who the connection authenticated as (``User:alice``;
            ``User:ANONYMOUS`` without authentication).
        security: the listener's security settings and users.
        fetch_sessions: the node's fetch session cache (KIP-227; ``None``:
            every Fetch is sessionless).
        share: the share-group coordinator (KIP-932), if the cluster has one.
        replicas: the partitions this node leads (appends and reads,
            :class:`kproto.broker.replica_manager.ReplicaManager`).
    """

    state: ClusterState
    groups: GroupCoordinator
    txn: TransactionCoordinator
    served_apis: Mapping[ApiKey, tuple[int, int]]
    node_id: int
    header: Any
    api_version: int
    client_id: str | None
    client_host: str
    principal: str = ANONYMOUS
    security: ListenerSecurity = attrs.field(factory=ListenerSecurity)
    fetch_sessions: FetchSessionCache | None = None
    share: ShareCoordinator | None = None
    replicas: ReplicaManager = attrs.field(default=None)

    @property
    def member_host(self) -> str:
        """The ``client_host`` group describe APIs report for a member this
        connection joins (``/127.0.0.1``: :func:`client_host_string`)."""
        return client_host_string(self.client_host)


#: A request handler: request entity -> response entity (``None``: no response).
Handler = Callable[[RequestContext, Any], Awaitable[Any | None]]


def build(cls: type, fields: Mapping[str, Any]) -> Any:
    """Build an entity of ``cls`` from ``fields``, dropping the fields ``cls``'s
    version does not have, so one handler answers every version of its API
    (:func:`kproto.meta.build_entity` with ``drop_absent``)."""
    return build_entity(cls, fields, drop_absent=True)


def respond(ctx: RequestContext, **fields: Any) -> Any:
    """The response entity of the request's api_key and version, built from
    ``fields`` with :func:`build` (fields the version lacks are dropped)."""
    return build(response_type(ctx.header.request_api_key, ctx.api_version), fields)


def respond_with(ctx: RequestContext, result: Any, **fields: Any) -> Any:
    """The response built from the fields of ``result``, an attrs instance whose
    fields are named as the response's (a coordinator's ``*Result``, e.g.
    :class:`kproto.broker.groups.group.JoinResult`), and ``fields``, which add to
    or replace them; ``throttle_time_ms`` 0 unless given. As with :func:`respond`,
    names the response's version lacks are dropped."""
    values = {"throttle_time_ms": 0, **attrs.asdict(result, recurse=False), **fields}
    return respond(ctx, **values)


def request_fields(request: Any, cls: type) -> dict[str, Any]:
    """The fields of ``request`` (an entity) that the attrs class ``cls`` has too,
    by name: what a coordinator's request class (e.g.
    :class:`kproto.broker.groups.consumer_coordinator.HeartbeatRequest`) takes from
    the wire request; those the request's version lacks keep ``cls``'s defaults."""
    return {
        f.name: getattr(request, f.name)
        for f in attrs.fields(cls)
        if hasattr(request, f.name)
    }
