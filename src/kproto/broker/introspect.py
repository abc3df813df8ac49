"""What a test can see of a running cluster: the log of requests it answered."""

from __future__ import annotations

import collections
from collections.abc import Iterator
from typing import Any

import attrs

__all__ = ["ReceivedRequest", "RequestRecord", "RequestLog"]


@attrs.frozen
class ReceivedRequest:
    """One request a node decoded, as a test sees it.

    Attributes:
        node_id: the node that received it.
        client_id: the request header's client_id.
        api_key, api_version, correlation_id: from the request header.
        request: the decoded request entity.
    """

    node_id: int
    client_id: str | None
    api_key: int
    api_version: int
    correlation_id: int
    request: Any


@attrs.frozen
class RequestRecord(ReceivedRequest):
    """One request a node decoded (the attributes of :class:`ReceivedRequest`) and
    what it answered.

    Attributes:
        response: the response entity (``None``: no response, e.g. acks=0).
        time_ms: wall-clock time the request was decoded, ms since the epoch.
    """

    response: Any
    time_ms: int


class RequestLog:
    """The last ``maxlen`` requests of every node, oldest first (a bounded deque).

    ``cluster.requests`` is one; iterate it, ``len()`` it, or filter it::

        produces = cluster.requests.filter(api_key=0)
        by_client = cluster.requests.filter(client_id="rdkafka", node_id=1)
    """

    def __init__(self, maxlen: int = 10_000) -> None:
        self._records: collections.deque[RequestRecord] = collections.deque(
            maxlen=maxlen
        )

    def append(self, record: RequestRecord) -> None:
        self._records.append(record)

    def __iter__(self) -> Iterator[RequestRecord]:
        return iter(list(self._records))

    def __len__(self) -> int:
        return len(self._records)

    def __getitem__(self, index: int) -> RequestRecord:
        return self._records[index]

    def clear(self) -> None:
        self._records.clear()

    def filter(
        self,
        *,
        api_key: int | None = None,
        api_version: int | None = None,
        node_id: int | None = None,
        client_id: str | None = None,
    ) -> list[RequestRecord]:
        """The records matching every given criterion, oldest first."""
        return [
            r
            for r in list(self._records)
            if (api_key is None or r.api_key == api_key)
            and (api_version is None or r.api_version == api_version)
            and (node_id is None or r.node_id == node_id)
            and (client_id is None or r.client_id == client_id)
        ]
