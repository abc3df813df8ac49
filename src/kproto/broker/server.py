"""One broker node: an asyncio server on 127.0.0.1 and its connections.

Per connection one task reads frames from a
:class:`kproto.broker.transport.FrameConnection` (the connection's protocol: frames
cut in one receive buffer, bounded by ``socket_request_max_bytes``, read ahead by
at most 128 KiB), decodes each with :func:`kproto.framing.decode_request_frame`,
hands it to the node's :class:`~kproto.broker.dispatch.Dispatcher` and writes the
response before taking the next request, so responses go out in request order
(Kafka mutes a connection while one of its requests is in flight, with the same
effect).

Bad input never stops the node or other connections (Kafka's ``SocketServer`` /
``RequestContext.parseRequest``):

* an ApiVersions request of a version kproto lacks is answered with
  UNSUPPORTED_VERSION and the ApiVersions v0 body listing what the broker serves;
* any other api_key or version outside what ApiVersions advertises (whether kproto
  can decode it or not: :meth:`~kproto.broker.dispatch.Dispatcher.route`), a
  malformed or truncated body, a size prefix below 4 or over
  ``socket_request_max_bytes``: the error is logged (one line, no traceback) and
  that connection closed, before any handler runs;
* a client disconnecting mid-frame ends its task quietly.
* a connection silent (or stalled mid-frame) for ``connections_max_idle_ms`` is
  closed, as Kafka's ``connections.max.idle.ms``.

Listener security (TLS, SASL, principals) is :mod:`kproto.broker.security`'s: the
TLS handshake runs first, then every decoded request passes
:meth:`~kproto.broker.security.ConnectionAuth.admit`.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Mapping

from kproto.broker.connection_limits import (
    WAITING_APIS,
    ClientTurns,
    ConnectionQuotas,
    Pass,
    RequestQueue,
    admit,
    admit_now,
    close_open_pass,
    off_turn,
)
from kproto.broker.dispatch import SERVED_APIS, Dispatcher, build
from kproto.broker.faults import InjectedDisconnect
from kproto.broker.quotas import ClientQuotas, user_of, with_throttle
from kproto.broker.security import Verdict, accept_tls
from kproto.broker.state import NodeInfo
from kproto.broker.transport import FrameConnection, warm_allocator
from kproto.errors import ErrorCode
from kproto.framing import (
    DEFAULT_MAX_FRAME_BYTES,
    SIZE_PREFIX,
    ConnectionClosedError,
    FrameError,
    RequestDecodeError,
    UnsupportedRequestError,
    decode_request_frame,
    encode_response,
    encode_response_parts,
)
from kproto.index import ApiKey

__all__ = ["NodeServer", "write_response"]

log = logging.getLogger("kproto.broker")


class NodeServer:
    """The listener of one node and the tasks of its connections.

    Args:
        dispatcher: what handles this node's requests (it holds the node id, the
            cluster's state and coordinators, and the listener's security: its
            protocol, users and TLS context).
        host, port: where to listen (port 0: any free port).
        socket_request_max_bytes: the largest request frame accepted (bytes; Kafka's
            ``socket.request.max.bytes``, default 104857600 = 100 MiB); a larger
            size prefix closes the connection before its body is read.
        connections_max_idle_ms: close a connection idle this long (ms).
        connection_quotas: ``max.connections`` / ``max.connections.per.ip``
            (default: unlimited); a connection over a limit is closed at accept.
        quotas: client quotas (default: none); a throttled response carries
            ``throttle_time_ms`` and its connection is muted that long (KIP-219).
            Request time runs from the frame's arrival to its encoded response
            (a Fetch's wait for data excluded).
        queued_max_requests: requests in flight across connections (Kafka's
            ``queued.max.requests``).
        fair_turns: handle one request at a time per client (address, principal,
            client id) across its connections, so that many connections earn a
            client no larger share. Fetch,
            JoinGroup and SyncGroup, which wait, hold no queue slot and no turn
            (:mod:`kproto.broker.connection_limits`).
    """

    def __init__(
        self,
        dispatcher: Dispatcher,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        socket_request_max_bytes: int = DEFAULT_MAX_FRAME_BYTES,
        connections_max_idle_ms: int = 600_000,
        connection_quotas: ConnectionQuotas | None = None,
        quotas: ClientQuotas | None = None,
        queued_max_requests: int = 500,
        fair_turns: bool = True,
    ) -> None:
        self.dispatcher = dispatcher
        self.state = dispatcher.state
        self.security = dispatcher.security
        self.node_id = dispatcher.node_id
        self.host = host
        self.port = port
        self.socket_request_max_bytes = socket_request_max_bytes
        #: the rack reported in Metadata (Kafka's ``broker.rack``; ``None``: none)
        self.rack: str | None = None
        self.connections_max_idle_ms = connections_max_idle_ms
        self.server: asyncio.Server | None = None
        self.connections: set[asyncio.Task[None]] = set()
        self.connection_quotas = connection_quotas or ConnectionQuotas()
        self.quotas = quotas
        self.request_queue = RequestQueue(queued_max_requests)
        self.client_turns = ClientTurns(fair_turns)

    async def start(self) -> NodeInfo:
        """Listen; return the node's address (the real port when ``port`` was 0)."""
        warm_allocator()
        loop = asyncio.get_running_loop()
        self.server = await loop.create_server(self._protocol, self.host, self.port)
        self.port = self.server.sockets[0].getsockname()[1]
        info = NodeInfo(self.node_id, self.host, self.port, self.rack)
        self.state.nodes[self.node_id] = info
        return info

    @property
    def running(self) -> bool:
        """Whether the node listens (between :meth:`start` and :meth:`stop`)."""
        return self.server is not None

    def drop_connections(self) -> int:
        """Close every connection of this node now (their tasks are cancelled; a
        request being handled is not answered); return how many."""
        tasks = list(self.connections)
        for task in tasks:
            task.cancel()
        return len(tasks)

    def halt(self) -> None:
        """Stop accepting and cancel every connection, at once (no request is
        answered after this returns); :meth:`stop` then waits for them."""
        if self.server is not None:
            self.server.close()
        self.drop_connections()

    async def stop(self) -> None:
        """Stop listening, cancel every connection task and wait for them."""
        if self.server is not None:
            self.server.close()
        while self.connections:  # a connection accepted while stopping joins the set
            tasks = list(self.connections)
            for task in tasks:
                task.cancel()
            # cancel again every second: a cancellation that a library call swallows
            # (a race in some asyncio versions) must not keep the node running
            done, _ = await asyncio.wait(tasks, timeout=1.0)
            self.connections.difference_update(done)
        if self.server is not None:
            await self.server.wait_closed()
            self.server = None

    def _protocol(self) -> FrameConnection:
        return FrameConnection(
            self._start_task,
            max_frame_bytes=self.socket_request_max_bytes,
            tls=self.security.uses_tls,
        )

    def _start_task(self, conn: FrameConnection) -> None:
        task = asyncio.get_running_loop().create_task(self._connected(conn))
        self.connections.add(task)  # before it runs: stop() cancels it too

    async def _connected(self, conn: FrameConnection) -> None:
        task = asyncio.current_task()
        assert task is not None
        peer = conn.get_extra_info("peername")
        client_host = peer[0] if isinstance(peer, tuple) else str(peer)
        refused = self.connection_quotas.admit(client_host)
        try:
            if refused is not None:
                log.warning("node %d: connection refused: %s", self.node_id, refused)
                return
            tls_principal = None
            if self.security.uses_tls:
                try:
                    tls_principal = await accept_tls(conn, self.security)
                except (OSError, TimeoutError) as err:
                    log.warning(
                        "node %d: TLS handshake from %s failed: %s",
                        self.node_id,
                        client_host,
                        err,
                    )
                    return
            await self._serve(conn, client_host, tls_principal)
        except (asyncio.IncompleteReadError, ConnectionError):
            pass  # the client went away, possibly mid-frame
        except asyncio.CancelledError:
            pass  # the node is stopping
        except Exception:
            log.exception(
                "node %d: connection from %s failed", self.node_id, client_host
            )
        finally:
            close_open_pass()  # a request that ended the connection
            if refused is None:
                self.connection_quotas.release(client_host)
            self.connections.discard(task)
            conn.close()
            try:
                await conn.wait_closed()
            except (OSError, asyncio.CancelledError):  # ssl.SSLError is an OSError
                pass

    def _log_close(
        self, client_host: str, reason: object, level: int = logging.WARNING
    ) -> None:
        """Log, as one line at ``level`` (no traceback: the client's doing), that
        this node closes the connection from ``client_host`` and why."""
        log.log(
            level,
            "node %d: closing connection from %s: %s",
            self.node_id,
            client_host,
            reason,
        )

    async def _serve(
        self,
        conn: FrameConnection,
        client_host: str,
        tls_principal: str | None = None,
    ) -> None:
        auth = self.security.connection(tls_principal)
        idle_s = self.connections_max_idle_ms / 1000
        while True:
            try:
                # Kafka's connections.max.idle.ms: a connection that sends nothing
                # (or stalls mid-frame) that long is closed
                frame = await conn.read_frame(idle_s)
            except TimeoutError:
                self._log_close(
                    client_host,
                    f"idle for {self.connections_max_idle_ms} ms",
                    logging.INFO,
                )
                return
            except ConnectionClosedError:
                return  # the client went away, possibly mid-frame
            except FrameError as err:  # a size prefix below 4 or too large
                self._log_close(client_host, err)
                return
            received = time.monotonic()  # request time (KIP-124) counts from here
            # a queue slot, then this client's turn (round robin across clients)
            held = admit_now(
                self.request_queue,
                self.client_turns,
                frame,
                client_host,
                auth.principal,
            ) or await admit(
                self.request_queue,
                self.client_turns,
                frame,
                client_host,
                auth.principal,
            )
            if auth.raw_tokens:  # unframed SASL tokens after SaslHandshake v0
                challenge = auth.raw_token(frame)
                if challenge is None:
                    self._log_close(client_host, auth.reason)
                    return
                await _answer(conn, held, SIZE_PREFIX.pack(len(challenge)) + challenge)
                continue
            try:
                # bytes left over after the body are ignored, as Kafka's broker
                # does (librdkafka 2.x sends Metadata v13 with 3 extra bytes)
                header, request, _ = decode_request_frame(frame)
            except UnsupportedRequestError as err:
                if (
                    err.api_key == ApiKey.API_VERSIONS
                    and err.correlation_id is not None
                ):
                    await _answer(
                        conn,
                        held,
                        unsupported_api_versions_frame(
                            err.correlation_id, self.dispatcher.api_versions.served
                        ),
                    )
                    continue
                self._log_close(client_host, err)
                return
            except RequestDecodeError as err:
                self._log_close(client_host, err)
                return
            handler = self.dispatcher.handler_for(
                header.request_api_key, header.request_api_version
            )
            if handler is None:
                if header.request_api_key == ApiKey.API_VERSIONS:
                    # newer than advertised (an emulated release): Kafka answers
                    # UNSUPPORTED_VERSION with its list (KIP-511)
                    await _answer(
                        conn,
                        held,
                        unsupported_api_versions_frame(
                            header.correlation_id, self.dispatcher.api_versions.served
                        ),
                    )
                    continue
                # an API or version this broker does not serve: Kafka's
                # SocketServer closes the connection likewise
                self._log_close(
                    client_host,
                    not_served(header.request_api_key, header.request_api_version),
                )
                return
            verdict = auth.admit(header.request_api_key)
            if verdict != Verdict.DISPATCH:
                response, close = (
                    auth.handle(header, request)
                    if verdict == Verdict.SASL
                    else (None, True)
                )
                if close:
                    self._log_close(client_host, auth.reason)
                held.close()
                if response is not None:
                    conn.write(encode_response(header, response))
                    await conn.drain()
                if close:
                    return
                continue
            api_key = header.request_api_key
            client_id = getattr(header, "client_id", None)
            waited = 0.0
            handling = self.dispatcher.handle(
                handler, header, request, client_host, principal=auth.principal
            )
            try:
                if api_key in WAITING_APIS:  # waits for data or a group: no turn held
                    started = time.monotonic()
                    response = await off_turn(handling)
                    waited = time.monotonic() - started  # purgatory: not request time
                else:
                    response = await handling
            except InjectedDisconnect:
                return
            parts = (
                None if response is None else encode_response_parts(header, response)
            )
            throttle_ms = 0
            if self.quotas is not None and self.quotas.enabled:
                throttle_ms = self.quotas.record(
                    user_of(auth.principal),
                    client_id,
                    api_key,
                    request_bytes=len(frame),
                    response_bytes=(
                        0 if parts is None else len(parts[0]) + len(parts[1])
                    ),
                    handler_ms=(time.monotonic() - received - waited) * 1000,
                )
                if throttle_ms and response is not None:
                    parts = encode_response_parts(
                        header, with_throttle(response, throttle_ms)
                    )
            held.close()
            if parts is not None:
                write_response(conn, parts)
                if conn.write_paused:
                    await conn.drain()
            if throttle_ms:
                # KIP-219: answered at once, then muted for the throttle time
                await asyncio.sleep(throttle_ms / 1000)


async def _answer(conn: FrameConnection, held: Pass, frame: bytes) -> None:
    """Answer a request the connection loop handles itself (a SASL token after
    SaslHandshake v0, ApiVersions' UNSUPPORTED_VERSION): write ``frame`` (size
    prefix included), give the request's turn and queue slot up, and wait until
    the socket takes it."""
    conn.write(frame)
    held.close()
    await conn.drain()


#: Below this many bytes a response body is copied behind its header and written
#: in one send; from it on the two are written apart, the body uncopied.
WRITE_APART_BYTES = 64 * 1024


def write_response(writer: FrameConnection, parts: tuple[bytes, bytes]) -> None:
    """Write a response frame given as :func:`kproto.framing.encode_response_parts`
    (size prefix + header, body): a small one in one ``write``, a large one as two,
    so its body (a FetchResponse's records) is handed to the transport as it is
    rather than copied into a frame (the transport sends it at once when the
    socket takes it, else keeps it until it does)."""
    head, body = parts
    if len(body) < WRITE_APART_BYTES:
        writer.write(head + body)
    else:
        writer.write(head)
        writer.write(body)


def not_served(api_key: int, api_version: int) -> str:
    """Why a request of ``api_key`` v``api_version`` is not served (the error
    path: the hot path only looks the version up)."""
    why = f"api_key {api_key} v{api_version} is not served"
    try:
        served = SERVED_APIS.get(ApiKey(api_key))
    except ValueError:
        return why
    if served is None:
        return f"{why} ({ApiKey(api_key).name})"
    return f"{why} ({ApiKey(api_key).name} v{served[0]}-v{served[1]} are)"


def unsupported_api_versions_frame(
    correlation_id: int, served: Mapping[ApiKey, tuple[int, int]] = SERVED_APIS
) -> bytes:
    """The response Kafka gives an ApiVersions request of a version it lacks:
    UNSUPPORTED_VERSION with the v0 body listing the APIs ``served`` (KIP-511)."""
    from kproto.schema.api_versions.v0 import ApiVersionsResponse
    from kproto.schema.response_header.v0 import ResponseHeader

    body = build(
        ApiVersionsResponse,
        {
            "error_code": ErrorCode.UNSUPPORTED_VERSION,
            "api_keys": [
                {"api_key": k, "min_version": lo, "max_version": hi}
                for k, (lo, hi) in served.items()
            ],
        },
    )
    return encode_response(ResponseHeader(correlation_id=correlation_id), body)
