"""What :class:`kproto.client.Client` and :class:`kproto.client.AsyncClient` share:
their settings, the core, the connection cache and the request a call asks for.

The operations themselves are sans-IO (:mod:`kproto.client.protocol`); a driver
only opens connections and moves the requests and responses of an operation.
"""

from __future__ import annotations

import functools
import inspect
import ssl
from collections.abc import Awaitable, Callable, Mapping
from typing import (
    Any,
    Concatenate,
    Generic,
    ParamSpec,
    Protocol,
    TypedDict,
    TypeVar,
    overload,
)

from kproto.connection import KafkaConnectionError
from kproto.index import request_type
from kproto.meta import build_entity
from kproto.sasl import SaslConfig

from . import admin, describe
from .core import ClientCore
from .protocol import Call, WaitingOp, call_version, fit
from .transactions import TransactionManager

__all__ = [
    "ClientDriver",
    "ConnectAttempts",
    "ConnectionSettings",
    "Operation",
    "TransactionalDriver",
]


class _Negotiated(Protocol):
    def version_for(self, api_key: int) -> int: ...


ConnT = TypeVar("ConnT", bound=_Negotiated)
P = ParamSpec("P")
S = TypeVar("S")
T = TypeVar("T")
U = TypeVar("U")


class _Blocking(Protocol):
    def run(self, op: WaitingOp[U], /) -> U: ...


class _Awaiting(Protocol):
    def run(self, op: WaitingOp[U], /) -> Awaitable[U]: ...


class Operation(Generic[S, P, T]):
    """A driver's method for the sans-IO operation ``op`` of its attribute
    ``subject`` (its :class:`ClientCore` ``core``, or a producer's
    :class:`~kproto.client.transactions.TransactionManager` ``manager``): the
    same arguments and docstring, run with the driver's ``run`` (blocking: the
    result; asyncio: an awaitable of it)."""

    def __init__(
        self, op: Callable[Concatenate[S, P], WaitingOp[T]], subject: str = "core"
    ) -> None:
        self.op = op
        self.subject = subject
        self.__doc__ = op.__doc__
        # the method's: without the subject, returning the operation's result
        signature = inspect.signature(op)
        self.signature = signature.replace(
            parameters=list(signature.parameters.values())[1:],
            return_annotation=inspect.Signature.empty,
        )

    @overload
    def __get__(self, driver: None, owner: type) -> Operation[S, P, T]: ...
    @overload
    def __get__(self, driver: _Blocking, owner: type) -> Callable[P, T]: ...
    @overload
    def __get__(self, driver: _Awaiting, owner: type) -> Callable[P, Awaitable[T]]: ...
    def __get__(self, driver: Any, owner: type) -> Any:
        if driver is None:
            return self
        op, subject = self.op, getattr(driver, self.subject)

        @functools.wraps(op)
        def method(*args: Any, **kwargs: Any) -> Any:
            return driver.run(op(subject, *args, **kwargs))

        method.__signature__ = self.signature  # type: ignore[attr-defined]
        return method


class ClientDriver(Generic[ConnT]):
    """The state of a client over connections of type ``ConnT``; the arguments
    are :class:`kproto.client.Client`'s.

    Its operations are :class:`Operation` attributes, documented where they are
    defined (sans-IO) and run by the client's ``run`` (blocking, or awaited by
    :class:`kproto.client.AsyncClient`): ``produce``, ``fetch``, ``list_offsets``
    (:class:`~kproto.client.core.ClientCore`), ``create_topics``,
    ``delete_topics``, ``commit_offsets``, ``fetch_offsets``
    (:mod:`kproto.client.admin`), ``describe_topics``, ``describe_configs``,
    ``list_groups``, ``describe_groups`` (:mod:`kproto.client.describe`);
    ``iter_records`` pages through ``ClientCore.pages``.
    """

    produce = Operation(ClientCore.produce)
    fetch = Operation(ClientCore.fetch)
    list_offsets = Operation(ClientCore.list_offsets)
    create_topics = Operation(admin.create_topics)
    delete_topics = Operation(admin.delete_topics)
    commit_offsets = Operation(admin.commit_offsets)
    fetch_offsets = Operation(admin.fetch_offsets)
    describe_topics = Operation(describe.describe_topics)
    describe_configs = Operation(describe.describe_configs)
    list_groups = Operation(describe.list_groups)
    describe_groups = Operation(describe.describe_groups)

    def __init__(
        self,
        bootstrap_servers: str,
        *,
        client_id: str = "kproto",
        timeout_s: float = 30.0,
        ssl_context: ssl.SSLContext | None = None,
        sasl: SaslConfig | None = None,
        version_caps: Mapping[int, int] | None = None,
        allow_auto_topic_creation: bool = True,
        enable_idempotence: bool = False,
        core: ClientCore | None = None,
    ) -> None:
        self.core = core or ClientCore(
            bootstrap_servers,
            allow_auto_topic_creation=allow_auto_topic_creation,
            enable_idempotence=enable_idempotence,
        )
        self.client_id = client_id
        self.timeout_s = timeout_s
        self.ssl_context = ssl_context
        self.sasl = sasl
        self.version_caps = dict(version_caps or {})
        self._conns: dict[tuple[str, int], ConnT] = {}

    def connection_settings(self) -> ConnectionSettings:
        """The keyword arguments of each connection this client opens."""
        return ConnectionSettings(
            client_id=self.client_id,
            timeout_s=self.timeout_s,
            ssl_context=self.ssl_context,
            sasl=self.sasl,
        )

    def _cached(self, node: int) -> ConnT | None:
        """The open connection to ``node`` (for ``ANY_NODE``: to any address it
        may use), if there is one."""
        for address in self.core.addresses(node):
            if address in self._conns:
                return self._conns[address]
        return None

    def _forget(self, conn: ConnT) -> None:
        """Drop ``conn`` from the cache (the caller closes it)."""
        self._conns = {a: c for a, c in self._conns.items() if c is not conn}

    def _request(self, call: Call, conn: ConnT) -> Any:
        """The request entity of ``call`` at the version ``conn`` negotiated."""
        version = call_version(call, conn.version_for(call.api_key))
        request_cls = request_type(call.api_key, version)
        return build_entity(request_cls, fit(request_cls, call.build(version)))

    def __repr__(self) -> str:
        servers = ",".join(f"{h}:{p}" for h, p in self.core.bootstrap)
        return f"<{type(self).__name__} {servers}>"


class ConnectionSettings(TypedDict):
    """The keyword arguments every connection of a client is opened with."""

    client_id: str
    timeout_s: float
    ssl_context: ssl.SSLContext | None
    sasl: SaslConfig | None


class ConnectAttempts:
    """Around connecting to each address of several in turn (``with attempts:``): a
    :class:`~kproto.connection.KafkaConnectionError` is kept and suppressed (the
    caller tries the next address); anything else propagates."""

    def __init__(self) -> None:
        self.errors: list[KafkaConnectionError] = []

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: object, err: BaseException | None, tb: object) -> bool:
        if isinstance(err, KafkaConnectionError):
            self.errors.append(err)
            return True
        return False

    def failed(self) -> KafkaConnectionError:
        """The error to raise when no address connected: the last one."""
        return self.errors[-1]


DriverT = TypeVar("DriverT", bound="ClientDriver[Any]")


class TransactionalDriver(Generic[DriverT]):
    """What :class:`kproto.client.TransactionalProducer` and
    :class:`kproto.client.AsyncTransactionalProducer` share: an idempotent client
    of type :attr:`client_type` and the transaction state machine on its core
    (the arguments are :class:`~kproto.client.TransactionalProducer`'s).

    ``init_transactions``, ``send``, ``send_offsets_to_transaction``,
    ``commit_transaction`` and ``abort_transaction`` are
    :class:`~kproto.client.transactions.TransactionManager`'s operations, run by
    the producer's ``run`` (:class:`Operation`).
    """

    #: the client class the producer sends with (set by each producer class)
    client_type: type[DriverT]

    init_transactions = Operation(TransactionManager.init_transactions, "manager")
    send = Operation(TransactionManager.send, "manager")
    send_offsets_to_transaction = Operation(
        TransactionManager.send_offsets_to_transaction, "manager"
    )
    commit_transaction = Operation(TransactionManager.commit_transaction, "manager")
    abort_transaction = Operation(TransactionManager.abort_transaction, "manager")

    def __init__(
        self,
        bootstrap_servers: str,
        transactional_id: str,
        *,
        transaction_timeout_ms: int = 60_000,
        client_id: str = "kproto",
        timeout_s: float = 30.0,
        ssl_context: ssl.SSLContext | None = None,
        sasl: SaslConfig | None = None,
        version_caps: Mapping[int, int] | None = None,
    ) -> None:
        self.client = self.client_type(
            bootstrap_servers,
            client_id=client_id,
            timeout_s=timeout_s,
            ssl_context=ssl_context,
            sasl=sasl,
            version_caps=version_caps,
            enable_idempotence=True,
        )
        self.manager = TransactionManager(
            self.client.core,
            transactional_id,
            transaction_timeout_ms=transaction_timeout_ms,
        )

    def begin_transaction(self) -> None:
        """See :meth:`TransactionManager.begin_transaction`."""
        self.manager.begin_transaction()

    def __repr__(self) -> str:
        m = self.manager
        return (
            f"<{type(self).__name__} {m.transactional_id!r} {m.state.value} "
            f"TV{m.transaction_version} producer {m.producer_id}/{m.producer_epoch}>"
        )
