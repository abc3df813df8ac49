"""One broker node: an asyncio server on 127.0.0.1 and its connections.

Per connection one task reads frames (``readexactly`` on the int32 size prefix, then
on the body, both bounded by ``max_frame_bytes``), decodes each with
:func:`kproto.framing.decode_request`, dispatches it by api_key to
:data:`kproto.broker.dispatch.HANDLERS` and writes the response before reading the
next request, so responses go out in request order (Kafka mutes a connection while
one of its requests is in flight, with the same effect).

Bad input never stops the node or other connections (Kafka's ``SocketServer`` /
``RequestContext.parseRequest``):

* an ApiVersions request of a version kproto lacks is answered with
  UNSUPPORTED_VERSION and the ApiVersions v0 body listing what the broker serves;
* any other unknown api_key or version, a malformed or truncated body, bytes left
  over, a negative size or one over ``max_frame_bytes``: the error is logged and that
  connection closed;
* a client disconnecting mid-frame ends its task quietly.
* a connection silent (or stalled mid-frame) for ``connections_max_idle_ms`` is
  closed, as Kafka's ``connections.max.idle.ms``.
"""

from __future__ import annotations

import asyncio
import io
import logging
from typing import Any

from kproto.broker.dispatch import HANDLERS, RequestContext, build
from kproto.broker.introspect import RequestLog, RequestRecord
from kproto.broker.state import ClusterState, NodeInfo
from kproto.framing import (
    SIZE_PREFIX,
    RequestDecodeError,
    UnsupportedRequestError,
    decode_request,
    encode_response,
    peek_request_header,
)
from kproto.index import request_type
from kproto.serial import entity_reader

__all__ = ["NodeServer", "DEFAULT_MAX_FRAME_BYTES"]

log = logging.getLogger("kproto.broker")

#: Kafka's ``socket.request.max.bytes`` default: 100 MiB.
DEFAULT_MAX_FRAME_BYTES = 104857600


class NodeServer:
    """The listener of one node and the tasks of its connections."""

    def __init__(
        self,
        state: ClusterState,
        node_id: int,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES,
        connections_max_idle_ms: int = 600_000,
        request_log: RequestLog | None = None,
        log_requests: bool = False,
    ) -> None:
        self.state = state
        self.node_id = node_id
        self.host = host
        self.port = port
        self.max_frame_bytes = max_frame_bytes
        self.connections_max_idle_ms = connections_max_idle_ms
        self.request_log = request_log
        self.log_requests = log_requests
        self.server: asyncio.Server | None = None
        self.connections: set[asyncio.Task[None]] = set()

    async def start(self) -> NodeInfo:
        """Listen; return the node's address (the real port when ``port`` was 0)."""
        self.server = await asyncio.start_server(self._connected, self.host, self.port)
        self.port = self.server.sockets[0].getsockname()[1]
        info = NodeInfo(self.node_id, self.host, self.port)
        self.state.nodes[self.node_id] = info
        return info

    async def stop(self) -> None:
        """Stop listening, cancel every connection task and wait for them."""
        if self.server is not None:
            self.server.close()
        while self.connections:  # a connection accepted while stopping joins the set
            tasks = list(self.connections)
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            self.connections.difference_update(tasks)
        if self.server is not None:
            await self.server.wait_closed()
            self.server = None

    async def _connected(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        task = asyncio.current_task()
        assert task is not None
        self.connections.add(task)
        peer = writer.get_extra_info("peername")
        client_host = peer[0] if isinstance(peer, tuple) else str(peer)
        try:
            await self._serve(reader, writer, client_host)
        except (asyncio.IncompleteReadError, ConnectionError):
            pass  # the client went away, possibly mid-frame
        except asyncio.CancelledError:
            pass  # the node is stopping
        except Exception:
            log.exception(
                "node %d: connection from %s failed", self.node_id, client_host
            )
        finally:
            self.connections.discard(task)
            writer.close()
            try:
                await writer.wait_closed()
            except (ConnectionError, asyncio.CancelledError):
                pass

    async def _serve(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        client_host: str,
    ) -> None:
        idle_s = self.connections_max_idle_ms / 1000
        while True:
            try:
                # Kafka's connections.max.idle.ms: a connection that sends nothing
                # (or stalls mid-frame) that long is closed
                async with asyncio.timeout(idle_s):
                    head = await reader.readexactly(SIZE_PREFIX.size)
                    (size,) = SIZE_PREFIX.unpack(head)
                    if 8 <= size <= self.max_frame_bytes:
                        frame = await reader.readexactly(size)
            except TimeoutError:
                log.info(
                    "node %d: closing connection from %s: idle for %d ms",
                    self.node_id,
                    client_host,
                    self.connections_max_idle_ms,
                )
                return
            if size < 8 or size > self.max_frame_bytes:
                log.warning(
                    "node %d: closing connection from %s: request frame size %d outside 8..%d bytes",
                    self.node_id,
                    client_host,
                    size,
                    self.max_frame_bytes,
                )
                return
            try:
                header, request = decode_request(frame)
            except UnsupportedRequestError as err:
                if err.api_key == 18 and err.correlation_id is not None:
                    writer.write(unsupported_api_versions_frame(err.correlation_id))
                    await writer.drain()
                    continue
                log.warning(
                    "node %d: closing connection from %s: %s",
                    self.node_id,
                    client_host,
                    err,
                )
                return
            except RequestDecodeError as err:
                if err.cause is not None or err.api_key is None:
                    log.warning(
                        "node %d: closing connection from %s: %s",
                        self.node_id,
                        client_host,
                        err,
                    )
                    return
                # Only bytes left over: Kafka's RequestContext.parseRequest ignores
                # them (librdkafka 2.x sends Metadata v13 with 3 extra bytes).
                log.debug("node %d: %s", self.node_id, err)
                header, request = decode_ignoring_leftover(frame)
            if header.request_api_key not in HANDLERS:
                # an API kproto decodes but this broker does not serve (SASL, ACLs,
                # transactions, ...): Kafka closes the connection likewise
                log.warning(
                    "node %d: closing connection from %s: api_key %d v%d is not served",
                    self.node_id,
                    client_host,
                    header.request_api_key,
                    header.request_api_version,
                )
                return
            response = await self._handle(header, request, client_host)
            if response is not None:
                writer.write(encode_response(header, response))
                await writer.drain()

    async def _handle(self, header: Any, request: Any, client_host: str) -> Any:
        api_key = header.request_api_key
        client_id = getattr(header, "client_id", None)
        ctx = RequestContext(
            state=self.state,
            node_id=self.node_id,
            header=header,
            api_version=header.request_api_version,
            client_id=client_id,
            client_host=client_host,
        )
        handler = HANDLERS[api_key]
        time_ms = self.state.now_ms()
        response = await handler(ctx, request)
        if self.log_requests:
            log.info(
                "node %d: %s v%d from %s (correlation id %d)",
                self.node_id,
                type(request).__name__,
                ctx.api_version,
                client_id,
                header.correlation_id,
            )
        if self.request_log is not None:
            self.request_log.append(
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


def decode_ignoring_leftover(frame: bytes) -> tuple[Any, Any]:
    """``(header, request)`` of a frame that decodes but has bytes left over."""
    head = peek_request_header(frame)
    request_cls: Any = request_type(head.api_key, head.api_version)
    stream = io.BytesIO(frame)
    header = entity_reader(request_cls.__header_schema__)(stream)
    return header, entity_reader(request_cls)(stream)


def unsupported_api_versions_frame(correlation_id: int) -> bytes:
    """The response Kafka gives an ApiVersions request of a version it lacks:
    UNSUPPORTED_VERSION (35) with the v0 body listing the APIs served (KIP-511)."""
    from kproto.broker.handlers.cluster_info import served_api_ranges
    from kproto.schema.api_versions.v0 import ApiVersionsResponse
    from kproto.schema.response_header.v0 import ResponseHeader

    body = build(
        ApiVersionsResponse,
        {
            "error_code": 35,
            "api_keys": [
                {"api_key": k, "min_version": lo, "max_version": hi}
                for k, (lo, hi) in served_api_ranges().items()
            ],
        },
    )
    return encode_response(ResponseHeader(correlation_id=correlation_id), body)
