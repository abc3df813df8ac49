"""A recording Kafka proxy built on kproto, for tests only.

One asyncio listener on 127.0.0.1 per upstream broker. Every request frame from a
client is decoded with :func:`kproto.framing.decode_request`, re-encoded, compared
with the original bytes, and the *re-encoded* bytes are forwarded. Every response is
matched to its request by correlation id, decoded with the response class of the
request's (api_key, api_version) (header through ``entity_reader(cls.__header_schema__)``),
re-encoded and forwarded the same way.

Documented exceptions to "forward the re-encoding":

- responses that carry broker addresses (any struct with ``host`` and ``port`` that
  name an upstream broker: Metadata, FindCoordinator, DescribeCluster, the
  ``node_endpoints`` of Produce/Fetch/ShareFetch/ShareAcknowledge...) are rewritten
  to the proxy's listeners, so clients keep talking through the proxy;
- a frame kproto cannot decode (:class:`kproto.serial.DecodeError`, as Kafka's
  own generated reader would reject it) is forwarded unchanged and recorded;
- bytes a peer appends after a response body (which Java's response parsing
  ignores) are recorded and forwarded after the re-encoded body.

The proxy runs its event loop in a daemon thread, so blocking clients
(confluent-kafka, kafka-python) and a separate asyncio loop (aiokafka) can use it.
"""

from __future__ import annotations

import asyncio
import collections
import io
import threading
from collections.abc import Callable
from typing import Any

import attrs

from kproto.framing import RequestDecodeError, decode_request
from kproto.index import response_type
from kproto.meta import is_entity
from kproto.serial import DecodeError, encode, entity_reader

__all__ = ["Recording", "RecordingProxy"]

#: Largest frame the proxy accepts (bytes); a bigger size prefix ends the connection.
MAX_FRAME_BYTES = 64 * 1024 * 1024


@attrs.define
class Recording:
    """What the proxy saw while one scenario ran.

    Attributes:
        requests / responses: frames decoded, per (api_key, api_version).
        rewritten: responses whose broker addresses were rewritten.
        non_canonical: (direction, api_key, api_version, note) for frames whose
            re-encoding differs from the peer's bytes.
        undecodable: (direction, api_key, api_version, error) for frames kproto
            rejects (forwarded unchanged).
        errors: exceptions that ended a proxied connection (a proxy bug).
    """

    requests: collections.Counter[tuple[int, int]] = attrs.field(
        factory=collections.Counter
    )
    responses: collections.Counter[tuple[int, int]] = attrs.field(
        factory=collections.Counter
    )
    rewritten: collections.Counter[tuple[int, int]] = attrs.field(
        factory=collections.Counter
    )
    non_canonical: list[tuple[str, int, int, str]] = attrs.field(factory=list)
    undecodable: list[tuple[str, int | None, int | None, str]] = attrs.field(
        factory=list
    )
    errors: list[str] = attrs.field(factory=list)

    @property
    def frames(self) -> int:
        """Frames decoded both ways."""
        return sum(self.requests.values()) + sum(self.responses.values())


def _first_difference(a: bytes, b: bytes) -> str:
    n = next(
        (i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y),
        min(len(a), len(b)),
    )
    return f"{len(a)} bytes in, {len(b)} out, first difference at byte {n}"


def rewrite_addresses(entity: Any, ports: dict[int, int], host: str) -> Any:
    """``entity`` with every struct whose ``port`` is a key of ``ports`` pointing at
    ``host`` and the mapped port; the same object when nothing changes."""
    changes: dict[str, Any] = {}
    for a in attrs.fields(type(entity)):
        value = getattr(entity, a.name)
        if is_entity(value):
            new = rewrite_addresses(value, ports, host)
        elif type(value) is tuple and value and is_entity(value[0]):
            items = tuple(rewrite_addresses(v, ports, host) for v in value)
            new = (
                value
                if all(x is y for x, y in zip(items, value, strict=True))
                else items
            )
        else:
            continue
        if new is not value:
            changes[a.name] = new
    port = getattr(entity, "port", None)
    if isinstance(port, int) and port in ports and hasattr(entity, "host"):
        changes["host"], changes["port"] = host, ports[port]
    return attrs.evolve(entity, **changes) if changes else entity


async def _read_frame(reader: asyncio.StreamReader) -> bytes | None:
    try:
        head = await reader.readexactly(4)
    except (asyncio.IncompleteReadError, ConnectionError):
        return None
    size = int.from_bytes(head, "big", signed=True)
    if not 0 <= size <= MAX_FRAME_BYTES:
        raise ValueError(f"frame size {size} outside 0..{MAX_FRAME_BYTES}")
    try:
        return await reader.readexactly(size)
    except (asyncio.IncompleteReadError, ConnectionError):
        return None


class RecordingProxy:
    """Loopback proxy in front of ``brokers`` (``{node_id: (host, port)}``).

    Use as a context manager; :attr:`bootstrap` is the clients' bootstrap list and
    :meth:`take` returns the :class:`Recording` so far and starts a new one.
    """

    def __init__(self, brokers: dict[int, tuple[str, int]], *, timeout_s: float = 10.0):
        self.brokers = dict(brokers)
        self.timeout_s = timeout_s
        self.host = "127.0.0.1"
        self.listeners: dict[int, int] = {}  # node_id -> proxy port
        self.recording = Recording()
        self._ports: dict[int, int] = {}  # broker port -> proxy port
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._servers: list[asyncio.AbstractServer] = []
        self._tasks: set[asyncio.Task[None]] = set()
        #: Request frames that did not decode, as received (for diagnosis).
        self.raw_requests: list[bytes] = []

    @property
    def bootstrap(self) -> str:
        return ",".join(f"{self.host}:{p}" for p in self.listeners.values())

    @property
    def upstream_bootstrap(self) -> str:
        """The brokers' own addresses (to compare results without the proxy)."""
        return ",".join(f"{h}:{p}" for h, p in self.brokers.values())

    def take(self) -> Recording:
        """The recording so far; a fresh one starts."""
        done, self.recording = self.recording, Recording()
        return done

    def __enter__(self) -> RecordingProxy:
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._start(), self._loop).result(
            self.timeout_s
        )
        return self

    def __exit__(self, *exc: object) -> None:
        asyncio.run_coroutine_threadsafe(self._stop(), self._loop).result(
            self.timeout_s
        )
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(self.timeout_s)
        self._loop.close()

    async def _start(self) -> None:
        for node_id, (_, port) in self.brokers.items():

            async def handle(
                r: asyncio.StreamReader, w: asyncio.StreamWriter, node: int = node_id
            ) -> None:
                task = asyncio.current_task()
                assert task is not None
                self._tasks.add(task)
                try:
                    await self._serve(node, r, w)
                except asyncio.CancelledError:
                    w.close()
                finally:
                    self._tasks.discard(task)

            server = await asyncio.start_server(handle, self.host, 0)
            self._servers.append(server)
            proxy_port = server.sockets[0].getsockname()[1]
            self.listeners[node_id] = proxy_port
            self._ports[port] = proxy_port

    async def _stop(self) -> None:
        for server in self._servers:
            server.close()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    async def _serve(
        self, node_id: int, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        host, port = self.brokers[node_id]
        try:
            up_reader, up_writer = await asyncio.wait_for(
                asyncio.open_connection(host, port), self.timeout_s
            )
        except (OSError, TimeoutError):
            writer.close()
            return
        pending: dict[int, tuple[int, int]] = {}
        pumps = {
            asyncio.create_task(
                self._pump(reader, up_writer, lambda f: self._request(f, pending))
            ),
            asyncio.create_task(
                self._pump(up_reader, writer, lambda f: self._response(f, pending))
            ),
        }
        try:
            done, _ = await asyncio.wait(pumps, return_when=asyncio.FIRST_COMPLETED)
            for task in done:
                err = None if task.cancelled() else task.exception()
                if err is not None and not isinstance(err, ConnectionError):
                    self.recording.errors.append(f"{type(err).__name__}: {err}")
        finally:
            for p in pumps:
                p.cancel()
            await asyncio.gather(*pumps, return_exceptions=True)
            for w in (writer, up_writer):
                w.close()

    @staticmethod
    async def _pump(
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        recode: Callable[[bytes], bytes],
    ) -> None:
        """Forward each frame of ``reader`` to ``writer`` as ``recode`` returns it."""
        while (frame := await _read_frame(reader)) is not None:
            out = recode(frame)
            writer.write(len(out).to_bytes(4, "big") + out)
            await writer.drain()

    def _request(self, frame: bytes, pending: dict[int, tuple[int, int]]) -> bytes:
        rec = self.recording
        try:
            header, request = decode_request(frame)
        except RequestDecodeError as err:
            rec.undecodable.append(("request", err.api_key, err.api_version, str(err)))
            if err.correlation_id is not None and err.api_key is not None:
                assert err.api_version is not None
                pending[err.correlation_id] = (err.api_key, err.api_version)
                self.raw_requests.append(frame)
            return frame
        key, version = header.request_api_key, header.request_api_version
        pending[header.correlation_id] = (key, version)
        out = encode(header) + encode(request)
        rec.requests[(key, version)] += 1
        if out != frame:
            rec.non_canonical.append(
                ("request", key, version, _first_difference(frame, out))
            )
        return out

    def _response(self, frame: bytes, pending: dict[int, tuple[int, int]]) -> bytes:
        rec = self.recording
        correlation_id = int.from_bytes(frame[:4], "big", signed=True)
        if correlation_id not in pending:
            rec.undecodable.append(
                ("response", None, None, f"unknown correlation id {correlation_id}")
            )
            return frame
        key, version = pending.pop(correlation_id)
        cls: Any = response_type(key, version)
        stream = io.BytesIO(frame)
        try:
            header = entity_reader(cls.__header_schema__)(stream)
            body = entity_reader(cls)(stream)
        except DecodeError as err:
            rec.undecodable.append(("response", key, version, str(err)))
            return frame
        rec.responses[(key, version)] += 1
        # Bytes a peer appends after the body are kept and forwarded after the
        # re-encoding: kproto does not know what they mean, the client might.
        trailing = frame[stream.tell() :]
        canonical = encode(header) + encode(body)
        if canonical + trailing != frame or trailing:
            note = (
                f"{len(trailing)} bytes left over after the body"
                if trailing
                else _first_difference(frame, canonical)
            )
            rec.non_canonical.append(("response", key, version, note))
        moved = rewrite_addresses(body, self._ports, self.host)
        if moved is body:
            return canonical + trailing
        rec.rewritten[(key, version)] += 1
        return encode(header) + encode(moved) + trailing
