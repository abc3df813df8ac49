"""The blocking :class:`Client` (never imports asyncio itself)."""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Iterator
from typing import Concatenate, ParamSpec, TypeVar

from kproto._closing import Closing
from kproto.connection import Connection, KafkaConnectionError
from kproto.records import Record

from .core import DEFAULT_FETCH_MAX_BYTES, EARLIEST, LATEST, ClientCore
from .driver import ClientDriver, ConnectAttempts
from .protocol import Backoff, Op, Steps, WaitingOp

__all__ = ["DEFAULT_FETCH_MAX_BYTES", "EARLIEST", "LATEST", "Client"]

P = ParamSpec("P")
T = TypeVar("T")


def _blocking_pages(
    pages: Callable[Concatenate[ClientCore, P], Iterator[Op[list[Record]]]],
) -> Callable[Concatenate[Client, P], Iterator[Record]]:
    """The :class:`Client` method of :meth:`ClientCore.pages`: an iterator of
    records (the :class:`~kproto.client.driver.Operation` of a paging operation)."""

    @functools.wraps(pages)
    def method(self: Client, /, *args: P.args, **kwargs: P.kwargs) -> Iterator[Record]:
        for page in pages(self.core, *args, **kwargs):
            yield from self.run(page)

    return method


class Client(ClientDriver[Connection], Closing):
    """A small blocking Kafka client: produce, fetch, offsets and topic admin.

    Keeps a metadata cache (brokers, partition leaders, topic ids, the controller,
    group coordinators) and one negotiated :class:`~kproto.connection.Connection`
    per broker, opened on first use; sends each request to the partition leader,
    controller or coordinator it is for. Requests are sent one at a time.

    **No hidden retries**: the only request sent again is one answered with a stale
    metadata error (NOT_LEADER_OR_FOLLOWER, UNKNOWN_TOPIC_OR_PARTITION,
    LEADER_NOT_AVAILABLE, FENCED/UNKNOWN_LEADER_EPOCH, UNKNOWN_TOPIC_ID;
    NOT_CONTROLLER; NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE), once, after
    refreshing the metadata or coordinator. Everything else is raised.

    The methods (``produce``, ``fetch``, ``iter_records``, ``list_offsets``, topic
    and offset admin, ``describe_*``) are the sans-IO operations listed on
    :class:`~kproto.client.driver.ClientDriver`, with their arguments and
    docstrings, run here blocking.

    Sources: the request/response definitions of Kafka's ``clients/src/main/
    resources/common/message`` JSON (Produce v0-13, Fetch v0-18 with topic ids from
    v13 (KIP-516), ListOffsets, Metadata, FindCoordinator, OffsetCommit/OffsetFetch,
    CreateTopics/DeleteTopics); partitioning as Java's ``BuiltInPartitioner``; which
    errors mean stale metadata as Java's ``InvalidMetadataException`` subclasses.

    Args:
        bootstrap_servers: ``"host1:9092,host2:9092"``.
        client_id: the request headers' ``client_id``.
        timeout_s: each connection's connect and request timeout (seconds).
        ssl_context: TLS for every connection
            (:func:`kproto.negotiation.client_ssl_context` verifies host names).
        sasl: SASL mechanism and credentials for every connection
            (:class:`kproto.sasl.SaslConfig`), authenticated after ApiVersions and
            again when the broker's session lifetime nears its end (KIP-368).
        version_caps: ``{api_key: highest version}`` passed to
            :meth:`~kproto.connection.Connection.negotiate`.
        allow_auto_topic_creation: let :meth:`produce`'s Metadata request create
            a missing topic (the Java producer's default).
        enable_idempotence: an idempotent producer (KIP-98, Java's
            ``enable.idempotence``): one InitProducerId, then every batch carries
            the producer id, epoch and its partition's next sequence, so a batch
            sent again is stored once. :meth:`produce` then needs ``acks=-1``,
            resends a batch answered with a retriable error (the same bytes, up
            to 4 sends), and bumps the epoch (KIP-360: InitProducerId with the
            current id and epoch, v3+) after UNKNOWN_PRODUCER_ID (the batch is
            resent), after OUT_OF_ORDER_SEQUENCE_NUMBER / INVALID_PRODUCER_EPOCH
            (raised as :class:`kproto.client.ProducerSequenceError`) and after any
            produce that failed with a batch's fate unknown (e.g. a connection
            lost before the answer).

    Raises (any method):
        kproto.client.BrokerError: an error code in a response (``error_code``,
            ``retriable``).
        kproto.client.ClientError: bad arguments, or a response the client cannot use.
        kproto.sasl.SaslAuthenticationError: the broker refused the credentials
            (or the SCRAM server signature did not verify).
        kproto.connection.KafkaConnectionError: connecting, negotiating or a
            request failed (the connection is dropped; the next call reconnects).
    """

    # ------------------------------------------------------------------ driving

    def connection(self, node: int) -> Connection:
        """The negotiated connection for a node id (or ``protocol.ANY_NODE``: an open
        one to a known broker, else the first known broker or bootstrap server that
        answers), opened on first use.

        Raises:
            KafkaConnectionError: connecting or negotiating failed (for ANY_NODE:
                with every address; the last error).
        """
        return self._cached(node) or self._connect(node)

    def _connect(self, node: int) -> Connection:
        attempts = ConnectAttempts()
        for host, port in self.core.addresses(node):
            with attempts:
                conn = Connection(host, port, **self.connection_settings())
                try:
                    conn.negotiate(caps=self.version_caps)
                except BaseException:
                    conn.close()
                    raise
                self._conns[(host, port)] = conn
                return conn
        raise attempts.failed()

    def run(self, op: WaitingOp[T]) -> T:
        """Drive a sans-IO operation (see :mod:`kproto.client.protocol`): send each
        call's request on its node's connection and feed the response back. A
        connection that fails is closed and dropped (the next call reconnects)."""
        with Steps(op) as steps:
            for call in steps:
                if isinstance(call, Backoff):
                    time.sleep(call.ms / 1000)
                    continue
                conn = self.connection(call.node)
                try:
                    steps.answer(conn.send(self._request(call, conn)))
                except KafkaConnectionError:
                    self._drop(conn)
                    raise
        return steps.result

    def _drop(self, conn: Connection) -> None:
        conn.close()
        self._forget(conn)

    # ------------------------------------------------------------------ API

    iter_records = _blocking_pages(ClientCore.pages)

    # ------------------------------------------------------------------ lifetime

    def close(self) -> None:
        """Close every connection. Idempotent."""
        conns, self._conns = self._conns, {}
        for conn in conns.values():
            conn.close()
