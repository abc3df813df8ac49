"""The sans-IO half of the client: request building and response interpretation.

A client operation is a generator that yields :class:`Call` objects (which node,
which API, and how to build the request's fields for the version negotiated with
that node) and receives the decoded responses; its return value is the result.
:class:`kproto.client.Client` drives these generators over blocking
:class:`~kproto.connection.Connection` objects and
:class:`kproto.client.AsyncClient` over :class:`~kproto.aio.AsyncConnection`, so
the two share every line of protocol logic (and tests can drive them with
made-up responses, no broker needed).
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterator, Mapping
from typing import Any, Generic, TypeVar

import attrs

from kproto.errors import ErrorCode
from kproto.meta import wire_fields
from kproto.records import ControlRecordType, Record, decode_batches
from kproto.records.segments import next_frame

from .aborted import AbortedFilter
from .results import (
    AbortedTransaction,
    BrokerError,
    ClientError,
    FetchResult,
    TopicPartition,
)

__all__ = [
    "ANY_NODE",
    "offsets_by_topic",
    "Steps",
    "Backoff",
    "Call",
    "WaitingOp",
    "call_version",
    "Op",
    "Pager",
    "REFRESH_CODES",
    "check_code",
    "fit",
    "interpret_fetch",
]

T = TypeVar("T")

#: ``Call.node`` for a request any broker can answer (Metadata, FindCoordinator).
ANY_NODE = -1

#: Partition error codes after which the metadata is refreshed and the request
#: sent once more (Java's ``InvalidMetadataException`` family).
REFRESH_CODES = frozenset(
    {
        ErrorCode.NOT_LEADER_OR_FOLLOWER,
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        ErrorCode.LEADER_NOT_AVAILABLE,
        ErrorCode.FENCED_LEADER_EPOCH,
        ErrorCode.UNKNOWN_LEADER_EPOCH,
        ErrorCode.UNKNOWN_TOPIC_ID,
    }
)

#: Coordinator error codes after which FindCoordinator is asked again (once for the
#: group APIs; within the retry budget for the transaction APIs).
COORDINATOR_CODES = frozenset(
    {ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_NOT_AVAILABLE}
)


@attrs.frozen
class Call:
    """One request an operation wants sent.

    Attributes:
        node: the broker's node id, or :data:`ANY_NODE`.
        api_key: the API.
        build: ``version -> fields`` of the request at the version negotiated with
            that node (nested structs as mappings, arrays as lists); fields the
            version lacks may be included and are dropped by :func:`fit`.
    """

    node: int
    api_key: int
    build: Callable[[int], Mapping[str, Any]]
    #: the highest version to send (None: the version negotiated with the node);
    #: e.g. a transactional producer of transaction version 1 sends Produce at
    #: most v11, as Java's ``ProduceRequest.Builder``
    max_version: int | None = None


@attrs.frozen
class Backoff:
    """A wait an operation asks for before its next call (e.g. after
    CONCURRENT_TRANSACTIONS, Java's ``retry.backoff.ms``); the driver sleeps
    ``ms`` milliseconds and sends ``None`` back."""

    ms: int


#: An operation: yields calls, receives their responses, returns a ``T``.
Op = Generator[Call, Any, T]
#: An operation that may also yield :class:`Backoff` waits (the drivers'
#: ``run`` accepts both).
WaitingOp = Generator[Call | Backoff, Any, T]


class Steps(Generic[T]):
    """A :data:`WaitingOp` as its driver sees it: iterate for its calls and
    backoffs, :meth:`answer` each (the response; None after a backoff or for a
    Call with acks=0), then read :attr:`result`. A context manager that closes the
    operation (also when the driver fails)."""

    def __init__(self, op: WaitingOp[T]) -> None:
        self._op = op
        self._answer: Any = None
        self.result: T

    def __enter__(self) -> Steps[T]:
        return self

    def __exit__(self, *exc: object) -> None:
        self._op.close()

    def __iter__(self) -> Iterator[Call | Backoff]:
        try:
            step = next(self._op)
            while True:
                self._answer = None
                yield step
                step = self._op.send(self._answer)
        except StopIteration as stop:
            self.result = stop.value

    def answer(self, response: Any) -> None:
        """The response to the step just yielded."""
        self._answer = response


def offsets_by_topic(
    offsets: Mapping[TopicPartition, int],
) -> dict[str, list[tuple[int, int]]]:
    """``{topic: [(partition, offset)]}`` of ``offsets``, topics and partitions in
    order: the shape OffsetCommit and TxnOffsetCommit send."""
    by_topic: dict[str, list[tuple[int, int]]] = {}
    for tp, offset in sorted(
        offsets.items(), key=lambda kv: (kv[0].topic, kv[0].partition)
    ):
        by_topic.setdefault(tp.topic, []).append((tp.partition, offset))
    return by_topic


def call_version(call: Call, negotiated: int) -> int:
    """The version to send ``call`` at, given the one negotiated with its node."""
    if call.max_version is None:
        return negotiated
    return min(negotiated, call.max_version)


def fit(cls: type, fields: Mapping[str, Any]) -> dict[str, Any]:
    """``fields`` without the names ``cls`` (a request class of one version) does not
    have, recursively through nested structs and arrays of structs.

    This is how one set of fields serves every version: e.g. a Produce topic is
    given both ``name`` (v0-v12) and ``topic_id`` (v13+) and keeps the one its
    version has.
    """
    known = {f.name: w for f, w in wire_fields(cls)}
    out: dict[str, Any] = {}
    for name, value in fields.items():
        w = known.get(name)
        if w is None:
            continue
        entity = w.element.entity if w.element is not None else w.entity
        if entity is not None and isinstance(value, Mapping):
            value = fit(entity, value)
        elif entity is not None and isinstance(value, list | tuple):
            value = [fit(entity, v) if isinstance(v, Mapping) else v for v in value]
        out[name] = value
    return out


def check_code(
    error_code: int,
    where: str,
    *,
    topic: str | None = None,
    partition: int | None = None,
    error_message: str | None = None,
) -> None:
    """Raise :class:`BrokerError` unless ``error_code`` is 0 (NONE)."""
    if error_code != 0:
        raise BrokerError(
            error_code,
            where,
            topic=topic,
            partition=partition,
            error_message=error_message,
        )


def interpret_fetch(
    partition_data: Any,
    offset: int,
    max_bytes: int,
    where: str,
    *,
    decode: bool = True,
    isolation_level: int = 0,
) -> FetchResult:
    """Turn a Fetch response's partition (error code already checked) into a
    :class:`FetchResult`.

    Fetch returns whole batches, so records below ``offset`` are dropped; an
    incomplete batch at the end (the broker cut the response at ``max_bytes``) is
    left for the next fetch; control records are left out, and with
    ``isolation_level`` 1 (read_committed) the batches of aborted transactions
    (:class:`AbortedFilter`, as Java's ``CompletedFetch``). With ``decode`` false
    only the batch headers are read: ``records`` is empty and ``raw`` holds the
    complete batches (for callers that decode them their own way).

    Raises:
        ClientError: the response holds only an incomplete batch, which no fetch of
            ``max_bytes`` can complete (brokers older than Fetch v3); with
            ``decode`` false, a batch header that cannot frame a batch.
        kproto.serial.DecodeError: a batch fails its CRC or does not decode.
    """
    data = partition_data.records or b""
    aborted = tuple(
        AbortedTransaction(a.producer_id, a.first_offset)
        for a in getattr(partition_data, "aborted_transactions", None) or ()
    )
    committed = AbortedFilter(aborted if isolation_level == 1 else ())
    records: list[Record] = []
    if decode:
        batches = decode_batches(data)
        next_offset = offset
        for batch in batches:
            last = batch.base_offset + batch.last_offset_delta
            next_offset = max(next_offset, last + 1)
            first = batch.records[0] if batch.records else None
            if committed.keep(
                last_offset=last,
                producer_id=batch.producer_id,
                is_transactional=batch.is_transactional,
                is_control=batch.is_control,
                is_abort_marker=first is not None
                and first.control is not None
                and first.control.type == ControlRecordType.ABORT,
            ):
                records.extend(r for r in batch.records if r.offset >= offset)
        tail = batches.partial_tail_position
    else:
        next_offset, tail = _scan_headers(data, offset, where)
    if next_offset == offset and tail is not None:
        raise ClientError(
            f"{where}: the batch at offset {offset} is larger than "
            f"max_bytes={max_bytes} ({len(data)} bytes returned); fetch with a larger "
            "max_bytes"
        )
    return FetchResult(
        tuple(records),
        next_offset,
        partition_data.high_watermark,
        getattr(partition_data, "log_start_offset", -1),
        bytes(data if tail is None else data[:tail]),
        getattr(partition_data, "last_stable_offset", -1),
        aborted,
    )


def _scan_headers(data: bytes, offset: int, where: str) -> tuple[int, int | None]:
    """``(next offset, position of an incomplete tail or None)`` from the batch
    headers alone: one past the last offset of each batch, the magic 2 batch's
    ``last_offset_delta`` (at byte 23) included, as ``DefaultRecordBatch``."""
    n = len(data)
    pos = 0
    next_offset = offset
    while pos < n:
        frame = next_frame(data, pos, n)
        if frame.problem is not None:
            raise ClientError(f"{where}: {frame.problem} (byte {frame.problem_at})")
        if not frame.complete:
            return next_offset, pos
        assert frame.base_offset is not None and frame.magic is not None
        last = frame.base_offset
        if frame.magic >= 2:
            last += int.from_bytes(data[pos + 23 : pos + 27], "big", signed=True)
        next_offset = max(next_offset, last + 1)
        pos = frame.end
    return next_offset, None


class Pager:
    """The paging state of ``iter_records``: where to fetch next, and when to stop.

    Without ``follow`` the end is the high watermark of the first fetch (the last
    stable offset with read_committed): records at or past it are not returned,
    and paging stops on reaching it.

    Args:
        offset: the first offset wanted.
        follow: never stop (keep fetching new data).
        isolation_level: the Fetch's; 1 (read_committed) ends at the last stable
            offset.
    """

    def __init__(self, offset: int, *, follow: bool, isolation_level: int = 0) -> None:
        self.offset = offset
        self.follow = follow
        self.isolation_level = isolation_level
        self.end_name = "high watermark"
        self.end: int | None = None
        self.done = False

    def take(self, result: FetchResult, where: str) -> list[Record]:
        """The records of ``result`` to yield; advances :attr:`offset`, sets
        :attr:`done`.

        Raises:
            ClientError: without ``follow``, a fetch below the end returned no
                batch (which would otherwise loop forever).
        """
        if self.end is None and not self.follow:
            lso = result.last_stable_offset
            committed = self.isolation_level == 1 and lso >= 0
            self.end = lso if committed else result.high_watermark
            self.end_name = "last stable offset" if committed else "high watermark"
        end = self.end
        records = [r for r in result.records if end is None or r.offset < end]
        if end is not None:
            if result.next_offset >= end:
                self.done = True
            elif result.next_offset == self.offset:
                raise ClientError(
                    f"Fetch {where}@{self.offset}: no batch returned below the "
                    f"{self.end_name} {end}"
                )
        self.offset = result.next_offset
        return records
