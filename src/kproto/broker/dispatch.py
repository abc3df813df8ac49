"""Dispatch of decoded requests to handlers: the table every broker API registers in.

A handler is ``async def handler(ctx: RequestContext, request) -> response | None``:
it receives the decoded request entity and returns the response entity of the
request's version (``kproto.index.response_type(api_key, ctx.api_version)``), or
``None`` when Kafka sends no response (Produce with ``acks=0``). The connection
layer (:mod:`kproto.broker.server`) encodes the response with
:func:`kproto.framing.encode_response` and writes responses in request order.

Handler modules register themselves at import with :func:`handles`;
:func:`load_handlers` imports all of them (the group coordinator's too).
"""

from __future__ import annotations

import importlib
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any

import attrs

from kproto.index import response_type
from kproto.meta import build_entity

if TYPE_CHECKING:
    from kproto.broker.state import ClusterState

__all__ = [
    "RequestContext",
    "Handler",
    "HANDLERS",
    "handles",
    "load_handlers",
    "build",
    "respond",
]


@attrs.define
class RequestContext:
    """What a handler knows about the request besides its body.

    Attributes:
        state: the shared state of the whole in-process cluster.
        node_id: the node (broker id) that received the request.
        header: the decoded ``RequestHeader`` entity (v0, v1 or v2).
        api_version: the request's api_version.
        client_id: the header's client_id (``None`` for header v0 or a null id).
        client_host: the peer's address, for DescribeGroups ``client_host``.
    """

    state: ClusterState
    node_id: int
    header: Any
    api_version: int
    client_id: str | None
    client_host: str


#: A request handler: request entity -> response entity (``None``: no response).
Handler = Callable[[RequestContext, Any], Awaitable[Any | None]]

#: api_key -> handler, filled by :func:`handles` as handler modules are imported.
HANDLERS: dict[int, Handler] = {}


def handles(*api_keys: int) -> Callable[[Handler], Handler]:
    """Decorator registering a handler for ``api_keys`` in :data:`HANDLERS`.

    Raises:
        ValueError: an api_key already has a handler (two modules claiming one API).
    """

    def register(handler: Handler) -> Handler:
        for api_key in api_keys:
            other = HANDLERS.get(api_key)
            if other is not None and other is not handler:
                raise ValueError(
                    f"api_key {api_key} already handled by {other.__module__}.{other.__qualname__}"
                )
            HANDLERS[api_key] = handler
        return handler

    return register


#: The modules whose import registers handlers (10a's, then the group coordinator's).
HANDLER_MODULES = (
    "kproto.broker.handlers.cluster_info",
    "kproto.broker.handlers.admin",
    "kproto.broker.handlers.configs",
    "kproto.broker.handlers.produce",
    "kproto.broker.handlers.fetch",
    "kproto.broker.handlers.unsupported",
    "kproto.broker.groups",
)


def load_handlers() -> dict[int, Handler]:
    """Import every handler module (idempotent) and return :data:`HANDLERS`."""
    for name in HANDLER_MODULES:
        importlib.import_module(name)
    return HANDLERS


def build(cls: type, fields: Mapping[str, Any]) -> Any:
    """Build an entity of ``cls`` from ``fields``, dropping the fields ``cls``'s
    version does not have, so one handler answers every version of its API
    (:func:`kproto.meta.build_entity` with ``drop_absent``)."""
    return build_entity(cls, fields, drop_absent=True)


def respond(ctx: RequestContext, **fields: Any) -> Any:
    """The response entity of the request's api_key and version, built from
    ``fields`` with :func:`build` (fields the version lacks are dropped)."""
    return build(response_type(ctx.header.request_api_key, ctx.api_version), fields)
