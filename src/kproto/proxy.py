"""An asyncio Kafka proxy building block: local listeners forwarding to a cluster.

:class:`Proxy` listens on local ports and forwards each client connection to one
upstream broker, frame by frame, over the sans-IO codec in :mod:`kproto.framing`.
It is a building block for tools that inspect, record, or change Kafka traffic
(a test harness, a fault injector, a gateway), not a hardened gateway itself.

Design:

- **One listener per upstream broker, created as brokers are discovered.** The
  bootstrap brokers get listeners at :meth:`Proxy.start`; every broker address
  a response names (Metadata ``brokers``, FindCoordinator ``host``/``port`` or
  ``coordinators``, DescribeCluster ``brokers``, and the KIP-951
  ``node_endpoints`` of Produce v10+ and Fetch v16+ responses) gets its own
  listener before the response is forwarded, and the response is rewritten to
  name the listener (``advertised_host`` and its port), so clients keep talking
  through the proxy. Node ids are kept. An upstream address maps to the same
  listener for the proxy's life.
- **Frames are forwarded byte-identically unless something changes them.** A
  frame is decoded only when a hook for its API is set, when its response may
  carry addresses (the five APIs above), or when ``decode_all`` is set; a decoded
  frame whose entity comes out equal (after rewriting and hooks) is forwarded as
  the bytes that arrived. A changed frame is re-encoded with its original header,
  followed by any bytes the upstream put after the body.
- **Hooks** are ``hook(header, entity) -> entity | None`` (plain or ``async``),
  keyed by api_key: a request hook sees the client's ``RequestHeader`` and the
  decoded request, a response hook the ``ResponseHeader`` and the response (after
  address rewriting). Returning ``None`` (or an equal entity) leaves the frame as
  it was; returning another entity of the same class (API and version) sends
  that instead. A hook that raises, or returns another class, closes that
  client's connection (logged as a warning on ``kproto.proxy``).
- **Errors stay with their connection.** A client frame with an impossible size
  prefix (or over ``max_frame_bytes``), a header shorter than 8 bytes, or a
  request the proxy decodes (hooked APIs, Produce to learn ``acks``, every API
  with ``decode_all``) that does not decode closes that client's connection (and
  its upstream one) only; so does an upstream response the proxy must decode
  and cannot. The listeners and other connections carry on. Requests kproto has
  no class for (an unknown api_key or version) are forwarded unchanged, as are
  their responses.
- Responses come back in request order, as Kafka guarantees per connection;
  each is paired with its request by correlation id. Produce requests with
  ``acks=0`` expect no response and are not tracked: an answer to one anyway
  (librdkafka's mock cluster sends them) is forwarded unchanged.
- **Security upstream:** with ``upstream_ssl_context`` the proxy reaches the
  brokers over TLS (host names verified as the context says); with
  ``upstream_sasl`` it authenticates each upstream connection itself (ApiVersions,
  SaslHandshake, SaslAuthenticate through :class:`kproto.aio.AsyncConnection`)
  before forwarding, so its clients connect without SASL and act as that
  principal. A broker session lifetime (KIP-368) is not renewed mid-connection:
  the broker closes the connection at expiry and the client reconnects.
- Not handled: TLS towards the proxy's own clients, and SASL's pre-KIP-152
  exchange (raw tokens after SaslHandshake v0, which are not request frames);
  without ``upstream_sasl``, a client's own SASL through SaslAuthenticate passes
  like any other API.

Example::

    import asyncio
    from kproto.proxy import Proxy

    async def main() -> None:
        async with Proxy("broker1:9092") as proxy:
            print(proxy.bootstrap_servers)   # "127.0.0.1:<port>": give to clients
            await asyncio.sleep(3600)

    asyncio.run(main())
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import logging
import ssl
import struct
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping
from typing import Any, Final, NamedTuple

import attrs

from kproto.aio import AsyncConnection
from kproto.client.metadata import parse_bootstrap
from kproto.frame_reader import READ_CHUNK_BYTES, FrameReader
from kproto.framing import (
    DEFAULT_MAX_FRAME_BYTES,
    SIZE_PREFIX,
    KafkaConnectionError,
    UnsupportedRequestError,
    decode_request,
    decode_response_frame,
    encode_frame,
    expects_response,
    peek_request_header,
)
from kproto.index import ApiKey, response_type
from kproto.meta import entity_info, wire_fields
from kproto.sasl import SaslAuthenticationError, SaslConfig

__all__ = ["ADDRESS_APIS", "FrameEvent", "Hook", "Proxy"]

log = logging.getLogger("kproto.proxy")

#: ``hook(header, entity) -> entity | None``, or an ``async`` function of that shape.
Hook = Callable[[Any, Any], Any]

#: The APIs whose responses name broker addresses, which the proxy rewrites.
ADDRESS_APIS: Final = frozenset(
    {
        ApiKey.PRODUCE,
        ApiKey.FETCH,
        ApiKey.METADATA,
        ApiKey.FIND_COORDINATOR,
        ApiKey.DESCRIBE_CLUSTER,
    }
)

_CORRELATION_ID: Final = struct.Struct(">i")


class FrameEvent(NamedTuple):
    """One forwarded frame, as reported to ``on_frame``.

    Attributes:
        direction: ``"request"`` (client to upstream) or ``"response"``.
        api_key, api_version, correlation_id: from the request header (``-1``
            for a response that answers no tracked request).
        received: the payload as it arrived (bytes after the size prefix).
        sent: the payload as forwarded; ``received`` itself when unchanged.
        client: the client's ``(host, port)``.
        upstream: the upstream broker's ``(host, port)``.
    """

    direction: str
    api_key: int
    api_version: int
    correlation_id: int
    received: bytes
    sent: bytes
    client: tuple[str, int]
    upstream: tuple[str, int]


@functools.cache
def _names_addresses(cls: type) -> bool:
    """Whether ``cls`` or a struct inside it has both ``host`` and ``port``."""
    names = {f.name for f, _ in wire_fields(cls)}
    if {"host", "port"} <= names:
        return True
    for _, w in wire_fields(cls):
        inner = w.entity if w.kind == "struct" else w.element and w.element.entity
        if inner is not None and _names_addresses(inner):
            return True
    return False


def _addresses(entity: Any) -> Iterator[tuple[str, int]]:
    """Every broker ``(host, port)`` named in ``entity`` (empty host or negative
    port, as in error answers, left out)."""
    if not attrs.has(type(entity)):
        return
    if hasattr(entity, "host") and hasattr(entity, "port"):
        if entity.host and entity.port >= 0:
            yield entity.host, entity.port
    for field in attrs.fields(type(entity)):
        value = getattr(entity, field.name)
        for item in value if isinstance(value, tuple) else (value,):
            if attrs.has(type(item)):
                yield from _addresses(item)


def _rewrite(entity: Any, mapping: Mapping[tuple[str, int], tuple[str, int]]) -> Any:
    """``entity`` with every address in ``mapping`` replaced; the same object when
    nothing changes."""
    changes: dict[str, Any] = {}
    if hasattr(entity, "host") and hasattr(entity, "port"):
        new = mapping.get((entity.host, entity.port))
        if new is not None:
            changes["host"], changes["port"] = new
    for field in attrs.fields(type(entity)):
        value = getattr(entity, field.name)
        if isinstance(value, tuple) and value and attrs.has(type(value[0])):
            items = tuple(_rewrite(v, mapping) for v in value)
            if any(a is not b for a, b in zip(items, value, strict=True)):
                changes[field.name] = items
        elif attrs.has(type(value)):
            item = _rewrite(value, mapping)
            if item is not value:
                changes[field.name] = item
    return attrs.evolve(entity, **changes) if changes else entity


async def _call(hook: Hook, header: Any, entity: Any) -> Any:
    result = hook(header, entity)
    if inspect.isawaitable(result):
        result = await result
    return entity if result is None else result


def _check_same_class(old: Any, new: Any) -> Any:
    """``new``, if it is of ``old``'s class (same API and version: the client
    decodes the answer at the version it asked for).

    Raises:
        TypeError: another class; the proxy closes that connection.
    """
    if type(new) is not type(old):
        raise TypeError(
            f"hook returned {type(new).__qualname__} v{entity_info(new).version} "
            f"for {type(old).__qualname__} v{entity_info(old).version}"
        )
    return new


class _Pending(NamedTuple):
    api_key: int
    api_version: int


@attrs.define
class _Link:
    """One proxied connection: its two ends and the requests it awaits answers to."""

    client: tuple[str, int]
    upstream: tuple[str, int]
    #: ``{correlation_id: the request}`` of requests forwarded and not yet answered
    pending: dict[int, _Pending] = attrs.Factory(dict)

    def event(
        self,
        direction: str,
        api_key: int,
        api_version: int,
        correlation_id: int,
        received: bytes,
        sent: bytes,
    ) -> FrameEvent:
        """The :class:`FrameEvent` of a frame forwarded on this link."""
        return FrameEvent(
            direction,
            api_key,
            api_version,
            correlation_id,
            received,
            sent,
            self.client,
            self.upstream,
        )


class Proxy:
    """Forward Kafka clients to an upstream cluster through local listeners; see
    the module docstring for the design.

    Args:
        bootstrap_servers: the upstream cluster: ``"host:port,host:port"`` or
            ``(host, port)`` pairs. Each gets a listener at :meth:`start`.
        listen_host: the local address listeners bind to (ports chosen by the OS).
        advertised_host: the host written into rewritten responses (default:
            ``listen_host``).
        request_hooks, response_hooks: ``{api_key: hook}``; see the module docstring.
        decode_all: decode every frame even without a hook (checks that every
            request decodes; a request that does not closes its connection).
        on_frame: called with a :class:`FrameEvent` for every forwarded frame.
        max_frame_bytes: the largest frame accepted from either side (bytes;
            default 100 MiB); a larger one closes the connection.
        connect_timeout_s: seconds to connect (and authenticate) upstream when a
            client connects.
        upstream_ssl_context: TLS towards the brokers
            (:func:`kproto.negotiation.client_ssl_context`).
        upstream_sasl: authenticate every upstream connection with this
            (:class:`kproto.sasl.SaslConfig`); see the module docstring.

    Attributes:
        listeners: ``{upstream (host, port): listening (host, port)}``.

    Raises:
        kproto.client.ClientError: ``bootstrap_servers`` is not ``host:port,...``
            (parsed as :class:`kproto.client.Client` parses it).
    """

    def __init__(
        self,
        bootstrap_servers: str | Iterable[tuple[str, int]],
        *,
        listen_host: str = "127.0.0.1",
        advertised_host: str | None = None,
        request_hooks: Mapping[int, Hook] | None = None,
        response_hooks: Mapping[int, Hook] | None = None,
        decode_all: bool = False,
        on_frame: Callable[[FrameEvent], None] | None = None,
        max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES,
        connect_timeout_s: float = 10.0,
        upstream_ssl_context: ssl.SSLContext | None = None,
        upstream_sasl: SaslConfig | None = None,
    ) -> None:
        self.upstream = (
            parse_bootstrap(bootstrap_servers)
            if isinstance(bootstrap_servers, str)
            else [(host, int(port)) for host, port in bootstrap_servers]
        )
        self.listen_host = listen_host
        self.advertised_host = advertised_host or listen_host
        self.request_hooks = dict(request_hooks or {})
        self.response_hooks = dict(response_hooks or {})
        self.decode_all = decode_all
        self.on_frame = on_frame
        self.max_frame_bytes = max_frame_bytes
        self.connect_timeout_s = connect_timeout_s
        self.upstream_ssl_context = upstream_ssl_context
        self.upstream_sasl = upstream_sasl
        self.listeners: dict[tuple[str, int], tuple[str, int]] = {}
        self._servers: list[asyncio.Server] = []
        self._tasks: set[asyncio.Task[None]] = set()
        self._lock = asyncio.Lock()

    @property
    def bootstrap_servers(self) -> str:
        """``"host:port,..."`` of the bootstrap brokers' listeners, for clients."""
        return ",".join(
            f"{self.advertised_host}:{self.listeners[a][1]}" for a in self.upstream
        )

    async def start(self) -> Proxy:
        """Open a listener for each bootstrap broker. Returns ``self``.

        Raises:
            OSError: a listener could not bind.
        """
        for address in self.upstream:
            await self._listener_for(address)
        return self

    async def close(self) -> None:
        """Stop listening and close every proxied connection. Idempotent."""
        servers, self._servers = self._servers, []
        for server in servers:
            server.close()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        for server in servers:
            await server.wait_closed()

    async def __aenter__(self) -> Proxy:
        return await self.start()

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    async def _listener_for(self, upstream: tuple[str, int]) -> tuple[str, int]:
        async with self._lock:
            listener = self.listeners.get(upstream)
            if listener is None:
                server = await asyncio.start_server(
                    functools.partial(self._accept, upstream), self.listen_host, 0
                )
                self._servers.append(server)
                port = server.sockets[0].getsockname()[1]
                listener = self.listeners[upstream] = (self.advertised_host, port)
                log.info(
                    "listening on %s:%d for %s:%d", self.listen_host, port, *upstream
                )
            return listener

    async def _accept(
        self,
        upstream: tuple[str, int],
        client_reader: asyncio.StreamReader,
        client_writer: asyncio.StreamWriter,
    ) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        try:
            await self._serve(upstream, client_reader, client_writer)
        except asyncio.CancelledError:
            pass  # close() stops this connection; nobody awaits this task's result
        finally:
            self._tasks.discard(task)

    async def _serve(
        self,
        upstream: tuple[str, int],
        client_reader: asyncio.StreamReader,
        client_writer: asyncio.StreamWriter,
    ) -> None:
        peer = client_writer.get_extra_info("peername")
        client = (str(peer[0]), int(peer[1])) if peer else ("?", 0)
        up_writer: asyncio.StreamWriter | None = None
        try:
            up_reader, up = await asyncio.wait_for(
                self._open_upstream(upstream), self.connect_timeout_s
            )
            up_writer = up
            link = _Link(client, upstream)
            pumps = [
                asyncio.ensure_future(
                    self._pump(client_reader, up_writer, self._on_request, link)
                ),
                asyncio.ensure_future(
                    self._pump(up_reader, client_writer, self._on_response, link)
                ),
            ]
            try:
                done, _ = await asyncio.wait(pumps, return_when=asyncio.FIRST_COMPLETED)
            finally:
                for pump in pumps:
                    pump.cancel()
            for pump in done:
                if not pump.cancelled() and pump.exception() is not None:
                    err = pump.exception()
                    log.warning("closing %s:%d -> %s:%d: %s", *client, *upstream, err)
        except (
            OSError,
            TimeoutError,
            KafkaConnectionError,
            SaslAuthenticationError,
        ) as err:
            log.warning("cannot connect %s:%d to %s:%d: %s", *client, *upstream, err)
        finally:
            for writer in (client_writer, up_writer):
                if writer is not None:
                    writer.close()

    async def _open_upstream(
        self, upstream: tuple[str, int]
    ) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        """The streams of a new upstream connection: TLS as
        ``upstream_ssl_context`` says, authenticated when ``upstream_sasl`` is set."""
        if self.upstream_sasl is None:
            ctx = self.upstream_ssl_context
            return await asyncio.open_connection(
                *upstream, ssl=ctx, server_hostname=upstream[0] if ctx else None
            )
        conn = AsyncConnection(
            *upstream,
            client_id="kproto-proxy",
            ssl_context=self.upstream_ssl_context,
            sasl=self.upstream_sasl,
            timeout_s=self.connect_timeout_s,
        )
        try:
            await conn.connect()
            await conn.negotiate()
            return conn.detach()
        except BaseException:
            await conn.close()
            raise

    async def _pump(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        handle: Callable[[bytes, _Link], Awaitable[FrameEvent]],
        link: _Link,
    ) -> None:
        frames = FrameReader(max_frame_bytes=self.max_frame_bytes)
        while data := await reader.read(READ_CHUNK_BYTES):
            frames.feed(data)
            for payload in frames:
                event = await handle(payload, link)
                writer.write(SIZE_PREFIX.pack(len(event.sent)) + event.sent)
                if self.on_frame is not None:
                    self.on_frame(event)
            await writer.drain()
        frames.eof()

    async def _on_request(self, payload: bytes, link: _Link) -> FrameEvent:
        head = peek_request_header(payload)
        api_key, api_version = head.api_key, head.api_version
        hook = self.request_hooks.get(api_key)
        sent, answered = payload, True
        if hook is not None or self.decode_all or api_key == ApiKey.PRODUCE:
            try:
                header, request = decode_request(payload)
            except UnsupportedRequestError:
                pass  # forwarded as it is; the broker answers UNSUPPORTED_VERSION
            else:
                if hook is not None:
                    new = await _call(hook, header, request)
                    if new != request:
                        _check_same_class(request, new)
                        sent = encode_frame(header, new)[4:]
                        request = new
                answered = expects_response(request)
        if answered:
            link.pending[head.correlation_id] = _Pending(api_key, api_version)
        return link.event(
            "request", api_key, api_version, head.correlation_id, payload, sent
        )

    async def _on_response(self, payload: bytes, link: _Link) -> FrameEvent:
        (correlation_id,) = _CORRELATION_ID.unpack_from(payload)
        request = link.pending.pop(correlation_id, None)
        sent = payload
        if request is not None:
            sent = await self._change_response(payload, request)
        api_key, api_version = request if request is not None else (-1, -1)
        return link.event(
            "response", api_key, api_version, correlation_id, payload, sent
        )

    async def _change_response(self, payload: bytes, request: _Pending) -> bytes:
        try:
            cls = response_type(request.api_key, request.api_version)
        except LookupError:
            return payload
        hook = self.response_hooks.get(request.api_key)
        rewrite = request.api_key in ADDRESS_APIS and _names_addresses(cls)
        if hook is None and not rewrite and not self.decode_all:
            return payload
        frame = decode_response_frame(cls, payload)
        response = frame.response
        if rewrite:
            mapping = {
                address: await self._listener_for(address)
                for address in set(_addresses(response))
            }
            response = _rewrite(response, mapping)
        if hook is not None:
            response = _check_same_class(
                frame.response, await _call(hook, frame.header, response)
            )
        if response == frame.response:
            return payload
        return encode_frame(frame.header, response)[4:] + frame.trailing
